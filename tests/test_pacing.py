"""Background work (embedding memories, erasing users) rests while the database serves
other connections, so that it takes only its share of the cores."""

import asyncio
import time

import asyncpg

from app import db
from app.config import Settings
from app.repositories import activity
from app.services.pacing import pace, rest


def test_a_share_of_the_time_at_work_is_the_rest_that_follows():
    assert rest(2.0, 0.25) == 6.0
    assert rest(2.0, 0.5) == 2.0
    assert rest(2.0, 1) == 0


async def test_work_rests_while_another_connection_runs_a_statement(new_database):
    url = await asyncio.to_thread(new_database)
    watching, busy = await asyncpg.connect(url), await asyncpg.connect(url)
    pool = await db.DriverPool.open(db.connector(url, Settings(database_url=url)), size=1)
    try:
        assert not await activity.serving(watching)
        began = time.monotonic()
        await pace(pool, 5.0, 0.5)
        assert time.monotonic() - began < 2.5  # idle: no rest (it would be 5 s)
        sleeping = asyncio.create_task(busy.execute("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.3)
        assert await activity.serving(watching)
        began = time.monotonic()
        await pace(pool, 0.2, 0.5)
        assert time.monotonic() - began >= 0.2  # rested as long as it worked
        await sleeping
        assert not await activity.serving(watching)
    finally:
        await pool.close()
        await watching.close()
        await busy.close()
