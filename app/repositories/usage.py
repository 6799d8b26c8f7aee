"""SQL for an app's token usage: its events' stored `usageMetadata` counts, summed by user."""

from typing import Any

import asyncpg
from sqlalchemy import BigInteger, cast, func, or_, select

from app.db import fetch
from app.domain import Usage
from app.models import StorageEvent
from app.repositories.events import USAGE_COLUMNS


async def by_user(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str | None,
    after_timestamp: float | None,
    before_timestamp: float | None,
) -> list[tuple[str, int, Usage]]:
    """(user, events that report usage, their sums) for each user with any, by user id; of
    one user when `user_id` is given, of the events with timestamp ≥ `after_timestamp` and <
    `before_timestamp` when given."""
    statement: Any = (
        select(
            StorageEvent.user_id,
            func.count(),
            # sum(bigint) is a numeric: as bigint, it comes back an int.
            *(cast(func.coalesce(func.sum(column), 0), BigInteger) for column in USAGE_COLUMNS),
        )
        .where(StorageEvent.app_name == app_name, or_(*(c.is_not(None) for c in USAGE_COLUMNS)))
        .group_by(StorageEvent.user_id)
        .order_by(StorageEvent.user_id)
    )
    if user_id is not None:
        statement = statement.where(StorageEvent.user_id == user_id)
    if after_timestamp is not None:
        statement = statement.where(StorageEvent.timestamp >= after_timestamp)
    if before_timestamp is not None:
        statement = statement.where(StorageEvent.timestamp < before_timestamp)
    rows = await fetch(connection, statement)
    return [(row[0], row[1], Usage(row[2], row[3], row[4])) for row in rows]
