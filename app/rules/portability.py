"""The export format, NDJSON: what a line may be, and when an import repeats what is stored.

A session's export is its header (`SessionExport`: the session as a read shows it, with
`eventCount`, `baseSeq` and `baseState`), then its events, one per line, as stored (with
`seq`). A bulk export (`sessionary export`) is app and user state lines, then sessions.
"""

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from app import strict_json
from app.domain import SessionHeader, Usage
from app.errors import InvalidInput
from app.rules.events import canonical_json
from app.schemas import AppStateExport, Event, SessionExport, UserStateExport

Record = SessionExport | AppStateExport | UserStateExport
SESSION_FORMAT = "sessionary.session.v1"
APP_STATE_FORMAT = "sessionary.appState.v1"
USER_STATE_FORMAT = "sessionary.userState.v1"
RECORDS: dict[str, type[Record]] = {
    SESSION_FORMAT: SessionExport,
    APP_STATE_FORMAT: AppStateExport,
    USER_STATE_FORMAT: UserStateExport,
}


def decode(text: bytes, number: int, max_depth: int) -> Any:
    """One line's JSON, strictly (as every request body); a 422 naming the line otherwise."""
    try:
        return strict_json.loads(text, max_depth=max_depth)
    except ValueError as error:
        raise InvalidInput(f"Line {number} is not JSON: {error}", field=f"line {number}") from None


def record(value: Any, number: int) -> Record:
    """A header line: a session's, or (in a bulk export) an app's or a user's state."""
    kind = value.get("format") if isinstance(value, dict) else None
    model = RECORDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InvalidInput(
            f"Line {number} is not a header: its `format` must be one of {', '.join(RECORDS)}.",
            field=f"line {number}",
        )
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise _invalid(number, "header", error) from None


def event(value: Any, number: int) -> Event:
    """An event line: an event as stored, `id`, `timestamp` and `seq` included."""
    try:
        return Event.model_validate(value)
    except ValidationError as error:
        raise _invalid(number, "stored event", error) from None


def _invalid(number: int, what: str, error: ValidationError) -> InvalidInput:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return InvalidInput(
        f"Line {number} is not a valid {what}: {where + ': ' if where else ''}{problem['msg']}",
        field=f"line {number}",
    )


def check_seqs(header: SessionExport, previous: int, seqs: Iterable[int], first_line: int) -> int:
    """Seqs rise strictly, after `baseSeq`, up to `version`; returns the last one."""
    for offset, seq in enumerate(seqs):
        if not previous < seq <= header.version:
            raise InvalidInput(
                f"Line {first_line + offset}: seq {seq} is not between the previous event's "
                f"({previous}) and the session's version ({header.version}).",
                field=f"line {first_line + offset}",
            )
        previous = seq
    return previous


def same_session(header: SessionExport, state: dict[str, Any], stored: SessionHeader) -> bool:
    """Whether `header`, with `state` its session-scoped keys, describes the stored session
    (its events aside). Times are compared to the microsecond PostgreSQL keeps."""
    session, parent = stored.session, header.parent
    return (
        canonical_json([state, header.base_state, header.labels])
        == canonical_json([session.state, stored.base_state, session.labels])
        and (header.version, header.base_seq, header.kind, header.status, header.outcome)
        == (session.version, session.base_seq, session.kind, session.status, session.outcome)
        and (parent and (parent.session_id, parent.seq, parent.function_call_id))
        == (
            session.parent
            and (session.parent.session_id, session.parent.seq, session.parent.function_call_id)
        )
        and header.display_name == session.display_name
        and _same_time(header.create_time, session.create_time)
        and _same_time(header.last_update_time, session.update_time)
        and _same_time(header.expire_time, session.expire_time)
    )


def check_usage(header: SessionExport, used: Usage) -> None:
    """A session's usage is the sum of its events' (as every write keeps it): a header that
    announces other counts describes other events, and is refused."""
    usage = header.usage
    if usage is None:
        return
    announced = (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count)
    summed = (used.prompt or 0, used.candidates or 0, used.total or 0)
    if announced != summed:
        raise InvalidInput(
            f"Line 1: the header's usage {announced} (prompt, candidates, total tokens) is not "
            f"the sum of its events' usageMetadata {summed}; leave it out to have it summed.",
            field="usage",
        )


def _same_time(seconds: float | None, moment: datetime | None) -> bool:
    if seconds is None or moment is None:
        return seconds is None and moment is None
    return round(seconds, 6) == round(moment.timestamp(), 6)


def numbered(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of a byte stream, however it is cut into chunks, each with its
    number in the stream."""
    number, rest = 0, b""
    for chunk in chunks:
        *whole, rest = (rest + chunk).split(b"\n")
        for text in whole:
            number += 1
            if text.strip():
                yield number, text
    if rest.strip():
        yield number + 1, rest
