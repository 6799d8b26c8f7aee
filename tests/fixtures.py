"""Fixtures: a real PostgreSQL, a throwaway database built by Alembic, an HTTP client on the app.

The server is TEST_DATABASE_URL or DATABASE_URL when set, else an embedded PostgreSQL started
for this test session. Either way the tests create their own database on it and drop it after.
With SESSIONARY_TEST_CITUS=1 (the cluster suite, which `make test` runs too) it is instead a
Citus coordinator and two workers started for the session (`bench.citus`), and the tests'
databases are sharded over them by the migrations, as `sessionary migrate` shards a user's.
"""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from app import db
from app.config import Settings
from app.embedded import EmbeddedPostgres
from app.main import create_app
from app.models import Base
from bench.citus import Cluster, citus_cluster, citus_missing
from tests import ON_CITUS


def with_database(dsn: str, name: str) -> str:
    return make_url(dsn).set(database=name).render_as_string(hide_password=False)


def admin(dsn: str, *statements: str) -> None:
    async def run() -> None:
        connection = await asyncpg.connect(with_database(dsn, "postgres"))
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(run())


@pytest.fixture(scope="session")
def server_dsn() -> Iterator[str]:
    """A PostgreSQL server the tests may create databases on."""
    given = os.environ.get("TEST_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if given:
        yield given.replace("+asyncpg", "")
        return
    folder = Path(tempfile.mkdtemp(prefix="sessionary-test-pg-"))
    folder.chmod(0o755)  # under root the server runs as `nobody`, which must reach its data
    server = EmbeddedPostgres(folder)
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def citus() -> Iterator[Cluster]:
    """The cluster of the cluster suite: a coordinator and two workers."""
    missing = citus_missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the cluster suite needs Citus: {missing}")
        pytest.skip(f"the cluster suite needs Citus: {missing}")
    with citus_cluster(workers=2) as cluster:
        yield cluster


class Server:
    """One PostgreSQL server the tests make their databases on (as `Cluster` does on a
    cluster's nodes)."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def create_database(self) -> str:
        name = f"sessionary_test_{uuid.uuid4().hex[:12]}"
        admin(self.dsn, f'CREATE DATABASE "{name}"')
        return with_database(self.dsn, name)

    def drop_database(self, name: str) -> None:
        admin(self.dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def new_database(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """A factory of empty databases, all dropped at the end of the session; on the cluster,
    each with Citus in it on every node."""
    databases: Server | Cluster = (
        request.getfixturevalue("citus")
        if ON_CITUS
        else Server(request.getfixturevalue("server_dsn"))
    )
    created: list[str] = []

    def create() -> str:
        url = databases.create_database()
        created.append(make_url(url).database or "")
        return url

    yield create
    for name in created:
        databases.drop_database(name)


@pytest.fixture(scope="session")
def database_url(new_database: Callable[[], str]) -> str:
    """The database the HTTP tests use, migrated to head by Alembic."""
    url = new_database()
    db.upgrade(url)
    return url


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    # The app lives for the whole run: its own sweeper, every 60 s by default, would race the
    # tests that expire sessions and sweep them from a command (so would `start_server`'s).
    return Settings(database_url=database_url, auth=False, sweep_interval=86_400)


@pytest.fixture(scope="session")
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


# Every table of the schema (the models match the migrations: tests/test_migrations.py), but
# the API keys that a module's tests make once for all of its tests.
DATA_TABLES = ", ".join(
    table.name for table in Base.metadata.sorted_tables if table.name != "api_keys"
)


@pytest.fixture(autouse=True)
async def _empty_tables(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Every test that touches the database starts from empty tables."""
    yield
    if "app" in request.fixturenames:
        application: FastAPI = request.getfixturevalue("app")
        async with application.state.pool.connection() as connection:
            await connection.execute(f"TRUNCATE {DATA_TABLES}")


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
        yield http


@asynccontextmanager
async def client_of(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of an app of its own, made with these settings (keys on, CORS…),
    for as long as the block runs."""
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
            yield http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# How long `start_server` waits for a server to answer. It starts in a few seconds, mostly
# each of its processes importing the app (the supervisor, then each worker, which `spawn`
# starts afresh), but on a loaded machine (two cores shared by several test runs) one took more
# than 30 s. Bounded all the same: a server that never comes up fails its tests, saying so,
# rather than hanging the run.
START_TIMEOUT = 180
# Answers in a row, each on a connection of its own, that make a server of several workers
# ready: each connection goes to one worker's socket (SO_REUSEPORT), so ten answered in a row
# all but surely include an answer from every worker, the slowest to start included.
READY_IN_A_ROW = 10


def start_server(
    database_url: str,
    *args: str,
    env: dict[str, str] | None = None,
    stderr: IO[bytes] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """`sessionary serve` as users run it, on a free loopback port; returns once every worker
    answers `/readyz`, or fails within START_TIMEOUT saying why.

    Its log goes to `stderr` when given (an open file), else to this process's stderr. It
    sweeps expired sessions only when `env` sets `SESSIONARY_SWEEP_INTERVAL`: a server living
    through other tests would race the ones that expire sessions and sweep them themselves.
    """
    port = free_port()
    defaults = {"SESSIONARY_AUTH": "false", "SESSIONARY_SWEEP_INTERVAL": "86400"}
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), "serve", "--port", str(port), *args],
        env={**os.environ, **defaults, **(env or {}), "DATABASE_URL": database_url},
        stderr=stderr,
    )
    base_url = f"http://127.0.0.1:{port}"
    wanted = READY_IN_A_ROW if "--workers" in args else 1
    started = time.monotonic()
    answered = 0
    while answered < wanted:
        try:
            httpx.get(f"{base_url}/readyz", timeout=5).raise_for_status()
            answered += 1
            continue
        except httpx.TransportError:
            answered = 0
        if process.poll() is not None:
            raise RuntimeError(
                f"sessionary serve exited during start-up with status {process.returncode}"
            )
        if time.monotonic() - started > START_TIMEOUT:
            process.kill()
            process.wait()
            raise RuntimeError(f"sessionary serve did not answer within {START_TIMEOUT} s")
        time.sleep(0.2)
    return process, base_url


def sessionary(
    database_url: str, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real `sessionary …` command on `database_url`, run to its end: its exit status
    and output (bytes: an export is compared byte for byte)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("sessionary")), *args],
        env={**os.environ, **(env or {}), "DATABASE_URL": database_url},
        input=stdin,
        capture_output=True,
        timeout=300,
    )


def keys_command(database_url: str, *args: str) -> str:
    """Run the real `sessionary keys …` command; returns what it printed (a new key, a list)."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("sessionary")), "keys", *args],
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def stop_server(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=60)


@pytest.fixture(scope="session")
def live_server(database_url: str) -> Iterator[str]:
    """The base URL of a real server process (two workers) on the test database."""
    process, base_url = start_server(database_url, "--workers", "2")
    try:
        yield base_url
    finally:
        stop_server(process)
