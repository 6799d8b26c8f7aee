"""The OpenAI Agents SDK's own session tests, run on `SessionarySession`.

The SDK's sdist carries its tests: the one of the installed version (requirements.lock's pin)
is fetched from PyPI into the pytest cache, and its session tests run there in a pytest of
their own, with `openai_agents_suite` standing our session in for the SDK's, against the live
server. Each must pass, but those that plugin lists as not applicable (and says why).
"""

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from openai_agents_suite import FILES, NOT_APPLICABLE

HERE = Path(__file__).parent


def sdk_sources(cache: pytest.Cache) -> Path:
    """The installed SDK's sdist, unpacked: fetched once into the pytest cache."""
    version = importlib.metadata.version("openai-agents")
    folder = cache.mkdir(f"openai-agents-{version}")
    unpacked = folder / f"openai_agents-{version}"
    if not (unpacked / "tests").is_dir():
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
                *("--no-binary", ":all:", "--dest", str(folder), f"openai-agents=={version}"),
            ],
            check=True,
            timeout=600,
        )
        with tarfile.open(folder / f"openai_agents-{version}.tar.gz") as sdist:
            sdist.extractall(folder, filter="data")
    return unpacked


def outcomes(report: Path) -> dict[str, str]:
    """Each test's outcome in a JUnit report, by its node id."""
    found = {}
    for case in ElementTree.parse(report).iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        problems = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[f"{path}::{case.get('name')}"] = problems[0] if problems else "passed"
    return found


def test_the_sdks_session_tests_pass_on_sessionary(
    live_server: str, cache: pytest.Cache, tmp_path: Path
) -> None:
    sources = sdk_sources(cache)
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", *FILES, "-p", "openai_agents_suite"),
            *("-q", "-rfE", "-p", "no:cacheprovider", f"--junitxml={report}"),
        ],
        cwd=sources,
        env={**os.environ, "SESSIONARY_URL": live_server, "PYTHONPATH": str(HERE)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    ran = outcomes(report)
    summary = done.stdout.rpartition("short test summary info")[2]
    assert {test for test, outcome in ran.items() if outcome == "skipped"} == set(NOT_APPLICABLE)
    assert [test for test, outcome in ran.items() if outcome not in ("passed", "skipped")] == [], (
        summary
    )
    assert done.returncode == 0, summary
    assert len(ran) - len(NOT_APPLICABLE) >= 75  # as many as the SDK's tests of behaviour
