"""S17, through the clients: what an agent worker gets from Sessionary through the client it
runs, side by side with what it would run instead, against `sessionary serve --workers 2` on
the same PostgreSQL server.

- Appends: 32 tasks of one process appending to 32 sessions at once, through one shared
  `AsyncSessionaryClient` (its default transport, aiohttp's with the client's `aiohttp`
  extra, which `make bench` installs; then `AsyncPoolTransport`, httpx's own pooled; then
  httpx's stock pool, as before; then one client per task), and through the blocking
  `SessionaryClient` from 32 threads, and through one shared Go client from 32 goroutines
  (`bench/go_appends`, when Go is installed): events/s and the client process's CPU per
  append (the server's is its own processes').
- ADK: `SessionaryService.append_event` against ADK's own `DatabaseSessionService` (in this
  process, on its own database) from 32 concurrent sessions; `get_session` of a 1,000-event
  session read whole (median of reads); and a Runner's turns on a 50-event and a 5,000-event
  session (each loads the session, then appends two events; median of the loads), where
  `SessionaryService` asks only for what is new.

    DATABASE_URL=postgresql://… .venv/bin/python -m bench.clients [--appends 60]

It creates `<prefix>_clients` and `<prefix>_clients_adk` (and two more it leaves empty) on
that server, dropped first, as `make bench` does its own.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from google.adk.events import Event, EventActions
from google.adk.sessions import BaseSessionService, DatabaseSessionService
from google.genai import types
from sessionary_client import AsyncSessionaryClient, SessionaryClient
from sessionary_client._transport import AsyncPoolTransport
from sessionary_client.adk import SessionaryService
from sqlalchemy.engine import make_url

from bench import databases
from bench.server import Server

TASKS = 32
TEXT = "Sunny in Oslo, up to 21 degrees, with a light breeze from the west. " * 3


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Row:
    name: str
    events_per_second: float
    cpu_ms_per_event: float


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


async def timed(name: str, count: int, work: Callable[[], Awaitable[None]]) -> Row:
    began, spent = time.perf_counter(), cpu()
    await work()
    seconds, used = time.perf_counter() - began, cpu() - spent
    return Row(name, count / seconds, 1000 * used / count)


async def client_appends(name: str, clients: list[AsyncSessionaryClient], appends: int) -> Row:
    """TASKS tasks, task `n` on `clients[n % len(clients)]`, each appending to its session."""
    app = f"s17-{uuid.uuid4().hex[:6]}"
    for n in range(TASKS):
        await clients[n % len(clients)].create_session(app, f"u{n}", session_id="s")

    async def task(n: int) -> None:
        client = clients[n % len(clients)]
        for i in range(appends):
            await client.append_event(app, f"u{n}", "s", wire_event(i))

    async def work() -> None:
        await asyncio.gather(*(task(n) for n in range(TASKS)))

    return await timed(name, TASKS * appends, work)


async def sync_client_appends(base_url: str, appends: int) -> Row:
    app = f"s17-{uuid.uuid4().hex[:6]}"
    with SessionaryClient(base_url) as client:
        for n in range(TASKS):
            client.create_session(app, f"u{n}", session_id="s")

        def task(n: int) -> None:
            for i in range(appends):
                client.append_event(app, f"u{n}", "s", wire_event(i))

        async def work() -> None:
            threads = [threading.Thread(target=task, args=(n,)) for n in range(TASKS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                await asyncio.to_thread(thread.join)

        return await timed("SessionaryClient, 32 threads", TASKS * appends, work)


def go_appends(base_url: str, appends: int) -> Row | None:
    """The Go client's row, by `bench/go_appends` built and run in a process of its own (its
    CPU is that process's); None, said why, without Go."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        print("S17: no Go (1.21+) on the PATH or in /usr/local/go: the Go client's row is left out")
        return None
    with tempfile.TemporaryDirectory() as scratch:
        program = Path(scratch) / "go_appends"
        source = Path(__file__).parent / "go_appends"
        subprocess.run([go, "build", "-o", str(program), "."], cwd=source, check=True)
        ran = subprocess.run(
            [str(program), "-url", base_url, "-tasks", str(TASKS), "-appends", str(appends)],
            check=True,
            capture_output=True,
            text=True,
        )
    measured = json.loads(ran.stdout)
    return Row(
        "Go client, shared, 32 goroutines",
        measured["events_per_second"],
        measured["cpu_ms_per_event"],
    )


async def adk_appends(name: str, service: BaseSessionService, appends: int) -> Row:
    app = f"s17-{uuid.uuid4().hex[:6]}"
    sessions = [
        await service.create_session(app_name=app, user_id=f"u{n}", session_id="s")
        for n in range(TASKS)
    ]

    async def task(n: int) -> None:
        for i in range(appends):
            await service.append_event(sessions[n], adk_event(i))

    async def work() -> None:
        await asyncio.gather(*(task(n) for n in range(TASKS)))

    return await timed(name, TASKS * appends, work)


async def long_session(service: BaseSessionService, events: int) -> tuple[str, str]:
    """A session of `events` events, made through `service`; its app and id."""
    app = f"s17-read-{uuid.uuid4().hex[:6]}"
    session = await service.create_session(app_name=app, user_id="u", session_id="long")
    for i in range(events):
        await service.append_event(session, adk_event(i))
    return app, "long"


async def whole_read_ms(service: BaseSessionService, app: str, session_id: str) -> float:
    """The median ms of `get_session` of the whole session, 9 reads."""
    times = []
    for _ in range(9):
        began = time.perf_counter()
        read = await service.get_session(app_name=app, user_id="u", session_id=session_id)
        times.append(1000 * (time.perf_counter() - began))
        assert read is not None
    return statistics.median(times)


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


async def run(database_url: str, prefix: str, appends: int, read_events: int) -> None:
    names = databases.Databases.on(database_url, f"{prefix}_clients")
    await databases.recreate(names)
    ours, theirs = names.sessionary, names.adk
    databases.migrate(ours)
    adk_url = make_url(theirs).set(drivername="postgresql+asyncpg")
    adk = DatabaseSessionService(
        adk_url.render_as_string(hide_password=False), pool_size=TASKS, max_overflow=0
    )
    rows: list[Row] = []
    with Server(ours, workers=2, extra_env={"SESSIONARY_AUTH": "false"}) as server:
        base_url = f"http://{server.host}:{server.port}"
        async with AsyncSessionaryClient(base_url) as shared:
            await client_appends("warm-up", [shared], 10)
            rows.append(await client_appends("AsyncSessionaryClient, shared", [shared], appends))
        async with AsyncSessionaryClient(base_url, transport=AsyncPoolTransport()) as shared:
            rows.append(await client_appends("… over AsyncPoolTransport", [shared], appends))
        stock = httpx.AsyncClient(base_url=base_url, timeout=10)
        async with AsyncSessionaryClient(http=stock) as shared:
            rows.append(await client_appends("… over httpx's stock pool", [shared], appends))
        per_task = [AsyncSessionaryClient(base_url) for _ in range(TASKS)]
        rows.append(await client_appends("AsyncSessionaryClient per task", per_task, appends))
        for client in per_task:
            await client.aclose()
        rows.append(await sync_client_appends(base_url, appends))
        go_row = await asyncio.to_thread(go_appends, base_url, appends)
        if go_row is not None:
            rows.append(go_row)
        service = SessionaryService(base_url)
        rows.append(await adk_appends("ADK: SessionaryService", service, appends))
        rows.append(await adk_appends("ADK: DatabaseSessionService", adk, appends))
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
    print(f"\nS17 through the clients: {TASKS} concurrent tasks, {appends} appends each")
    print(f"{'':36s} {'events/s':>9s} {'client CPU ms/append':>21s}")
    for row in rows:
        print(f"{row.name:36s} {row.events_per_second:9.0f} {row.cpu_ms_per_event:21.2f}")
    sessionary, database = rows[-2], rows[-1]
    print(
        f"ADK append_event, SessionaryService / DatabaseSessionService: "
        f"{sessionary.events_per_second / database.events_per_second:.2f}x"
    )
    sessionary_ms, adk_ms = reads["SessionaryService"], reads["DatabaseSessionService"]
    print(
        f"ADK get_session of {read_events} events, whole: SessionaryService "
        f"{sessionary_ms:.1f} ms, DatabaseSessionService {adk_ms:.1f} ms "
        f"({adk_ms / sessionary_ms:.2f}x)"
    )
    print("ADK Runner turn's load (median ms), 50 events vs 5,000 events:")
    for name in ("SessionaryService", "DatabaseSessionService"):
        print(f"  {name:24s} {turns[name, 50]:7.1f} {turns[name, 5000]:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=60, help="appends per task")
    parser.add_argument("--read-events", type=int, default=1000)
    parser.add_argument("--db-prefix", default="sessionary_bench")
    arguments = parser.parse_args()
    database_url = os.environ["DATABASE_URL"]
    asyncio.run(run(database_url, arguments.db_prefix, arguments.appends, arguments.read_events))


if __name__ == "__main__":
    main()
