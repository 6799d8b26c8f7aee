"""The scenarios, written once against `System` so every system runs the same workload.

Writes (S1, S2) open every client's lane before the clock starts, then time the whole burst:
events/s is events over wall time, latencies are per request. Each repetition appends to
fresh sessions so no repetition inherits another's longer logs. Reads (S3-S5) are sequential
calls from one client after two untimed warm-up calls; a figure is the median call.
"""

import asyncio
import statistics
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from app.domain import SessionKey
from bench.cpu import CpuSplit, median_split
from bench.systems import Lane, System
from bench.workload import APPEND_APP, EventSpec, Sizes, specs


@dataclass(frozen=True)
class Burst:
    events_per_second: float
    p50_ms: float
    p99_ms: float
    cpu: CpuSplit | None = None  # where the host's CPU went, when it was measured


def _percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _burst(
    system: System,
    tag: str,
    *,
    sessions: int,
    per_session: int,
    clients: int,
    batch: bool,
) -> Burst:
    """Append `per_session` events to each of `sessions` new sessions from `clients` clients."""
    keys = [SessionKey(APPEND_APP, f"u{i % 16}", f"{tag}-s{i}") for i in range(sessions)]
    handles = await system.create_sessions(keys)
    work: list[Any] = []
    for key in keys:
        events: list[EventSpec] = specs(key.session_id, per_session)
        work.append(system.encode_batch(key, events) if batch else system.encode(key, events))
    latencies: list[float] = []
    clients = min(clients, sessions)

    async def client(lane: Lane, first: int) -> None:
        for i in range(first, sessions, clients):
            requests = [work[i]] if batch else work[i]
            for request in requests:
                started = time.perf_counter()
                if batch:
                    await lane.append_batch(handles[i], request)
                else:
                    await lane.append(handles[i], request)
                latencies.append(time.perf_counter() - started)

    async with AsyncExitStack() as stack:
        lanes = [await stack.enter_async_context(system.lane()) for _ in range(clients)]
        started = time.perf_counter()
        await asyncio.gather(*(client(lane, c) for c, lane in enumerate(lanes)))
        elapsed = time.perf_counter() - started
    return Burst(
        events_per_second=sessions * per_session / elapsed,
        p50_ms=_percentile(latencies, 0.50) * 1000,
        p99_ms=_percentile(latencies, 0.99) * 1000,
    )


def median_burst(bursts: Sequence[Burst]) -> Burst:
    splits = [b.cpu for b in bursts if b.cpu is not None]
    return Burst(
        events_per_second=statistics.median(b.events_per_second for b in bursts),
        p50_ms=statistics.median(b.p50_ms for b in bursts),
        p99_ms=statistics.median(b.p99_ms for b in bursts),
        cpu=median_split(splits) if splits else None,
    )


async def append(system: System, sizes: Sizes, label: str) -> Burst:
    """S1: single-event appends, `clients` concurrent clients, median of `repeat` bursts."""
    await _burst(
        system,
        f"{label}-warm",
        sessions=sizes.clients,
        per_session=5,
        clients=sizes.clients,
        batch=False,
    )
    bursts = [
        await _burst(
            system,
            f"{label}-r{rep}",
            sessions=sizes.append_sessions,
            per_session=sizes.appends_per_session,
            clients=sizes.clients,
            batch=False,
        )
        for rep in range(sizes.repeat)
    ]
    return median_burst(bursts)


async def batch_append(system: System, sizes: Sizes, label: str) -> Burst:
    """S2: S1's number of events, `batch` per request (one session per request)."""
    sessions = max(1, sizes.append_events // sizes.batch)
    bursts = [
        await _burst(
            system,
            f"{label}-r{rep}",
            sessions=sessions,
            per_session=sizes.batch,
            clients=sizes.clients,
            batch=True,
        )
        for rep in range(sizes.repeat)
    ]
    return median_burst(bursts)


async def median_call(times: int, call: Any) -> float:
    """Median milliseconds of `times` sequential calls, after two untimed ones."""
    for _ in range(2):
        await call()
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def read(system: System, sizes: Sizes, key: SessionKey, recent: int | None) -> float:
    """S3 (recent=None: the whole session) and S4 (the `recent` latest events): median ms."""
    expected = sizes.long_session if recent is None else recent
    async with system.lane() as lane:

        async def call() -> None:
            count = await lane.read(key, recent)
            if count != expected:
                raise AssertionError(f"{system.name} read {count} events, expected {expected}")

        return await median_call(sizes.read_repeat, call)


async def list_pages(system: System, sizes: Sizes, app: str, *, paged: bool) -> tuple[float, float]:
    """S5: median ms of the first page and of page `far_page` (NaN without paging)."""
    async with system.lane() as lane:
        expected = sizes.page_size if paged else sizes.list_sessions

        async def first() -> None:
            count, _ = await lane.list_page(app, sizes.page_size, None)
            if count != expected:
                raise AssertionError(f"{system.name} listed {count}, expected {expected}")

        first_ms = await median_call(sizes.read_repeat, first)
        if not paged:
            return first_ms, float("nan")
        token = None
        for _ in range(sizes.far_page - 1):
            _, token = await lane.list_page(app, sizes.page_size, token)
            assert token is not None, "ran out of pages"

        async def far() -> None:
            count, _ = await lane.list_page(app, sizes.page_size, token)
            if count != sizes.page_size:
                raise AssertionError(f"{system.name} page {sizes.far_page} listed {count}")

        return first_ms, await median_call(sizes.read_repeat, far)
