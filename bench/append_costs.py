"""What each index and constraint of `events` costs an append, in PostgreSQL's CPU.

The service's own append statement (as the HTTP floor runs it: `bench.http_floor`), from many
connections for a few seconds at a time, into databases that each lack one index or constraint
of `events` (the first lacks none). The variants take turns, round after round, so that the
host's drift lands on all of them; the medians are printed: the server's CPU per append (its
postmaster and every process it started; the server must be on this host) and appends/s.

    DATABASE_URL=postgresql://… python -m bench.append_costs [--rounds 5] [--seconds 5]

DATABASE_URL names the server; the databases `sessionary_costs_<n>` are made (again) there.
"""

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from app import db
from app.repositories.events import APPEND
from bench import cpu
from bench.http_floor import CREATE, append_arguments
from bench.workload import BASE_TIME, EventSpec, wire_event

VARIANTS = {
    "every index and constraint": None,
    "without the search index (GIN)": "DROP INDEX ix_events_search",
    "without the timestamp index": "DROP INDEX ix_events_app_name_user_id_session_id_timestamp",
    "without the compaction/rewind marks index": "DROP INDEX ix_events_marks",
    "without the unique event id": (
        "ALTER TABLE events DROP CONSTRAINT uq_events_app_name_user_id_session_id_id"
    ),
}
# S1's event, without its id: each append gets a new one.
EVENT = json.dumps(
    {k: v for k, v in wire_event(EventSpec("", 1, BASE_TIME)).items() if k != "id"}
).encode()


def database(server: str, number: int) -> str:
    return make_url(server).set(database=f"sessionary_costs_{number}").render_as_string(False)


async def prepare(server: str, clients: int) -> list[str]:
    """A database per variant, migrated, lacking its part, with a session per client."""
    admin = await asyncpg.connect(server)
    dsns = []
    try:
        for number, change in enumerate(VARIANTS.values()):
            dsn = database(server, number)
            name = make_url(dsn).database
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.execute(f'CREATE DATABASE "{name}"')
            await asyncio.to_thread(db.upgrade, dsn)
            connection = await asyncpg.connect(dsn)
            try:
                if change:
                    await connection.execute(change)
                for client in range(clients):
                    await connection.execute(CREATE, "costs", f"u{client % 16}", f"s{client}")
            finally:
                await connection.close()
            dsns.append(dsn)
    finally:
        await admin.close()
    return dsns


def postmaster(backend: int) -> int:
    """The pid of the server a backend belongs to: its parent's."""
    return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def burst(dsn: str, clients: int, seconds: float) -> tuple[float, float]:
    """(µs of the server's CPU per append, appends/s) from `clients` connections."""
    connections = [await asyncpg.connect(dsn) for _ in range(clients)]
    server = postmaster(await connections[0].fetchval("SELECT pg_backend_pid()"))
    done = 0

    async def client(number: int, connection: asyncpg.Connection, until: float) -> None:
        nonlocal done
        while time.monotonic() < until:
            _, arguments = append_arguments("costs", f"u{number % 16}", f"s{number}", EVENT)
            await connection.fetchval(APPEND.sql, *arguments)
            done += 1

    try:
        before, started = cpu.postgres_by_server()[server], time.monotonic()
        until = started + seconds
        await asyncio.gather(*(client(n, c, until) for n, c in enumerate(connections)))
        spent = cpu.postgres_by_server()[server] - before
        elapsed = time.monotonic() - started
    finally:
        for connection in connections:
            await connection.close()
    return spent / done * 1e6, done / elapsed


async def main(rounds: int, seconds: float, clients: int) -> None:
    server = os.environ["DATABASE_URL"].replace("+asyncpg", "")
    dsns = await prepare(server, clients)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    for round_ in range(rounds):
        for name, dsn in zip(VARIANTS, dsns, strict=True):
            figures[name].append(await burst(dsn, clients, seconds))
        print(f"round {round_ + 1} of {rounds} done", flush=True)
    full = statistics.median(cost for cost, _ in figures["every index and constraint"])
    print(f"\n| events table, {clients} connections | PostgreSQL µs/append | vs all | appends/s |")
    print("|---|--:|--:|--:|")
    for name, runs in figures.items():
        cost = statistics.median(cost for cost, _ in runs)
        rate = statistics.median(rate for _, rate in runs)
        print(f"| {name} | {cost:,.0f} | {cost - full:+,.0f} | {rate:,.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.append_costs", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.seconds, args.clients))
