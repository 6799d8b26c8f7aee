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


async def test_work_rests_while_other_connections_keep_the_database_busy(new_database):
    url = await asyncio.to_thread(new_database)
    watching = await asyncpg.connect(url)
    others = [await asyncpg.connect(url) for _ in range(2)]
    pool = await db.DriverPool.open(db.connector(url, Settings(database_url=url)), size=1)
    try:
        assert not await activity.busy(watching)
        began = time.monotonic()
        await pace(pool, 5.0, 0.5)
        assert time.monotonic() - began < 2.5  # idle: no rest (it would be 5 s)
        one = asyncio.create_task(others[0].execute("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.3)
        assert not await activity.busy(watching)  # one request at a time is not busy
        two = asyncio.create_task(others[1].execute("SELECT pg_sleep(1)"))
        await asyncio.sleep(0.3)
        assert await activity.busy(watching)
        began = time.monotonic()
        await pace(pool, 0.2, 0.5)
        assert time.monotonic() - began >= 0.2  # rested as long as it worked
        await asyncio.gather(one, two)
        assert not await activity.busy(watching)
        three = asyncio.create_task(others[0].execute("SELECT pg_sleep(0.5)"))
        four = asyncio.create_task(others[1].execute("SELECT pg_sleep(0.5)"))
        await asyncio.sleep(0.2)
        began = time.monotonic()
        await pace(pool, 5.0, 0.5)
        assert 0.2 <= time.monotonic() - began < 2.5  # rested until the load ended, not 5 s
        await asyncio.gather(three, four)
    finally:
        await pool.close()
        await watching.close()
        for other in others:
            await other.close()
