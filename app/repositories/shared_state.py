"""SQL for shared state: one row per app (`app_states`) and per app user (`user_states`), and
the size guard every state write goes through."""

from typing import Any

import asyncpg
from sqlalchemy import func, literal, select
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.sql.elements import ColumnElement

from app.db import fetchval
from app.errors import StateTooLarge
from app.models import StorageAppState, StorageUserState

SharedState = type[StorageAppState] | type[StorageUserState]
PROGRAM_LIMIT_EXCEEDED = "54000"


def checked_state(state: ColumnElement[Any], scope: str, max_bytes: int) -> ColumnElement[Any]:
    """`state`, or an error that aborts the statement if it is over `max_bytes` (migration 0003)."""
    return func.sessionary_checked_state(state, scope, max_bytes, type_=JSONB)


def state_too_large(error: BaseException, max_bytes: int) -> StateTooLarge:
    """The domain error for a write the guard refused (SQLSTATE 54000, which PostgreSQL also
    raises for a jsonb value over its own 256 MB maximum); the guard's DETAIL says
    `<scope> <bytes>`."""
    scope, _, size = (getattr(error, "detail", None) or "").partition(" ")
    return StateTooLarge(scope or "resulting", int(size) if size.isdigit() else None, max_bytes)


def is_state_too_large(error: asyncpg.PostgresError) -> bool:
    return bool(error.sqlstate == PROGRAM_LIMIT_EXCEEDED)


async def merge_app(
    connection: asyncpg.Connection, app_name: str, delta: dict[str, Any], max_bytes: int
) -> dict[str, Any]:
    """Merge into the app's state (top level, atomic); returns the new state."""
    return await _merge(
        connection, StorageAppState, "app", {"app_name": app_name}, delta, max_bytes
    )


async def merge_user(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    delta: dict[str, Any],
    max_bytes: int,
) -> dict[str, Any]:
    """Merge into the user's state (top level, atomic); returns the new state."""
    keys = {"app_name": app_name, "user_id": user_id}
    return await _merge(connection, StorageUserState, "user", keys, delta, max_bytes)


async def _merge(
    connection: asyncpg.Connection,
    table: SharedState,
    scope: str,
    keys: dict[str, str],
    delta: dict[str, Any],
    max_bytes: int,
) -> dict[str, Any]:
    """`INSERT … ON CONFLICT DO UPDATE SET state = state || delta`: concurrent writers of
    different keys never lose each other's writes. The time comes from the row proposed
    (`excluded`): Citus takes only immutable functions in `DO UPDATE SET`."""
    statement = insert(table).values(
        **keys,
        state=checked_state(literal(delta, JSONB), scope, max_bytes),
        update_time=func.now(),
    )
    statement = statement.on_conflict_do_update(
        index_elements=list(keys),
        set_={
            "state": checked_state(
                table.state.op("||")(statement.excluded.state), scope, max_bytes
            ),
            "update_time": statement.excluded.update_time,
        },
    )
    try:
        state: dict[str, Any] = await fetchval(connection, statement.returning(table.state))
    except asyncpg.PostgresError as error:
        if is_state_too_large(error):
            raise state_too_large(error, max_bytes) from error
        raise
    return state


async def get_app(connection: asyncpg.Connection, app_name: str) -> dict[str, Any]:
    state = await fetchval(
        connection, select(StorageAppState.state).where(StorageAppState.app_name == app_name)
    )
    return state or {}


async def get_user(connection: asyncpg.Connection, app_name: str, user_id: str) -> dict[str, Any]:
    state = await fetchval(
        connection,
        select(StorageUserState.state).where(
            StorageUserState.app_name == app_name, StorageUserState.user_id == user_id
        ),
    )
    return state or {}
