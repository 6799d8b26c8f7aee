"""Small helpers shared by the tests."""

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest

APP = "agent-app"
USER = "alice"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"


def session_url(session_id: str, app: str = APP, user: str = USER) -> str:
    return f"/apps/{app}/users/{user}/sessions/{session_id}"


async def create_session(
    client: httpx.AsyncClient, app: str = APP, user: str = USER, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/apps/{app}/users/{user}/sessions", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def append(
    client: httpx.AsyncClient,
    session_id: str,
    event: dict[str, Any],
    *,
    app: str = APP,
    user: str = USER,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return await client.post(
        f"{session_url(session_id, app, user)}/events", json=event, headers=headers
    )


def delta_event(delta: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"author": "agent", "invocationId": "inv-1", "actions": {"stateDelta": delta}, **fields}


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    return body


def missing_tool(tool: str, package: str, how: str = "") -> NoReturn:
    """A tool a test starts is not installed: skipped, but failed in CI, which installs every
    tool (`.ci/test-tools`)."""
    message = f"{tool} is not installed ({how or f'Debian: apt-get install {package}'})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def chromium() -> str:
    """The path of Debian's Chromium, which the browser tests drive."""
    path = shutil.which("chromium")
    if path is None:
        missing_tool("Chromium", "chromium")
    return path


# Where the Go tool is when it is not on the PATH: Go's own installer puts it there.
GO_HOME_BIN = "/usr/local/go/bin/go"


def go() -> str:
    """The Go tool (1.21 or later, which fetches the newer toolchain a module asks for), which
    builds and tests the Go client and its examples."""
    path = shutil.which("go") or (GO_HOME_BIN if os.access(GO_HOME_BIN, os.X_OK) else None)
    if path is None:
        missing_tool("Go", "golang", "Go 1.21+ from https://go.dev/dl/, into /usr/local/go")
    return path


def cache_folder(pytestconfig: pytest.Config, name: str) -> Path:
    """A folder of pytest's cache, which outlives the run (`-p no:cacheprovider` turns it off):
    where the tests keep the tools they fetch."""
    cache = getattr(pytestconfig, "cache", None)
    assert cache is not None, "these tests fetch their tools into pytest's cache: leave it on"
    return cache.mkdir(name)


def tool(name: str, package: str) -> str:
    """A command on the PATH, from Debian's `package`."""
    path = shutil.which(name)
    if path is None:
        missing_tool(name, package)
    return path


def maven_jar(pytestconfig: pytest.Config, artifact: str, name: str) -> Path:
    """A jar from Maven Central (`group:artifact:version[:jar:classifier]`), fetched once by
    Maven into pytest's cache as `name`."""
    jar = cache_folder(pytestconfig, "jars") / name
    if not jar.exists():
        fetched = jar.parent / f".{name}.fetching"
        fetched.mkdir(exist_ok=True)
        command = [tool("mvn", "maven"), "-q", "-B", "dependency:copy"]
        command += [f"-Dartifact={artifact}", f"-DoutputDirectory={fetched}"]
        result = subprocess.run(
            command, cwd=fetched, capture_output=True, text=True, timeout=600, check=False
        )
        assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}{result.stderr}"
        (only,) = fetched.glob("*.jar")
        only.rename(jar)
        fetched.rmdir()
    return jar
