"""Retention: expired sessions are gone at once (every statement takes them for absent) and
deleted later, here, by one sweeper at a time across workers and replicas."""

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.domain import Change
from app.observability import SESSIONS_SWEPT
from app.repositories import retention as retention_rows
from app.repositories.live import announce

logger = logging.getLogger("sessionary.sweeper")


class RetentionService:
    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings

    async def sweep(self) -> int | None:
        """Delete every expired session, `sweep_batch` per transaction; how many, or None if
        another sweeper is at work (it will delete them)."""
        async with self.engine.begin() as lock:  # held, idle, until the sweep is done
            if not await retention_rows.take_sweeper_lock(lock):
                return None
            swept = 0
            while True:
                async with self.engine.begin() as db:
                    deleted = await retention_rows.delete_expired(db, self.settings.sweep_batch)
                    for gone in deleted:
                        await announce(
                            db, Change("deleted", gone.key, gone.version, gone.parent_id)
                        )
                swept += len(deleted)
                SESSIONS_SWEPT.inc(len(deleted))
                if len(deleted) < self.settings.sweep_batch:
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
