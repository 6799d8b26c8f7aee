"""S12: `sessionary export` and `sessionary import` of a million events, as users run them:
each a process of its own, timed, with its peak resident memory."""

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench import server


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    summary: str  # the command's last line on stderr


def command(database_url: str, *args: str) -> Run:
    """One `sessionary` command, to its end, with its peak RSS: the highest VmHWM read while
    it runs. Not `wait4`'s figure, which counts the bench's own pages the child had between
    its fork and its exec."""
    started = time.monotonic()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), *args],
        env={**os.environ, "DATABASE_URL": database_url},
        stderr=subprocess.PIPE,
    )
    peak = 0

    def sample() -> None:
        nonlocal peak
        while process.poll() is None:
            with contextlib.suppress(OSError, KeyError):  # it may end between two reads
                peak = max(peak, server.peak_rss(process.pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    assert process.stderr is not None
    output = process.stderr.read().decode()
    process.wait()
    sampler.join()
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"sessionary {' '.join(args)} failed:\n{output[-2000:]}")
    return Run(seconds, peak / 1024 / 1024, output.strip().splitlines()[-1])


def events_in(summary: str) -> int:
    """The events a command's summary line counts (`… 1,000,000 events …`)."""
    found = re.search(r"([\d,]+) events", summary)
    assert found is not None, summary
    return int(found.group(1).replace(",", ""))


def export_import(source_url: str, target_url: str, app_name: str) -> tuple[Run, Run, int]:
    """Export an app from `source_url`, import the file into `target_url` (migrated, without
    that app); returns both runs and the number of events moved."""
    with tempfile.TemporaryDirectory(prefix="sessionary-bench-") as folder:
        file = str(Path(folder) / "export.ndjson")
        exported = command(source_url, "export", "--app", app_name, "--output", file)
        imported = command(target_url, "import", file)
    moved = events_in(exported.summary)
    if events_in(imported.summary) != moved:
        raise RuntimeError(f"import stored other than exported: {imported.summary}")
    return exported, imported, moved


async def adk_reads(adk_url: str) -> int:
    """Read every session of an ADK database with ADK's own `get_session`, one after another,
    as `sessionary import-adk` does; the number of events read."""
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from sqlalchemy import text

    service = DatabaseSessionService(
        db_url=adk_url.replace("postgresql://", "postgresql+asyncpg://")
    )
    events = 0
    try:
        async with service.db_engine.connect() as connection:
            keys = (
                await connection.execute(text("SELECT app_name, user_id, id FROM sessions"))
            ).all()
        for app_name, user_id, session_id in keys:
            session = await service.get_session(
                app_name=app_name, user_id=user_id, session_id=session_id
            )
            assert session is not None
            events += len(session.events)
    finally:
        await service.close()
    return events
