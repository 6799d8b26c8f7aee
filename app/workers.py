"""Worker processes for `sessionary serve`: each with a listening socket of its own.

Uvicorn's multi-worker mode shares one listening socket among its workers, and whichever
wakes first accepts a whole burst of connections: with long-lived client connections (an
agent's connection pool, a load generator) one worker ends up serving nearly all of them
while the others idle. Here every worker binds its own socket with SO_REUSEPORT, and the
kernel spreads new connections over the workers. SO_REUSEPORT would as readily let a second
`sessionary serve` (or anything else run by the same user) join the port and take half of its
connections, so `serve` first makes sure that nobody listens there (`require_free_port`).
"""

import contextlib
import ctypes
import errno
import multiprocessing
import signal
import socket
import sys
import time
from multiprocessing.process import BaseProcess
from typing import Any

import uvicorn
from prometheus_client import multiprocess
from uvicorn.config import STARTUP_FAILURE

from app.services.live import end_streams

PR_SET_PDEATHSIG = 1  # linux/prctl.h


class PortInUse(Exception):
    pass


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def require_free_port(host: str, port: int) -> None:
    """PortInUse if any process listens on the port: a bind without SO_REUSEPORT fails then.

    SO_REUSEADDR still lets a restart take the port over from its own closed connections.
    """
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortInUse(f"{host}:{port} is in use by another process") from error
            raise


def listen(host: str, port: int, backlog: int) -> socket.socket:
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    return sock


class Server(uvicorn.Server):
    """Uvicorn's, but for live streams, which it ends when shutting down: it would otherwise
    wait its whole graceful timeout for them to finish, which they never do on their own."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        end_streams()
        await super().shutdown(sockets)


def serve_one(options: dict[str, Any]) -> None:
    """One uvicorn server on its own socket, in this process, until SIGTERM or SIGINT."""
    config = uvicorn.Config(**options)
    server = Server(config)
    server.run(sockets=[listen(config.host, config.port, config.backlog)])
    if not server.started:
        sys.exit(STARTUP_FAILURE)


def _worker(options: dict[str, Any]) -> None:
    # A worker must not outlive its supervisor: a `kill -9` of `sessionary serve` must not
    # leave orphans serving (and holding the port) with nobody to stop them.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    serve_one(options)


def supervise(options: dict[str, Any], workers: int) -> None:
    """Run `workers` servers, replace any that dies, stop them all on SIGTERM or SIGINT.

    Exits with uvicorn's start-up failure code if a worker cannot start (the schema is
    behind, the port is taken): replacing it would fail the same way.
    """
    context = multiprocessing.get_context("spawn")
    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    def start() -> BaseProcess:
        process = context.Process(target=_worker, args=(options,), name="sessionary-worker")
        process.start()
        return process

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    processes = [start() for _ in range(workers)]
    failed = False
    try:
        while not stop_requested:
            time.sleep(0.2)
            for index, process in enumerate(processes):
                if process.is_alive() or stop_requested:
                    continue
                multiprocess.mark_process_dead(process.pid)  # type: ignore[no-untyped-call]
                if process.exitcode == STARTUP_FAILURE:
                    failed = stop_requested = True
                    break
                processes[index] = start()
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn finishes in-flight requests first
        for process in processes:
            process.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if failed:
        sys.exit(STARTUP_FAILURE)
