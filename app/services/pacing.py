"""Pacing background work (embedding memories, erasing users) so that it leaves requests
their share of the cores: while the database is busy serving others, the work takes `share`
of the time and rests the rest; otherwise it runs throughout."""

import asyncio

from app.db import DriverPool
from app.repositories import activity

# How often a rest looks again whether the database is still busy: a long step's long rest
# ends soon after the load that called for it.
NAP = 0.25


def rest(worked: float, share: float) -> float:
    """Seconds to rest after `worked` seconds of work, to work `share` of the time."""
    return worked * (1 / share - 1)


async def pace(pool: DriverPool, worked: float, share: float) -> None:
    """After a step of background work that took `worked` seconds: rest while the database
    is busy, up to what working `share` of the time asks (nothing when `share` is 1)."""
    owed = rest(worked, share)
    while owed > 0 and await _busy(pool):
        nap = min(owed, NAP)
        await asyncio.sleep(nap)
        owed -= nap


async def _busy(pool: DriverPool) -> bool:
    async with pool.connection() as connection:
        return await activity.busy(connection)
