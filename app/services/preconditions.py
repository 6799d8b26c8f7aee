"""The checks units of work share before they read or write a session: it exists, is open, is
at the version the caller read, holds what the request names; the caller may write app state;
an event's id is not already taken by other content. Services import these; a service never
imports another service for a check."""

from collections.abc import Iterable
from typing import Any

import asyncpg

from app.domain import NewEvent, ScopedDelta, SessionKey, SessionRead
from app.errors import (
    AppStateForbidden,
    EventConflict,
    InvalidInput,
    SessionClosed,
    SessionNotFound,
    StaleSession,
)
from app.repositories import events as event_rows
from app.repositories import lineage as lineage_rows
from app.repositories import sessions as session_rows
from app.rules.events import is_resent


async def require_session(
    connection: asyncpg.Connection, key: SessionKey, *, writable: bool = False
) -> int:
    """The session's version, unlocked; SessionNotFound if there is no such session, and with
    `writable`, SessionClosed if it is closed to writes."""
    found = await session_rows.get_version(connection, key)
    if found is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    version, is_open = found
    if writable and not is_open:
        raise SessionClosed(key.session_id)
    return version


async def hold_session(
    connection: asyncpg.Connection, key: SessionKey, *, lock: lineage_rows.RowLock
) -> lineage_rows.Held:
    """The session's row, locked for the transaction (`lineage_rows.RowLock`); SessionNotFound
    if there is none."""
    held = await lineage_rows.hold(connection, key, lock=lock)
    if held is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    return held


async def hold_for_write(
    connection: asyncpg.Connection, key: SessionKey, expected_version: int | None
) -> lineage_rows.Held:
    """The session's row, locked for a write that If-Match allows on an open session."""
    held = await hold_session(connection, key, lock="update")
    if not held.is_open:
        raise SessionClosed(key.session_id)
    if expected_version is not None and held.version != expected_version:
        raise StaleSession(expected_version, held.version)
    return held


async def read_session(
    connection: asyncpg.Connection,
    key: SessionKey,
    *,
    num_recent_events: int | None = None,
    after_timestamp: float | None = None,
    until_seq: int | None = None,
) -> SessionRead:
    """The session with the events asked for; with `until_seq`, as it was at that seq."""
    found = await session_rows.read(
        connection,
        key,
        limit=num_recent_events,
        after_timestamp=after_timestamp,
        until_seq=until_seq,
    )
    if found is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    if until_seq is not None:
        require_kept(found[0].version, found[0].base_seq, until_seq, "untilSeq")
    return SessionRead(*found)


def require_kept(version: int, base_seq: int, seq: int, field: str) -> None:
    """422 unless `seq` lies in the session's history: from `base_seq` to `version`."""
    if seq > version:
        raise InvalidInput(
            f"{field} {seq} is past the end: the session is at version {version}.", field=field
        )
    if seq < base_seq:
        raise InvalidInput(
            f"{field} {seq} is before the session's history, which starts at seq {base_seq}: "
            f"{_BEFORE_HISTORY}",
            field=field,
        )


_BEFORE_HISTORY = (
    "what came before was removed by a trim or a reset, or, in a child session, inherited "
    "from its parent, whose history it is."
)


async def seq_before_invocation(
    connection: asyncpg.Connection, key: SessionKey, invocation_id: str, base_seq: int
) -> int:
    """The seq just before the invocation's first event, which must lie in the session's
    history (from `base_seq`); 422 if no event of the session has the invocation, or if it
    starts before that history."""
    first = await lineage_rows.first_seq_of_invocation(connection, key, invocation_id)
    if first is None:
        raise InvalidInput(
            f"No event of invocation {invocation_id!r} is in the session.",
            field="beforeInvocationId",
        )
    if first - 1 < base_seq:
        raise InvalidInput(
            f"Invocation {invocation_id!r} starts at seq {first}, before the session's history, "
            f"which starts at seq {base_seq}: {_BEFORE_HISTORY}",
            field="beforeInvocationId",
        )
    return first - 1


def require_app_state_write(allowed: bool, deltas: Iterable[ScopedDelta]) -> None:
    """403, before anything is written, for `app:` keys the caller may not write."""
    if not allowed and any(delta.app for delta in deltas):
        raise AppStateForbidden()


async def stored_identically(
    connection: asyncpg.Connection, key: SessionKey, events: list[NewEvent]
) -> dict[str, dict[str, Any]]:
    """Those of `events` already in the session, as stored; EventConflict if one of their ids
    is stored with other content (a new event must have a new id)."""
    stored = await event_rows.find_by_ids(connection, key, [event.id for event in events])
    for event in events:
        if event.id in stored:
            request_hash, document = stored[event.id]
            if not (request_hash == event.request_hash or is_resent(event, document)):
                raise EventConflict(event.id)
    return {event_id: document for event_id, (_, document) in stored.items()}
