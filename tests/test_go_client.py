"""The Go client (`clients/go`) and its ADK-Go session and artifact services (`clients/go/adk`):
each module's `go test` against a real server, ADK-Go's own suites of a session service and of
an artifact service included, and the README's steps as written (its Install in a new module,
examples/go_agent twice)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import go

CLIENTS = Path(__file__).parents[1] / "clients" / "go"


@pytest.mark.parametrize("module", [CLIENTS, CLIENTS / "adk"], ids=["client", "adk"])
def test_the_go_module_passes_its_tests_against_a_live_server(
    live_server: str, module: Path
) -> None:
    tool = go()
    # On the PATH too: the README's tests run its steps (`go mod`, `go run`) in `sh`.
    path = f"{Path(tool).parent}{os.pathsep}{os.environ['PATH']}"
    tested = subprocess.run(
        [tool, "test", "-count=1", "-v", "./..."],
        cwd=module,
        env={**os.environ, "PATH": path, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=900,  # the first run downloads the ADK module's dependencies
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # Each test ran against the server: none was skipped for want of one.
    assert re.search(r"^--- PASS: Test", tested.stdout, re.MULTILINE), tested.stdout
    assert "--- SKIP" not in tested.stdout, tested.stdout
