"""The service as a wheel: built from the sources alone, installed into a venv of its own, run
from a folder that is no checkout, it migrates a database and serves it (its migrations travel
inside the package)."""

import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app import db
from tests.fixtures import free_port, stop_server

# Builds, installs and starts a server: a few seconds with uv's cache warm (the pins of
# requirements.lock, which `make install` has fetched), longer the first time.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
UV = str(Path(sys.executable).with_name("uv"))
# What a wheel is built from; nothing else of the checkout may be needed.
SOURCES = ("pyproject.toml", "README.md", "app", "migrations")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")


def run(*command: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def files_under(folder: Path) -> set[str]:
    return {
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the venv it is installed in), the wheel built as `uv build` builds it:
    through an sdist, which must carry the migrations too."""
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=SKIPPED)
        else:
            shutil.copy2(ROOT / name, source / name)
    run(UV, "build", "--quiet", "--out-dir", str(folder / "dist"), str(source), cwd=folder)
    (wheel,) = (folder / "dist").glob("*.whl")
    venv = folder / "venv"
    run(UV, "venv", "--quiet", "--python", sys.executable, str(venv), cwd=folder)
    python = str(venv / "bin" / "python")
    lock = str(ROOT / "requirements.lock")
    run(UV, "pip", "install", "--quiet", "--python", python, "-c", lock, str(wheel), cwd=folder)
    return wheel, venv


def test_the_wheel_holds_every_file_of_the_package_and_the_migrations(
    installed: tuple[Path, Path],
) -> None:
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        packed = set(archive.namelist())
    wanted = {f"app/{name}" for name in files_under(ROOT / "app")} | {
        f"app/migrations/{name}" for name in files_under(ROOT / "migrations")
    }
    assert wanted - packed == set()


def test_the_installed_wheel_migrates_and_serves_from_any_folder(
    installed: tuple[Path, Path], new_database: Callable[[], str], tmp_path: Path
) -> None:
    _, venv = installed
    sessionary = str(venv / "bin" / "sessionary")
    # Nothing of the checkout within reach: not the folder, not the test run's own settings.
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTHONPATH", "VIRTUAL_ENV", "TEST_DATABASE_URL")
        and not name.startswith("SESSIONARY_")
    }
    env |= {"DATABASE_URL": new_database(), "SESSIONARY_AUTH": "false"}
    where = run(
        str(venv / "bin" / "python"), "-c", "import app.db; print(app.db.__file__)", cwd=tmp_path
    )
    assert Path(where.strip()).is_relative_to(venv)

    head = db.head_revision()
    assert f"to revision {head}" in run(sessionary, "migrate", cwd=tmp_path, env=env)

    port, log = free_port(), tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sessionary, "serve", "--port", str(port)], cwd=tmp_path, env=env, stderr=stderr
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                readyz = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the installed server did not answer"
                time.sleep(0.2)
        # The wheel alone, without the `embeddings` extra: no model, recall by words.
        assert readyz.json() == {"status": "ready", "schemaRevision": head, "recall": "words"}
        assert httpx.get(f"http://127.0.0.1:{port}/ui", timeout=5).status_code == 200
    finally:
        stop_server(process)
