"""Sessionary as users run it: `sessionary serve --workers 2`, and its workers' memory.

Memory is read from /proc (no psutil): VmRSS now, VmHWM the peak since the last reset.
Writing "5" to /proc/<pid>/clear_refs resets VmHWM, which lets one operation's peak be
measured on its own. A thread samples VmRSS through the whole suite as a second witness.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

MiB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def rss(pid: int) -> int:
    """Resident set size in bytes."""
    return _status_kib(pid, "VmRSS") * 1024


def peak_rss(pid: int) -> int:
    """Highest resident set size since start or the last `reset_peak`, in bytes."""
    return _status_kib(pid, "VmHWM") * 1024


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


class Server:
    """`sessionary serve --workers N` on a free loopback port, stopped with SIGTERM."""

    def __init__(self, database_url: str, workers: int, extra_env: dict[str, str]) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.workers = workers
        self._env = {**os.environ, "DATABASE_URL": database_url, **extra_env}
        self._process: subprocess.Popen[bytes] | None = None
        # The access log goes to stdout, discarded; errors to a file shown if startup fails.
        self._quiet = open(os.devnull, "wb")
        self._errors = tempfile.TemporaryFile()
        self._sampler: threading.Thread | None = None
        self._stop_sampling = threading.Event()
        self.max_rss: dict[int, int] = {}

    def command(self) -> list[str]:
        return [str(Path(sys.executable).parent / "sessionary"), "serve", *self._where()]

    def _where(self) -> list[str]:
        return ["--host", self.host, "--port", str(self.port), "--workers", str(self.workers)]

    def __enter__(self) -> Self:
        self._process = subprocess.Popen(
            self.command(),
            env=self._env,
            stdout=self._quiet,
            stderr=self._errors,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self._wait_ready()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop_sampling.set()
        if self._sampler is not None:
            self._sampler.join()
        if self._process is not None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._quiet.close()
        self._errors.close()

    def errors(self) -> str:
        """The tail of the server's stderr, for diagnosing a failed run."""
        self._errors.seek(0)
        return self._errors.read().decode(errors="replace")[-3000:]

    def _wait_ready(self) -> None:
        """Ready means /readyz answers 200 and both workers are up."""
        assert self._process is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.command()[:3]} exited:\n{self.errors()}")
            try:
                with urllib.request.urlopen(
                    f"http://{self.host}:{self.port}/readyz", timeout=2
                ) as answer:
                    if answer.status == 200 and len(self.worker_pids()) >= self.workers:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.command()[:3]} did not become ready within 60 s")

    def worker_pids(self) -> list[int]:
        """The uvicorn workers: the serve process's children that are Python interpreters
        (with one worker, `serve` serves in its own process).

        multiprocessing may also start a resource tracker; it serves no request and is skipped
        by name.
        """
        assert self._process is not None
        if self.workers == 1:
            return [self._process.pid]
        workers = []
        for pid in _children(self._process.pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if b"resource_tracker" not in cmdline:
                workers.append(pid)
        return workers

    def _sample(self) -> None:
        while not self._stop_sampling.wait(0.25):
            for pid in self.worker_pids():
                try:
                    self.max_rss[pid] = max(self.max_rss.get(pid, 0), rss(pid))
                except (FileNotFoundError, ProcessLookupError):
                    continue

    def peak_per_worker(self) -> dict[int, int]:
        """Largest RSS each worker reached: the sampler's maximum or the kernel's peak."""
        peaks = dict(self.max_rss)
        for pid in self.worker_pids():
            peaks[pid] = max(peaks.get(pid, 0), peak_rss(pid))
        return peaks


class HttpFloorServer(Server):
    """`bench/http_floor.py` served the way Sessionary is: uvicorn, a socket per worker."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "bench.http_floor", *self._where()]
