"""S16: a mixed load, as a busy deployment sees it, against a running Sessionary.

`clients` connections for `minutes`, over `sessions` sessions (16 users, two label values),
each request drawn at random: 70% appends (S1's event, whose words are in every event, so a
search for them is the costliest kind), 10% reads of a session's newest 100 events, 5% each
the context view, a label-filtered list of a user's sessions, a search of the app for two of
those words, and a fork. Reported per operation: requests, p50, p99, refusals (503: a search
past `SESSIONARY_SEARCH_CONCURRENCY` or its time limit) and failures (anything else but the
expected answer). At the end every session's version must equal its appends answered 201:
none lost, none doubled. The workers' RSS is read at the start and the end.

    python -m bench.mixed            # starts its own server on DATABASE_URL's server

`bench.run` runs it as S16.
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from app.domain import SessionKey
from bench import databases, server
from bench.databases import Databases
from bench.loadgen import Connection
from bench.scenarios import _percentile
from bench.sessionary_side import Sessionary, session_path
from bench.workload import EventSpec, wire_event

MIXED_APP = "bench-mixed"
# (operation, share of requests): what a busy deployment's traffic is made of.
MIX = (
    ("append", 70),
    ("read", 10),
    ("context", 5),
    ("list", 5),
    ("search", 5),
    ("fork", 5),
)
SEARCHED = "forecast oslo"  # two words of S1's event: in every event


@dataclass
class Tally:
    """Per operation: latencies (ms) of the answers it expected, refusals, failures."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    refused: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    appended: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass(frozen=True)
class Mixed:
    """S16's figures: per operation (requests, p50 ms, p99 ms, refused, failed), whether any
    append was lost or doubled, and the workers' RSS (MB) at the start and the end."""

    operations: dict[str, tuple[int, float, float, int, int]]
    lost: int
    rss_start_mb: list[float]
    rss_end_mb: list[float]
    seconds: float


def keys(sessions: int) -> list[SessionKey]:
    return [SessionKey(MIXED_APP, f"u{n % 16}", f"mixed-{n}") for n in range(sessions)]


async def prepare(system: Sessionary, sessions: int) -> list[SessionKey]:
    """The sessions, each labelled with its team, empty."""
    chosen = keys(sessions)
    async with Connection(system.host, system.port) as connection:
        for n, key in enumerate(chosen):
            body = {"sessionId": key.session_id, "labels": {"team": "ab"[n % 2]}}
            path = f"/apps/{MIXED_APP}/users/{key.user_id}/sessions"
            await connection.call("POST", path, json.dumps(body).encode(), expect=201)
    return chosen


async def client(
    system: Sessionary, chosen: list[SessionKey], until: float, tally: Tally, seed: int
) -> None:
    draw = random.Random(seed)
    operations = [name for name, share in MIX for _ in range(share)]
    async with Connection(system.host, system.port) as connection:
        while time.monotonic() < until:
            operation = draw.choice(operations)
            key = draw.choice(chosen)
            path = session_path(key)
            method, expect, body = "GET", 200, None
            if operation == "append":
                method, expect, target = "POST", 201, f"{path}/events"
                # Stamped when it is sent, as ADK stamps an event (`time.time()`).
                event = wire_event(EventSpec(str(uuid.uuid4()), 1, time.time()))
                body = json.dumps(event).encode()
            elif operation == "read":
                target = f"{path}?numRecentEvents=100"
            elif operation == "context":
                target = f"{path}/context?tokenBudget=8000"
            elif operation == "list":
                team = draw.choice("ab")
                target = f"/apps/{MIXED_APP}/users/{key.user_id}/sessions?label=team:{team}"
            elif operation == "search":
                target = f"/apps/{MIXED_APP}/search?q={SEARCHED.replace(' ', '+')}&pageSize=10"
            else:
                method, expect, target = "POST", 201, f"{path}:fork"
                body = json.dumps({"sessionId": f"fork-{uuid.uuid4().hex[:12]}"}).encode()
            started = time.perf_counter()
            response = await connection.exchange(connection.prepare(method, target, body))
            elapsed = (time.perf_counter() - started) * 1000
            if response.status == expect:
                tally.latencies[operation].append(elapsed)
                if operation == "append":
                    tally.appended[key.session_id] += 1
            elif response.status == 503:
                tally.refused[operation] += 1
            else:
                tally.failed[operation] += 1


async def versions(system: Sessionary, chosen: list[SessionKey]) -> dict[str, int]:
    async with Connection(system.host, system.port) as connection:
        found = {}
        for key in chosen:
            response = await connection.call("GET", f"{session_path(key)}?numRecentEvents=0")
            found[key.session_id] = json.loads(response.body)["version"]
    return found


async def run(system: Sessionary, *, clients: int, minutes: float, sessions: int) -> Mixed:
    chosen = await prepare(system, sessions)
    tally = Tally()
    rss_start = [server.rss(pid) / 2**20 for pid in system.worker_pids()]
    started = time.monotonic()
    until = started + minutes * 60
    await asyncio.gather(*(client(system, chosen, until, tally, n) for n in range(clients)))
    seconds = time.monotonic() - started
    rss_end = [server.rss(pid) / 2**20 for pid in system.worker_pids()]
    stored = await versions(system, chosen)
    lost = sum(abs(stored[key.session_id] - tally.appended[key.session_id]) for key in chosen)
    operations = {
        name: (
            len(tally.latencies[name]) + tally.refused[name] + tally.failed[name],
            statistics.median(tally.latencies[name]) if tally.latencies[name] else 0.0,
            _percentile(tally.latencies[name], 0.99) if tally.latencies[name] else 0.0,
            tally.refused[name],
            tally.failed[name],
        )
        for name, _ in MIX
    }
    return Mixed(operations, lost, rss_start, rss_end, seconds)


def report(mixed: Mixed) -> str:
    lines = [
        "| S16 operation | requests | p50 ms | p99 ms | refused (503) | failed |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, (count, p50, p99, refused, failed) in mixed.operations.items():
        lines.append(f"| {name} | {count:,} | {p50:.1f} | {p99:.1f} | {refused:,} | {failed:,} |")
    total = sum(figures[0] for figures in mixed.operations.values())
    start = ", ".join(f"{mb:.0f}" for mb in mixed.rss_start_mb)
    end = ", ".join(f"{mb:.0f}" for mb in mixed.rss_end_mb)
    lines.append(
        f"\nS16: {total:,} requests in {mixed.seconds:.0f} s ({total / mixed.seconds:,.0f}/s); "
        f"appends lost or doubled: {mixed.lost}; workers' RSS {start} MB at the start, "
        f"{end} MB at the end."
    )
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    dbs = Databases.on(os.environ["DATABASE_URL"], "sessionary_mixed")
    await databases.recreate(dbs)
    databases.migrate(dbs.sessionary)
    per_worker = -(-args.clients // args.workers)
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": str(per_worker)}
    with server.Server(dbs.sessionary, args.workers, env) as serve:
        system = Sessionary(serve.host, serve.port, worker_pids=serve.worker_pids)
        mixed = await run(
            system, clients=args.clients, minutes=args.minutes, sessions=args.sessions
        )
    print(report(mixed))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.mixed", description=__doc__)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    asyncio.run(main(parser.parse_args()))
