"""SQL for session rows, read together with the app and user state they share."""

from typing import Any

from sqlalchemy import Select, and_, delete, func, literal, select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.domain import SessionKey, StoredSession
from app.models import StorageAppState, StorageEvent, StorageSession, StorageUserState


def _filter(key: SessionKey) -> ColumnElement[bool]:
    return and_(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.id == key.session_id,
    )


def _with_shared_state() -> Select[StorageSession, dict[str, Any], dict[str, Any], float | None]:
    # update_time keeps microseconds; ADK's lastUpdateTime is the last event's exact float.
    last_event_time = (
        select(StorageEvent.timestamp)
        .where(
            StorageEvent.app_name == StorageSession.app_name,
            StorageEvent.user_id == StorageSession.user_id,
            StorageEvent.session_id == StorageSession.id,
        )
        .order_by(StorageEvent.seq.desc())
        .limit(1)
        .scalar_subquery()
    )
    return (
        select(
            StorageSession,
            func.coalesce(StorageAppState.state, literal({}, StorageAppState.state.type)),
            func.coalesce(StorageUserState.state, literal({}, StorageUserState.state.type)),
            last_event_time,
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


def _stored(row: Any) -> StoredSession:
    session, app_state, user_state, last_event_time = row
    return StoredSession(
        key=SessionKey(session.app_name, session.user_id, session.id),
        state=session.state,
        app_state=app_state,
        user_state=user_state,
        version=session.version,
        create_time=session.create_time,
        update_time=session.update_time,
        last_event_time=last_event_time,
    )


async def insert_new(
    db: AsyncSession, key: SessionKey, state: dict[str, Any], created: float
) -> bool:
    """Create the row; False if the id is taken (no exception, so the transaction lives on)."""
    create_time = func.to_timestamp(created)
    created_row = await db.scalar(
        insert(StorageSession)
        .values(
            app_name=key.app_name,
            user_id=key.user_id,
            id=key.session_id,
            state=state,
            create_time=create_time,
            update_time=create_time,
        )
        .on_conflict_do_nothing()
        .returning(StorageSession.version)
    )
    return created_row is not None


async def get(db: AsyncSession, key: SessionKey) -> StoredSession | None:
    row = (await db.execute(_with_shared_state().where(_filter(key)))).one_or_none()
    return None if row is None else _stored(row)


async def get_version(db: AsyncSession, key: SessionKey) -> int | None:
    return await db.scalar(select(StorageSession.version).where(_filter(key)))


async def list_page(
    db: AsyncSession,
    app_name: str,
    user_id: str | None,
    *,
    newest_first: bool,
    after: tuple[Any, ...] | None,
    limit: int,
) -> list[StoredSession]:
    """Keyset page by (update_time, id), or (update_time, user_id, id) across an app's users.

    `after` is the sort key of the last row already seen; each order has an index.
    """
    query = _with_shared_state().where(StorageSession.app_name == app_name)
    if user_id is None:
        sort_key = tuple_(StorageSession.update_time, StorageSession.user_id, StorageSession.id)
    else:
        query = query.where(StorageSession.user_id == user_id)
        sort_key = tuple_(StorageSession.update_time, StorageSession.id)
    if after is not None:
        seen = tuple_(*after)
        query = query.where(sort_key < seen if newest_first else sort_key > seen)
    columns = list(sort_key.clauses)
    order = [column.desc() for column in columns] if newest_first else columns
    rows = await db.execute(query.order_by(*order).limit(limit))
    return [_stored(row) for row in rows]


def sort_key(session: StoredSession, *, across_users: bool) -> tuple[Any, ...]:
    """The keyset position of a listed session, as `list_page(after=…)` takes it."""
    if across_users:
        return (session.update_time, session.key.user_id, session.key.session_id)
    return (session.update_time, session.key.session_id)


async def delete_one(db: AsyncSession, key: SessionKey) -> bool:
    statement = delete(StorageSession).where(_filter(key)).returning(StorageSession.id)
    return await db.scalar(statement) is not None
