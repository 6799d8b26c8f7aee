"""An event on its way into the log: what is stored, and how a resent event is recognised.

A client retries with the event it sent, or with the event as the server answered it (with
`seq`, `id` and `timestamp` filled in): both must be recognised as the event already stored.
"""

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app import strict_json
from app.domain import NewEvent, Usage
from app.errors import InvalidInput, PayloadTooLarge
from app.rules.context import TokenEstimator, facts
from app.rules.scopes import split_delta, without_temp
from app.rules.search import event_text


def canonical_json(value: Any) -> bytes:
    """Compact UTF-8 JSON with sorted keys: what an event's hash and size are taken of."""
    return strict_json.dumps(value, sort_keys=True)


def server_time() -> float:
    """Epoch seconds at microsecond precision, the precision PostgreSQL keeps for update_time."""
    return round(time.time(), 6)


USAGE_FIELDS = ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")
# What the bigint columns hold, an event's counts and a session's sums alike.
MAX_COUNT = 2**63 - 1


def usage_of(document: dict[str, Any]) -> Usage:
    """The token counts of an event's `usageMetadata`: each a whole number from 0 to 2^63 - 1,
    or None (absent, or anything else: a string, a fraction, a negative number). A whole
    number past 2^63 - 1 is a count that cannot be stored: a 422, rather than a count read as
    none."""
    metadata = document.get("usageMetadata")
    if not isinstance(metadata, dict):
        return Usage()
    return Usage(*(_count(metadata.get(field), field) for field in USAGE_FIELDS))


def _count(value: Any, field: str) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    if value > MAX_COUNT:
        raise InvalidInput(
            f"usageMetadata.{field} is {value}: past 2^63 - 1, the most tokens Sessionary "
            "can count.",
            field=f"usageMetadata.{field}",
        )
    return int(value) if value >= 0 else None


@dataclass(frozen=True)
class EventLimits:
    """What a stored event may be (`SESSIONARY_MAX_EVENT_BYTES`, `SESSIONARY_MAX_JSON_DEPTH`),
    and how its tokens are estimated (`SESSIONARY_TOKEN_ESTIMATOR`)."""

    max_bytes: int
    max_depth: int
    estimate: TokenEstimator


def prepare(document: dict[str, Any], limits: EventLimits) -> NewEvent:
    """The event as it will be stored: `temp:` keys stripped, server fields filled in.

    `document` is an event in ADK's camelCase JSON whose fields the service reads have the
    types it relies on (an append's `EventIn`, or an event the server composes itself). Every
    path that writes an event comes through here (append, batch, create, PATCH's delta,
    close, heal, compact, rewind, rewrite, promote, import), so every stored event keeps the
    same rules: never a `partial` fragment, no deeper than an append's body may be, and the
    size limit. A stored event can then always be exported and imported again. (What JSONB
    cannot hold, `\\u0000`, PostgreSQL refuses: a 422 too.)
    """
    if document.get("partial"):
        raise InvalidInput(
            "A partial event (a streaming fragment) is acknowledged by an append, never stored.",
            field="partial",
        )
    document = dict(document)
    document.pop("seq", None)  # the server's to assign
    actions = document.get("actions") or {}
    delta: dict[str, Any] = actions.get("stateDelta") or {}
    if delta:
        document["actions"] = {**actions, "stateDelta": without_temp(delta)}
    encoded = canonical_json(document)
    # Its brackets bound its nesting: most events have too few to need the walk.
    if encoded.count(b"{") + encoded.count(b"[") > limits.max_depth:
        try:
            strict_json.check_depth(document, max_depth=limits.max_depth)
        except strict_json.StrictJSONError as error:
            raise InvalidInput(f"The event is refused: {error}.", field="event") from None
    request_hash = hashlib.sha256(encoded).digest()
    if document.get("id") is None:
        document["id"] = str(uuid.uuid4())
    if document.get("timestamp") is None:
        document["timestamp"] = server_time()
    size = len(canonical_json(document))
    if size > limits.max_bytes:
        raise PayloadTooLarge(
            f"Event {document['id']!r} is {size} bytes; the limit is "
            f"{limits.max_bytes} (SESSIONARY_MAX_EVENT_BYTES)."
        )
    return NewEvent(
        id=document["id"],
        timestamp=document["timestamp"],
        request_hash=request_hash,
        document=document,
        delta=split_delta(delta),
        facts=facts(document, limits.estimate),
        usage=usage_of(document),
        text=event_text(document),
    )


def is_resent(event: NewEvent, stored: dict[str, Any]) -> bool:
    """A client may retry with the event exactly as the server returned it (with its seq)."""
    return canonical_json(event.document) == canonical_json(
        {key: value for key, value in stored.items() if key != "seq"}
    )


def prepare_batch(
    documents: Sequence[dict[str, Any]], limits: EventLimits, max_events: int
) -> list[NewEvent]:
    """Events sent together, `partial` ones left out (as an append acknowledges them)."""
    if len(documents) > max_events:
        raise PayloadTooLarge(
            f"{len(documents)} events in one request; the limit is "
            f"{max_events} (SESSIONARY_MAX_EVENTS_PER_REQUEST)."
        )
    prepared = [prepare(document, limits) for document in documents if not document.get("partial")]
    if len({event.id for event in prepared}) != len(prepared):
        raise InvalidInput("Two events in one request share an id.", field="events")
    return prepared
