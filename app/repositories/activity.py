"""What the database is doing: background work rests while it serves requests."""

import asyncpg


async def serving(connection: asyncpg.Connection) -> bool:
    """Whether other connections to the database are running statements now. Asked outside a
    long transaction: one sees a single snapshot of the others' activity while it lasts."""
    return bool(
        await connection.fetchval(
            """SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()
                   AND state = 'active' AND pid <> pg_backend_pid()
                   AND backend_type = 'client backend')"""
        )
    )
