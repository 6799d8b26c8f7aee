"""S18, artifacts: saving and loading files through Sessionary's HTTP API, side by side with
ADK's `FileArtifactService` and a copy floor on the same disk; the server's memory under large
transfers; the listing of a session of 1,000 names, and of its fork.

- Throughput: `artifact_tasks` (16) concurrent tasks each save an artifact of 1 KiB or 1 MiB,
  or `artifact_large_tasks` (8) one of `artifact_large_mib` (64) MiB, then, once every save of
  the burst is done, load it back.
  Four systems take turns, round after round, the order turning by one each round:
  - Sessionary over HTTP (`sessionary serve --workers 2` of its own, on databases of its own):
    the raw upload `POST …/artifacts/{name}` streamed by httpx from a generator (a declared
    `Content-Length`), the download `GET …/artifacts/{name}?version=N` streamed and counted;
  - ADK's `FileArtifactService`, in this process, its root in a temporary folder:
    `save_artifact` of a `Part` that holds the bytes (its API takes them whole; the `Part` is
    built before the clock), `load_artifact`;
  - the PostgreSQL floor: the same bytes as the same rows the service writes, `artifact_chunks`
    of a database migrated as Sessionary's, one `INSERT` per chunk
    (`SESSIONARY_ARTIFACT_CHUNK_BYTES`) in one transaction per save, over asyncpg, a
    connection per task; read back with one `SELECT` per chunk. No hash, no version, no HTTP;
  - the file floor: the same bytes written to a file beside `FileArtifactService`'s (`open`,
    `write`, `close` in a thread, as it writes), read back a chunk at a time.
  Before each burst a `CHECKPOINT` and a `sync`, so that no burst pays for the dirty pages of
  the one before. Neither file system fsyncs (`FileArtifactService` does not); PostgreSQL
  flushes its WAL at each commit. A burst's MiB/s is its bytes over its wall time; latency is
  per operation. After each round its artifacts are deleted and the two databases vacuumed
  (not timed), so that the disk holds one round at a time.
- Memory: a server of one worker (so that every transfer lands in the one process measured)
  takes `artifact_memory_transfers` (8) uploads of `artifact_memory_mib` (256) MiB at once,
  then their downloads; its RSS sampled every 10 ms and its peak (`VmHWM`) read, each over its
  RSS at rest after a warm-up. The client streams too: each artifact is a chunk-sized random
  block repeated, generated as it is sent, and its download counted, never kept.
- Listing: a session of `artifact_names` (1,000) names, listed in one page of 1,000
  (`GET …/artifacts?pageSize=1000`); then forked (`POST …:fork`), and the fork listed.

Every artifact ends in 16 bytes of its own, so that no two hold the same bytes (Sessionary
keeps equal bytes once per user). Its SHA-256 is known before it is sent and checked against
the save's answer and the download's `ETag`.
"""

import asyncio
import hashlib
import json
import os
import resource
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import asyncpg
import httpx
from google.adk.artifacts import FileArtifactService
from google.genai import types

from app.config import Settings
from app.domain import SessionKey
from bench import cpu, databases, loadgen
from bench.clients import postmaster_of
from bench.scenarios import median_call
from bench.server import Server, peak_rss, reset_peak, rss
from bench.sessionary_side import session_path
from bench.workload import Sizes

KiB = 1024
MiB = 1024 * KiB
APP = "bench-artifacts"
MEMORY_APP = "bench-artifacts-memory"
LIST_KEY = SessionKey("bench-artifacts-list", "lister", "many")
TAIL = 16  # the bytes of an artifact that are its own
FORKS = 5
SYSTEMS = ("Sessionary", "FileArtifactService", "PostgreSQL floor", "file floor")
# A transfer in flight may hold a few chunks (the one being received or read, its copy for
# the driver); the target allows four.
CHUNKS_PER_TRANSFER = 4


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _label(size: int) -> str:
    return f"{size // MiB} MiB" if size >= MiB else f"{size // KiB} KiB"


class Content:
    """Artifacts of `size` bytes: `block` (random, a chunk long) repeated and cut to size,
    then a tail of `TAIL` bytes of each artifact's own. Given a piece at a time, each a chunk
    long, as the service stores them; the hash of the shared part is taken once."""

    def __init__(self, size: int, block: bytes) -> None:
        self.size, self.block = size, block
        self.chunk = len(block)
        self.chunks = -(-size // self.chunk)
        self.last = size - (self.chunks - 1) * self.chunk
        assert self.last >= TAIL, "an artifact's last chunk must hold its tail"
        self._shared = hashlib.sha256()
        for _ in range(self.chunks - 1):
            self._shared.update(block)
        self._shared.update(block[: self.last - TAIL])

    def pieces(self, tail: bytes) -> Iterator[bytes]:
        for _ in range(self.chunks - 1):
            yield self.block
        yield self.block[: self.last - TAIL] + tail

    async def stream(self, tail: bytes) -> AsyncIterator[bytes]:
        for piece in self.pieces(tail):
            yield piece

    def whole(self, tail: bytes) -> bytes:
        return b"".join(self.pieces(tail))

    def sha256(self, tail: bytes) -> str:
        digest = self._shared.copy()
        digest.update(tail)
        return digest.hexdigest()


class Tails:
    """Each artifact's own 16 bytes: a serial number and its task, never twice in a run."""

    def __init__(self) -> None:
        self.serial = 0

    def next(self, tasks: int) -> list[bytes]:
        self.serial += 1
        return [struct.pack(">QQ", self.serial, task) for task in range(tasks)]


class Store(Protocol):
    """One system's save, load and delete of task `task`'s artifact."""

    name: str

    async def prepare(self, content: Content) -> None: ...

    async def save(self, task: int, name: str, content: Content, tail: bytes) -> Any: ...

    async def load(self, task: int, name: str, saved: Any, content: Content, tail: bytes) -> int:
        """The bytes read."""
        ...

    async def drop(self, task: int, name: str, saved: Any) -> None: ...


class SessionaryStore:
    """The HTTP API through one shared httpx client, a session per task."""

    name = "Sessionary"

    def __init__(self, base_url: str, tasks: int, app: str = APP) -> None:
        self.http = httpx.AsyncClient(
            base_url=base_url,
            timeout=httpx.Timeout(600),
            limits=httpx.Limits(max_connections=tasks, max_keepalive_connections=tasks),
        )
        self.app, self.tasks = app, tasks

    def key(self, task: int) -> SessionKey:
        return SessionKey(self.app, f"u{task}", f"s{task}")

    async def open(self) -> None:
        for task in range(self.tasks):
            key = self.key(task)
            answer = await self.http.post(
                f"/apps/{key.app_name}/users/{key.user_id}/sessions",
                json={"sessionId": key.session_id},
            )
            answer.raise_for_status()

    async def close(self) -> None:
        await self.http.aclose()

    def path(self, task: int, name: str) -> str:
        return f"{session_path(self.key(task))}/artifacts/{quote(name)}"

    async def prepare(self, content: Content) -> None:
        pass

    async def save(self, task: int, name: str, content: Content, tail: bytes) -> int:
        answer = await self.http.post(
            self.path(task, name),
            content=content.stream(tail),
            headers={
                "Content-Length": str(content.size),
                "Content-Type": "application/octet-stream",
            },
        )
        if answer.status_code != 201:
            raise RuntimeError(f"upload answered {answer.status_code}: {answer.text[:300]}")
        saved = answer.json()
        if saved["sha256"] != content.sha256(tail) or saved["size"] != content.size:
            raise RuntimeError(f"upload stored other bytes: {saved}")
        version: int = saved["version"]
        return version

    async def load(self, task: int, name: str, saved: Any, content: Content, tail: bytes) -> int:
        read = 0
        path = self.path(task, name)
        async with self.http.stream("GET", path, params={"version": saved}) as answer:
            if answer.status_code != 200:
                raise RuntimeError(f"download answered {answer.status_code}")
            if answer.headers["etag"] != f'"{content.sha256(tail)}"':
                raise RuntimeError(f"download of other bytes: {answer.headers['etag']}")
            async for piece in answer.aiter_raw():
                read += len(piece)
        return read

    async def drop(self, task: int, name: str, saved: Any) -> None:
        (await self.http.delete(self.path(task, name))).raise_for_status()


class AdkStore:
    """ADK's `FileArtifactService` in this process."""

    name = "FileArtifactService"

    def __init__(self, root: Path) -> None:
        self.service = FileArtifactService(root)
        self.part = types.Part()

    async def prepare(self, content: Content) -> None:
        # Its API takes the bytes whole: built once, before the clock, shared by the tasks
        # (it keeps no two saves' bytes together, so they need not differ).
        data = content.whole(b"\0" * TAIL)
        self.part = types.Part(
            inline_data=types.Blob(mime_type="application/octet-stream", data=data)
        )

    async def save(self, task: int, name: str, content: Content, tail: bytes) -> int:
        return await self.service.save_artifact(
            app_name=APP,
            user_id=f"u{task}",
            session_id=f"s{task}",
            filename=name,
            artifact=self.part,
        )

    async def load(self, task: int, name: str, saved: Any, content: Content, tail: bytes) -> int:
        part = await self.service.load_artifact(
            app_name=APP, user_id=f"u{task}", session_id=f"s{task}", filename=name, version=saved
        )
        assert part is not None and part.inline_data is not None and part.inline_data.data
        return len(part.inline_data.data)

    async def drop(self, task: int, name: str, saved: Any) -> None:
        await self.service.delete_artifact(
            app_name=APP, user_id=f"u{task}", session_id=f"s{task}", filename=name
        )


_INSERT_CHUNK = (
    "INSERT INTO artifact_chunks (app_name, user_id, blob_id, n, data) VALUES ($1, $2, $3, $4, $5)"
)
_SELECT_CHUNK = (
    "SELECT data FROM artifact_chunks "
    "WHERE app_name = $1 AND user_id = $2 AND blob_id = $3 AND n = $4"
)
_DELETE_CHUNKS = "DELETE FROM artifact_chunks WHERE app_name = $1 AND user_id = $2 AND blob_id = $3"


class PostgresFloor:
    """The bytes straight into the service's chunk rows, over asyncpg: a connection per task,
    a transaction per save, a statement per chunk."""

    name = "PostgreSQL floor"

    def __init__(self, dsn: str, tasks: int) -> None:
        self.dsn, self.tasks = dsn, tasks
        self.connections: list[asyncpg.Connection] = []

    async def open(self) -> None:
        self.connections = [await asyncpg.connect(self.dsn) for _ in range(self.tasks)]

    async def close(self) -> None:
        for connection in self.connections:
            await connection.close()

    async def prepare(self, content: Content) -> None:
        pass

    async def save(self, task: int, name: str, content: Content, tail: bytes) -> str:
        blob = str(uuid.uuid4())
        connection = self.connections[task]
        async with connection.transaction():
            for n, piece in enumerate(content.pieces(tail)):
                await connection.execute(_INSERT_CHUNK, APP, f"u{task}", blob, n, piece)
        return blob

    async def load(self, task: int, name: str, saved: Any, content: Content, tail: bytes) -> int:
        read = 0
        connection = self.connections[task]
        for n in range(content.chunks):
            data = await connection.fetchval(_SELECT_CHUNK, APP, f"u{task}", saved, n)
            read += len(data)
        return read

    async def drop(self, task: int, name: str, saved: Any) -> None:
        await self.connections[task].execute(_DELETE_CHUNKS, APP, f"u{task}", saved)


def _write(path: Path, pieces: Iterator[bytes]) -> None:
    with path.open("wb") as file:
        for piece in pieces:
            file.write(piece)


def _read(path: Path, chunk: int) -> int:
    read = 0
    with path.open("rb") as file:
        while piece := file.read(chunk):
            read += len(piece)
    return read


class FileFloor:
    """The bytes into a file, in a thread, as `FileArtifactService` writes its own."""

    name = "file floor"

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    async def prepare(self, content: Content) -> None:
        pass

    async def save(self, task: int, name: str, content: Content, tail: bytes) -> Path:
        path = self.root / f"{task}-{name}"
        await asyncio.to_thread(_write, path, content.pieces(tail))
        return path

    async def load(self, task: int, name: str, saved: Any, content: Content, tail: bytes) -> int:
        return await asyncio.to_thread(_read, saved, content.chunk)

    async def drop(self, task: int, name: str, saved: Any) -> None:
        saved.unlink()


@dataclass
class Figures:
    """One system's bursts of one kind (save or load) at one size."""

    rates: list[float] = field(default_factory=list)  # MiB/s, a burst each
    latencies: list[float] = field(default_factory=list)  # ms, an operation each
    # CPU seconds of every burst together: this process, the server's workers, PostgreSQL.
    cpu: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])

    @property
    def rate(self) -> float:
        return statistics.median(self.rates) if self.rates else float("nan")

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("nan")

    def cpu_ms(self) -> tuple[float, float, float]:
        """ms of CPU per operation over every burst (one burst's ticks are too coarse)."""
        if not self.latencies:
            return (float("nan"),) * 3
        client, server, postgres = (1000 * part / len(self.latencies) for part in self.cpu)
        return client, server, postgres


@dataclass
class Meters:
    """The CPU of this process (every thread), the server's workers and the bench's
    PostgreSQL (its postmaster and every process it started)."""

    server_pids: list[int]
    postmaster: int

    def read(self) -> tuple[float, float, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        server = sum(cpu.process_seconds(pid) for pid in self.server_pids)
        postgres = cpu.postgres_by_server().get(self.postmaster, 0.0)
        return usage.ru_utime + usage.ru_stime, server, postgres


async def barrier(dsns: Sequence[str]) -> None:
    """Dirty pages out before a burst: PostgreSQL's (a CHECKPOINT), then the kernel's."""
    await databases.checkpoint(dsns[0])
    await asyncio.to_thread(os.sync)


async def vacuum(dsns: Sequence[str]) -> None:
    for dsn in dsns:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute("VACUUM")
        finally:
            await connection.close()


async def burst(
    meters: Meters, tasks: int, size: int, operation: Callable[[int], Awaitable[Any]]
) -> tuple[Figures, list[Any]]:
    """`operation` of every task at once: the burst's MiB/s, each one's ms, the CPU each
    cost; and what each returned."""
    answers: list[Any] = [None] * tasks
    latencies = [0.0] * tasks

    async def one(task: int) -> None:
        began = time.perf_counter()
        answers[task] = await operation(task)
        latencies[task] = (time.perf_counter() - began) * 1000

    before = meters.read()
    began = time.perf_counter()
    await asyncio.gather(*(one(task) for task in range(tasks)))
    wall = time.perf_counter() - began
    spent = [after - was for after, was in zip(meters.read(), before, strict=True)]
    figures = Figures([tasks * size / MiB / wall], latencies, spent)
    return figures, answers


@dataclass
class Size:
    """Every system's saves and loads of artifacts of one size."""

    size: int
    tasks: int
    rounds: int
    save: dict[str, Figures] = field(default_factory=dict)
    load: dict[str, Figures] = field(default_factory=dict)
    worker_rise: list[int] = field(default_factory=list)  # bytes, each worker of the server


async def save_and_load(
    store: Store,
    meters: Meters,
    dsns: Sequence[str],
    size: Size,
    content: Content,
    tails: Tails,
) -> None:
    """One round's turn of `store`: a save burst, a load burst of what it saved, its figures
    added to `size`'s; then the artifacts deleted."""
    mine = tails.next(size.tasks)
    name = f"blob-{tails.serial}.bin"
    saved: list[Any] = []

    async def save(task: int) -> Any:
        return await store.save(task, name, content, mine[task])

    async def load(task: int) -> int:
        return await store.load(task, name, saved[task], content, mine[task])

    await barrier(dsns)
    saved_figures, saved = await burst(meters, size.tasks, size.size, save)
    await barrier(dsns)
    loaded_figures, read = await burst(meters, size.tasks, size.size, load)
    if read != [size.size] * size.tasks:
        raise RuntimeError(f"{store.name} loaded {read[:3]}…, not {size.size} each")
    for figures, into in ((saved_figures, size.save), (loaded_figures, size.load)):
        into[store.name].rates += figures.rates
        into[store.name].latencies += figures.latencies
        into[store.name].cpu = [
            a + b for a, b in zip(into[store.name].cpu, figures.cpu, strict=True)
        ]
    await asyncio.gather(*(store.drop(task, name, saved[task]) for task in range(size.tasks)))


async def throughput(
    stores: list[Store],
    meters: Meters,
    dsns: Sequence[str],
    size: Size,
    block: bytes,
    tails: Tails,
) -> None:
    """`size.rounds` rounds of each store's save burst then load burst, the order turning by
    one each round; the databases vacuumed after each round."""
    content = Content(size.size, block)
    for store in stores:
        await store.prepare(content)
        size.save[store.name], size.load[store.name] = Figures(), Figures()
    for round_ in range(size.rounds):
        turn = round_ % len(stores)
        for store in stores[turn:] + stores[:turn]:
            await save_and_load(store, meters, dsns, size, content, tails)
        await vacuum(dsns)


@dataclass
class Memory:
    """The one-worker server's RSS around large transfers at once, and this process's."""

    transfers: int
    size: int
    chunk: int
    idle: int = 0
    upload_rise: int = 0
    download_rise: int = 0
    upload_rate: float = 0.0
    download_rate: float = 0.0
    client_rise: int = 0

    @property
    def rise(self) -> int:
        return max(self.upload_rise, self.download_rise)

    @property
    def chunks_per_transfer(self) -> float:
        return self.rise / self.transfers / self.chunk


class Sampler:
    """The highest VmRSS of each pid, read every 10 ms on a thread of its own."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.highest = {pid: 0 for pid in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            for pid in self.pids:
                self.highest[pid] = max(self.highest[pid], rss(pid))

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.highest = {pid: rss(pid) for pid in self.pids}


async def memory(
    dsn: str, dsns: Sequence[str], env: dict[str, str], block: bytes, sizes: Sizes, tails: Tails
) -> Memory:
    """`artifact_memory_transfers` uploads of `artifact_memory_mib` MiB at once to a server of
    one worker, then their downloads: its peak RSS over its RSS at rest, each time."""
    transfers = sizes.artifact_memory_transfers
    found = Memory(transfers, sizes.artifact_memory_mib * MiB, len(block))
    with Server(dsn, 1, env) as serve:
        (worker,) = serve.worker_pids()
        me = os.getpid()
        store = SessionaryStore(f"http://{serve.host}:{serve.port}", transfers, MEMORY_APP)
        await store.open()
        meters = Meters([worker], 0)
        # A warm-up of one chunk each: the pool's connections opened, the code paths run.
        warm = Content(len(block), block)
        mine = tails.next(transfers)
        _, saved = await burst(
            meters, transfers, warm.size, lambda t: store.save(t, "warm", warm, mine[t])
        )
        await burst(
            meters, transfers, warm.size, lambda t: store.load(t, "warm", saved[t], warm, mine[t])
        )
        await asyncio.gather(*(store.drop(t, "warm", saved[t]) for t in range(transfers)))
        await vacuum(dsns)
        await asyncio.sleep(1)
        content = Content(found.size, block)
        mine = tails.next(transfers)
        found.idle, client_idle = rss(worker), rss(me)
        with Sampler([worker, me]) as sampler:
            for pid in (worker, me):
                reset_peak(pid)
            await barrier(dsns)
            up, saved = await burst(
                meters, transfers, found.size, lambda t: store.save(t, "big", content, mine[t])
            )
            found.upload_rise = max(peak_rss(worker), sampler.highest[worker]) - found.idle
            client_peak = max(peak_rss(me), sampler.highest[me])
            reset_peak(worker)
            sampler.reset()
            await barrier(dsns)
            down, read = await burst(
                meters,
                transfers,
                found.size,
                lambda t: store.load(t, "big", saved[t], content, mine[t]),
            )
            found.download_rise = max(peak_rss(worker), sampler.highest[worker]) - found.idle
            client_peak = max(client_peak, peak_rss(me), sampler.highest[me])
        if read != [found.size] * transfers:
            raise RuntimeError(f"the memory run loaded {read}, not {found.size} each")
        found.client_rise = client_peak - client_idle
        found.upload_rate, found.download_rate = up.rate, down.rate
        await asyncio.gather(*(store.drop(t, "big", saved[t]) for t in range(transfers)))
        await store.close()
    await vacuum(dsns)
    return found


@dataclass
class Listing:
    names: int
    list_ms: float = 0.0
    fork_ms: float = 0.0
    fork_list_ms: float = 0.0


async def listing(host: str, port: int, names: int, repeat: int, tasks: int) -> Listing:
    """A session of `names` artifacts (a few bytes each, saved `tasks` at a time), listed in
    one page; forked `FORKS` times; its last fork listed. Median ms of each."""
    assert names <= 1000, "one page holds at most 1,000 names"
    found = Listing(names)
    key = LIST_KEY
    path = session_path(key)
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}", timeout=60) as http:
        created = await http.post(
            f"/apps/{key.app_name}/users/{key.user_id}/sessions", json={"sessionId": key.session_id}
        )
        created.raise_for_status()

        async def saver(first: int) -> None:
            for n in range(first, names, tasks):
                saved = await http.post(
                    f"{path}/artifacts/{quote(f'notes/file-{n:05d}.txt')}",
                    content=f"note {n}\n".encode(),
                    headers={"Content-Type": "text/plain"},
                )
                saved.raise_for_status()

        await asyncio.gather(*(saver(task) for task in range(tasks)))

    async with loadgen.Connection(host, port) as connection:

        async def listed(of: str) -> None:
            # Counted, not parsed: the client's JSON decoding is not the server's latency.
            answer = await connection.call("GET", f"{of}/artifacts?pageSize={names}")
            if answer.body.count(b'"canonicalUri"') != names or b'"nextPageToken":null' not in (
                answer.body
            ):
                raise RuntimeError(f"a listing of other than {names} names: {answer.body[:200]!r}")

        found.list_ms = await median_call(repeat, lambda: listed(path))
        forks = []
        for n in range(FORKS):
            body = json.dumps({"sessionId": f"fork-{n}"}).encode()
            began = time.perf_counter()
            await connection.call("POST", f"{path}:fork", body, expect=201)
            forks.append((time.perf_counter() - began) * 1000)
        found.fork_ms = statistics.median(forks)
        fork = session_path(SessionKey(key.app_name, key.user_id, f"fork-{FORKS - 1}"))
        found.fork_list_ms = await median_call(repeat, lambda: listed(fork))
    return found


@dataclass
class S18:
    """The figures of a run, as report lines and as targets met or not."""

    tasks: int
    sizes: list[Size]
    memory: Memory
    listing: Listing
    notes: list[str]

    def _cell(self, value: float) -> str:
        if value != value:  # NaN
            return "n/a"
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"

    def lines(self) -> list[str]:
        each = ", ".join(
            f"{_label(s.size)}: {s.tasks} tasks, {s.rounds} rounds" for s in self.sizes
        )
        lines = [
            "S18 artifacts: concurrent tasks each save an artifact, then load it back "
            f"({each}); MiB/s over each burst's wall time (the median burst), p50 ms per "
            "operation.",
            "",
            "| S18 | " + " | ".join(SYSTEMS) + " | Sessionary/PostgreSQL floor "
            "| Sessionary/FileArtifactService |",
            "|---|" + "--:|" * (len(SYSTEMS) + 2),
        ]
        for size in self.sizes:
            for kind, figures in (("save", size.save), ("load", size.load)):
                for metric in ("MiB/s", "p50 ms"):
                    values = [
                        figures[s].rate if metric == "MiB/s" else figures[s].p50 for s in SYSTEMS
                    ]
                    ratios = [values[0] / values[2], values[0] / values[1]]
                    lines.append(
                        f"| {kind} {_label(size.size)}, {metric} | "
                        + " | ".join(self._cell(v) for v in values)
                        + " | "
                        + " | ".join(f"{r:.2f}x" for r in ratios)
                        + " |"
                    )
        lines += [
            "",
            "| S18 CPU ms per operation | Sessionary: this process | server | PostgreSQL | all "
            "| FileArtifactService | PostgreSQL floor | file floor |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for size in self.sizes:
            for kind, figures in (("save", size.save), ("load", size.load)):
                ours = figures["Sessionary"].cpu_ms()
                others = [sum(figures[s].cpu_ms()) for s in SYSTEMS[1:]]
                lines.append(
                    f"| {kind} {_label(size.size)} | "
                    + " | ".join(self._cell(v) for v in (*ours, sum(ours), *others))
                    + " |"
                )
        m = self.memory
        workers = "; ".join(
            f"{_label(s.size)}: " + ", ".join(f"{rise / MiB:.1f}" for rise in s.worker_rise)
            for s in self.sizes
        )
        lines += [
            "",
            "| S18 memory | server RSS at rest MB | peak rise MB | chunks per transfer | MiB/s |",
            "|---|--:|--:|--:|--:|",
            f"| {m.transfers} uploads of {_label(m.size)} at once, one worker "
            f"| {m.idle / MiB:.0f} | {m.upload_rise / MiB:.1f} "
            f"| {m.upload_rise / m.transfers / m.chunk:.2f} | {m.upload_rate:,.0f} |",
            f"| their {m.transfers} downloads at once "
            f"| {m.idle / MiB:.0f} | {m.download_rise / MiB:.1f} "
            f"| {m.download_rise / m.transfers / m.chunk:.2f} | {m.download_rate:,.0f} |",
            "",
            f"S18 memory: the benchmark process (the client) rose {m.client_rise / MiB:.1f} MB "
            f"while it sent and received those {m.transfers} of {_label(m.size)}. The two-worker "
            f"server's peak rise over each size's rounds, MB per worker: {workers}.",
            "",
            "| S18 listing (median ms) | |",
            "|---|--:|",
            f"| a session's {self.listing.names:,} names, one page | {self.listing.list_ms:.2f} |",
            f"| fork that session (`POST …:fork`) | {self.listing.fork_ms:.2f} |",
            f"| the fork's {self.listing.names:,} names | {self.listing.fork_list_ms:.2f} |",
            "",
            *(f"- S18: {note}" for note in self.notes),
        ]
        return lines

    def targets(self) -> list[tuple[str, bool, str]]:
        large, small = self.sizes[-1], self.sizes[0]

        def ratio(figures: dict[str, Figures], other: str) -> float:
            return figures["Sessionary"].rate / figures[other].rate

        save_floor = ratio(large.save, "PostgreSQL floor")
        load_floor = ratio(large.load, "PostgreSQL floor")
        save_adk = ratio(small.save, "FileArtifactService")
        load_adk = ratio(small.load, "FileArtifactService")
        m = self.memory
        allowed = CHUNKS_PER_TRANSFER * m.transfers * m.chunk
        listed = max(self.listing.list_ms, self.listing.fork_list_ms)
        return [
            (
                f"S18: save and load of {_label(large.size)} within 2x of the PostgreSQL floor",
                save_floor >= 0.5 and load_floor >= 0.5,
                f"save {save_floor:.0%}, load {load_floor:.0%} of its MiB/s",
            ),
            (
                f"S18: save and load of {_label(small.size)} ahead of FileArtifactService",
                save_adk >= 1 and load_adk >= 1,
                f"save {save_adk:.2f}x, load {load_adk:.2f}x its MiB/s",
            ),
            (
                f"S18: the server's peak rise ≤ {CHUNKS_PER_TRANSFER} chunks per transfer in "
                f"flight ({m.transfers} of {_label(m.size)})",
                m.rise <= allowed,
                f"{m.rise / MiB:.1f} MB ({m.chunks_per_transfer:.2f} chunks per transfer; "
                f"{allowed / MiB:.0f} MB allowed)",
            ),
            (
                f"S18: listing {self.listing.names:,} names, and a fork's, under 20 ms",
                listed < 20,
                f"{self.listing.list_ms:.1f} ms, the fork's {self.listing.fork_list_ms:.1f} ms",
            ),
        ]


def same_disk(folder: Path, data_directory: str | None) -> str:
    """Whether `folder` and PostgreSQL's data are on one file system, as far as this host
    can tell."""
    if data_directory is None or not Path(data_directory).exists():
        return "PostgreSQL's data directory is not visible from here"
    one = os.stat(folder).st_dev == os.stat(data_directory).st_dev
    return f"{'the same' if one else 'another'} file system as PostgreSQL's data ({data_directory})"


async def data_directory(dsn: str) -> str | None:
    connection = await asyncpg.connect(dsn)
    try:
        found: str = await connection.fetchval("SHOW data_directory")
        return found
    except asyncpg.InsufficientPrivilegeError:
        return None
    finally:
        await connection.close()


def plan(sizes: Sizes) -> list[Size]:
    tasks = sizes.artifact_tasks
    return [
        Size(KiB, tasks, sizes.artifact_rounds),
        Size(MiB, tasks, sizes.artifact_rounds),
        Size(
            sizes.artifact_large_mib * MiB, sizes.artifact_large_tasks, sizes.artifact_large_rounds
        ),
    ]


async def run(database_url: str, prefix: str, sizes: Sizes) -> S18:
    """S18, on databases of its own on the server of `database_url`."""
    names = databases.Databases.on(database_url, f"{prefix}_artifacts")
    await databases.recreate(names)
    databases.migrate(names.sessionary)
    databases.migrate(names.floor)
    dsns = (names.sessionary, names.floor)
    chunk = Settings().artifact_chunk_bytes
    block = os.urandom(chunk)
    tails = Tails()
    tasks = sizes.artifact_tasks
    root = Path(tempfile.mkdtemp(prefix="sessionary-s18-"))
    postmaster = await postmaster_of(names.sessionary)
    notes = [
        f"FileArtifactService and the file floor write under {root}, on "
        f"{same_disk(root, await data_directory(names.sessionary))}.",
    ]
    # Each worker's pool holds every task's upload at once (each keeps its connection until it
    # commits); with the floor's connections they fit PostgreSQL's default max_connections.
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": str(tasks)}
    plans = plan(sizes)
    try:
        with Server(names.sessionary, 2, env) as serve:
            workers = serve.worker_pids()
            meters = Meters(workers, postmaster)
            sessionary = SessionaryStore(f"http://{serve.host}:{serve.port}", tasks)
            floor = PostgresFloor(names.floor, tasks)
            await sessionary.open()
            await floor.open()
            stores: list[Store] = [
                sessionary,
                AdkStore(root / "adk"),
                floor,
                FileFloor(root / "file"),
            ]
            host_before = cpu.host_seconds()
            ours_before = sum(meters.read())
            # A round of 1 KiB untimed: connections opened, code paths run, on every side.
            await throughput(stores, meters, dsns, Size(KiB, tasks, 1), block, tails)
            for size in plans:
                log(f"S18: {size.tasks} tasks, {_label(size.size)}, {size.rounds} rounds")
                idle = [rss(pid) for pid in workers]
                for pid in workers:
                    reset_peak(pid)
                await throughput(stores, meters, dsns, size, block, tails)
                size.worker_rise = [
                    peak_rss(pid) - was for pid, was in zip(workers, idle, strict=True)
                ]
            busy, whole = (
                after - was for after, was in zip(cpu.host_seconds(), host_before, strict=True)
            )
            rest = max(0.0, busy - (sum(meters.read()) - ours_before)) / whole
            notes.append(
                f"while the transfers ran, the rest of the host kept {rest:.0%} of its "
                f"{os.cpu_count()} cores busy (its busy time less this process's, the server's "
                "and the bench PostgreSQL's)."
            )
            await sessionary.close()
            await floor.close()
            log(f"S18: listing {sizes.artifact_names:,} names, and a fork's")
            listed = await listing(
                serve.host, serve.port, sizes.artifact_names, sizes.read_repeat, tasks
            )
        log(
            f"S18: memory, {sizes.artifact_memory_transfers} transfers of "
            f"{sizes.artifact_memory_mib} MiB at once to one worker"
        )
        held = await memory(names.sessionary, dsns, env, block, sizes, tails)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return S18(tasks, plans, held, listed, notes)
