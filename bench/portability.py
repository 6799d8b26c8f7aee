"""S12: `sessionary export` and `sessionary import` of a million events, as users run them:
each a process of its own, timed, with its peak resident memory."""

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    summary: str  # the command's last line on stderr


def command(database_url: str, *args: str) -> Run:
    """One `sessionary` command, to its end; its peak RSS from the kernel (`wait4`)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), *args],
        env={**os.environ, "DATABASE_URL": database_url},
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    output = process.stderr.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"sessionary {' '.join(args)} failed:\n{output[-2000:]}")
    return Run(seconds, usage.ru_maxrss / 1024, output.strip().splitlines()[-1])


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
