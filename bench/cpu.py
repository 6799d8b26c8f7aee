"""Where the host's CPU goes while wrk drives a server: the server's workers, PostgreSQL, the
load generator, and the rest of the host, per request.

On a host whose cores are all busy, a server's rate is bounded by its cores over the CPU one
request costs every process together. That budget, taken for Sessionary and for the HTTP
floor in the same run, says what a target asks of each part, and what the floor itself
allows, without any profiler in the path.
"""

import os
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuSplit:
    """µs of CPU per request, by who spent it; `busy`, the share of the cores in use."""

    server: float
    postgres: float
    generator: float
    rest: float
    busy: float

    @property
    def total(self) -> float:
        return self.server + self.postgres + self.generator + self.rest

    def ceiling(self, cores: int) -> float:
        """Requests/s this host's cores allow at this cost, every core busy."""
        return cores * 1e6 / self.total


def median_split(splits: Sequence[CpuSplit]) -> CpuSplit:
    """Each part's median over repeated bursts."""
    return CpuSplit(
        *(
            statistics.median(getattr(split, part.name) for split in splits)
            for part in fields(CpuSplit)
        )
    )


@dataclass
class Meter:
    """CPU seconds spent while `measure`'s block ran, filled in when it ends."""

    server: float = 0.0
    postgres: float = 0.0
    generator: float = 0.0
    host_busy: float = 0.0
    host_all: float = 0.0

    def per_request(self, requests: int) -> CpuSplit:
        rest = self.host_busy - self.server - self.postgres - self.generator
        return CpuSplit(
            server=self.server / requests * 1e6,
            postgres=self.postgres / requests * 1e6,
            generator=self.generator / requests * 1e6,
            rest=max(0.0, rest) / requests * 1e6,
            busy=self.host_busy / self.host_all,
        )


def _stat_fields(pid: int | str) -> list[str] | None:
    """`/proc/PID/stat` after the command name (which may hold spaces), or None once gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def parent_pid(pid: int) -> int:
    """The pid of the process that started `pid`: a backend's postmaster."""
    fields = _stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return int(fields[1])


def _seconds(fields: list[str]) -> float:
    # utime and stime, the 14th and 15th fields: 12th and 13th after the command name.
    return (int(fields[11]) + int(fields[12])) / TICKS


def _postgres() -> dict[int, float]:
    """CPU seconds of every PostgreSQL process on the host: backends and background workers."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if name == "postgres" and (fields := _stat_fields(entry.name)) is not None:
            found[int(entry.name)] = _seconds(fields)
    return found


def postgres_by_server() -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL server on the host, by its postmaster's pid: the
    postmaster's own and every process it started (backends, background workers)."""
    parents = {}
    for pid in _postgres():
        if (fields := _stat_fields(pid)) is not None:
            parents[pid] = (int(fields[1]), _seconds(fields))
    servers: dict[int, float] = {}
    for pid, (parent, seconds) in parents.items():
        server = parent if parent in parents else pid
        servers[server] = servers.get(server, 0.0) + seconds
    return servers


def _server(pids: Sequence[int]) -> float:
    return sum(_seconds(fields) for pid in pids if (fields := _stat_fields(pid)) is not None)


def _children() -> float:
    """CPU seconds of this process's children that have ended: wrk, once it is reaped."""
    times = os.times()
    return times.children_user + times.children_system


def _host() -> tuple[float, float]:
    """Busy and all CPU seconds of the host since boot, over every core (`/proc/stat`)."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    total = sum(ticks[:8])  # guest time is counted in user already
    return (total - idle) / TICKS, total / TICKS


@contextmanager
def measure(server_pids: Sequence[int]) -> Iterator[Meter]:
    """The CPU spent by each part while the block runs. PostgreSQL processes that end within
    it are not counted (their time is then in the rest of the host's); a pool's connections
    live on."""
    meter = Meter()
    server, postgres, generator = _server(server_pids), _postgres(), _children()
    busy, total = _host()
    yield meter
    busy_after, total_after = _host()
    meter.server = _server(server_pids) - server
    meter.postgres = sum(seconds - postgres.get(pid, 0.0) for pid, seconds in _postgres().items())
    meter.generator = _children() - generator
    meter.host_busy = busy_after - busy
    meter.host_all = total_after - total


def process_seconds(pid: int) -> float:
    """CPU seconds so far of one process; 0 once it is gone."""
    fields = _stat_fields(pid)
    return 0.0 if fields is None else _seconds(fields)


def host_seconds() -> tuple[float, float]:
    """Busy and all CPU seconds of the host since boot, over every core."""
    return _host()
