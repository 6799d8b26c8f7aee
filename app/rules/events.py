"""An event on its way into the log: what is stored, and how a resent event is recognised.

A client retries with the event it sent, or with the event as the server answered it (with
`seq`, `id` and `timestamp` filled in): both must be recognised as the event already stored.
"""

import hashlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

from app import strict_json
from app.config import Settings
from app.domain import NewEvent, Usage
from app.errors import InvalidInput, PayloadTooLarge
from app.rules.context import facts, token_estimator
from app.rules.scopes import split_delta, without_temp
from app.rules.search import event_text
from app.schemas import EventIn


def canonical_json(value: Any) -> bytes:
    """Compact UTF-8 JSON with sorted keys: what an event's hash and size are taken of."""
    return strict_json.dumps(value, sort_keys=True)


def server_time() -> float:
    """Epoch seconds at microsecond precision, the precision PostgreSQL keeps for update_time."""
    return round(time.time(), 6)


USAGE_FIELDS = ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")
# Two billion tokens in one event is beyond any model; the sums (bigint) then never overflow.
MAX_COUNT = 2**31 - 1


def usage_of(document: dict[str, Any]) -> Usage:
    """The token counts of an event's `usageMetadata`: each a whole number from 0 to 2^31 - 1,
    or None (absent, or anything else)."""
    metadata = document.get("usageMetadata")
    if not isinstance(metadata, dict):
        return Usage()
    counts = [metadata.get(field) for field in USAGE_FIELDS]
    whole = [
        int(count)
        if isinstance(count, int | float)
        and not isinstance(count, bool)
        and float(count).is_integer()
        and 0 <= count <= MAX_COUNT
        else None
        for count in counts
    ]
    return Usage(*whole)


def prepare(event: EventIn, settings: Settings) -> NewEvent:
    """The event as it will be stored: `temp:` keys stripped, server fields filled in.

    Every path that writes an event comes through here (append, batch, create, PATCH's
    delta, close, heal, compact, rewind, rewrite, promote, import), so every stored event
    keeps the same rules: an append's field types (the `EventIn` it is given), never a
    `partial` fragment, JSON that an append's body could carry (nesting, strings), and the
    size limit. A stored event can then always be exported and imported again.
    """
    if event.partial:
        raise InvalidInput(
            "A partial event (a streaming fragment) is acknowledged by an append, never stored.",
            field="partial",
        )
    document = event.model_dump(by_alias=True, exclude_unset=True)
    try:
        strict_json.check(document, max_depth=settings.max_json_depth)
    except strict_json.StrictJSONError as error:
        raise InvalidInput(f"The event is refused: {error}.", field="event") from None
    document.pop("seq", None)  # the server's to assign
    delta: dict[str, Any] = (event.actions and event.actions.state_delta) or {}
    if delta:
        document["actions"]["stateDelta"] = without_temp(delta)
    request_hash = hashlib.sha256(canonical_json(document)).digest()
    if document.get("id") is None:
        document["id"] = str(uuid.uuid4())
    if document.get("timestamp") is None:
        document["timestamp"] = server_time()
    size = len(canonical_json(document))
    if size > settings.max_event_bytes:
        raise PayloadTooLarge(
            f"Event {document['id']!r} is {size} bytes; the limit is "
            f"{settings.max_event_bytes} (SESSIONARY_MAX_EVENT_BYTES)."
        )
    return NewEvent(
        id=document["id"],
        timestamp=document["timestamp"],
        request_hash=request_hash,
        document=document,
        delta=split_delta(delta),
        facts=facts(document, token_estimator(settings.token_estimator)),
        usage=usage_of(document),
        text=event_text(document),
    )


def compose(document: dict[str, Any], settings: Settings) -> NewEvent:
    """An event the server writes itself (a close's answer, a heal, a rewind, a compaction,
    a promoted one), held to the rules of an appended one."""
    return prepare(EventIn.model_validate(document), settings)


def is_resent(event: NewEvent, stored: dict[str, Any]) -> bool:
    """A client may retry with the event exactly as the server returned it (with its seq)."""
    return canonical_json(event.document) == canonical_json(
        {key: value for key, value in stored.items() if key != "seq"}
    )


def prepare_batch(events: Sequence[EventIn], settings: Settings) -> list[NewEvent]:
    if len(events) > settings.max_events_per_request:
        raise PayloadTooLarge(
            f"{len(events)} events in one request; the limit is "
            f"{settings.max_events_per_request} (SESSIONARY_MAX_EVENTS_PER_REQUEST)."
        )
    prepared = [prepare(event, settings) for event in events if not event.partial]
    if len({event.id for event in prepared}) != len(prepared):
        raise InvalidInput("Two events in one request share an id.", field="events")
    return prepared
