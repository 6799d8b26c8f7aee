"""Connections over real sockets: an idle one outlives the idle time of clients' pools, a client
that leaves mid-request is no error, a 500 never leaves a client a connection that the server
is closing without having said so, and database connections ended under load are 503s."""

import asyncio
import http.client
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from app.api.deps import PUBLIC
from app.config import Settings
from app.main import create_app
from app.protocol import capped_protocol
from tests.fixtures import free_port, start_server, stop_server

pytestmark = pytest.mark.e2e

EVENTS_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"


@pytest.fixture(scope="module")
def server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """`sessionary serve` with its defaults, one worker; its base URL and its log."""
    log = tmp_path_factory.mktemp("connections") / "stderr.log"
    with log.open("wb") as stderr:
        process, base_url = start_server(database_url, stderr=stderr)
    try:
        yield base_url, log
    finally:
        stop_server(process)


def connection(base_url: str) -> http.client.HTTPConnection:
    """A client that reuses its connection as long as the server does not say `close`."""
    host, port = base_url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=10)


def status_of(client: http.client.HTTPConnection, method: str, path: str) -> int:
    client.request(method, path)
    answer = client.getresponse()
    answer.read()
    return answer.status


def test_an_idle_connection_outlives_the_idle_time_of_client_pools(server) -> None:
    """httpx keeps an idle connection 5 s: a server closing it sooner races its next request."""
    client = connection(server[0])
    try:
        assert status_of(client, "GET", "/healthz") == 200
        time.sleep(5.5)
        assert status_of(client, "GET", "/healthz") == 200  # on the same connection
    finally:
        client.close()


def log_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def requests_counted(base_url: str, **labels: str) -> float:
    text = httpx.get(f"{base_url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "sessionary_http_requests_total" and sample.labels == labels
    )


@pytest.mark.parametrize("path", ["events", "events:batch"])
def test_a_client_that_leaves_mid_body_is_logged_and_counted_as_499_not_as_an_error(
    server, path: str
) -> None:
    base_url, log = server
    app = f"leaving-{uuid.uuid4().hex[:8]}"
    created = httpx.post(f"{base_url}/apps/{app}/users/u/sessions", json={"sessionId": "s"})
    assert created.status_code == 201
    route = f"{EVENTS_ROUTE}:batch" if path.endswith("batch") else EVENTS_ROUTE
    labels = {"method": "POST", "route": route, "status": "499"}
    before = requests_counted(base_url, **labels)
    already = len(log_lines(log))
    request_id = uuid.uuid4().hex
    head = (
        f"POST /apps/{app}/users/u/sessions/s/{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: 1000\r\n"
        f"X-Request-ID: {request_id}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", int(base_url.rsplit(":", 1)[1]))) as sock:
        sock.sendall(head.encode() + b'{"author": "us')  # and then it is gone
    deadline = time.monotonic() + 10
    while not [e for e in log_lines(log)[already:] if e.get("request_id") == request_id]:
        assert time.monotonic() < deadline, "the request was never logged"
        time.sleep(0.05)
    written = log_lines(log)[already:]
    assert [e for e in written if e["level"] not in ("info", "debug")] == [], written
    [access] = [e for e in written if e.get("request_id") == request_id]
    assert (access["route"], access["status"]) == (route, 499)
    assert requests_counted(base_url, **labels) == before + 1


def test_a_refusal_before_the_app_carries_nosniff_too(server) -> None:
    client = connection(server[0])
    try:
        client.request("GET", "/healthz", headers={"X-Long": "x" * 10_000})
        answer = client.getresponse()
        answer.read()
    finally:
        client.close()
    assert (answer.status, answer.getheader("content-type")) == (431, "application/problem+json")
    assert answer.getheader("x-content-type-options") == "nosniff"


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """The app behind uvicorn, with the server's own HTTP protocol, on a loopback port."""
    settings: Settings = app.state.settings
    config = uvicorn.Config(
        app,
        port=free_port(),
        http=capped_protocol(settings.max_header_line_bytes, settings.max_header_bytes),
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join()


def test_a_500_leaves_no_connection_that_the_client_would_reuse_in_vain(
    settings: Settings,
) -> None:
    app = create_app(settings)

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken, dependencies=[PUBLIC])
    with serving(app) as base_url:
        client = connection(base_url)
        try:
            client.request("GET", "/broken")
            answer = client.getresponse()
            problem = json.loads(answer.read())
            assert (answer.status, problem["code"]) == (500, "internal_error")
            # http.client sends the next request on the same connection unless told `close`.
            assert status_of(client, "GET", "/healthz") == 200
        finally:
            client.close()
    assert answer.getheader("x-content-type-options") == "nosniff"


async def test_backends_terminated_under_load_answer_503_and_leave_no_broken_connection(
    database_url: str, tmp_path: Path
) -> None:
    """`pg_terminate_backend` on the service's connections while requests run on them: each
    request is answered 2xx or 503 `database_unavailable` (never 500), and once the faults stop
    every connection the pool hands out works (none broken was given back to it)."""
    name = f"faulted-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process, base_url = start_server(f"{database_url}?application_name={name}", stderr=stderr)
    app = f"faults-{uuid.uuid4().hex[:8]}"
    sessions = f"{base_url}/apps/{app}/users/u/sessions"
    answers: list[httpx.Response] = []
    faulting = True

    async def terminate(admin: asyncpg.Connection) -> int:
        killed = 0
        while faulting:
            killed += await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = $1",
                name,
            )
            await asyncio.sleep(0.01)
        return killed

    async def write(http: httpx.AsyncClient, number: int) -> None:
        for event in range(25):
            event_id = f"e{number}-{event}"
            answers.append(await http.post(f"{sessions}/s{number}/events", json={"id": event_id}))
            answers.append(await http.post(f"{sessions}/s{number}:reset"))
            answers.append(await http.get(f"{sessions}/s{number}"))

    try:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            for number in range(16):
                created = await http.post(sessions, json={"sessionId": f"s{number}"})
                assert created.status_code == 201, created.text
            admin = await asyncpg.connect(database_url)
            try:
                killer = asyncio.create_task(terminate(admin))
                await asyncio.gather(*(write(http, number) for number in range(16)))
                faulting = False
                assert await killer > 0
            finally:
                await admin.close()
            refused = [answer for answer in answers if answer.status_code >= 300]
            assert refused, "no request met a terminated backend"
            for answer in refused:
                assert answer.status_code == 503, answer.text
                assert answer.json()["code"] == "database_unavailable"
            # More requests at once than the pool has connections: each gets a working one.
            reads = await asyncio.gather(
                *(http.get(f"{sessions}/s{number % 16}") for number in range(60))
            )
            assert [read.status_code for read in reads] == [200] * 60
    finally:
        stop_server(process)
    assert "unhandled error" not in log.read_text()
