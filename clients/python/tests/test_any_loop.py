"""The adapters, and the client under them, from any event loop and any thread: `asyncio.run`
after `asyncio.run` on one object, threads that each run a loop at once (as the OpenAI Agents
SDK's `run_sync` and ADK's `Runner.run` do), and a quiet exit without `close`."""

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from agents.memory import SessionSettings
from google.adk.events.event import Event
from google.genai import types
from sessionary_client import AsyncSessionaryClient
from sessionary_client._core import SessionReads
from sessionary_client.adk import SessionaryMemoryService, SessionaryService
from sessionary_client.openai_agents import SessionarySession

USER = "ada"
THREADS = 10


def in_threads(run: Callable[[int], Coroutine[Any, Any, Any]]) -> list[Any]:
    """`run(n)` for each of `THREADS` threads, at once, each in an event loop of its own."""
    start = threading.Barrier(THREADS)

    def thread(n: int) -> Any:
        start.wait()
        return asyncio.run(run(n))

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(thread, range(THREADS)))


def said(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_one_session_object_serves_every_loop(
    live_server: str, app_name: str, transport: httpx.AsyncBaseTransport
) -> None:
    client = AsyncSessionaryClient(live_server, transport=transport)
    session = SessionarySession("chat", app_name=app_name, user_id=USER, client=client)
    asyncio.run(session.add_items([said("first run")]))
    asyncio.run(session.add_items([said("second run")]))

    async def write(n: int) -> None:
        await session.add_items([said(f"thread {n}")])

    in_threads(write)
    items = asyncio.run(session.get_items())
    assert [item["content"] for item in items[:2]] == ["first run", "second run"]
    assert sorted(item["content"] for item in items[2:]) == sorted(
        f"thread {n}" for n in range(THREADS)
    )
    asyncio.run(client.aclose())


def test_a_session_with_a_client_of_its_own_serves_every_loop(live_server: str, app_name: str):
    session = SessionarySession("own", app_name=app_name, user_id=USER, base_url=live_server)
    asyncio.run(session.add_items([said("one")]))
    assert asyncio.run(session.get_items()) == [said("one")]

    async def read(n: int) -> int:
        return len(await session.get_items())

    assert in_threads(read) == [1] * THREADS
    asyncio.run(session.close())


async def test_a_client_serves_other_loops_while_its_own_runs(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    """The test's loop keeps using the client while threads use it from theirs."""
    await client.create_session(app_name, USER, session_id="shared")

    async def append(n: int) -> None:
        await client.append_event(app_name, USER, "shared", {"author": f"thread-{n}"})

    await asyncio.gather(
        asyncio.to_thread(in_threads, append),
        client.append_event(app_name, USER, "shared", {"author": "here"}),
    )
    session = await client.get_session(app_name, USER, "shared")
    assert len(session["events"]) == THREADS + 1


def test_the_adk_services_serve_every_loop(live_server: str, app_name: str) -> None:
    sessions = SessionaryService(live_server)
    memory = SessionaryMemoryService(live_server)

    async def turn(word: str) -> bool:
        session = await sessions.create_session(app_name=app_name, user_id=USER)
        text = types.Content(role="user", parts=[types.Part(text=word)])
        await sessions.append_event(session, Event(author="user", content=text))
        await memory.add_session_to_memory(session)
        found = await memory.search_memory(app_name=app_name, user_id=USER, query=word)
        return text in [entry.content for entry in found.memories]

    assert asyncio.run(turn("first"))
    assert asyncio.run(turn("second"))
    assert in_threads(lambda n: turn(f"thread{n}")) == [True] * THREADS
    listed = asyncio.run(sessions.list_sessions(app_name=app_name, user_id=USER))
    assert len(listed.sessions) == THREADS + 2
    asyncio.run(sessions.close())
    asyncio.run(memory.close())


def test_what_is_kept_of_sessions_stays_within_its_bound_under_threads() -> None:
    """The items (or events) kept between reads are shared by every thread on a client: their
    count stays true, and so within the bound, however the threads interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # a thread switch at almost every step
    try:
        kept: SessionReads[tuple[str, ...]] = SessionReads(10, len)

        def use(n: int) -> None:
            for i in range(20_000):
                kept.put(("app", "user", str((n + i) % 16)), ("item", "item"))
                kept.get(("app", "user", str((n + i + 3) % 16)))

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(use, range(4)))
    finally:
        sys.setswitchinterval(interval)
    held = [kept.get(("app", "user", str(n))) for n in range(16)]
    assert sum(len(items) for items in held if items is not None) == 10


def test_session_settings_are_the_sdks(live_server: str) -> None:
    """As the SDK's own sessions: `SessionSettings()` unless given, as settings or a dict."""
    default = SessionarySession("s", app_name="a", user_id=USER, base_url=live_server)
    assert default.session_settings == SessionSettings()
    given = SessionarySession(
        "s", app_name="a", user_id=USER, base_url=live_server, session_settings={"limit": 3}
    )
    assert given.session_settings == SessionSettings(limit=3)


def test_services_never_closed_leave_nothing_unclosed_at_exit(
    live_server: str, app_name: str
) -> None:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("unclosed_services.py")), app_name],
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        *("oslo", "True", "bergen", "True", "tromso", "True", "narvik", "True", "bodo", "True"),
    ]
    assert done.stderr == ""
