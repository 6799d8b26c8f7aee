"""SQL for session rows, read together with the app and user state they share."""

from collections.abc import Mapping
from typing import Any

import asyncpg
from sqlalchemy import (
    BigInteger,
    Float,
    Select,
    String,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.db import DriverStatement
from app.domain import Order, SessionKey, SessionQuery, StoredSession
from app.models import StorageAppState, StorageEvent, StorageSession, StorageUserState
from app.repositories.shared_state import checked_state, is_state_too_large, state_too_large

EMPTY_STATE = literal_column("'{}'", JSONB)


def _filter(key: SessionKey) -> ColumnElement[bool]:
    return and_(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.id == key.session_id,
    )


def _with_shared_state(*extra: ColumnElement[Any]) -> Select[Any]:
    """Sessions with their app's and user's state, and the time of their last event."""
    # update_time keeps microseconds; ADK's lastUpdateTime is the last event's exact float.
    last_event_time = (
        select(StorageEvent.timestamp)
        .where(
            StorageEvent.app_name == StorageSession.app_name,
            StorageEvent.user_id == StorageSession.user_id,
            StorageEvent.session_id == StorageSession.id,
        )
        .order_by(StorageEvent.seq.desc())
        .limit(literal_column("1"))
        .scalar_subquery()
    )
    return (
        select(
            StorageSession.app_name,
            StorageSession.user_id,
            StorageSession.id,
            StorageSession.state,
            StorageSession.version,
            StorageSession.create_time,
            StorageSession.update_time,
            func.coalesce(StorageAppState.state, EMPTY_STATE).label("app_state"),
            func.coalesce(StorageUserState.state, EMPTY_STATE).label("user_state"),
            last_event_time.label("last_event_time"),
            *extra,
        )
        .outerjoin(StorageAppState, StorageAppState.app_name == StorageSession.app_name)
        .outerjoin(
            StorageUserState,
            and_(
                StorageUserState.app_name == StorageSession.app_name,
                StorageUserState.user_id == StorageSession.user_id,
            ),
        )
    )


def _stored(row: Mapping[str, Any]) -> StoredSession:
    """A row of `_with_shared_state`, from SQLAlchemy (`row._mapping`) or from the driver."""
    return StoredSession(
        key=SessionKey(row["app_name"], row["user_id"], row["id"]),
        state=row["state"],
        app_state=row["app_state"],
        user_state=row["user_state"],
        version=row["version"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        last_event_time=row["last_event_time"],
    )


async def insert_new(
    db: AsyncConnection,
    key: SessionKey,
    state: dict[str, Any],
    created: float,
    max_state_bytes: int,
) -> bool:
    """Create the row; False if the id is taken (no exception, so the transaction lives on)."""
    create_time = func.to_timestamp(created)
    statement = (
        insert(StorageSession)
        .values(
            app_name=key.app_name,
            user_id=key.user_id,
            id=key.session_id,
            state=checked_state(literal(state, JSONB), "session", max_state_bytes),
            create_time=create_time,
            update_time=create_time,
        )
        .on_conflict_do_nothing()
        .returning(StorageSession.version)
    )
    try:
        created_row = await db.scalar(statement)
    except DBAPIError as error:
        if is_state_too_large(error):
            raise state_too_large(error, max_state_bytes) from error
        raise
    return created_row is not None


# A session with its shared state and its events, in one statement so that the version (the
# ETag) and the events come from one snapshot: the first row (seq 0) is the session, the
# others its events, as the UTF-8 JSON PostgreSQL renders from the stored JSONB: a read never
# decodes an event. `after_timestamp` NULL means no filter. Compiled once, and sent through
# the driver: it is the hot read.
_KEY = {name: bindparam(name, type_=String) for name in ("app_name", "user_id", "session_id")}
_AFTER = bindparam("after_timestamp", type_=Float)


def _read(*, recent: bool) -> DriverStatement:
    """The read with every event (`recent=False`: the events in seq order straight from the
    primary key, no sort) or with the last `limit` (newest first, then put back in order)."""
    events = select(StorageEvent.seq, StorageEvent.event).where(
        StorageEvent.app_name == _KEY["app_name"],
        StorageEvent.user_id == _KEY["user_id"],
        StorageEvent.session_id == _KEY["session_id"],
        or_(_AFTER.is_(None), StorageEvent.timestamp >= _AFTER),
    )
    if recent:
        events = events.order_by(StorageEvent.seq.desc()).limit(
            bindparam("limit", type_=BigInteger)
        )
    chosen = events.subquery("chosen")
    return DriverStatement.compile(
        union_all(
            _with_shared_state(literal_column("0").label("seq"), null().label("event")).where(
                StorageSession.app_name == _KEY["app_name"],
                StorageSession.user_id == _KEY["user_id"],
                StorageSession.id == _KEY["session_id"],
            ),
            select(
                *(null() for _ in range(10)),  # the session's columns, on the session's row only
                chosen.c.seq,
                func.convert_to(cast(chosen.c.event, Text), literal_column("'UTF8'")),
            ),
        ).order_by(literal_column("seq"))
    )


READ_ALL = _read(recent=False)
READ_RECENT = _read(recent=True)


async def read(
    connection: asyncpg.Connection,
    key: SessionKey,
    *,
    limit: int | None,
    after_timestamp: float | None,
) -> tuple[StoredSession, list[bytes]] | None:
    """The session and its events as UTF-8 JSON: the last `limit` of those at or after
    `after_timestamp`, in seq order."""
    statement = READ_ALL if limit is None else READ_RECENT
    arguments = statement.arguments(
        {**key.columns(), "limit": limit, "after_timestamp": after_timestamp}
    )
    rows = await connection.fetch(statement.sql, *arguments)
    if not rows:
        return None
    return _stored(rows[0]), [row["event"] for row in rows[1:]]


VERSION = DriverStatement.compile(
    select(StorageSession.version).where(
        StorageSession.app_name == _KEY["app_name"],
        StorageSession.user_id == _KEY["user_id"],
        StorageSession.id == _KEY["session_id"],
    )
)


async def get_version(connection: asyncpg.Connection, key: SessionKey) -> int | None:
    version: int | None = await connection.fetchval(VERSION.sql, *VERSION.arguments(key.columns()))
    return version


async def list_page(
    db: AsyncConnection, query: SessionQuery, *, after: tuple[Any, ...] | None, limit: int
) -> list[StoredSession]:
    """Keyset page by (update_time, id), or (update_time, user_id, id) across an app's users.

    `after` is the sort key of the last row already seen; each order has an index.
    """
    newest_first = query.order is Order.DESC
    statement = _with_shared_state().where(StorageSession.app_name == query.app_name)
    if query.user_id is None:
        sort_key = tuple_(StorageSession.update_time, StorageSession.user_id, StorageSession.id)
    else:
        statement = statement.where(StorageSession.user_id == query.user_id)
        sort_key = tuple_(StorageSession.update_time, StorageSession.id)
    if after is not None:
        seen = tuple_(*after)
        statement = statement.where(sort_key < seen if newest_first else sort_key > seen)
    columns = list(sort_key.clauses)
    order = [column.desc() for column in columns] if newest_first else columns
    rows = await db.execute(statement.order_by(*order).limit(limit))
    return [_stored(row._mapping) for row in rows]


def sort_key(session: StoredSession, query: SessionQuery) -> tuple[Any, ...]:
    """The keyset position of a listed session, as `list_page(after=…)` takes it."""
    if query.user_id is None:
        return (session.update_time, session.key.user_id, session.key.session_id)
    return (session.update_time, session.key.session_id)


async def delete_one(db: AsyncConnection, key: SessionKey, expected_version: int | None) -> bool:
    """False if there is no such session, or it is not at `expected_version` (when given)."""
    statement = delete(StorageSession).where(_filter(key)).returning(StorageSession.id)
    if expected_version is not None:
        statement = statement.where(StorageSession.version == expected_version)
    return await db.scalar(statement) is not None
