"""What the database is doing: background work rests while it serves requests."""

import asyncpg


async def busy(connection: asyncpg.Connection) -> bool:
    """Whether the database is busy: two or more other connections running statements now.
    A request or two at a time leave the cores to background work; a load keeps several
    running. Asked outside a long transaction: one sees a single snapshot of the others'
    activity while it lasts."""
    return bool(
        await connection.fetchval(
            """SELECT count(*) >= 2 FROM pg_stat_activity WHERE datname = current_database()
                   AND state = 'active' AND pid <> pg_backend_pid()
                   AND backend_type = 'client backend'"""
        )
    )
