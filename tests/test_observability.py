"""Operating the service: health probes, Prometheus metrics and JSON logs, on the real server.

The tests talk to `sessionary serve --workers 2` (so metrics go through prometheus-client's
multiprocess files; one test runs the default single worker), each server on a database of its
own with its stderr captured in a file. Metrics are read with prometheus-client's own text
parser, log lines with `json.loads`.
"""

import asyncio
import gc
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from app import db
from app.main import create_app
from app.services.live import LISTENER_NAME
from tests.fixtures import keys_command, start_server, stop_server, with_database

pytestmark = pytest.mark.e2e

EVENTS_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"
BATCH_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events:batch"
SESSION_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"
SESSIONS_ROUTE = "/apps/{app_name}/users/{user_id}/sessions"
GENERATED_ID = re.compile(r"[0-9a-f]{32}")


@dataclass
class Server:
    base_url: str
    database_url: str
    log: Path

    def client(self, **kwargs: Any) -> httpx.Client:
        """A new connection per request, so the requests spread over both workers."""
        limits = httpx.Limits(max_keepalive_connections=0)
        return httpx.Client(base_url=self.base_url, timeout=10, limits=limits, **kwargs)


@contextmanager
def serve(
    new_database: Callable[[], str], log: Path, env: dict[str, str], workers: int = 2
) -> Iterator[Server]:
    database_url = new_database()
    db.upgrade(database_url)
    with log.open("wb") as stderr:
        args = ("--workers", str(workers))
        process, base_url = start_server(database_url, *args, env=env, stderr=stderr)
    try:
        yield Server(base_url, database_url, log)
    finally:
        assert stop_server(process) == 0


@pytest.fixture(scope="module")
def server(new_database, tmp_path_factory) -> Iterator[Server]:
    """Auth off: metrics and logs."""
    log = tmp_path_factory.mktemp("observability") / "stderr.log"
    with serve(new_database, log, {"SESSIONARY_AUTH": "false"}) as running:
        yield running


@pytest.fixture(scope="module")
def secured(new_database, tmp_path_factory) -> Iterator[Server]:
    """Auth on: probes without a key, and what must never be logged."""
    log = tmp_path_factory.mktemp("observability-auth") / "stderr.log"
    with serve(new_database, log, {"SESSIONARY_AUTH": "true"}) as running:
        yield running


def until(condition: Callable[[], bool], what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def fresh_ids() -> tuple[str, str]:
    return f"app-{uuid.uuid4().hex[:10]}", f"s-{uuid.uuid4().hex[:10]}"


# Metrics


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: Server) -> Samples:
    response = httpx.get(f"{server.base_url}/metrics", timeout=10)
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a label set never seen (a counter that has not moved yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def increase(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def route_labels(samples: Samples) -> set[str]:
    return {
        label_value
        for (_, labels) in samples
        for label_name, label_value in labels
        if label_name == "route"
    }


def test_metrics_are_prometheus_text_of_the_documented_families(server):
    response = httpx.get(f"{server.base_url}/metrics", timeout=10)
    assert response.headers["content-type"].startswith("text/plain; version=")
    kinds = {f.name: f.type for f in text_string_to_metric_families(response.text)}
    assert kinds.items() >= {
        ("sessionary_http_requests", "counter"),
        ("sessionary_http_request_duration_seconds", "histogram"),
        ("sessionary_events_appended", "counter"),
        ("sessionary_db_pool_connections_open", "gauge"),
        ("sessionary_db_pool_connections_in_use", "gauge"),
    }


def test_requests_are_counted_by_route_template_method_and_status(server):
    app, session = fresh_ids()
    sessions = f"/apps/{app}/users/u/sessions"
    before = scrape(server)
    with server.client() as http:
        assert http.post(sessions, json={"sessionId": session}).status_code == 201
        for _ in range(3):
            assert http.post(f"{sessions}/{session}/events", json={}).status_code == 201
        for _ in range(2):
            assert http.post(f"{sessions}/nope/events", json={}).status_code == 404
        batch = {"events": [{}]}
        assert http.post(f"{sessions}/{session}/events:batch", json=batch).status_code == 201
        assert http.get(f"{sessions}/{session}").status_code == 200
    after = scrape(server)
    requests = "sessionary_http_requests_total"
    assert increase(before, after, requests, method="POST", route=SESSIONS_ROUTE, status="201") == 1
    assert increase(before, after, requests, method="POST", route=EVENTS_ROUTE, status="201") == 3
    assert increase(before, after, requests, method="POST", route=EVENTS_ROUTE, status="404") == 2
    assert increase(before, after, requests, method="POST", route=BATCH_ROUTE, status="201") == 1
    assert increase(before, after, requests, method="GET", route=SESSION_ROUTE, status="200") == 1
    assert not [route for route in route_labels(after) if app in route or "nope" in route]


def test_a_single_worker_server_reports_its_metrics_too(new_database, tmp_path):
    """One worker (the default) serves from the process that set up the metrics files."""
    with serve(new_database, tmp_path / "stderr.log", {}, workers=1) as single:
        before = scrape(single)
        with single.client() as http:
            assert [http.get("/healthz").status_code for _ in range(3)] == [200] * 3
        after = scrape(single)
    labels = {"method": "GET", "route": "/healthz", "status": "200"}
    assert increase(before, after, "sessionary_http_requests_total", **labels) == 3


def test_unknown_paths_are_counted_under_one_route_label(server):
    before = scrape(server)
    paths = [f"/no-such-{uuid.uuid4().hex}" for _ in range(3)]
    with server.client() as http:
        assert [http.get(path).status_code for path in paths] == [404, 404, 404]
    after = scrape(server)
    labels = {"method": "GET", "route": "unmatched", "status": "404"}
    assert increase(before, after, "sessionary_http_requests_total", **labels) == 3
    assert not [route for route in route_labels(after) if route.startswith("/no-such-")]


def test_latency_histogram_observes_each_request_under_its_route_template(server):
    app, session = fresh_ids()
    with server.client() as http:
        assert http.post(f"/apps/{app}/users/u/sessions", json={"sessionId": session}).is_success
        before = scrape(server)
        for _ in range(4):
            assert http.post(f"/apps/{app}/users/u/sessions/{session}/events", json={}).is_success
    after = scrape(server)
    name = "sessionary_http_request_duration_seconds"
    labels = {"method": "POST", "route": EVENTS_ROUTE}
    assert increase(before, after, f"{name}_count", **labels) == 4
    assert increase(before, after, f"{name}_sum", **labels) > 0
    buckets = sorted(
        (float(dict(key)["le"]), count)
        for (sample, key), count in after.items()
        if sample == f"{name}_bucket" and key >= frozenset(labels.items())
    )
    assert buckets[-1] == (float("inf"), value(after, f"{name}_count", **labels))
    counts = [count for _, count in buckets]
    assert counts == sorted(counts), "buckets are cumulative"


def test_events_appended_counts_stored_events_only(server):
    app, session = fresh_ids()
    events = f"/apps/{app}/users/u/sessions/{session}/events"
    before = scrape(server)
    with server.client() as http:
        body = {"sessionId": session, "events": [{"id": "c1"}, {"id": "c2"}]}
        assert http.post(f"/apps/{app}/users/u/sessions", json=body).status_code == 201  # +2
        one = {"id": "e1", "author": "user", "content": {"parts": [{"text": "hi"}]}}
        assert http.post(events, json=one).status_code == 201  # +1
        assert http.post(events, json=one).status_code == 200  # a retry: +0
        assert http.post(events, json={**one, "author": "other"}).status_code == 409  # +0
        assert http.post(events, json={"partial": True}).status_code == 202  # +0
        batch = {"events": [{"id": "b1"}, {"id": "b2"}, {"id": "b3"}]}
        assert http.post(f"{events}:batch", json=batch).status_code == 201  # +3
        assert http.post(f"{events}:batch", json=batch).status_code == 200  # a retry: +0
        mixed = {"events": [{"id": "b4"}, {"id": "p", "partial": True}]}
        assert http.post(f"{events}:batch", json=mixed).status_code == 201  # +1
        partial = {"events": [{"partial": True}]}
        assert http.post(f"{events}:batch", json=partial).status_code == 202  # +0
        stored = http.get(events).json()["events"]
    after = scrape(server)
    assert len(stored) == 7
    assert increase(before, after, "sessionary_events_appended_total") == 7


def connections_held(server: Server) -> int:
    """Connections the server's workers' pools hold to its database, as PostgreSQL counts
    them: not the one each worker listens for changes on (`app.services.live`), nor, on Citus,
    Citus's own between its nodes; there, the pools' connections to the workers too."""
    return sum(connections_held_by_node(server))


def connections_held_by_node(server: Server) -> list[int]:
    """`connections_held` on each node: its database's server first, then Citus's workers."""
    url = make_url(server.database_url)

    async def on(dsn: str) -> int:
        connection = await asyncpg.connect(with_database(dsn, "postgres"))
        try:
            held: int = await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = $1 AND backend_type = 'client backend'"
                " AND application_name <> $2 AND application_name NOT LIKE 'citus%'",
                url.database,
                LISTENER_NAME,
            )
            return held
        finally:
            await connection.close()

    async def count() -> list[int]:
        connection = await asyncpg.connect(server.database_url)
        try:
            on_citus = await connection.fetchval("SELECT to_regclass('pg_dist_node') IS NOT NULL")
            workers = (
                await connection.fetch(
                    "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0"
                )
                if on_citus
                else []
            )
        finally:
            await connection.close()
        nodes = [server.database_url] + [
            url.set(host=worker["nodename"], port=worker["nodeport"]).render_as_string(
                hide_password=False
            )
            for worker in workers
        ]
        return [await on(dsn) for dsn in nodes]

    return asyncio.run(count())


def test_pool_gauges_match_the_connections_the_workers_hold(server):
    with server.client() as http:  # some traffic, so both workers have used their pools
        assert all(http.get(f"/apps/{fresh_ids()[0]}/sessions").is_success for _ in range(10))
    observed: list[tuple[float, int]] = []

    def settled() -> bool:  # the gauges are sampled twice a second
        samples = scrape(server)
        observed.append(
            (
                value(samples, "sessionary_db_pool_connections_open"),
                connections_held(server),
                value(samples, "sessionary_db_pool_connections_in_use"),
            )
        )
        open_, held, in_use = observed[-1]
        return open_ == held and in_use == 0

    until(settled, "the gauges to match pg_stat_activity, none in use", seconds=5)
    assert observed[-1][1] >= 1, observed


async def test_pool_in_use_gauge_counts_a_connection_held_by_a_request(server):
    app, session = fresh_ids()
    in_use = "sessionary_db_pool_connections_in_use"
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:

        async def gauge() -> float:
            response = await http.get("/metrics")
            families = text_string_to_metric_families(response.text)
            return next(s.value for f in families for s in f.samples if s.name == in_use)

        async def wait_for(expected: float) -> None:
            deadline = time.monotonic() + 10
            while (current := await gauge()) != expected:
                assert time.monotonic() < deadline, f"{in_use} stayed {current}, not {expected}"
                await asyncio.sleep(0.05)

        created = await http.post(f"/apps/{app}/users/u/sessions", json={"sessionId": session})
        assert created.status_code == 201
        await wait_for(0)
        locker = await asyncpg.connect(server.database_url)
        try:
            lock = locker.transaction()
            await lock.start()
            await locker.execute(
                "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = 'u' AND id = $2"
                " FOR UPDATE",
                app,
                session,
            )
            blocked = asyncio.create_task(
                http.post(f"/apps/{app}/users/u/sessions/{session}/events", json={})
            )
            await wait_for(1)  # the append waits on the row lock, holding its connection
            await lock.rollback()
            assert (await blocked).status_code == 201
        finally:
            await locker.close()
        await wait_for(0)


def test_a_pool_of_one_connection(new_database, tmp_path):
    """A worker whose pool keeps one connection, under requests held on a row lock: appends
    (the hot path) and deletes (a unit of work in a transaction) alike."""
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": "1"}
    with serve(new_database, tmp_path / "stderr.log", env, workers=1) as small:
        asyncio.run(requests_wait_for_the_pool(small, "POST", "/events", [201, 201, 201]))
        # One delete wins; the two that waited behind it find no session.
        asyncio.run(requests_wait_for_the_pool(small, "DELETE", "", [204, 404, 404]))


async def held(server: Server, method: str, suffix: str, expected: list[int], check: Any) -> None:
    """Three `method` requests on one session, held on its row lock while `check` runs."""
    app, session = fresh_ids()
    url = f"/apps/{app}/users/u/sessions/{session}{suffix}"
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        created = await http.post(f"/apps/{app}/users/u/sessions", json={"sessionId": session})
        assert created.status_code == 201
        locker = await asyncpg.connect(server.database_url)
        try:
            lock = locker.transaction()
            await lock.start()
            await locker.execute(
                "SELECT 1 FROM sessions"
                " WHERE app_name = $1 AND user_id = 'u' AND id = $2 FOR UPDATE",
                app,
                session,
            )
            body = {} if method == "POST" else None
            blocked = [asyncio.create_task(http.request(method, url, json=body)) for _ in range(3)]
            await check()
            await lock.rollback()
            statuses = [(await task).status_code for task in blocked]
        finally:
            await locker.close()
    assert sorted(statuses) == expected


async def requests_wait_for_the_pool(
    server: Server, method: str, suffix: str, expected: list[int]
) -> None:
    """A worker never opens a connection beyond its one pool: the other requests wait."""

    async def check() -> None:
        await asyncio.sleep(1)  # time enough to open connections, were any opened
        here, *workers = await asyncio.to_thread(connections_held_by_node, server)
        # The pool's one, and the test's own connection holding the lock; on Citus, at most
        # one of the pool to the worker that takes the appends.
        assert here <= 2 and all(held <= 1 for held in workers), (here, workers)

    await held(server, method, suffix, expected, check)


# Logs


def log_lines(server: Server) -> list[dict[str, Any]]:
    """Every line the server wrote to stderr, each parsed as JSON (or the test fails)."""
    lines = server.log.read_text().splitlines()
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(entry, dict) for entry in parsed)
    return parsed


def access_lines(server: Server, request_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The access lines of these request ids, once each of them has one (lines are written
    just after the response is sent)."""
    found: dict[str, list[dict[str, Any]]] = {}

    def all_logged() -> bool:
        found.clear()
        for entry in log_lines(server):
            if entry["logger"] == "sessionary.access" and entry["request_id"] in request_ids:
                found.setdefault(entry["request_id"], []).append(entry)
        return len(found) == len(set(request_ids))

    until(all_logged, f"access lines of {request_ids}")
    return found


def test_every_line_the_server_writes_is_a_json_object(server):
    with server.client() as http:
        assert http.get("/healthz").status_code == 200
    lines = log_lines(server)
    assert len(lines) > 5  # start-up of two workers, the probes, the request
    for entry in lines:
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry


def test_each_request_writes_exactly_one_line_its_access_line(server):
    app, session = fresh_ids()
    base = f"/apps/{app}/users/u/sessions"
    requests = [
        ("GET", "/healthz", None, "/healthz", 200),
        ("GET", "/readyz", None, "/readyz", 200),
        ("GET", "/metrics", None, "/metrics", 200),
        ("POST", base, {"sessionId": session}, SESSIONS_ROUTE, 201),
        ("POST", f"{base}/{session}/events", {"author": "a"}, EVENTS_ROUTE, 201),
        ("POST", f"{base}/{session}/events", {"author": 1}, EVENTS_ROUTE, 422),
        ("HEAD", f"{base}/{session}", None, SESSION_ROUTE, 200),
        ("GET", f"{base}/missing", None, SESSION_ROUTE, 404),
        ("GET", "/nowhere", None, "unmatched", 404),
    ]
    sent: dict[str, tuple[str, str, str, int]] = {}
    with server.client() as http:
        sentinel = http.get("/healthz").headers["X-Request-ID"]
        access_lines(server, [sentinel])  # every earlier request has been logged by now
        already = len(log_lines(server))
        for method, path, body, route, status in requests:
            request_id = f"req-{uuid.uuid4().hex}"
            response = http.request(method, path, json=body, headers={"X-Request-ID": request_id})
            assert response.status_code == status, response.text
            sent[request_id] = (method, route, path, status)
    logged = access_lines(server, list(sent))
    written = log_lines(server)[already:]
    assert [entry["logger"] for entry in written] == ["sessionary.access"] * len(sent), written
    assert {entry["request_id"] for entry in written} == set(sent)
    for request_id, (method, route, path, status) in sent.items():
        [entry] = logged[request_id]
        assert (entry["method"], entry["route"], entry["path"]) == (method, route, path)
        assert entry["status"] == status
        assert isinstance(entry["duration_ms"], float) and entry["duration_ms"] > 0


@pytest.mark.parametrize(
    "request_id",
    [
        "req-7f3c.1:a_b",
        "0af7651916cd43dd8448eb211c80319c",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "has spaces inside",
        "r" * 256,
    ],
    ids=["punctuated", "hex", "tracer header", "spaces", "256 characters"],
)
def test_a_valid_client_request_id_is_echoed_and_logged(server, request_id):
    request_id = request_id[:-6] + uuid.uuid4().hex[:6]  # unique in the log
    with server.client() as http:
        response = http.get("/healthz", headers={"X-Request-ID": request_id})
    assert response.headers["X-Request-ID"] == request_id
    [entry] = access_lines(server, [request_id])[request_id]
    assert (entry["route"], entry["status"]) == ("/healthz", 200)


def test_a_request_id_is_generated_echoed_and_logged_when_absent(server):
    with server.client() as http:
        first, second = (http.get("/healthz").headers["X-Request-ID"] for _ in range(2))
    assert GENERATED_ID.fullmatch(first) and GENERATED_ID.fullmatch(second)
    assert first != second
    logged = access_lines(server, [first, second])
    assert [len(logged[first]), len(logged[second])] == [1, 1]


def test_a_path_that_is_not_utf8_is_logged(server):
    """The access line is written for a path whose bytes are not UTF-8 (uvicorn decodes them
    as U+FFFD, which the line's JSON writer takes)."""
    request_id = uuid.uuid4().hex
    with server.client() as http:
        response = http.get("/nowhere%ED%A0%80", headers={"X-Request-ID": request_id})
    assert response.status_code == 404
    [entry] = access_lines(server, [request_id])[request_id]
    assert (entry["route"], entry["status"]) == ("unmatched", 404)
    assert entry["path"] == "/nowhere\ufffd\ufffd\ufffd"


@pytest.mark.parametrize(
    "given",
    [b"x" * 257, b"y" * 3000, b"caf\xe9", b"tab\tinside", b""],
    ids=["257 characters", "3000 characters", "not ASCII", "tab", "empty"],
)
def test_an_invalid_request_id_is_replaced_by_a_generated_one(server, given):
    with server.client() as http:
        response = http.get("/healthz", headers={"X-Request-ID": given})
    echoed = response.headers["X-Request-ID"]
    assert GENERATED_ID.fullmatch(echoed), echoed
    [entry] = access_lines(server, [echoed])[echoed]
    assert entry["route"] == "/healthz"
    if given:
        assert not [e for e in log_lines(server) if e.get("request_id") == given.decode("latin-1")]


def test_api_keys_and_event_bodies_never_reach_the_logs(secured):
    app, session = fresh_ids()
    key = keys_command(secured.database_url, "create", "--app", app)
    secret = key.split("_", 2)[2]
    marker = f"MARKER-{uuid.uuid4().hex}"
    text = {"parts": [{"text": marker}]}
    base = f"/apps/{app}/users/u/sessions"
    calls: list[tuple[str, str, dict[str, Any], str, int]] = [
        ("POST", base, {"sessionId": session, "events": [{"content": text}]}, key, 201),
        ("POST", f"{base}/{session}/events", {"content": text, marker: marker}, key, 201),
        ("POST", f"{base}/{session}/events:batch", {"events": [{"content": text}]}, key, 201),
        ("PATCH", f"{base}/{session}", {"stateDelta": {marker: marker}}, key, 200),
        ("POST", f"{base}/{session}/events", {"author": {"x": marker}}, key, 422),
        ("POST", f"{base}/{session}/events", {"content": text}, f"sk_0_{marker}", 401),
    ]
    request_ids = []
    with secured.client() as http:
        for method, path, body, bearer, status in calls:
            headers = {"Authorization": f"Bearer {bearer}"}
            response = http.request(method, path, json=body, headers=headers)
            assert response.status_code == status, response.text
            request_ids.append(response.headers["X-Request-ID"])
    access_lines(secured, request_ids)  # the server has logged every one of these requests
    log = secured.log.read_text()
    assert secret not in log
    assert marker not in log


# Health


def test_health_probes_answer_without_a_key_when_auth_is_on(secured):
    with secured.client() as http:
        assert http.get("/apps/shop/sessions").status_code == 401  # auth is on
        healthz = http.get("/healthz")
        readyz = http.get("/readyz")
    assert (healthz.status_code, healthz.json()) == (200, {"status": "ok"})
    assert readyz.status_code == 200
    assert readyz.json()["status"] == "ready"


def test_readyz_reports_the_schema_revision_at_the_migration_head(secured):
    async def stored_revision() -> str:
        connection = await asyncpg.connect(secured.database_url)
        try:
            revision: str = await connection.fetchval("SELECT version_num FROM alembic_version")
            return revision
        finally:
            await connection.close()

    readyz = httpx.get(f"{secured.base_url}/readyz", timeout=10).json()
    assert readyz["schemaRevision"] == db.head_revision() == asyncio.run(stored_revision())


def test_readyz_is_503_while_the_schema_is_behind_the_migration_head(server):
    head = db.head_revision()
    assert head is not None
    db.downgrade(server.database_url, "-1")
    try:
        with server.client() as http:
            for _ in range(4):  # whichever worker answers
                readyz = http.get("/readyz")
                assert readyz.status_code == 503
                assert readyz.json()["code"] == "schema_behind"
            assert http.get("/healthz").status_code == 200  # alive all the same
    finally:
        db.upgrade(server.database_url)
    assert httpx.get(f"{server.base_url}/readyz", timeout=10).json()["schemaRevision"] == head


async def test_an_unexpected_error_is_a_bare_500_that_still_carries_the_request_id(settings):
    app = create_app(settings)

    async def broken() -> None:
        raise RuntimeError("secret internals")

    app.add_api_route("/broken", broken)
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
        response = await http.get("/broken", headers={"X-Request-ID": "trace-500"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "trace-500"
    assert response.json()["code"] == "internal_error"
    assert "secret internals" not in response.text


def test_a_500_is_logged_once_with_its_request_id(new_database, tmp_path):
    """The handler logs it with the request's id; uvicorn, to which Starlette then hands the
    error, does not log it again."""
    with serve(new_database, tmp_path / "stderr.log", {"SESSIONARY_AUTH": "false"}, 1) as one:

        async def break_schema() -> None:  # a bug's stand-in: a statement PostgreSQL refuses
            connection = await asyncpg.connect(one.database_url)
            try:
                await connection.execute("ALTER TABLE sessions RENAME TO sessions_gone")
            finally:
                await connection.close()

        asyncio.run(break_schema())
        with one.client() as http:
            failed = http.get("/apps/a/users/u/sessions", headers={"X-Request-ID": "bug-1"})
        assert failed.status_code == 500
    reports = [entry for entry in log_lines(one) if "exception" in entry]
    assert [(entry["message"], entry.get("request_id")) for entry in reports] == [
        ("unhandled error on GET /apps/a/users/u/sessions", "bug-1")
    ]


async def test_start_up_freezes_what_it_made_so_full_collections_skip_it(settings):
    """Full collections over the objects alive after start-up were the appends' p99."""
    gc.unfreeze()
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        assert gc.get_freeze_count() > 10_000
