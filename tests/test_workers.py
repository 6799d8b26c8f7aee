"""`sessionary serve --workers N`: connections spread over the workers, and a dead worker is
replaced, on the real server process."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import fixtures
from tests.fixtures import start_server, stop_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_workers(database_url: str) -> Iterator[tuple[int, str]]:
    process, base_url = start_server(database_url, "--workers", "2")
    try:
        # The server answers once one worker does; the other may still be starting.
        deadline = time.monotonic() + 30
        while len(workers_of(process.pid)) < 2:
            assert time.monotonic() < deadline, "the second worker did not start listening"
            time.sleep(0.1)
        yield process.pid, base_url
    finally:
        assert stop_server(process) == 0


def workers_of(pid: int) -> list[int]:
    """The server's worker processes (multiprocessing's resource tracker has no socket)."""
    children = [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    return [child for child in children if listening_sockets(child)]


def listening_sockets(pid: int) -> set[str]:
    return {inode for inode, state in socket_inodes(pid).items() if state == "0A"}


def socket_inodes(pid: int) -> dict[str, str]:
    """inode → TCP state (hex, as /proc/net/tcp has it) of every TCP socket the process
    holds; nothing for a process that has just exited."""
    held = set()
    states = {}
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    held.add(target[8:-1])
        for table in ("tcp", "tcp6"):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in held:
                    states[fields[9]] = fields[3]
    except FileNotFoundError:
        return {}
    return states


def test_long_lived_connections_spread_over_every_worker(two_workers):
    pid, base_url = two_workers
    port = int(base_url.rsplit(":", 1)[1])
    connections = []
    try:
        for _ in range(16):  # kept open, as an agent's connection pool keeps them
            conn = socket.create_connection(("127.0.0.1", port))
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: sessionary\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
            connections.append(conn)
        workers = workers_of(pid)
        assert len(workers) == 2
        # Each worker listens on a socket of its own: that is what lets the kernel share out
        # connections. With one shared socket a worker often takes all 16.
        listening = [listening_sockets(worker) for worker in workers]
        assert all(len(inodes) == 1 for inodes in listening)
        assert listening[0] != listening[1]
        established = [
            sum(state == "01" for state in socket_inodes(worker).values()) for worker in workers
        ]
        assert all(count > 0 for count in established), established
    finally:
        for conn in connections:
            conn.close()


def test_a_worker_that_dies_is_replaced_and_the_server_keeps_serving(two_workers):
    pid, base_url = two_workers
    victim = workers_of(pid)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:
        workers = workers_of(pid)
        if len(workers) == 2 and victim not in workers:
            break
        assert time.monotonic() < deadline, "the dead worker was not replaced"
        time.sleep(0.2)
    for _ in range(10):  # new connections each time: some land on the new worker
        assert httpx.get(f"{base_url}/readyz", timeout=10).status_code == 200


def slowed(folder: Path, seconds: float) -> dict[str, str]:
    """What makes `sessionary serve` start `seconds` later: its process alone, not its
    workers (the variable is gone from the environment they are started with)."""
    (folder / "sitecustomize.py").write_text(
        f"import os, time\nif os.environ.pop('SLOW_START', None):\n    time.sleep({seconds})\n"
    )
    return {"PYTHONPATH": str(folder), "SLOW_START": "1"}


def test_a_server_slow_to_start_is_awaited(database_url: str, tmp_path: Path) -> None:
    """A start on a loaded machine took longer than 30 s, and every test of the session's
    shared server failed with it: starting takes as long as it takes, within START_TIMEOUT."""
    started = time.monotonic()
    slow = slowed(tmp_path, 35)
    process, base_url = start_server(database_url, "--workers", "2", env=slow)
    try:
        assert time.monotonic() - started > 35
        assert httpx.get(f"{base_url}/readyz", timeout=5).status_code == 200
    finally:
        assert stop_server(process) == 0


def test_a_server_that_never_answers_fails_clearly_and_is_stopped(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fixtures, "START_TIMEOUT", 2)
    spawned: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        spawned.append(popen(*args, **kwargs))
        return spawned[-1]

    monkeypatch.setattr(subprocess, "Popen", recorded)
    with pytest.raises(RuntimeError, match="did not answer within 2 s"):
        start_server(database_url, env=slowed(tmp_path, 600))
    assert [process.returncode for process in spawned] == [-signal.SIGKILL]  # not left running
