"""SQL for queued input: events waiting, in the order they came, to be promoted into the log."""

from typing import Any

import asyncpg
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as upsert

from app.db import execute, fetch, fetchval
from app.domain import SessionKey
from app.models import StoragePendingEvent


def _session(key: SessionKey) -> Any:
    return (
        (StoragePendingEvent.app_name == key.app_name)
        & (StoragePendingEvent.user_id == key.user_id)
        & (StoragePendingEvent.session_id == key.session_id)
    )


async def enqueue(
    connection: asyncpg.Connection, key: SessionKey, event: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Queue the event; if its id is queued already, the event queued under it. Whether it
    was queued now."""
    statement = (
        upsert(StoragePendingEvent)
        .values(**key.columns(), id=event["id"], event=event)
        .on_conflict_do_nothing(constraint="uq_pending_events_app_name_user_id_session_id_id")
        .returning(StoragePendingEvent.event)
    )
    queued = await fetchval(connection, statement)
    if queued is not None:
        return dict(queued), True
    found = select(StoragePendingEvent.event).where(
        _session(key), StoragePendingEvent.id == event["id"]
    )
    return dict(await fetchval(connection, found)), False


async def count(connection: asyncpg.Connection, key: SessionKey) -> int:
    return int(await fetchval(connection, select(func.count()).where(_session(key))) or 0)


async def queued(
    connection: asyncpg.Connection, key: SessionKey, *, lock: bool = False
) -> list[dict[str, Any]]:
    """The queued events in order; with `lock`, held until the transaction ends."""
    statement = (
        select(StoragePendingEvent.event)
        .where(_session(key))
        .order_by(StoragePendingEvent.position)
    )
    if lock:
        statement = statement.with_for_update()
    return [dict(row[0]) for row in await fetch(connection, statement)]


async def clear(connection: asyncpg.Connection, key: SessionKey) -> None:
    await execute(connection, delete(StoragePendingEvent).where(_session(key)))
