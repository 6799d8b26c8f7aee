"""The README's commands set up what they need and no more: `make run` the service alone,
`make test` and `.ci/run` the tools the tests start (Debian's PgBouncer and Chromium), and
apt-get's package lists refreshed before anything is installed from them."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".ci" / "test-tools"


def planned(target: str) -> str:
    """What `make TARGET` would run on a machine without the venv (`make -n`)."""
    result = subprocess.run(
        ["make", "-n", target, "VENV=/nonexistent/venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_make_run_installs_the_service_alone() -> None:
    plan = planned("run")
    assert "-c requirements.lock -e '.[embedded]'" in plan
    for extra in ("dev", "bench", "clients/python"):
        assert extra not in plan


@pytest.mark.parametrize(
    ("target", "wanted", "unwanted"),
    [("test", ("dev", "bench", "clients/python[adk]"), ()), ("bench", ("bench",), ("dev",))],
)
def test_make_test_and_bench_add_their_own(
    target: str, wanted: tuple[str, ...], unwanted: tuple[str, ...]
) -> None:
    plan = planned(target)
    assert "-c requirements.lock -e '.[embedded]'" in plan  # what `make run` has, first
    assert all(extra in plan for extra in wanted) and not any(x in plan for x in unwanted)


def fake_apt(folder: Path, *present: str) -> Path:
    """A PATH holding a recording apt-get, and the given tools (as do-nothing programs)."""
    folder.mkdir()
    log = folder / "apt-get.log"
    (folder / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    for name in present:
        (folder / name).write_text("#!/bin/sh\n")
    for program in folder.iterdir():
        program.chmod(0o755)
    return folder


def tools(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(TOOLS)],
        env={**os.environ, "PATH": str(path)},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="installs only as root")
def test_missing_tools_are_installed_after_the_package_lists_are_refreshed(
    tmp_path: Path,
) -> None:
    path = fake_apt(tmp_path / "bin")
    tools(path)
    calls = (path / "apt-get.log").read_text().splitlines()
    assert len(calls) == 2
    assert calls[0].startswith("update")
    assert calls[1].startswith("install") and "chromium" in calls[1]
    debian_pgbouncer = Path("/usr/sbin/pgbouncer").exists()
    assert ("pgbouncer" in calls[1]) != debian_pgbouncer


def test_nothing_is_installed_when_the_tools_are_there(tmp_path: Path) -> None:
    path = fake_apt(tmp_path / "bin", "chromium", "pgbouncer")
    assert tools(path).stderr == ""
    assert not (path / "apt-get.log").exists()


def test_without_apt_get_one_line_says_how(tmp_path: Path) -> None:
    path = tmp_path / "bin"
    path.mkdir()
    lines = tools(path).stderr.strip().splitlines()
    assert len(lines) == 1 and "apt-get install" in lines[0] and "chromium" in lines[0]
