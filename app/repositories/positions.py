"""SQL for positions in the primary's write-ahead log (WAL): where it stands after a write,
and whether a streaming replica has replayed that far (`minPosition`). A position is
PostgreSQL's `pg_lsn`, which asyncpg reads and binds as an integer."""

import asyncpg


async def current(connection: asyncpg.Connection) -> int:
    """The primary's WAL position now, at or past the end of every commit made before, read
    after the write committed. The insert position rather than `pg_current_wal_lsn()` (how
    far the WAL was written out): under `synchronous_commit = off` a commit returns before
    its record is written, and the write position may still lie before it, so a replica
    there could still show what the write deleted. The insert position errs the other way
    only: at a page boundary it lies past the page's header, where a replica's replay stands
    once the next record comes, so a read asking for it goes to the primary until then."""
    position: int = await connection.fetchval("SELECT pg_current_wal_insert_lsn()")
    return position


async def replayed(connection: asyncpg.Connection, position: int) -> bool:
    """Whether this standby has replayed the WAL up to `position`: then a snapshot taken
    after holds every commit before it. False on a server that is not a standby (it replays
    nothing: `pg_last_wal_replay_lsn()` is null)."""
    found: bool | None = await connection.fetchval(
        "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", position
    )
    return bool(found)
