"""SQL for API keys."""

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import StorageApiKey


async def insert(db: AsyncSession, key: StorageApiKey) -> None:
    db.add(key)
    await db.flush()


async def find_active(db: AsyncSession, secret_hash: bytes) -> StorageApiKey | None:
    found: StorageApiKey | None = await db.scalar(
        select(StorageApiKey).where(
            StorageApiKey.secret_hash == secret_hash, StorageApiKey.revoke_time.is_(None)
        )
    )
    return found


async def list_all(db: AsyncSession) -> list[StorageApiKey]:
    return list(await db.scalars(select(StorageApiKey).order_by(StorageApiKey.create_time)))


async def revoke(db: AsyncSession, key_id: str) -> bool:
    revoked = await db.scalar(
        update(StorageApiKey)
        .where(StorageApiKey.id == key_id, StorageApiKey.revoke_time.is_(None))
        .values(revoke_time=func.now())
        .returning(StorageApiKey.id)
    )
    return revoked is not None
