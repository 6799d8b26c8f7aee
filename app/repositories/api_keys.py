"""SQL for API keys."""

from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

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


def _key(row: Any) -> ApiKey:
    return ApiKey(**row._mapping)


async def insert_key(db: AsyncConnection, key: ApiKey, secret_hash: bytes) -> ApiKey:
    """Store a new key (its creation time is the database's); returns it as stored."""
    values = {column.key: getattr(key, column.key) for column in _KEY_COLUMNS[:6]}
    statement = (
        insert(StorageApiKey).values(**values, secret_hash=secret_hash).returning(*_KEY_COLUMNS)
    )
    return _key((await db.execute(statement)).one())


async def find_active(db: AsyncConnection, secret_hash: bytes) -> ApiKey | None:
    row = (
        await db.execute(
            select(*_KEY_COLUMNS).where(
                StorageApiKey.secret_hash == secret_hash, StorageApiKey.revoke_time.is_(None)
            )
        )
    ).one_or_none()
    return None if row is None else _key(row)


async def list_all(db: AsyncConnection) -> list[ApiKey]:
    rows = await db.execute(select(*_KEY_COLUMNS).order_by(StorageApiKey.create_time))
    return [_key(row) for row in rows]


async def revoke(db: AsyncConnection, key_id: str) -> bool:
    revoked = await db.scalar(
        update(StorageApiKey)
        .where(StorageApiKey.id == key_id, StorageApiKey.revoke_time.is_(None))
        .values(revoke_time=func.now())
        .returning(StorageApiKey.id)
    )
    return revoked is not None
