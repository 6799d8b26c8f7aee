"""Integrity under concurrency and faults, over real HTTP against real server processes.

Every acknowledged (2xx) event must be stored exactly once, every state key must survive, and
a crash or a database outage must leave no session half-written.
"""

import asyncio
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import Request

from app import db
from app.api.deps import PUBLIC
from app.embedded import EmbeddedPostgres
from app.main import create_app
from tests.fixtures import start_server, stop_server

JSON = {"content-type": "application/json"}


def unique_app() -> str:
    return f"app-{uuid.uuid4().hex[:10]}"


def events_url(base: str, app: str, session: str, user: str = "u") -> str:
    return f"{base}/apps/{app}/users/{user}/sessions/{session}/events"


@pytest.fixture(scope="module")
def two_servers(database_url: str) -> Iterator[list[str]]:
    """Two separate server processes on one database, as two replicas would be."""
    servers = [start_server(database_url), start_server(database_url)]
    try:
        yield [base for _, base in servers]
    finally:
        for process, _ in servers:
            stop_server(process)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        yield client


async def create(http: httpx.AsyncClient, base: str, app: str, session: str, user: str = "u"):
    response = await http.post(
        f"{base}/apps/{app}/users/{user}/sessions", json={"sessionId": session}
    )
    assert response.status_code == 201, response.text


async def read_session(http: httpx.AsyncClient, base: str, app: str, session: str, user: str = "u"):
    response = await http.get(f"{base}/apps/{app}/users/{user}/sessions/{session}")
    assert response.status_code == 200, response.text
    return response.json()


async def test_50_writers_of_40_events_into_one_session_across_two_servers(two_servers, http):
    app = unique_app()
    await create(http, two_servers[0], app, "s")

    async def writer(w: int) -> list[tuple[int, str]]:
        url = events_url(two_servers[w % 2], app, "s")
        acknowledged = []
        for n in range(40):
            event = {"id": f"w{w}-{n}", "author": f"w{w}", "actions": {"stateDelta": {f"w{w}": n}}}
            response = await http.post(url, json=event)
            assert response.status_code == 201, response.text
            acknowledged.append((response.json()["seq"], event["id"]))
        return acknowledged

    ledger = [ack for acks in await asyncio.gather(*(writer(w) for w in range(50))) for ack in acks]
    session = await read_session(http, two_servers[1], app, "s")
    stored = [(event["seq"], event["id"]) for event in session["events"]]
    assert [seq for seq, _ in stored] == list(range(1, 2001))
    assert sorted(stored) == sorted(ledger)  # every acknowledged event, once, at its seq
    assert session["state"] == {f"w{w}": 39 for w in range(50)}


async def test_concurrent_app_and_user_deltas_from_many_sessions_all_survive(two_servers, http):
    app = unique_app()
    names = [f"s{n}" for n in range(40)]
    await asyncio.gather(*(create(http, two_servers[n % 2], app, s) for n, s in enumerate(names)))
    responses = await asyncio.gather(
        *(
            http.post(
                events_url(two_servers[n % 2], app, name),
                json={"actions": {"stateDelta": {f"app:{name}": n, f"user:{name}": -n}}},
            )
            for n, name in enumerate(names)
        )
    )
    assert {r.status_code for r in responses} == {201}
    app_state = (await http.get(f"{two_servers[0]}/apps/{app}/state")).json()["state"]
    user_state = (await http.get(f"{two_servers[1]}/apps/{app}/users/u/state")).json()["state"]
    assert app_state == {name: n for n, name in enumerate(names)}
    assert user_state == {name: -n for n, name in enumerate(names)}


async def test_concurrent_creates_of_one_id_across_servers_yield_one_201(two_servers, http):
    app = unique_app()
    responses = await asyncio.gather(
        *(
            http.post(f"{two_servers[n % 2]}/apps/{app}/users/u/sessions", json={"sessionId": "x"})
            for n in range(20)
        )
    )
    assert sorted(r.status_code for r in responses) == [201] + [409] * 19
    assert all(
        r.json()["code"] == "session_already_exists" for r in responses if r.status_code == 409
    )


async def test_if_match_races_have_one_winner_and_losers_write_nothing(two_servers, http):
    app = unique_app()
    await create(http, two_servers[0], app, "s")
    for version in range(5):
        responses = await asyncio.gather(
            *(
                http.post(
                    events_url(two_servers[n % 2], app, "s"),
                    json={"author": f"w{n}", "actions": {"stateDelta": {f"loser{n}": version}}},
                    headers={"If-Match": f'"{version}"'},
                )
                for n in range(10)
            )
        )
        assert sorted(r.status_code for r in responses) == [201] + [412] * 9
    session = await read_session(http, two_servers[0], app, "s")
    assert session["version"] == 5 and len(session["events"]) == 5
    assert len(session["state"]) == len({e["author"] for e in session["events"]})


async def test_retrying_after_a_client_timeout_never_duplicates(two_servers, http):
    app = unique_app()
    await create(http, two_servers[0], app, "s")
    for n in range(20):
        event = {"id": f"e{n}", "author": "agent", "actions": {"stateDelta": {"n": n}}}
        url = events_url(two_servers[n % 2], app, "s")
        try:  # a timeout so short the first attempt may or may not reach the database
            await http.post(url, json=event, timeout=httpx.Timeout(0.002))
        except httpx.TimeoutException:
            pass
        retry = await http.post(url, json=event)
        assert retry.status_code in (200, 201), retry.text
    session = await read_session(http, two_servers[1], app, "s")
    assert [e["id"] for e in session["events"]] == [f"e{n}" for n in range(20)]
    assert session["state"] == {"n": 19}


def fold(session: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Session, user and app state as the stored events' deltas say they must be."""
    scopes: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
    for event in session["events"]:
        for key, value in event.get("actions", {}).get("stateDelta", {}).items():
            if key.startswith("user:"):
                scopes[1][key] = value
            elif key.startswith("app:"):
                scopes[2][key] = value
            else:
                scopes[0][key] = value
    return scopes


async def write_until_failure(
    http: httpx.AsyncClient, base: str, app: str, writers: int
) -> list[set[str]]:
    """Each writer appends to its own session until the server stops answering."""
    acknowledged: list[set[str]] = [set() for _ in range(writers)]

    async def writer(w: int) -> None:
        for n in range(100_000):
            event = {
                "id": f"e{n}",
                "author": "agent",
                "actions": {"stateDelta": {"count": n, f"user:w{w}": n, f"app:w{w}": n}},
            }
            try:
                response = await http.post(events_url(base, app, f"s{w}", f"user{w}"), json=event)
            except httpx.TransportError:
                return
            if response.status_code != 201:
                return
            acknowledged[w].add(event["id"])

    await asyncio.gather(*(writer(w) for w in range(writers)))
    return acknowledged


async def test_kill_9_during_writes_loses_no_acknowledged_event(database_url, http):
    app, writers = unique_app(), 8
    process, base = start_server(database_url)
    for w in range(writers):
        await create(http, base, app, f"s{w}", f"user{w}")
    load = asyncio.create_task(write_until_failure(http, base, app, writers))
    await asyncio.sleep(1.5)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    acknowledged = await load
    assert all(acknowledged), "every writer had events acknowledged before the kill"

    process, base = start_server(database_url)
    try:
        app_state = (await http.get(f"{base}/apps/{app}/state")).json()["state"]
        for w in range(writers):
            session = await read_session(http, base, app, f"s{w}", f"user{w}")
            stored = [event["id"] for event in session["events"]]
            assert acknowledged[w] <= set(stored)
            assert [e["seq"] for e in session["events"]] == list(range(1, len(stored) + 1))
            assert session["version"] == len(stored)
            session_state, user_state, app_part = fold(session)
            # Each event and its state change were written together, or neither was.
            assert {k: v for k, v in session["state"].items() if ":" not in k} == session_state
            assert {
                k: v for k, v in session["state"].items() if k.startswith("user:")
            } == user_state
            assert app_state[f"w{w}"] == app_part[f"app:w{w}"]
    finally:
        stop_server(process)


@pytest.fixture
def own_postgres() -> Iterator[EmbeddedPostgres]:
    """A throwaway PostgreSQL this test may stop: never the one the other tests share."""
    folder = Path(tempfile.mkdtemp(prefix="sessionary-outage-"))
    folder.chmod(0o755)
    server = EmbeddedPostgres(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_database_outage_is_a_fast_503_and_the_service_recovers_alone(own_postgres, http):
    dsn = own_postgres.dsn()
    await asyncio.to_thread(db.upgrade, dsn)
    process, base = start_server(dsn, env={"SESSIONARY_DB_CONNECT_TIMEOUT": "2"})
    try:
        await create(http, base, "outage", "s")
        url = events_url(base, "outage", "s")
        assert (await http.post(url, json={"author": "a"})).status_code == 201

        own_postgres.stop()
        for _ in range(5):
            started = time.monotonic()
            response = await http.post(url, json={"author": "a"})
            assert time.monotonic() - started < 3, "fails within the connect timeout"
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "database_unavailable"
        assert (await http.get(f"{base}/readyz")).status_code == 503
        assert (await http.get(f"{base}/healthz")).status_code == 200

        own_postgres.start(port=own_postgres.port)
        deadline = time.monotonic() + 20
        while (await http.get(f"{base}/readyz")).status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover by itself"
            await asyncio.sleep(0.2)
        statuses = [(await http.post(url, json={"author": "a"})).status_code for _ in range(5)]
        assert statuses[-1] == 201 and set(statuses) <= {201, 503}
        session = await read_session(http, base, "outage", "s")
        assert [e["seq"] for e in session["events"]] == list(range(1, len(session["events"]) + 1))
    finally:
        stop_server(process)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "database_unavailable"
    assert int(response.headers["retry-after"]) >= 1


async def test_a_database_shutting_down_is_a_503_never_a_500(own_postgres, http, tmp_path):
    """SQLSTATE 57P03 ("the database system is shutting down / starting up") reaches the
    service wrapped in SQLAlchemy's plain DBAPIError; it must still be a 503 with Retry-After."""
    dsn = own_postgres.dsn()
    await asyncio.to_thread(db.upgrade, dsn)
    log = tmp_path / "server.log"
    with log.open("wb") as stderr:
        process, base = start_server(dsn, stderr=stderr)
    try:
        await create(http, base, "restart", "s")
        url = events_url(base, "restart", "s")
        assert (await http.post(url, json={"author": "a"})).status_code == 201

        # A smart shutdown waits for the sessions it has, and refuses every new one with
        # 57P03; ending the server's own sessions makes it open new ones.
        holder = await asyncpg.connect(dsn)
        await asyncio.to_thread(own_postgres.stop, "smart", False)
        await holder.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        answers = await asyncio.gather(
            *(http.post(url, json={"author": "a"}) for _ in range(8)),
            *(http.get(f"{base}/apps/restart/users/u/sessions/s") for _ in range(8)),
            *(http.get(f"{base}/readyz") for _ in range(4)),
        )
        for response in answers:
            assert_unavailable(response)

        await holder.close()  # the smart shutdown completes; then PostgreSQL starts again
        await asyncio.to_thread(own_postgres.start, own_postgres.port)
        deadline = time.monotonic() + 20
        while (await http.get(f"{base}/readyz")).status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover by itself"
            await asyncio.sleep(0.2)
        assert (await http.post(url, json={"author": "a"})).status_code == 201
        session = await read_session(http, base, "restart", "s")
        assert [e["seq"] for e in session["events"]] == [1, 2]
    finally:
        stop_server(process)
    assert "unhandled error" not in log.read_text()


def postgres_processes(server: EmbeddedPostgres) -> list[int]:
    """The postmaster of `server` and every process it forked."""
    postmaster = int((server.pgdata / "postmaster.pid").read_text().split()[0])
    children = [
        int(stat.parent.name)
        for stat in Path("/proc").glob("[0-9]*/stat")
        if _parent_pid(stat) == postmaster
    ]
    return [postmaster, *children]


def _parent_pid(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):  # the process ended while we looked
        return None


async def test_readyz_answers_503_in_time_when_the_database_stalls(own_postgres, http):
    """A stalled database (every PostgreSQL process stopped) must not hang the probe for the
    30 s command timeout: /readyz has a short timeout of its own."""
    dsn = own_postgres.dsn()
    await asyncio.to_thread(db.upgrade, dsn)
    process, base = start_server(dsn, env={"SESSIONARY_READY_TIMEOUT": "1"})
    try:
        assert (await http.get(f"{base}/readyz")).status_code == 200
        stalled = postgres_processes(own_postgres)
        try:
            for pid in stalled:
                os.kill(pid, signal.SIGSTOP)
            started = time.monotonic()
            response = await http.get(f"{base}/readyz", timeout=10)
            assert time.monotonic() - started < 2.5
            assert_unavailable(response)
            assert "did not answer within 1 s" in response.json()["detail"]
            assert (await http.get(f"{base}/healthz")).status_code == 200
        finally:
            for pid in stalled:
                os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 20
        while (await http.get(f"{base}/readyz")).status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover by itself"
            await asyncio.sleep(0.2)
    finally:
        stop_server(process)


async def test_sigterm_lets_in_flight_requests_finish_then_exits(database_url, http):
    app = unique_app()
    process, base = start_server(database_url)
    await create(http, base, app, "s")

    async def slow_body() -> AsyncIterator[bytes]:
        yield b'{"id": "in-flight", "author": "user", "content": {"text": "'
        await asyncio.sleep(1.5)
        yield b'still arriving"}}'

    in_flight = asyncio.create_task(
        http.post(events_url(base, app, "s"), content=slow_body(), headers=JSON)
    )
    await asyncio.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    response = await in_flight
    assert response.status_code == 201, response.text
    assert await asyncio.to_thread(process.wait, 30) == 0

    process, base = start_server(database_url)
    try:
        session = await read_session(http, base, app, "s")
        assert [e["id"] for e in session["events"]] == ["in-flight"]
    finally:
        stop_server(process)


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (asyncpg.InvalidTextRepresentationError("invalid input syntax"), 422, "validation_error"),
        (asyncpg.ConnectionDoesNotExistError("connection was closed"), 503, "database_unavailable"),
        (
            asyncpg.CannotConnectNowError("the database system is starting up"),
            503,
            "database_unavailable",
        ),
        (asyncpg.InterfaceError("connection is closed"), 503, "database_unavailable"),
    ],
    ids=["data error", "connection lost", "server starting", "driver interface"],
)
async def test_driver_errors_become_problems_never_500s(settings, error, status, code):
    """A driver error raised in a unit of work's connection, where the database is why, comes
    out of the pool as Sessionary's own error (app/db.py), whatever the route."""
    app = create_app(settings)

    async def failing(request: Request) -> None:
        async with request.app.state.pool.connection():
            raise error

    app.add_api_route("/failing", failing, dependencies=[PUBLIC])
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http,
    ):
        response = await http.get("/failing")
    assert response.status_code == status
    assert response.json()["code"] == code
