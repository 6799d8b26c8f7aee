"""Pacing background work (embedding memories, erasing users) so that it leaves requests
their share of the cores: while the database is busy serving others, the work takes `share`
of the time and rests the rest; otherwise it runs throughout."""

import asyncio

from app.db import DriverPool
from app.repositories import activity


def rest(worked: float, share: float) -> float:
    """Seconds to rest after `worked` seconds of work, to work `share` of the time."""
    return worked * (1 / share - 1)


async def pace(pool: DriverPool, worked: float, share: float) -> None:
    """After a step of background work that took `worked` seconds: rest, if the database is
    busy and `share` is under 1."""
    if share >= 1:
        return
    async with pool.connection() as connection:
        busy = await activity.busy(connection)
    if busy:
        await asyncio.sleep(rest(worked, share))
