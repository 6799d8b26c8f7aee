"""SQL for lineage: a session's row held for a fork or a write, history copied from a parent,
ancestors, children, and closing."""

from typing import Any, Literal, NamedTuple

import asyncpg
from sqlalchemy import (
    ARRAY,
    BigInteger,
    String,
    bindparam,
    column,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.db import execute, fetch, fetchrow, fetchval
from app.domain import SessionKey, StoredSession
from app.models import StorageEvent, StorageSession
from app.repositories.events import USAGE_COLUMNS, event_filter
from app.repositories.sessions import key_filter, state_as_of, stored_session, with_shared_state


class Held(NamedTuple):
    """A session's row as a transaction holds it locked."""

    version: int
    base_seq: int
    base_state: dict[str, Any]
    state: dict[str, Any]
    is_open: bool
    removed_deltas: list[dict[str, Any]]


RowLock = Literal["update", "share", "key share"]
"""How a transaction holds a session's row, as PostgreSQL names the lock: `update` to write it
(every other lock waits); `share` so that nothing writes it, appends included (what was read
stays the latest); `key share` so that its history stays as it is (surgery, trim, reset and
deletion wait, all taking `update`) while appends, closes and state changes, which take the
weaker `no key update`, go on past the version read."""


async def hold(connection: asyncpg.Connection, key: SessionKey, *, lock: RowLock) -> Held | None:
    """Lock the session's row until the transaction ends, as `lock` says."""
    statement = select(
        StorageSession.version,
        StorageSession.base_seq,
        StorageSession.base_state,
        StorageSession.state,
        StorageSession.status,
        StorageSession.removed_deltas,
    ).where(key_filter(key))
    statement = statement.with_for_update(read=lock != "update", key_share=lock == "key share")
    row = await fetchrow(connection, statement)
    if row is None:
        return None
    return Held(
        row["version"],
        row["base_seq"],
        row["base_state"],
        row["state"],
        row["status"] == "open",
        row["removed_deltas"],
    )


async def first_seq_of_invocation(
    connection: asyncpg.Connection, key: SessionKey, invocation_id: str
) -> int | None:
    statement = select(func.min(StorageEvent.seq)).where(
        event_filter(key), StorageEvent.invocation_id == invocation_id
    )
    seq: int | None = await fetchval(connection, statement)
    return seq


async def state_at(connection: asyncpg.Connection, key: SessionKey, seq: int) -> dict[str, Any]:
    """The session's own state as it was at `seq`, which lies within its kept history."""
    statement = select(state_as_of(literal(seq, BigInteger), key.user_id)).where(key_filter(key))
    return dict(await fetchval(connection, statement) or {})


async def copy_events(
    connection: asyncpg.Connection,
    source: SessionKey,
    target: SessionKey,
    *,
    until_seq: int,
    only_seqs: list[int] | None = None,
) -> None:
    """Copy the source's events up to `until_seq` (of those, `only_seqs` when given) into the
    target, with their ids and seqs (the stored JSON is the same, seq included), and their
    token usage into the target's."""
    chosen = select(
        StorageEvent.app_name,
        StorageEvent.user_id,
        literal(target.session_id, String).label("session_id"),
        StorageEvent.seq,
        StorageEvent.id,
        StorageEvent.invocation_id,
        StorageEvent.author,
        StorageEvent.timestamp,
        StorageEvent.request_hash,
        StorageEvent.event,
        StorageEvent.tokens,
        StorageEvent.calls,
        StorageEvent.responses,
        StorageEvent.prompt_tokens,
        StorageEvent.candidates_tokens,
        StorageEvent.total_tokens,
        StorageEvent.search,
    ).where(event_filter(source), StorageEvent.seq <= until_seq)
    if only_seqs is not None:
        chosen = chosen.where(
            StorageEvent.seq == func.any(bindparam("seqs", only_seqs, type_=ARRAY(BigInteger)))
        )
    await execute(
        connection, insert(StorageEvent).from_select(list(chosen.selected_columns.keys()), chosen)
    )
    copied = select(*(func.coalesce(func.sum(column), 0) for column in USAGE_COLUMNS)).where(
        event_filter(target)
    )
    used = await fetchrow(connection, copied)
    assert used is not None  # an aggregate has its row
    await execute(
        connection,
        update(StorageSession)
        .where(key_filter(target))
        .values(prompt_tokens=used[0], candidates_tokens=used[1], total_tokens=used[2]),
    )


async def rewind_marks(
    connection: asyncpg.Connection, key: SessionKey
) -> list[tuple[int, str | None, str | None]]:
    """Each event's seq, invocation and the invocation it rewinds before (if it does), in
    order: what `app.rules.rewinds.live_seqs` needs, without the events themselves."""
    statement = (
        select(
            StorageEvent.seq,
            StorageEvent.invocation_id,
            StorageEvent.event["actions"]["rewindBeforeInvocationId"].astext,
        )
        .where(event_filter(key))
        .order_by(StorageEvent.seq)
    )
    return [(row[0], row[1], row[2]) for row in await fetch(connection, statement)]


async def function_call(
    connection: asyncpg.Connection, key: SessionKey, call_id: str
) -> tuple[str | None, str | None, str | None] | None:
    """The author and invocation of the event holding the function call `call_id`, and the
    called function's name; None if no event of the session holds that call."""
    part = (
        func.jsonb_array_elements(StorageEvent.event["content"]["parts"])
        .table_valued(column("value", JSONB))
        .render_derived()
    )
    call = part.c.value["functionCall"]
    statement = (
        select(StorageEvent.author, StorageEvent.invocation_id, call["name"].astext)
        .select_from(StorageEvent)
        .join(part, literal_column("true"))
        .where(
            event_filter(key),
            StorageEvent.event["content"]["parts"].contains(
                literal([{"functionCall": {"id": call_id}}], JSONB)
            ),
            call["id"].astext == call_id,
        )
        .order_by(StorageEvent.seq)
        .limit(1)
    )
    row = await fetchrow(connection, statement)
    return None if row is None else (row[0], row[1], row[2])


async def is_answered(connection: asyncpg.Connection, key: SessionKey, call_id: str) -> bool:
    """Whether an event of the session holds a `functionResponse` to `call_id`."""
    answer = literal([{"functionResponse": {"id": call_id}}], JSONB)
    statement = select(
        select(StorageEvent.seq)
        .where(event_filter(key), StorageEvent.event["content"]["parts"].contains(answer))
        .exists()
    )
    return bool(await fetchval(connection, statement))


async def ancestors(connection: asyncpg.Connection, key: SessionKey) -> list[StoredSession]:
    """The session's parent, its parent's parent, …, root first; the chain ends at the first
    ancestor that has been deleted (it held the link to the next)."""
    chain = text(
        """
WITH RECURSIVE chain(id, depth, path) AS (
    SELECT parent_id::text, 1, ARRAY[id::text] FROM sessions
    WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id
      AND parent_id IS NOT NULL
    UNION ALL
    SELECT s.parent_id::text, chain.depth + 1, chain.path || s.id::text
    FROM chain JOIN sessions s
      ON s.app_name = :app_name AND s.user_id = :user_id AND s.id = chain.id
    WHERE s.parent_id IS NOT NULL AND s.parent_id <> ALL(chain.path || s.id::text)
)
SELECT id, depth FROM chain
"""
    ).bindparams(**key.columns())
    depths = {row["id"]: row["depth"] for row in await fetch(connection, chain)}
    if not depths:
        return []
    statement = with_shared_state(user_id=key.user_id).where(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.id == func.any(bindparam("ids", list(depths), type_=ARRAY(String))),
    )
    found = [stored_session(row) for row in await fetch(connection, statement)]
    return sorted(found, key=lambda session: -depths[session.key.session_id])


async def children_page(
    connection: asyncpg.Connection, key: SessionKey, *, after: tuple[Any, ...] | None, limit: int
) -> list[StoredSession]:
    """Keyset page of the session's forks and children, in the order they were made."""
    sort_key = tuple_(StorageSession.create_time, StorageSession.id)
    statement = with_shared_state(user_id=key.user_id).where(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.parent_id == key.session_id,
    )
    if after is not None:
        statement = statement.where(sort_key > tuple_(*after))
    rows = await fetch(connection, statement.order_by(*sort_key.clauses).limit(limit))
    return [stored_session(row) for row in rows]


async def close(
    connection: asyncpg.Connection, key: SessionKey, outcome: str, expected_version: int | None
) -> tuple[str | None, str | None] | None:
    """Close an open session at `expected_version` (any, when None), taking a version; its
    parent and the function call it answers, or None if nothing was closed."""
    statement = (
        update(StorageSession)
        .where(key_filter(key), StorageSession.status == "open")
        .values(status="closed", outcome=outcome, version=StorageSession.version + 1)
        .returning(StorageSession.parent_id, StorageSession.function_call_id)
    )
    if expected_version is not None:
        statement = statement.where(StorageSession.version == expected_version)
    row = await fetchrow(connection, statement)
    return None if row is None else (row[0], row[1])
