"""SQL for shared state: one row per app (`app_states`) and per app user (`user_states`), and
the size guard every state write goes through."""

from typing import Any

import asyncpg
from sqlalchemy import func, literal, select
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.errors import StateTooLarge
from app.models import StorageAppState, StorageUserState

SharedState = type[StorageAppState] | type[StorageUserState]
PROGRAM_LIMIT_EXCEEDED = "54000"


def checked_state(state: ColumnElement[Any], scope: str, max_bytes: int) -> ColumnElement[Any]:
    """`state`, or an error that aborts the statement if it is over `max_bytes` (migration 0003)."""
    return func.sessionary_checked_state(state, scope, max_bytes, type_=JSONB)


def state_too_large(error: BaseException, max_bytes: int) -> StateTooLarge:
    """The domain error for a write the guard refused (SQLSTATE 54000, which PostgreSQL also
    raises for a jsonb value over its own 256 MB maximum). `error` is asyncpg's, maybe wrapped
    by SQLAlchemy; the guard's DETAIL says `<scope> <bytes>`."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, asyncpg.PostgresError):
        cause = getattr(cause, "orig", None) or cause.__cause__
    scope, _, size = (getattr(cause, "detail", None) or "").partition(" ")
    return StateTooLarge(scope or "resulting", int(size) if size.isdigit() else None, max_bytes)


def is_state_too_large(error: DBAPIError) -> bool:
    return getattr(error.orig, "sqlstate", None) == PROGRAM_LIMIT_EXCEEDED


async def merge_app(
    db: AsyncConnection, app_name: str, delta: dict[str, Any], max_bytes: int
) -> dict[str, Any]:
    """Merge into the app's state (top level, atomic); returns the new state."""
    return await _merge(db, StorageAppState, "app", {"app_name": app_name}, delta, max_bytes)


async def merge_user(
    db: AsyncConnection, app_name: str, user_id: str, delta: dict[str, Any], max_bytes: int
) -> dict[str, Any]:
    """Merge into the user's state (top level, atomic); returns the new state."""
    keys = {"app_name": app_name, "user_id": user_id}
    return await _merge(db, StorageUserState, "user", keys, delta, max_bytes)


async def _merge(
    db: AsyncConnection,
    table: SharedState,
    scope: str,
    keys: dict[str, str],
    delta: dict[str, Any],
    max_bytes: int,
) -> dict[str, Any]:
    """`INSERT … ON CONFLICT DO UPDATE SET state = state || delta`: concurrent writers of
    different keys never lose each other's writes."""
    row = select(
        *(literal(value).label(column) for column, value in keys.items()),
        checked_state(literal(delta, JSONB), scope, max_bytes).label("state"),
    )
    statement = insert(table).from_select([*keys, "state"], row)
    statement = statement.on_conflict_do_update(
        index_elements=list(keys),
        set_={
            "state": checked_state(
                table.state.op("||")(statement.excluded.state), scope, max_bytes
            ),
            "update_time": func.now(),
        },
    )
    try:
        state: dict[str, Any] = (await db.execute(statement.returning(table.state))).scalar_one()
    except DBAPIError as error:
        if is_state_too_large(error):
            raise state_too_large(error, max_bytes) from error
        raise
    return state


async def get_app(db: AsyncConnection, app_name: str) -> dict[str, Any]:
    state = await db.scalar(
        select(StorageAppState.state).where(StorageAppState.app_name == app_name)
    )
    return state or {}


async def get_user(db: AsyncConnection, app_name: str, user_id: str) -> dict[str, Any]:
    state = await db.scalar(
        select(StorageUserState.state).where(
            StorageUserState.app_name == app_name, StorageUserState.user_id == user_id
        )
    )
    return state or {}
