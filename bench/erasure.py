"""S20: erasing a user of 1,000 sessions and 1,000,000 events, and the app's other users'
appends meanwhile; exporting the same user first, and importing the export afterwards.

On a database of its own (`<prefix>_erasure`, migrated), the user's sessions and events are
loaded in bulk (`databases.seed`, as S6 loads its million), then on a `sessionary serve` of
its own: bursts of S1's appends (the append scenario of `bench/scenarios.py`, the Python
generator, to other users' fresh sessions) before the erase; `DELETE /apps/{app}/users/{user}`
(answered 202 at once: `SESSIONARY_ERASE_WAIT=0`), then bursts until its status
(`GET …/erasure`, every 0.5 s) says done; bursts after. With each phase, the CPU each part
spent (the server's workers, PostgreSQL), as S19 counts it. Before the erase the user is
exported (`GET …/users/{user}:export`, to a file) and after it imported under another id
(`POST …/users/{other}:import`, streamed from the file), each timed alone: MB/s.
"""

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from bench import databases, scenarios
from bench.clients import postmaster_of
from bench.databases import Databases
from bench.memory import Meter, log
from bench.scenarios import Burst
from bench.server import Server
from bench.sessionary_side import Sessionary
from bench.workload import Sizes as LoadSizes

APP = "bench-erasure"
USER_PREFIX = "erased"  # `seed` names its one user erased0
BURSTS = 3  # before the erase, and after it


@dataclass(frozen=True)
class Sizes:
    erase_sessions: int = 1_000
    erase_events_per_session: int = 1_000


QUICK = Sizes(erase_sessions=20, erase_events_per_session=100)


@dataclass
class Phase:
    bursts: list[Burst]
    meter: Meter
    appends: int  # made in its bursts, their warm-ups' with them


@dataclass
class S20:
    sizes: Sizes
    load_seconds: float
    erase_seconds: float  # from the DELETE to the status saying done
    removed: dict[str, int]
    progress: list[tuple[float, int]]  # (seconds since the DELETE, events removed)
    phases: dict[str, Phase]  # before, during, after
    export_bytes: int
    export_seconds: float
    import_seconds: float

    def report(self) -> str:
        events = self.removed.get("events", 0)
        megabytes = self.export_bytes / MB
        lines = [
            f"S20 erase: a user of {self.sizes.erase_sessions:,} sessions and {events:,} events "
            f"erased in {self.erase_seconds:.1f} s ({events / self.erase_seconds:,.0f} events/s"
            f"; loaded in bulk in {self.load_seconds:.0f} s). Removed: "
            + ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.removed.items()) if n)
            + ". Events removed over time: "
            + ", ".join(
                f"{at:.0f} s: {n:,}" for at, n in self.progress[:: max(1, len(self.progress) // 8)]
            )
            + ".",
            "",
            f"S20 export and import of that user: {megabytes:,.0f} MB of NDJSON exported in "
            f"{self.export_seconds:.1f} s ({megabytes / self.export_seconds:,.1f} MB/s), "
            f"imported under another id in {self.import_seconds:.1f} s "
            f"({megabytes / self.import_seconds:,.1f} MB/s, one transaction).",
            "",
            "| S20 other users' appends (S1, the Python generator) | bursts | events/s "
            "| p50 ms | p99 ms | CPU µs per append: server | PostgreSQL | other work's share |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name, phase in self.phases.items():
            burst = scenarios.median_burst(phase.bursts)
            _, server, postgres = phase.meter.each(phase.appends)
            lines.append(
                f"| {name} | {len(phase.bursts)} | {burst.events_per_second:,.0f} "
                f"| {burst.p50_ms:.1f} | {burst.p99_ms:.1f} | {server:.0f} | {postgres:.0f} "
                f"| {phase.meter.elsewhere:.0%} |"
            )
        lines += [
            "",
            "- S20: each phase's figures are its bursts' medians; the CPU is all that each part "
            "spent during the phase over the appends made (the erase's deletes are in "
            "PostgreSQL's, during it).",
        ]
        return "\n".join(lines)


MB = 1_000_000


async def _export(http: httpx.AsyncClient, path: str, file: Path) -> tuple[int, float]:
    """The user's export written to `file`: its size and the seconds it took."""
    began = time.monotonic()
    size = 0
    with file.open("wb") as out:
        async with http.stream("GET", f"{path}:export") as answer:
            if answer.status_code != 200:
                raise RuntimeError(f"the export answered {answer.status_code}")
            async for chunk in answer.aiter_raw():
                out.write(chunk)
                size += len(chunk)
    return size, time.monotonic() - began


async def _import(http: httpx.AsyncClient, path: str, file: Path) -> float:
    """`file` imported at `path`, streamed: the seconds it took."""

    async def chunks() -> AsyncIterator[bytes]:
        with file.open("rb") as source:
            while chunk := source.read(1 << 20):
                yield chunk

    began = time.monotonic()
    answer = await http.post(
        f"{path}:import", content=chunks(), headers={"content-type": "application/x-ndjson"}
    )
    if answer.status_code != 200:
        raise RuntimeError(f"the import answered {answer.status_code}: {answer.text}")
    return time.monotonic() - began


async def _until_done(
    http: httpx.AsyncClient, path: str, started: float
) -> list[tuple[float, int]]:
    progress = []
    while True:
        status: dict[str, Any] = (await http.get(path)).json()
        progress.append((time.monotonic() - started, status["removed"].get("events", 0)))
        if status["status"] == "done":
            return progress
        await asyncio.sleep(0.5)


async def run(database_url: str, prefix: str, sizes: Sizes, appends: LoadSizes) -> S20:
    names = Databases.on(database_url, f"{prefix}_erasure")
    await databases.recreate(names)
    databases.migrate(names.sessionary)
    dsn = names.sessionary
    events = sizes.erase_sessions * sizes.erase_events_per_session
    log(f"S20: loading a user of {sizes.erase_sessions:,} sessions and {events:,} events")
    loading = time.monotonic()
    await databases.seed(
        dsn,
        "sessionary",
        app=APP,
        sessions=sizes.erase_sessions,
        events_per_session=sizes.erase_events_per_session,
        users=1,
        user_prefix=USER_PREFIX,
    )
    await databases.checkpoint(dsn)  # `seed` has vacuumed and analysed it
    load_seconds = time.monotonic() - loading
    one_burst = replace(appends, repeat=1)
    per_burst = one_burst.clients * 5 + one_burst.append_sessions * one_burst.appends_per_session
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_ERASE_WAIT": "0"}
    with Server(dsn, 2, env) as serve:
        system = Sessionary(serve.host, serve.port)
        postmaster = await postmaster_of(dsn)
        phases: dict[str, Phase] = {}

        async def bursts(label: str, count: int | None, until: asyncio.Task[Any] | None) -> None:
            meter = Meter(serve.worker_pids, postmaster)
            done: list[Burst] = []
            with meter.measure():
                while (count is not None and len(done) < count) or (
                    until is not None and not until.done()
                ):
                    done.append(
                        await scenarios.append(system, one_burst, f"s20-{label}{len(done)}")
                    )
            phases[label] = Phase(done, meter, len(done) * per_burst)

        try:
            log(f"S20: {BURSTS} S1 bursts before the erase")
            await bursts("before", BURSTS, None)
            base = f"http://{serve.host}:{serve.port}"
            async with httpx.AsyncClient(base_url=base, timeout=3600) as http:
                path = f"/apps/{APP}/users/{USER_PREFIX}0"
                exported = Path(tempfile.mkdtemp(prefix="s20-")) / "user.ndjson"
                log("S20: exporting the user")
                export_bytes, export_seconds = await _export(http, path, exported)
                started = time.monotonic()
                answer = await http.delete(path)
                if answer.status_code not in (200, 202):
                    raise RuntimeError(f"the erase answered {answer.status_code}: {answer.text}")
                log("S20: the erase runs; S1 bursts until it is done")
                watching = asyncio.create_task(_until_done(http, f"{path}/erasure", started))
                await bursts("during the erase", None, watching)
                progress = await watching
                erase_seconds = progress[-1][0]
                removed = (await http.get(f"{path}/erasure")).json()["removed"]
            log(f"S20: {BURSTS} S1 bursts after it")
            await bursts("after", BURSTS, None)
            log("S20: importing the export under another user")
            async with httpx.AsyncClient(base_url=base, timeout=3600) as http:
                import_seconds = await _import(http, f"/apps/{APP}/users/imported0", exported)
            exported.unlink()
            exported.parent.rmdir()
        finally:
            await system.close()
    return S20(
        sizes,
        load_seconds,
        erase_seconds,
        removed,
        progress,
        phases,
        export_bytes,
        export_seconds,
        import_seconds,
    )
