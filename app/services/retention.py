"""Retention: expired sessions are gone at once (every statement takes them for absent) and
deleted later, here, by one sweeper at a time across workers and replicas; with them, the
objects of the object store no artifact points at any more."""

import asyncio
import logging

from app.config import Settings
from app.db import DriverPool
from app.domain import Change
from app.observability import SESSIONS_SWEPT
from app.repositories import memories as memory_rows
from app.repositories import retention as retention_rows
from app.repositories.live import announce
from app.services.audit import AuditLog
from app.services.contents import Contents

logger = logging.getLogger("sessionary.sweeper")


class RetentionService:
    def __init__(
        self, pool: DriverPool, settings: Settings, contents: Contents, audit: AuditLog
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.contents = contents
        self.audit = audit

    async def sweep(self) -> int | None:
        """Delete every expired session, `sweep_batch` per transaction; how many, or None if
        another sweeper is at work (it will delete them)."""
        # The lock's transaction stays open, idle, until the sweep is done: on a connection of
        # its own, not one of the pool's, which the requests need meanwhile.
        lock = await self.pool.connector.connect()
        try:
            async with lock.transaction():
                if not await retention_rows.take_sweeper_lock(lock):
                    return None
                swept = await self._sweep_batches()
                memories = await self._sweep_memories()
                await self.contents.sweep()
                records = await self.audit.sweep()
                if swept or memories or records:
                    async with self.pool.transaction() as connection:
                        await self.audit.record(
                            connection,
                            "retention.sweep",
                            detail={
                                "sessions": swept,
                                "memories": memories,
                                "auditRecords": records,
                            },
                        )
                return swept
        finally:
            await lock.close()

    async def _sweep_batches(self) -> int:
        swept = 0
        while True:
            async with self.pool.transaction() as connection:
                deleted = await retention_rows.delete_expired(connection, self.settings.sweep_batch)
                for gone in deleted:
                    await announce(
                        connection, Change("deleted", gone.key, gone.version, gone.parent_id)
                    )
            swept += len(deleted)
            SESSIONS_SWEPT.inc(len(deleted))
            if len(deleted) < self.settings.sweep_batch:
                return swept

    async def _sweep_memories(self) -> int:
        """Expired memories, which read as absent already, deleted with what they hold; how
        many."""
        swept = 0
        while True:
            async with self.pool.transaction() as connection:
                deleted = await memory_rows.delete_expired(connection, self.settings.sweep_batch)
            swept += deleted
            if deleted < self.settings.sweep_batch:
                return swept

    async def sweep_forever(self) -> None:
        """A worker's sweeper: a sweep every `sweep_interval` seconds; a failed sweep is
        logged and the next one tries again."""
        while True:
            await asyncio.sleep(self.settings.sweep_interval)
            try:
                swept = await self.sweep()
            except Exception:
                logger.exception("sweep of expired sessions failed; retrying next interval")
            else:
                if swept:
                    logger.info("swept %d expired sessions", swept)
