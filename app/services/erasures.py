"""Erasing a user of an app: everything of theirs, in bounded transactions, as a job.

1. The fence, one transaction: the erasure's row (which refuses the user's writes from its
   commit on, `repositories.erasures`), every session of the user (appends to them fail from
   here, and their live streams get a final `deleted` frame), and the keys made for the user.
2. The rest, table by table (every table with a user's rows, read from the catalog), in
   transactions of at most `SESSIONARY_ERASE_BATCH` rows, each counted in the erasure.
3. The end, one transaction: the erasure forgets the user's id (the fence lifts; a write after
   it starts the user afresh), and the audit log records what was removed, by kind.

Any process runs the steps of an erasure it finds stalled (its own process stopped), so a
started erase always finishes; one step runs at a time.
"""

import asyncio
import logging
import time
from dataclasses import dataclass

import asyncpg

from app.config import Settings
from app.db import DriverPool
from app.domain import Change, SessionKey
from app.errors import ErasureNotFound
from app.repositories import erasures as erasure_rows
from app.repositories.erasures import Erasure, UserTable
from app.repositories.live import announce
from app.services.audit import ACTING_KEY, AuditLog
from app.services.contents import Contents
from app.services.pacing import pace

logger = logging.getLogger(__name__)

# Seconds without a step after which another process takes a running erasure over.
STALLED_AFTER = 60.0


@dataclass(frozen=True)
class ErasureStatus:
    """An erasure as the API shows it: the user's id is the caller's, never stored."""

    erasure: Erasure
    user_id: str


def _kind(table: str) -> str:
    """The name a table's rows are counted under (`pending_events` → `pendingEvents`)."""
    first, *rest = table.split("_")
    return first + "".join(word.title() for word in rest)


class ErasureService:
    def __init__(
        self, pool: DriverPool, settings: Settings, contents: Contents, audit: AuditLog
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.contents = contents
        self.audit = audit
        self._jobs: dict[str, asyncio.Task[None]] = {}

    async def erase_user(self, app_name: str, user_id: str, *, wait: float | None) -> ErasureStatus:
        """Start erasing the user (or find the erase running), and wait for it up to `wait`
        seconds (None: until it is done): its status then, done or running."""
        async with self.pool.transaction() as connection:
            user_ref = await self.audit.user_ref(connection, app_name, user_id)
            erasure, started = await erasure_rows.fence(
                connection, app_name, user_id, user_ref, ACTING_KEY.get()
            )
            if started:
                await self._fence(connection, erasure, app_name, user_id)
        task = self._drive(erasure.id, app_name, user_id)
        try:
            await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            pass
        return await self.status(app_name, user_id)

    async def _fence(
        self, connection: asyncpg.Connection, erasure: Erasure, app_name: str, user_id: str
    ) -> None:
        """In the fence's transaction: the user's sessions and keys go first."""
        sessions = await erasure_rows.delete_sessions(connection, app_name, user_id)
        for row in sessions:
            key = SessionKey(app_name, user_id, row["id"])
            await announce(connection, Change("deleted", key, row["version"], row["parent_id"]))
        removed = {_kind(table.name): 0 for table in await erasure_rows.user_tables(connection)}
        removed["sessions"] = len(sessions)
        removed["apiKeys"] = await erasure_rows.delete_keys(
            connection, app_name, user_id, erasure.id
        )
        await erasure_rows.set_removed(connection, erasure.id, removed)

    async def status(self, app_name: str, user_id: str) -> ErasureStatus:
        """The user's latest erasure: ErasureNotFound if they were never erased."""
        async with self.pool.connection() as connection:
            user_ref = await self.audit.user_ref(connection, app_name, user_id)
            found = await erasure_rows.latest(connection, app_name, user_ref)
        if found is None:
            raise ErasureNotFound(app_name, user_id)
        return ErasureStatus(found, user_id)

    def _drive(self, erasure_id: str, app_name: str, user_id: str) -> asyncio.Task[None]:
        """The task running the erasure's steps in this process (one per erasure)."""
        task = self._jobs.get(erasure_id)
        if task is None or task.done():
            task = asyncio.create_task(self._run(erasure_id, app_name, user_id))
            self._jobs[erasure_id] = task
            task.add_done_callback(lambda _: self._jobs.pop(erasure_id, None))
        return task

    async def _run(self, erasure_id: str, app_name: str, user_id: str) -> None:
        """Passes over every table until one finds nothing left (a row that a write in flight
        at the fence committed after its table's pass is taken by the next), then the end.
        Returns early when another process runs the erasure now."""
        async with self.pool.connection() as connection:
            tables = await erasure_rows.user_tables(connection)
        while True:
            taken = 0
            for table in tables:
                while True:
                    began = time.monotonic()
                    deleted = await self._step(erasure_id, table, app_name, user_id)
                    if not deleted:
                        break
                    taken += deleted
                    await pace(self.pool, time.monotonic() - began, self.settings.erase_pace)
                if deleted is None:
                    return
            if not taken:
                break
        async with self.pool.transaction() as connection:
            if not await erasure_rows.hold_job(connection, erasure_id):
                return
            finished = await erasure_rows.finish(connection, erasure_id)
            await self.audit.record(
                connection,
                "user.erase",
                app_name=app_name,
                user_id=user_id,
                detail={
                    "erasure": erasure_id,
                    "removed": finished.removed,
                    "keys": finished.deleted_keys,
                },
            )

    async def _step(
        self, erasure_id: str, table: UserTable, app_name: str, user_id: str
    ) -> int | None:
        """One batch of the table's rows deleted and counted: how many (0: none left), or
        None when the erasure is not this transaction's to run (another's, or done)."""
        limit = self.settings.erase_batch
        objects: list[str] = []
        async with self.pool.transaction() as connection:
            if not await erasure_rows.hold_job(connection, erasure_id):
                return None
            if table.name == "artifact_blobs":
                deleted, objects = await erasure_rows.delete_blobs(
                    connection, app_name, user_id, limit
                )
            else:
                deleted = await erasure_rows.delete_batch(
                    connection, table, app_name, user_id, limit
                )
            if deleted:
                await erasure_rows.count_removed(connection, erasure_id, _kind(table.name), deleted)
        await self.contents.forget(objects)
        return deleted

    async def resume_forever(self) -> None:
        """Take over erasures whose process stopped, every `sweep_interval` seconds."""
        while True:
            await asyncio.sleep(self.settings.sweep_interval)
            try:
                async with self.pool.connection() as connection:
                    stalled = await erasure_rows.stalled(connection, STALLED_AFTER)
                for erasure_id, app_name, user_id in stalled:
                    await self._drive(erasure_id, app_name, user_id)
            except Exception:
                logger.exception("resuming stalled erasures failed; retrying next interval")
