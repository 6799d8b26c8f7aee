"""SQL for an app's token usage: its events' stored `usageMetadata` counts, summed by user."""

from typing import Any

import asyncpg
from sqlalchemy import BigInteger, cast, func, literal_column, or_, select

from app.db import fetch
from app.domain import Usage
from app.limits import INT64_MAX
from app.models import StorageEvent
from app.repositories.events import USAGE_COLUMNS


def _summed(column: Any) -> Any:
    """The sum of `column`, at most 2^63 - 1: sum(bigint) is a numeric, which passes what a
    bigint holds once the sessions of an app count that many tokens between them; capped, the
    app's usage is still read, and as a bigint it comes back an int."""
    capped = func.least(func.coalesce(func.sum(column), 0), literal_column(str(INT64_MAX)))
    return cast(capped, BigInteger)


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
            *(_summed(column) for column in USAGE_COLUMNS),
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
