"""The Ruby client (`clients/ruby`): its minitest suite, run by Debian's `ruby` (with its
bundled minitest and rake) against a real server. Without Ruby the test is skipped, saying how
to install it; in CI (`CI=true`, where `.ci/test-tools` installs it) it fails instead."""

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


def test_the_ruby_client_passes_its_tests(rake: str, live_server: str) -> None:
    tested = subprocess.run(
        [rake, "test"],
        cwd=CLIENT,
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # Minitest ends with its counts: some ran, none failed, none errored or was skipped.
    counts = re.search(
        r"^(\d+) runs, \d+ assertions, (\d+) failures, (\d+) errors, (\d+) skips$",
        tested.stdout,
        re.MULTILINE,
    )
    assert counts, tested.stdout
    runs, *bad = map(int, counts.groups())
    assert runs > 0 and bad == [0, 0, 0], tested.stdout
