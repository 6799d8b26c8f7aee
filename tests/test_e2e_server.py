"""End to end: the real `sessionary serve` process on a loopback port, driven over HTTP."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.fixtures import free_port, start_server, stop_server

pytestmark = pytest.mark.e2e


def test_a_whole_conversation_against_the_real_server(database_url: str) -> None:
    process, base_url = start_server(database_url, "--workers", "2")
    try:
        converse(base_url)
    finally:
        assert stop_server(process) == 0, "SIGTERM must end the server cleanly"


def converse(base_url: str) -> None:
    app = f"shop-{uuid.uuid4().hex[:8]}"  # other tests write app state on the same database
    with httpx.Client(base_url=base_url, timeout=10) as http:
        created = http.post(
            f"/apps/{app}/users/ada/sessions",
            json={"sessionId": "chat", "state": {"user:tier": "gold"}},
        )
        assert created.status_code == 201
        turns = [
            {"author": "user", "content": {"role": "user", "parts": [{"text": "Weather?"}]}},
            {
                "author": "assistant",
                "content": {"parts": [{"functionCall": {"id": "c1", "name": "weather"}}]},
            },
            {
                "author": "assistant",
                "content": {"parts": [{"functionResponse": {"id": "c1", "name": "weather"}}]},
                "actions": {"stateDelta": {"app:calls": 1, "last_city": "Oslo", "temp:x": 1}},
            },
            {"author": "assistant", "content": {"parts": [{"text": "Sunny in Oslo."}]}},
        ]
        for n, turn in enumerate(turns, start=1):
            response = http.post(
                f"/apps/{app}/users/ada/sessions/chat/events",
                json={"id": f"e{n}", "invocationId": "i1", **turn},
                headers={"If-Match": f'"{n - 1}"'},
            )
            assert response.status_code == 201, response.text
        session = http.get(f"/apps/{app}/users/ada/sessions/chat").json()
        assert [e["id"] for e in session["events"]] == ["e1", "e2", "e3", "e4"]
        assert session["state"] == {"last_city": "Oslo", "app:calls": 1, "user:tier": "gold"}
        recent = http.get(f"/apps/{app}/users/ada/sessions/chat", params={"numRecentEvents": 1})
        assert [e["id"] for e in recent.json()["events"]] == ["e4"]
        page = http.get(f"/apps/{app}/users/ada/sessions/chat/events", params={"pageSize": 3})
        assert len(page.json()["events"]) == 3 and page.json()["nextPageToken"]
        assert http.delete(f"/apps/{app}/users/ada/sessions/chat").status_code == 204
        assert http.get(f"/apps/{app}/users/ada/sessions/chat").status_code == 404


def test_serve_without_database_url_runs_an_embedded_postgres_and_stops_it() -> None:
    tmp_path = Path(tempfile.mkdtemp(prefix="sessionary-serve-"))
    tmp_path.chmod(0o755)  # under root, PostgreSQL runs as `nobody`, which must reach it
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DATABASE_URL")}
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), "serve", "--port", str(port)],
        env={**env, "SESSIONARY_DATA_DIR": str(tmp_path / "data")},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        converse(f"http://127.0.0.1:{port}")
    finally:
        assert stop_server(process) == 0
    assert (tmp_path / "data" / "pgdata" / "PG_VERSION").exists()
    assert not (tmp_path / "data" / "pgdata" / "postmaster.pid").exists(), "PostgreSQL stopped"
    shutil.rmtree(tmp_path)


def test_serve_refuses_a_database_whose_schema_is_behind(new_database) -> None:
    unmigrated = new_database()
    result = subprocess.run(
        [str(Path(sys.executable).with_name("sessionary")), "serve", "--port", str(free_port())],
        env={**os.environ, "DATABASE_URL": unmigrated},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "run `sessionary migrate`" in result.stderr


def serve_on(port: int, database_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("sessionary")), "serve", "--port", str(port)],
        env={**os.environ, "DATABASE_URL": database_url, "SESSIONARY_AUTH": "false"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_second_serve_on_a_port_in_use_refuses_to_start(database_url: str) -> None:
    """SO_REUSEPORT lets a server's own workers share its port, and nobody else."""
    process, base = start_server(database_url, "--workers", "2")
    try:
        port = int(base.rsplit(":", 1)[1])
        second = serve_on(port, database_url)
        assert second.returncode != 0
        assert f"127.0.0.1:{port} is in use by another process" in second.stderr
        assert all(httpx.get(f"{base}/healthz").status_code == 200 for _ in range(20))
    finally:
        stop_server(process)


def test_serve_refuses_a_port_another_program_listens_on(database_url: str) -> None:
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # it would let us join
        other.bind(("127.0.0.1", 0))
        other.listen()
        second = serve_on(other.getsockname()[1], database_url)
    assert second.returncode != 0
    assert "is in use by another process" in second.stderr
