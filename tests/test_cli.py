"""The `sessionary` command as its users meet it, run as real processes on real PostgreSQL: a
failure is one line on stderr and a non-zero exit, never a traceback; the embedded PostgreSQL
of a running `sessionary serve` is found by the other commands and kept from a second server.
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from app import db
from app.config import Settings
from app.embedded import EmbeddedPostgres, running_url
from app.errors import SchemaBehind
from app.services.health import check_ready
from tests.fixtures import free_port, stop_server

pytestmark = pytest.mark.e2e

SESSIONARY = str(Path(sys.executable).with_name("sessionary"))
# Without these, the commands look for the embedded PostgreSQL of a server running here.
DATABASE_VARIABLES = ("DATABASE_URL", "TEST_DATABASE_URL", "SESSIONARY_DATABASE_URL")


def environment(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    return {**env, **variables}


def run(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SESSIONARY, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


def one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [["keys", "list"], ["export"], ["import"], ["sweep"]])
def test_a_database_not_migrated_is_one_line_saying_to_migrate(
    new_database: Callable[[], str], command: list[str]
) -> None:
    failure = one_line_failure(run(*command, env=environment(DATABASE_URL=new_database())))
    assert failure.startswith(f"sessionary {command[0]}: ")
    assert "run `sessionary migrate`" in failure


@pytest.mark.parametrize("command", [["keys", "list"], ["migrate"], ["export"]])
def test_an_unreachable_database_is_one_line_naming_it(command: list[str]) -> None:
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere"
    failure = one_line_failure(run(*command, env=environment(DATABASE_URL=nowhere)))
    assert f"cannot use the database at {nowhere}" in failure
    assert "DATABASE_URL" in failure  # what to check


def test_importing_a_missing_file_is_one_line(database_url: str) -> None:
    missing = "/nonexistent/sessions.ndjson"
    failure = one_line_failure(run("import", missing, env=environment(DATABASE_URL=database_url)))
    assert failure.startswith("sessionary import: ") and missing in failure
    assert "No such file or directory" in failure


@pytest.mark.parametrize("source", ["sqlite:///{folder}/session.db", "{folder}/session.db"])
def test_import_adk_from_sqlite_says_only_postgresql_is_read(
    database_url: str, tmp_path: Path, source: str
) -> None:
    source = source.format(folder=tmp_path)
    result = run("import-adk", "--from", source, env=environment(DATABASE_URL=database_url))
    assert "only a PostgreSQL" in one_line_failure(result)
    assert list(tmp_path.iterdir()) == []  # nothing made where the source was named


def test_migrate_says_what_it_did(new_database: Callable[[], str]) -> None:
    env = environment(DATABASE_URL=new_database())
    head = db.head_revision()
    first = run("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert f"to revision {head}" in first.stdout
    again = run("migrate", env=env)
    assert again.returncode == 0, again.stderr
    assert f"already at revision {head}" in again.stdout


def migrated_by_a_later_release(url: str) -> None:
    """The schema at a revision this code has no script for, as a later release leaves it."""

    async def stamp() -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute("UPDATE alembic_version SET version_num = 'f00dfeed'")
        finally:
            await connection.close()

    db.upgrade(url)
    asyncio.run(stamp())


def says_to_upgrade_sessionary(failure: str) -> None:
    assert "revision f00dfeed, newer than this release of Sessionary" in failure
    assert failure.endswith("upgrade Sessionary.") and "run `sessionary migrate`" not in failure


@pytest.mark.parametrize("command", [["keys", "list"], ["migrate"]])
def test_a_schema_newer_than_this_release_says_to_upgrade_sessionary(
    new_database: Callable[[], str], command: list[str]
) -> None:
    url = new_database()
    migrated_by_a_later_release(url)
    says_to_upgrade_sessionary(one_line_failure(run(*command, env=environment(DATABASE_URL=url))))


def test_readiness_on_a_newer_schema_says_to_upgrade_sessionary(
    new_database: Callable[[], str],
) -> None:
    url = new_database()
    migrated_by_a_later_release(url)
    with pytest.raises(SchemaBehind) as refused:
        asyncio.run(check_ready(db.connector(url, Settings()), 10))
    says_to_upgrade_sessionary(refused.value.detail)


def test_without_database_url_or_a_server_running_here_a_command_says_what_to_set(
    tmp_path: Path,
) -> None:
    env = environment(SESSIONARY_DATA_DIR=str(tmp_path / "data"))
    assert "set DATABASE_URL" in one_line_failure(run("keys", "list", env=env))


def embedded_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="sessionary-cli-"))
    folder.chmod(0o755)  # under root, PostgreSQL runs as `nobody`, which must reach it
    return folder


def serve(data_dir: Path, stderr: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`sessionary serve` without DATABASE_URL, on `data_dir`'s embedded PostgreSQL."""
    port = free_port()
    with stderr.open("ab") as log:
        process = subprocess.Popen(
            [SESSIONARY, "serve", "--port", str(port)],
            env=environment(SESSIONARY_DATA_DIR=str(data_dir), SESSIONARY_AUTH="false"),
            stderr=log,
        )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while not ready(base_url):
        assert process.poll() is None, stderr.read_text()
        assert time.monotonic() < deadline, "not ready within 90 s"
        time.sleep(0.2)
    return process, base_url


def ready(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def embedded_server() -> Iterator[tuple[subprocess.Popen[bytes], str, Path, Path]]:
    """A server on an embedded PostgreSQL of its own: (process, base URL, data folder, its
    stderr)."""
    folder = embedded_folder()
    data_dir, log = folder / "data", folder / "serve.log"
    process, base_url = serve(data_dir, log)
    try:
        yield process, base_url, data_dir, log
    finally:
        stop_server(process)
        shutil.rmtree(folder, ignore_errors=True)


def test_serve_says_where_it_listens(embedded_server) -> None:
    _, base_url, _, log = embedded_server
    assert f"serving on {base_url}" in log.read_text()


def test_a_second_serve_on_the_same_data_folder_refuses_and_leaves_the_first_alone(
    embedded_server,
) -> None:
    first, base_url, data_dir, _ = embedded_server
    env = environment(SESSIONARY_DATA_DIR=str(data_dir), SESSIONARY_AUTH="false")
    try:
        second = run("serve", "--port", str(free_port()), env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the second server started on the first one's data folder")
    failure = one_line_failure(second)
    assert f"{data_dir} is in use by pid {first.pid} (postgresql://" in failure
    assert all(ready(base_url) for _ in range(10)), "the first server lost its database"


def test_the_other_commands_use_the_running_servers_database(embedded_server) -> None:
    _, _, data_dir, _ = embedded_server
    env = environment(SESSIONARY_DATA_DIR=str(data_dir))
    listed = run("keys", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("ID")
    migrated = run("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    assert f"already at revision {db.head_revision()}" in migrated.stdout


def test_an_orphaned_embedded_postgres_is_stopped_and_replaced() -> None:
    """Its server killed outright, the PostgreSQL it started lives on with nobody to stop it:
    the next server on the folder stops it and starts its own."""
    folder = embedded_folder()
    data_dir, log = folder / "data", folder / "serve.log"
    try:
        killed, _ = serve(data_dir, log)
        killed.kill()
        killed.wait()
        assert (data_dir / "pgdata" / "postmaster.pid").exists(), "orphaned PostgreSQL"
        process, _ = serve(data_dir, log)
        assert stop_server(process) == 0
        assert not (data_dir / "pgdata" / "postmaster.pid").exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_serve_that_fails_after_starting_its_postgres_stops_it_and_frees_the_folder() -> None:
    """Its migration refused (the folder's schema is a later release's), `serve` exits with
    the PostgreSQL it started stopped and no pid left in server.json."""
    folder = embedded_folder()
    data_dir = folder / "data"
    postgres = EmbeddedPostgres(data_dir)
    try:
        migrated_by_a_later_release(postgres.start())
        postgres.stop()
        env = environment(SESSIONARY_DATA_DIR=str(data_dir), SESSIONARY_AUTH="false")
        failed = run("serve", "--port", str(free_port()), env=env)
        assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
        assert not (postgres.pgdata / "postmaster.pid").exists(), "PostgreSQL left running"
        assert (data_dir / "server.json").read_text() == ""
        assert running_url(data_dir) is None
        says_to_upgrade_sessionary(failed.stderr.strip().splitlines()[-1])
    finally:
        postgres.stop()  # what a failure above left running
        shutil.rmtree(folder, ignore_errors=True)


def ignoring_ctrl_c() -> None:
    """As a shell starts a background job (`make test > log &`): SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("job", ["foreground", "background"])
def test_mcp_ends_quietly_on_ctrl_c_once_it_says_it_serves(transport: str, job: str) -> None:
    port = str(free_port())
    mcp = subprocess.Popen(
        [SESSIONARY, "mcp", "--transport", transport, "--port", port],
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=ignoring_ctrl_c if job == "background" else None,
    )
    try:
        assert mcp.stderr is not None
        assert b"sessionary mcp: MCP on" in mcp.stderr.readline()  # serving
        mcp.send_signal(signal.SIGINT)
        # stdin stays open: over stdio, its end would end the server without the Ctrl-C.
        said = mcp.stderr.read() if mcp.wait(timeout=60) is not None else b""
    finally:
        mcp.kill()
        mcp.communicate()
    assert mcp.returncode in (0, 128 + signal.SIGINT), said.decode()
    assert b"Traceback" not in said, said.decode()
