"""The blocking client's example runs as its docstring says, again and again on one server."""

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[3] / "examples" / "fork_and_children.py"


def run_as_written(live_server: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_fork_and_children_example_runs_twice_on_one_server(live_server: str) -> None:
    first, second = run_as_written(live_server), run_as_written(live_server)
    for said in (first, second):
        assert said[1:3] == [
            "open calls: []",
            "fork sees: ['Plan a weekend in Bergen', 'Museums, then: KODE and Bryggens Museum.']",
        ]
        assert re.fullmatch(r"ancestors: \['planner-\w+'\]", said[3])
    assert first[3] != second[3]  # each run's planner is its own
