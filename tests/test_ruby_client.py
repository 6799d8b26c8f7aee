"""The Ruby client (`clients/ruby`): its minitest suites, run by Debian's `ruby` (with its
bundled minitest, rake and rbs): `rake test` with no server at all, against the stub of the API
in its test helper, and `rake test:live` against a real server. Without Ruby they are skipped,
saying how to install it; in CI (`CI=true`, where `.ci/test-tools` installs it) they fail
instead."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parents[1] / "clients" / "ruby"


@pytest.fixture
def rake() -> str:
    """Where `rake` is, Ruby's with it; asked before the server is started for nothing."""
    rake = shutil.which("rake")
    if shutil.which("ruby") is None or rake is None:
        why = "the Ruby client's tests need Ruby and rake (Debian, as root: apt-get install ruby)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return rake


def passes(rake: str, task: str, env: dict[str, str]) -> None:
    """`rake task` exits 0, and minitest's counts say some ran and none failed, errored or was
    skipped."""
    tested = subprocess.run(
        [rake, task], cwd=CLIENT, env=env, capture_output=True, text=True, timeout=600
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    counts = re.search(
        r"^(\d+) runs, \d+ assertions, (\d+) failures, (\d+) errors, (\d+) skips$",
        tested.stdout,
        re.MULTILINE,
    )
    assert counts, tested.stdout
    runs, *bad = map(int, counts.groups())
    assert runs > 0 and bad == [0, 0, 0], tested.stdout


def test_the_ruby_client_passes_its_tests_without_a_server(rake: str) -> None:
    offline = {name: value for name, value in os.environ.items() if name != "SESSIONARY_URL"}
    passes(rake, "test", offline)


def test_the_ruby_client_passes_its_tests_against_a_server(rake: str, live_server: str) -> None:
    passes(rake, "test:live", {**os.environ, "SESSIONARY_URL": live_server})
