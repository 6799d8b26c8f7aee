"""SQL for exports and imports: a session row with every column as it is, its events in seq
order through a cursor, and the same written back exactly."""

from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncpg
from sqlalchemy import (
    BigInteger,
    String,
    Text,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from app import strict_json
from app.db import DriverStatement, execute, violated_unique
from app.domain import (
    History,
    NewEvent,
    SessionHeader,
    SessionKey,
    Usage,
)
from app.errors import InvalidInput
from app.models import StorageAppState, StorageEvent, StorageSession, StorageUserState, live
from app.repositories import sessions as session_rows
from app.repositories.events import EVENT_ID_CONSTRAINT, RECORD, event_records, insert_events

_KEY = {name: bindparam(name, type_=String) for name in ("app_name", "user_id", "session_id")}


def _of_key(table: Any) -> Any:
    session_id = table.session_id if table is StorageEvent else table.id
    return (
        (table.app_name == _KEY["app_name"])
        & (table.user_id == _KEY["user_id"])
        & (session_id == _KEY["session_id"])
    )


# The session as `with_shared_state` reads it, with what only an export needs: the state its
# kept history starts from, and how many events it holds.
HEADER = DriverStatement.compile(
    session_rows.with_shared_state(
        StorageSession.base_state.expression,
        StorageSession.removed_deltas.expression,
        select(func.count())
        .select_from(StorageEvent)
        .where(_of_key(StorageEvent))
        .scalar_subquery()
        .label("event_count"),
        user_id=_KEY["user_id"],
    ).where(_of_key(StorageSession))
)
EVENTS = DriverStatement.compile(
    select(func.convert_to(cast(StorageEvent.event, Text), literal_column("'UTF8'")))
    .where(_of_key(StorageEvent))
    .order_by(StorageEvent.seq)
)
EVENTS_BETWEEN = DriverStatement.compile(
    select(StorageEvent.seq, StorageEvent.event)
    .where(
        _of_key(StorageEvent),
        StorageEvent.seq.between(
            bindparam("first", type_=BigInteger), bindparam("last", type_=BigInteger)
        ),
    )
    .order_by(StorageEvent.seq)
)


async def header(connection: asyncpg.Connection, key: SessionKey) -> SessionHeader | None:
    """The live session, its history, and its number of events."""
    row = await connection.fetchrow(HEADER.sql, *HEADER.arguments(key.columns()))
    if row is None:
        return None
    session = session_rows.stored_session(row)
    history = History(session.base_seq, row["base_state"], row["removed_deltas"])
    return SessionHeader(session, history, row["event_count"])


async def events(
    connection: asyncpg.Connection, key: SessionKey, prefetch: int
) -> AsyncIterator[bytes]:
    """Its events in seq order, each the UTF-8 JSON PostgreSQL renders, `prefetch` rows per
    round trip (inside the caller's transaction: a cursor needs one)."""
    cursor = connection.cursor(EVENTS.sql, *EVENTS.arguments(key.columns()), prefetch=prefetch)
    async for row in cursor:
        yield row[0]


async def events_between(
    connection: asyncpg.Connection, key: SessionKey, first: int, last: int
) -> list[tuple[int, dict[str, Any]]]:
    rows = await connection.fetch(
        EVENTS_BETWEEN.sql,
        *EVENTS_BETWEEN.arguments({**key.columns(), "first": first, "last": last}),
    )
    return [(row["seq"], row["event"]) for row in rows]


async def set_history(
    connection: asyncpg.Connection, key: SessionKey, removed_deltas: list[dict[str, Any]]
) -> None:
    """The removed deltas of the session's history, as an import found them."""
    await execute(
        connection,
        update(StorageSession)
        .where(session_rows.row_filter(key))
        .values(removed_deltas=literal(removed_deltas, JSONB)),
    )


async def set_usage(connection: asyncpg.Connection, key: SessionKey, usage: Usage) -> None:
    """The session's token counts, summed from the events an import stored."""
    counts = {
        "prompt_tokens": usage.prompt or 0,
        "candidates_tokens": usage.candidates or 0,
        "total_tokens": usage.total or 0,
    }
    await execute(
        connection, update(StorageSession).where(session_rows.row_filter(key)).values(**counts)
    )


# The events at the seqs they had, with the columns an append derives from them.
STORE_EVENTS = DriverStatement.compile(
    text(
        insert_events("new.seq", f"jsonb_to_recordset(:events) AS new({RECORD}, seq bigint)")
    ).bindparams(bindparam("events", type_=JSONB))
)


async def store_events(
    connection: asyncpg.Connection,
    key: SessionKey,
    events: Sequence[tuple[int, NewEvent]],
    search_config: str,
) -> None:
    """Store `events`, each at its seq, in the caller's transaction; 422 for an event id the
    session holds already."""
    records = event_records([event for _, event in events])
    for (seq, _), record in zip(events, records, strict=True):
        record["seq"] = seq
    arguments = {
        **key.columns(),
        "events": strict_json.dumps(records).decode(),
        "search_config": search_config,
    }
    try:
        await connection.execute(STORE_EVENTS.sql, *STORE_EVENTS.arguments(arguments))
    except asyncpg.PostgresError as error:
        if violated_unique(error) != EVENT_ID_CONSTRAINT:
            raise
        raise InvalidInput("Two events of the session share an id.") from None


def _in_reach(table: Any, *, users: bool) -> Any:
    """Rows of the app `:app_name` (every app when NULL) and, with `users`, of the user
    `:user_id` (every user when NULL)."""
    app_name = bindparam("app_name", type_=String)
    reach = app_name.is_(None) | (table.app_name == app_name)
    if users:
        user_id = bindparam("user_id", type_=String)
        reach &= user_id.is_(None) | (table.user_id == user_id)
    return reach


APP_STATES = DriverStatement.compile(
    select(StorageAppState.app_name, StorageAppState.state)
    .where(_in_reach(StorageAppState, users=False))
    .order_by(StorageAppState.app_name)
)
USER_STATES = DriverStatement.compile(
    select(StorageUserState.app_name, StorageUserState.user_id, StorageUserState.state)
    .where(_in_reach(StorageUserState, users=True))
    .order_by(StorageUserState.app_name, StorageUserState.user_id)
)
SESSION_KEYS = DriverStatement.compile(
    select(StorageSession.app_name, StorageSession.user_id, StorageSession.id)
    .where(_in_reach(StorageSession, users=True), live())
    .order_by(StorageSession.app_name, StorageSession.user_id, StorageSession.id)
)


async def shared_states(
    connection: asyncpg.Connection, app_name: str | None, user_id: str | None
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, dict[str, Any]]]]:
    """The app states and user states within an export's reach."""
    reach = {"app_name": app_name, "user_id": user_id}
    apps = await connection.fetch(APP_STATES.sql, *APP_STATES.arguments(reach))
    users = await connection.fetch(USER_STATES.sql, *USER_STATES.arguments(reach))
    return [(row[0], row[1]) for row in apps], [(row[0], row[1], row[2]) for row in users]


async def session_keys(
    connection: asyncpg.Connection, app_name: str | None, user_id: str | None, prefetch: int
) -> AsyncIterator[SessionKey]:
    """The live sessions within an export's reach, through a cursor (in the caller's
    transaction)."""
    arguments = SESSION_KEYS.arguments({"app_name": app_name, "user_id": user_id})
    async for row in connection.cursor(SESSION_KEYS.sql, *arguments, prefetch=prefetch):
        yield SessionKey(row[0], row[1], row[2])
