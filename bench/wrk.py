"""wrk as the load generator for S1 over HTTP, when it is installed (Debian: `apt install wrk`).

The Python generator costs ~100 µs of CPU per request on the cores the server shares; wrk
costs a few µs. Each run opens `clients` connections on one wrk thread; `wrk_append.lua`
appends each request's event (unique id) to the next session of a ring of fresh sessions,
larger than the requests in flight, so no two requests append to one session at once.
"""

import asyncio
import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from app.domain import SessionKey
from bench import cpu
from bench.scenarios import Burst, median_burst
from bench.sessionary_side import Sessionary, session_path
from bench.workload import APPEND_APP, ID_MARK, TIME_MARK, EventSpec, Sizes, wire_event

SCRIPT = Path(__file__).with_name("wrk_append.lua")
THREADS = 1  # one epoll loop drives 32 connections far above any rate measured here


def available() -> bool:
    return shutil.which("wrk") is not None


def version() -> str:
    # `wrk -v` prints its banner and exits 1.
    banner = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout
    return banner.split(" [", 1)[0].strip() or "wrk"


def append(
    url: str,
    paths: list[str],
    body_template: bytes,
    *,
    clients: int,
    seconds: float,
    server_pids: Sequence[int] = (),
) -> Burst:
    """Appends for `seconds` from `clients` connections; every answer must be a 201. With the
    server's worker processes, where the host's CPU went too."""
    metered = cpu.measure(server_pids) if server_pids else contextlib.nullcontext(None)
    with tempfile.TemporaryDirectory() as scratch, metered as meter:
        path_file = Path(scratch, "paths")
        path_file.write_text("\n".join(paths) + "\n")
        body_file = Path(scratch, "body")
        body_file.write_bytes(body_template)
        output = _run(
            url,
            clients,
            seconds,
            ["-s", str(SCRIPT)],
            [str(path_file), str(body_file), str(THREADS), f"{time.time():.4f}"],
        )
    figures = json.loads(output.strip().splitlines()[-1])
    if figures["status_errors"] or figures["socket_errors"]:
        raise RuntimeError(f"wrk saw failed requests: {figures}")
    return Burst(
        events_per_second=figures["requests"] / (figures["duration_us"] / 1e6),
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        cpu=meter.per_request(figures["requests"]) if meter else None,
    )


def ceiling(url: str, *, clients: int, seconds: float) -> float:
    """Requests/s wrk reaches against a do-nothing endpoint (GET /healthz)."""
    output = _run(url + "/healthz", clients, seconds)
    found = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if found is None:
        raise RuntimeError(f"no rate in wrk's output:\n{output}")
    return float(found.group(1))


def _run(
    url: str,
    clients: int,
    seconds: float,
    options: Sequence[str] = (),
    script_args: Sequence[str] = (),
) -> str:
    """wrk's output; its script's arguments come after the URL and `--`."""
    command = ["wrk", "-t", str(THREADS), "-c", str(clients), "-d", f"{seconds:g}s", *options]
    command += [url, "--", *script_args] if script_args else [url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def url(system: Sessionary) -> str:
    return f"http://{system.host}:{system.port}"


async def ring(system: Sessionary, sizes: Sizes, label: str) -> list[str]:
    """Fresh sessions, eight per client: the paths a run appends to in turn."""
    keys = [SessionKey(APPEND_APP, f"u{i % 16}", f"{label}-s{i}") for i in range(8 * sizes.clients)]
    await system.create_sessions(keys)
    return [session_path(key) for key in keys]


# The shared event, its id and timestamp left for wrk_append.lua to fill in per request.
BODY = (
    json.dumps(wire_event(EventSpec(ID_MARK, 1, TIME_MARK)))
    .replace(json.dumps(TIME_MARK), "@TS@")
    .encode()
)


async def s1(system: Sessionary, sizes: Sizes, label: str) -> Burst:
    """S1 under wrk: `repeat` runs of `append_seconds` on fresh sessions, after a warm-up."""
    bursts = []
    for rep in range(-1, sizes.repeat):  # -1: the untimed warm-up
        paths = await ring(system, sizes, f"{label}-r{rep}")
        seconds = 2 if rep < 0 else sizes.append_seconds
        burst = await asyncio.to_thread(
            append,
            url(system),
            paths,
            BODY,
            clients=sizes.clients,
            seconds=seconds,
            server_pids=system.worker_pids(),
        )
        if rep >= 0:
            bursts.append(burst)
    return median_burst(bursts)


async def sustained(system: Sessionary, sizes: Sizes, label: str) -> list[Burst]:
    """S7: S1 without a pause for `sustained_minutes`, one figure per minute, on one ring of
    sessions that keeps growing, as a busy deployment's do."""
    paths = await ring(system, sizes, label)
    base_url = url(system)
    return [
        await asyncio.to_thread(append, base_url, paths, BODY, clients=sizes.clients, seconds=60)
        for _ in range(sizes.sustained_minutes)
    ]


async def ceiling_of(system: Sessionary, sizes: Sizes) -> float:
    return await asyncio.to_thread(ceiling, url(system), clients=sizes.clients, seconds=5)
