"""Erasing a user of an app, or a whole app: everything of theirs, in bounded transactions,
as a job. The two differ only in which rows (`ErasureScope`) and in the fence.

1. The fence, one transaction: the erasure's row (which refuses the user's writes, or the
   app's, from its commit on, `repositories.erasures`) and the keys made for the user (or for
   the app and its users). A user's sessions go here too, so that appends to them fail from
   its commit on; an app's may be millions, and go in batches like the rest.
2. The rest, table by table (every table with the scope's rows, read from the catalog), in
   transactions of at most `SESSIONARY_ERASE_BATCH` rows, each counted in the erasure. Each
   session deleted gives its live streams a final `deleted` frame.
3. The end, one transaction: the erasure forgets the user's id (the fence lifts; a write after
   it starts afresh), and the audit log records what was removed, by kind.

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
from app.repositories.erasures import APP_WIDE, ErasedTable, Erasure, ErasureScope
from app.repositories.live import announce
from app.services.audit import ACTING_KEY, AuditLog
from app.services.contents import Contents
from app.services.pacing import pace

logger = logging.getLogger(__name__)

# Seconds without a step after which another process takes a running erasure over.
STALLED_AFTER = 60.0


@dataclass(frozen=True)
class ErasureStatus:
    """An erasure as the API shows it: the user's id is the caller's, never stored (None for
    an app's)."""

    erasure: Erasure
    user_id: str | None


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

    async def erase(self, scope: ErasureScope, *, wait: float | None) -> ErasureStatus:
        """Start erasing the user or the app (or find the erase running), and wait for it up
        to `wait` seconds (None: until it is done): its status then, done or running."""
        async with self.pool.transaction() as connection:
            erasure, started = await erasure_rows.fence(
                connection, scope, await self._ref(connection, scope), ACTING_KEY.get()
            )
            if started:
                await self._fence(connection, erasure, scope)
        task = self._drive(erasure.id, scope)
        try:
            await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            pass
        return await self.status(scope)

    async def _ref(self, connection: asyncpg.Connection, scope: ErasureScope) -> str:
        """How an erasure names whom it erases: the user's pseudonym, or for the app none."""
        if scope.user_id is None:
            return APP_WIDE
        return await self.audit.user_ref(connection, scope.app_name, scope.user_id)

    async def _fence(
        self, connection: asyncpg.Connection, erasure: Erasure, scope: ErasureScope
    ) -> None:
        """In the fence's transaction: the keys go first, and a user's sessions."""
        tables = await erasure_rows.tables_of(connection, scope)
        removed = {_kind(table.name): 0 for table in tables}
        if scope.user_id is not None:
            sessions = next(table for table in tables if table.name == "sessions")
            removed["sessions"] = await _delete_sessions(connection, sessions, scope, None)
        removed["apiKeys"] = await erasure_rows.delete_keys(connection, scope, erasure.id)
        await erasure_rows.set_removed(connection, erasure.id, removed)
        erased = SessionKey(scope.app_name, scope.user_id or "", "")
        await announce(connection, Change("erased", erased, 0))  # ends the user's streams

    async def status(self, scope: ErasureScope) -> ErasureStatus:
        """The latest erasure of the user or the app: ErasureNotFound if never erased."""
        async with self.pool.connection() as connection:
            found = await erasure_rows.latest(
                connection, scope.app_name, await self._ref(connection, scope)
            )
        if found is None:
            raise ErasureNotFound(scope.app_name, scope.user_id)
        return ErasureStatus(found, scope.user_id)

    def _drive(self, erasure_id: str, scope: ErasureScope) -> asyncio.Task[None]:
        """The task running the erasure's steps in this process (one per erasure)."""
        task = self._jobs.get(erasure_id)
        if task is None or task.done():
            task = asyncio.create_task(self._run(erasure_id, scope))
            self._jobs[erasure_id] = task
            task.add_done_callback(lambda _: self._jobs.pop(erasure_id, None))
        return task

    async def _run(self, erasure_id: str, scope: ErasureScope) -> None:
        """Passes over every table until one finds nothing left (a row that a write in flight
        at the fence, or an append to an app's session not yet deleted, committed after its
        table's pass is taken by the next), then the end. Returns early when another process
        runs the erasure now."""
        async with self.pool.connection() as connection:
            tables = await erasure_rows.tables_of(connection, scope)
        while True:
            taken = 0
            for table in tables:
                while True:
                    began = time.monotonic()
                    deleted = await self._step(erasure_id, table, scope)
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
                f"{scope.name}.erase",
                app_name=scope.app_name,
                user_id=scope.user_id,
                detail={
                    "erasure": erasure_id,
                    "removed": finished.removed,
                    "keys": finished.deleted_keys,
                },
            )

    async def _step(self, erasure_id: str, table: ErasedTable, scope: ErasureScope) -> int | None:
        """One batch of the table's rows deleted and counted: how many (0: none left), or
        None when the erasure is not this transaction's to run (another's, or done)."""
        limit = self.settings.erase_batch
        objects: list[str] = []
        async with self.pool.transaction() as connection:
            if not await erasure_rows.hold_job(connection, erasure_id):
                return None
            if table.name == "artifact_blobs":
                deleted, objects = await erasure_rows.delete_blobs(connection, table, scope, limit)
            elif table.name == "sessions":
                deleted = await _delete_sessions(connection, table, scope, limit)
            else:
                deleted = await erasure_rows.delete_batch(connection, table, scope, limit)
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
                for erasure_id, scope in stalled:
                    await self._drive(erasure_id, scope)
            except Exception:
                logger.exception("resuming stalled erasures failed; retrying next interval")


async def _delete_sessions(
    connection: asyncpg.Connection, sessions: ErasedTable, scope: ErasureScope, limit: int | None
) -> int:
    """Delete at most `limit` (None: every one) of the scope's sessions, each announced
    `deleted` to its live streams; how many."""
    rows = await erasure_rows.delete_sessions(connection, sessions, scope, limit)
    for row in rows:
        key = SessionKey(scope.app_name, row["user_id"], row["id"])
        await announce(connection, Change("deleted", key, row["version"], row["parent_id"]))
    return len(rows)
