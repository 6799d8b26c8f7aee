"""Where a session read goes: to the read replica (DATABASE_READ_URL) when there is one and it
holds what the reader needs, else to the primary."""

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from app.db import DriverPool
from app.errors import DatabaseUnavailable, SessionNotFound
from app.observability import SESSION_READS
from app.repositories import positions

logger = logging.getLogger("sessionary")
Result = TypeVar("Result")
# A read on one connection: the session's version as read, and what the caller wants.
Read = Callable[[asyncpg.Connection], Awaitable[tuple[int, Result]]]


class Reads:
    """A replica lags its primary. A read asking `min_version` (the version of the reader's
    last write: read-your-writes) is served by the replica only if the session is there at
    that version or later; one asking `min_position` (the primary's WAL position after the
    reader's last write, `position`: a delete too, which leaves no version to ask for) only
    if the replica has replayed the WAL that far, checked on the read's own connection
    before it reads; with both, both must hold. Else the primary serves it. Without either,
    the replica answers whatever it holds, a 404 for a session it has not received yet
    included. A replica that cannot be reached hands its reads to the primary."""

    def __init__(self, primary: DriverPool, replica: DriverPool | None) -> None:
        self.primary = primary
        self.replica = replica

    async def run(
        self, read: "Read[Result]", min_version: int | None, min_position: int | None = None
    ) -> Result:
        if self.replica is not None:
            try:
                async with self.replica.connection() as connection:
                    # Checked first: replay only moves on, so the read's snapshot, taken
                    # after, holds every commit before `min_position`.
                    if min_position is None or await positions.replayed(connection, min_position):
                        version, result = await read(connection)
                        if min_version is None or version >= min_version:
                            SESSION_READS.labels("replica").inc()
                            return result
            except SessionNotFound:
                if min_version is None:  # the replica has replayed `min_position`, if asked
                    SESSION_READS.labels("replica").inc()
                    raise
            except DatabaseUnavailable as error:
                logger.warning("the read replica cannot serve (%s); reading the primary", error)
            SESSION_READS.labels("primary").inc()
        async with self.primary.connection() as connection:
            return (await read(connection))[1]

    async def position(self) -> int:
        """The primary's WAL position now: a read that asks for it (`min_position`) holds
        every write committed before this call."""
        async with self.primary.connection() as connection:
            return await positions.current(connection)
