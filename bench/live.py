"""S10: live streams, with two single-worker servers on one database, as two replicas: the
streams are opened on one, every write goes through the other, so each event reaches its
streams through PostgreSQL's NOTIFY.

- Latency: 100 streams of one session; appends one at a time (each after the previous one's
  201 and a pause, so they do not queue); per stream and event, the time from the 201 to the
  frame's arrival.
- Throughput: S1 under wrk against the writer, without streams, then with a stream open on
  each of 100 of the ring's sessions (each reads what it receives, as a client would).
"""

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field

from app.domain import SessionKey
from bench import wrk
from bench.loadgen import Connection
from bench.scenarios import Burst, median_burst
from bench.sessionary_side import Sessionary, session_path
from bench.workload import LIVE_APP, EventSpec, Sizes, wire_event

STREAMS = 100


@dataclass
class Watcher:
    """One open stream: when each `id:` arrived."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    arrived: dict[int, float] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None

    async def read(self) -> None:
        buffer = b""
        while chunk := await self.reader.read(1 << 16):
            now = time.monotonic()
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"id: "):
                    self.arrived[int(line[4:])] = now

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.writer.close()


async def watch(system: Sessionary, path: str) -> Watcher:
    """Open a stream of a session (from now) and read it in the background."""
    reader, writer = await asyncio.open_connection(system.host, system.port)
    request = f"GET {path}/events:stream HTTP/1.1\r\nHost: {system.host}:{system.port}\r\n\r\n"
    writer.write(request.encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"a stream was refused: {head[:200]!r}")
    watcher = Watcher(reader, writer)
    watcher.task = asyncio.create_task(watcher.read())
    return watcher


async def latency(reader: Sessionary, writer: Sessionary, appends: int) -> list[float]:
    """Milliseconds from each append's 201 to its frame on each of `STREAMS` streams."""
    key = SessionKey(LIVE_APP, "watcher", "watched")
    await writer.create_sessions([key])
    watchers = [await watch(reader, session_path(key)) for _ in range(STREAMS)]
    answered: dict[int, float] = {}
    try:
        await asyncio.sleep(0.5)  # every stream has joined
        async with Connection(writer.host, writer.port) as connection:
            for number in range(1, appends + 1):
                event = wire_event(EventSpec(f"live-{number}", number, time.time()))
                body = json.dumps(event).encode()
                await connection.call("POST", session_path(key) + "/events", body, expect=201)
                answered[number] = time.monotonic()
                await asyncio.sleep(0.02)
        for _ in range(100):  # the last frames, within 10 s
            if all(len(watcher.arrived) >= appends for watcher in watchers):
                break
            await asyncio.sleep(0.1)
    finally:
        for watcher in watchers:
            watcher.close()
    missing = sum(appends - len(watcher.arrived) for watcher in watchers)
    if missing:
        raise RuntimeError(f"{missing} frames never arrived")
    return [
        (watcher.arrived[seq] - at) * 1000 for watcher in watchers for seq, at in answered.items()
    ]


async def throughput(reader: Sessionary, writer: Sessionary, sizes: Sizes, streams: int) -> Burst:
    """S1 against the writer, with a stream open on `streams` of the ring's sessions."""
    bursts = []
    for rep in range(-1, sizes.repeat):  # -1: the untimed warm-up
        paths = await wrk.ring(writer, sizes, f"s10-{streams}-r{rep}")
        watchers = [await watch(reader, path) for path in paths[:streams]]
        try:
            seconds = 2 if rep < 0 else sizes.append_seconds
            burst = await asyncio.to_thread(
                wrk.append,
                wrk.url(writer),
                paths,
                wrk.BODY,
                clients=sizes.clients,
                seconds=seconds,
            )
        finally:
            for watcher in watchers:
                watcher.close()
        if rep >= 0:
            bursts.append(burst)
    return median_burst(bursts)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(latencies: list[float]) -> tuple[float, float]:
    return statistics.median(latencies), percentile(latencies, 0.99)
