"""SQL for retention: finding and deleting expired sessions, and the sweepers' lock."""

import asyncpg
from sqlalchemy import delete, func, select, tuple_

from app.db import fetch, fetchval
from app.domain import Deleted, SessionKey
from app.models import StorageSession
from app.repositories.sessions import delete_logs

# The advisory lock every sweeper takes (any number unique to this service's sweepers): one
# sweeper at a time across workers and replicas.
SWEEPER_LOCK = 0x5E55_10_5EEB


async def take_sweeper_lock(connection: asyncpg.Connection) -> bool:
    """Take the lock for the caller's transaction, if no other sweeper holds it: it is let go
    when the transaction ends, however it ends."""
    return bool(await fetchval(connection, select(func.pg_try_advisory_xact_lock(SWEEPER_LOCK))))


async def delete_expired(connection: asyncpg.Connection, limit: int) -> list[Deleted]:
    """Delete up to `limit` expired sessions and their events, soonest expired
    first. The DELETE checks expiry itself: a session whose expiry a writer moved meanwhile
    is checked again once that writer is done, and kept. (No `FOR UPDATE` in the choice:
    Citus refuses it across shards.)"""
    key = tuple_(StorageSession.app_name, StorageSession.user_id, StorageSession.id)
    expired = StorageSession.expire_time <= func.now()
    chosen = (
        select(StorageSession.app_name, StorageSession.user_id, StorageSession.id)
        .where(expired)
        .order_by(StorageSession.expire_time)
        .limit(limit)
    )
    statement = (
        delete(StorageSession)
        .where(key.in_(chosen), expired)
        .returning(
            StorageSession.app_name,
            StorageSession.user_id,
            StorageSession.id,
            StorageSession.version,
            StorageSession.parent_id,
        )
    )
    rows = await fetch(connection, statement)
    deleted = [Deleted(SessionKey(*row[:3]), row["version"], row["parent_id"]) for row in rows]
    for gone in deleted:  # one session's at a time: on Citus each stays on its shard
        await delete_logs(connection, gone.key)
    return deleted
