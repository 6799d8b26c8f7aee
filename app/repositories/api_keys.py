"""SQL for API keys."""

from collections.abc import Mapping
from typing import Any

import asyncpg
from sqlalchemy import func, insert, select, update

from app.db import fetch, fetchrow, fetchval
from app.domain import ApiKey
from app.models import StorageApiKey

_KEY_COLUMNS = (
    StorageApiKey.id,
    StorageApiKey.name,
    StorageApiKey.app_name,
    StorageApiKey.user_id,
    StorageApiKey.read_only,
    StorageApiKey.app_state_write,
    StorageApiKey.create_time,
    StorageApiKey.revoke_time,
)


def _key(row: Mapping[str, Any]) -> ApiKey:
    return ApiKey(**row)


async def insert_key(connection: asyncpg.Connection, key: ApiKey, secret_hash: bytes) -> ApiKey:
    """Store a new key (its creation time is the database's); returns it as stored."""
    values = {column.key: getattr(key, column.key) for column in _KEY_COLUMNS[:6]}
    statement = (
        insert(StorageApiKey).values(**values, secret_hash=secret_hash).returning(*_KEY_COLUMNS)
    )
    row = await fetchrow(connection, statement)
    assert row is not None  # an INSERT … RETURNING returns its row
    return _key(row)


async def find_active(connection: asyncpg.Connection, secret_hash: bytes) -> ApiKey | None:
    row = await fetchrow(
        connection,
        select(*_KEY_COLUMNS).where(
            StorageApiKey.secret_hash == secret_hash, StorageApiKey.revoke_time.is_(None)
        ),
    )
    return None if row is None else _key(row)


async def list_all(connection: asyncpg.Connection) -> list[ApiKey]:
    rows = await fetch(connection, select(*_KEY_COLUMNS).order_by(StorageApiKey.create_time))
    return [_key(row) for row in rows]


async def revoke(connection: asyncpg.Connection, key_id: str) -> bool:
    revoked = await fetchval(
        connection,
        update(StorageApiKey)
        .where(StorageApiKey.id == key_id, StorageApiKey.revoke_time.is_(None))
        .values(revoke_time=func.now())
        .returning(StorageApiKey.id),
    )
    return revoked is not None
