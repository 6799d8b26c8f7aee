"""The READMEs' "Use it from ADK" example runs as written."""

import re
from pathlib import Path

import pytest
from google.adk.runners import Runner
from sessionary_client.adk import SessionaryService

CLIENT_README = Path(__file__).parents[1] / "README.md"
README = Path(__file__).parents[3] / "README.md"


@pytest.mark.parametrize(
    "readme", [README.read_text(), CLIENT_README.read_text()], ids=["README", "client README"]
)
async def test_the_use_it_from_adk_example_builds_a_runner_on_sessionary(readme: str) -> None:
    section = readme.split("## Use it from ADK", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert example is not None
    assert len(example.group(1).strip().splitlines()) <= 6
    scope: dict[str, object] = {}
    exec(example.group(1), scope)
    runner = scope["runner"]
    assert isinstance(runner, Runner)
    assert isinstance(runner.session_service, SessionaryService)
    await runner.session_service.close()
