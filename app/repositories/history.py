"""SQL for history surgery: trims, resets, removing and rewriting events. Each is called with
the session's row held for writing (`lineage.hold`), in the caller's transaction."""

from collections.abc import Iterable
from typing import Any

import asyncpg
from sqlalchemy import (
    ARRAY,
    BigInteger,
    bindparam,
    cast,
    column,
    delete,
    func,
    literal,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.db import execute, fetch, fetchrow, fetchval
from app.domain import NO_USAGE, Facts, SessionKey, Usage
from app.models import StorageEvent, StorageSession
from app.repositories.events import USAGE_COLUMNS, event_filter, search_vector
from app.repositories.memories import forget_events, reindex_event
from app.repositories.sessions import (
    EMPTY_LIST,
    EMPTY_STATE,
    held_state_as_of,
    key_filter,
    state_as_of,
)
from app.rules.scopes import split_delta
from app.rules.tool_calls import ToolLinks

# Each event with a function call or response: its seq and the ids it calls and answers.
_TOOL_LINKS = text(
    """
SELECT seq,
       ARRAY(SELECT part -> 'functionCall' ->> 'id' FROM jsonb_array_elements(parts) part
             WHERE part -> 'functionCall' ->> 'id' IS NOT NULL) AS calls,
       ARRAY(SELECT part -> 'functionResponse' ->> 'id' FROM jsonb_array_elements(parts) part
             WHERE part -> 'functionResponse' ->> 'id' IS NOT NULL) AS responses
FROM (SELECT seq, event -> 'content' -> 'parts' AS parts FROM events
      WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id
        AND jsonb_typeof(event -> 'content' -> 'parts') = 'array'
        AND (event -> 'content' -> 'parts' @? '$[*].functionCall'
             OR event -> 'content' -> 'parts' @? '$[*].functionResponse')) AS tooled
ORDER BY seq
"""
)


async def tool_links(connection: asyncpg.Connection, key: SessionKey) -> list[ToolLinks]:
    rows = await fetch(connection, _TOOL_LINKS.bindparams(**key.columns()))
    return [
        ToolLinks(row["seq"], frozenset(row["calls"]), frozenset(row["responses"])) for row in rows
    ]


async def find_event(
    connection: asyncpg.Connection, key: SessionKey, event_id: str
) -> tuple[int, dict[str, Any]] | None:
    statement = select(StorageEvent.seq, StorageEvent.event).where(
        event_filter(key), StorageEvent.id == event_id
    )
    row = await fetchrow(connection, statement)
    return None if row is None else (row["seq"], row["event"])


async def held_state_at(
    connection: asyncpg.Connection, key: SessionKey, seq: int
) -> dict[str, Any]:
    """The session's own state at `seq`, which lies within its kept history, as the events it
    still holds make it (`sessions.held_state_as_of`): what a rewind restores."""
    statement = select(held_state_as_of(literal(seq, BigInteger), key.user_id)).where(
        key_filter(key)
    )
    return dict(await fetchval(connection, statement) or {})


async def artifact_deltas(connection: asyncpg.Connection, key: SessionKey) -> list[tuple[int, Any]]:
    """Each held event's `actions.artifactDelta` with its seq, in order, of the events that
    have one: what a rewind reads to restore artifacts, as ADK's runner reads the events."""
    delta = StorageEvent.event["actions"]["artifactDelta"]
    statement = (
        select(StorageEvent.seq, delta)
        .where(event_filter(key), delta.isnot(None))
        .order_by(StorageEvent.seq)
    )
    return [(row[0], row[1]) for row in await fetch(connection, statement)]


async def newest_trimmed_seq(
    connection: asyncpg.Connection, key: SessionKey, keep_last: int
) -> int | None:
    """The seq of the newest event a trim to the last `keep_last` removes; None if none."""
    statement = (
        select(StorageEvent.seq)
        .where(event_filter(key))
        .order_by(StorageEvent.seq.desc())
        .offset(keep_last)
        .limit(1)
    )
    seq: int | None = await fetchval(connection, statement)
    return seq


async def count_events(connection: asyncpg.Connection, key: SessionKey) -> int:
    return int(await fetchval(connection, select(func.count()).where(event_filter(key))) or 0)


async def remove_events(
    connection: asyncpg.Connection, key: SessionKey, *, seqs: Iterable[int] = (), up_to: int = 0
) -> list[str]:
    """Delete the events at `seqs` and every event up to `up_to`, and take their token usage
    off the session's; their ids, in seq order. The session-scoped delta of each one after the
    session's `base_seq` stays in its history (`removed_deltas`): the state at every seq stays
    what it was. (A trim or a reset moves the base first.)"""
    chosen = bindparam("seqs", sorted(seqs), type_=ARRAY(BigInteger))
    statement = (
        delete(StorageEvent)
        .where(
            event_filter(key),
            (StorageEvent.seq <= up_to) | (StorageEvent.seq == func.any(chosen)),
        )
        .returning(
            StorageEvent.seq,
            StorageEvent.id,
            StorageEvent.event["actions"]["stateDelta"],
            *USAGE_COLUMNS,
        )
    )
    rows = sorted(await fetch(connection, statement), key=lambda row: row["seq"])
    used = sum((Usage(*row[3:]) for row in rows), NO_USAGE)
    changes: dict[str, Any] = {}
    if used != NO_USAGE:
        changes.update(
            prompt_tokens=StorageSession.prompt_tokens - used.prompt,
            candidates_tokens=StorageSession.candidates_tokens - used.candidates,
            total_tokens=StorageSession.total_tokens - used.total,
        )
    kept = [
        {"seq": row[0], "stateDelta": own}
        for row in rows
        if row[0] > up_to and isinstance(row[2], dict) and (own := split_delta(row[2]).session)
    ]
    if kept:
        # Only those of its own history: an event a child inherited is before its base.
        more = StorageSession.removed_deltas.op("||")(literal(kept, JSONB))
        changes.update(removed_deltas=_deltas_after(more, StorageSession.base_seq))
    if changes:
        await execute(connection, update(StorageSession).where(key_filter(key)).values(**changes))
    if rows:
        await forget_events(connection, key, [row["seq"] for row in rows])
    return [row["id"] for row in rows]


def _deltas_after(deltas: Any, seq: Any) -> Any:
    """The removed deltas `deltas` after `seq`, in seq order."""
    entry = func.jsonb_array_elements(deltas).table_valued(column("value", JSONB)).alias("entry")
    at = cast(entry.c.value.op("->>")(literal_column("'seq'")), BigInteger)
    return (
        select(func.coalesce(func.jsonb_agg(entry.c.value).aggregate_order_by(at), EMPTY_LIST))
        .select_from(entry)
        .where(at > seq)
        .correlate(StorageSession)
        .scalar_subquery()
    )


async def rebase(connection: asyncpg.Connection, key: SessionKey, seq: int) -> int:
    """Start the kept history after `seq`, which is past its start, its state then as the base
    (before the events up to it go); takes a version, which it returns."""
    statement = (
        update(StorageSession)
        .where(key_filter(key))
        .values(
            base_state=state_as_of(literal(seq, BigInteger), key.user_id),
            base_seq=seq,
            removed_deltas=_deltas_after(StorageSession.removed_deltas, literal(seq, BigInteger)),
            version=StorageSession.version + 1,
        )
        .returning(StorageSession.version)
    )
    return int(await fetchval(connection, statement))


async def clear(connection: asyncpg.Connection, key: SessionKey) -> int:
    """Empty the session's own state and start its history afresh; takes a version."""
    statement = (
        update(StorageSession)
        .where(key_filter(key))
        .values(
            state=EMPTY_STATE,
            base_state=EMPTY_STATE,
            base_seq=StorageSession.version + 1,
            version=StorageSession.version + 1,
            removed_deltas=EMPTY_LIST,
        )
        .returning(StorageSession.version)
    )
    return int(await fetchval(connection, statement))


async def bump(connection: asyncpg.Connection, key: SessionKey) -> int:
    """Take a version for a write that appends nothing; returns it."""
    statement = (
        update(StorageSession)
        .where(key_filter(key))
        .values(version=StorageSession.version + 1)
        .returning(StorageSession.version)
    )
    return int(await fetchval(connection, statement))


async def rewrite_content(
    connection: asyncpg.Connection,
    key: SessionKey,
    seq: int,
    content: dict[str, Any],
    facts: Facts,
    text: str | None,
    search_config: str,
) -> dict[str, Any]:
    """Replace the event's `content`, and its facts and words with those of the event
    rewritten; the event as now stored."""
    rewritten = StorageEvent.event.op("||")(literal({"content": content}, JSONB))
    statement = (
        update(StorageEvent)
        .where(event_filter(key), StorageEvent.seq == seq)
        .values(
            event=rewritten,
            search=search_vector(search_config, text),
            tokens=facts.tokens,
            calls=list(facts.calls),
            responses=list(facts.responses),
        )
        .returning(StorageEvent.event)
    )
    stored = dict(await fetchval(connection, statement))
    await reindex_event(connection, key, seq)
    return stored
