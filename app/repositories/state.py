"""SQL for shared state: one row per app (`app_states`) and per app user (`user_states`)."""

from typing import Any

from sqlalchemy import CTE, ColumnExpressionArgument, Text, cast, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB, Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.models import StorageAppState, StorageUserState

SharedState = type[StorageAppState] | type[StorageUserState]


def json_literal(value: Any) -> ColumnElement[Any]:
    return literal(value, JSONB)


def text_size(state: ColumnExpressionArgument[Any]) -> ColumnElement[int]:
    """Bytes of a JSONB value as text: what the state limits are measured in."""
    return func.octet_length(cast(state, Text))


def merge_statement(
    table: SharedState, keys: dict[str, str], delta: dict[str, Any], *, only_with: CTE | None = None
) -> Insert:
    """`INSERT … ON CONFLICT DO UPDATE SET state = state || delta`: atomic top-level merge.

    With `only_with`, the row is written only if that CTE produced a row (the session append).
    """
    row = select(
        *(literal(value).label(column) for column, value in keys.items()),
        json_literal(delta).label("state"),
    )
    if only_with is not None:
        row = row.select_from(only_with)
    statement = insert(table).from_select([*keys, "state"], row)
    return statement.on_conflict_do_update(
        index_elements=list(keys),
        set_={"state": table.state.op("||")(statement.excluded.state), "update_time": func.now()},
    )


def app_keys(app_name: str) -> dict[str, str]:
    return {"app_name": app_name}


def user_keys(app_name: str, user_id: str) -> dict[str, str]:
    return {"app_name": app_name, "user_id": user_id}


async def merge_app(
    db: AsyncSession, app_name: str, delta: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """Merge into the app's state; returns the new state and its size in bytes."""
    return await _merge(db, StorageAppState, app_keys(app_name), delta)


async def merge_user(
    db: AsyncSession, app_name: str, user_id: str, delta: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """Merge into the user's state; returns the new state and its size in bytes."""
    return await _merge(db, StorageUserState, user_keys(app_name, user_id), delta)


async def _merge(
    db: AsyncSession, table: SharedState, keys: dict[str, str], delta: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    statement = merge_statement(table, keys, delta).returning(table.state, text_size(table.state))
    state, size = (await db.execute(statement)).one()
    return state, size


async def get_app(db: AsyncSession, app_name: str) -> dict[str, Any]:
    state = await db.scalar(
        select(StorageAppState.state).where(StorageAppState.app_name == app_name)
    )
    return state or {}


async def get_user(db: AsyncSession, app_name: str, user_id: str) -> dict[str, Any]:
    state = await db.scalar(
        select(StorageUserState.state).where(
            StorageUserState.app_name == app_name, StorageUserState.user_id == user_id
        )
    )
    return state or {}
