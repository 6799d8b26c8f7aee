"""The READMEs' Python runs as written: their "Use it from ADK" examples, the "from the OpenAI
Agents SDK" one, and the client README's every snippet, in order, as a reader runs them."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from google.adk.runners import Runner
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryMemoryService, SessionaryService
from sessionary_client.openai_agents import SessionarySession

CLIENT_README = Path(__file__).parents[1] / "README.md"
README = Path(__file__).parents[3] / "README.md"
CLIENTS_DOC = README.parent / "docs" / "clients.md"


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


def test_the_client_readmes_python_runs_in_order_as_written(
    live_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a reader would run it: every Python snippet of the page, in order, in one
    interpreter, each using what those before it made."""
    monkeypatch.setenv("SESSIONARY_URL", live_server)
    scope: dict[str, Any] = {}
    for snippet in re.findall(r"```python\n(.*?)```", CLIENT_README.read_text(), re.DOTALL):
        exec(snippet, scope)
    runner = scope["runner"]  # the memory example's
    assert isinstance(runner.session_service, SessionaryService)
    assert isinstance(runner.memory_service, SessionaryMemoryService)
    assert [tool.name for tool in runner.agent.tools] == ["load_memory"]
    chat = scope["chat"].get()
    assert [event["author"] for event in chat["events"]] == ["user", "agent"]
    assert capsys.readouterr().out.split() == [
        *("1", "user", "2", "0", "Oslo,12", "metric"),
        *("I'm", "vegetarian.", "meaning+words", "2", "{'remembered':", "1}"),
    ]
    scope["sessionary"].close()


async def test_the_openai_agents_example_makes_a_session_on_sessionary() -> None:
    section = CLIENT_README.read_text().split("## Use it from the OpenAI Agents SDK", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert example is not None
    scope: dict[str, object] = {}
    exec(example.group(1), scope)
    session = scope["session"]
    assert isinstance(session, SessionarySession)
    assert (session.session_id, session.app_name, session.user_id) == (
        "chat-42",
        "assistant",
        "ada",
    )
    assert isinstance(scope["agent"], Agent)
    await session.close()


def test_the_client_readme_names_a_method_for_every_operation_of_the_spec() -> None:
    """The README's "every endpoint" holds: each operationId of the spec has its method
    (docs/clients.md's Python column), the client has it, and the README's table lists it."""
    spec = json.loads((README.parent / "openapi" / "openapi.json").read_text())
    operations = {
        operation["operationId"]
        for operations in spec["paths"].values()
        for operation in operations.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    python_column = {
        row[1].strip("` "): re.search(r"`(\w+)`", row[3])
        for row in (line.split("|") for line in CLIENTS_DOC.read_text().splitlines())
        if len(row) == 8 and row[1].strip().startswith("`")
    }
    methods = {name: found.group(1) if found else None for name, found in python_column.items()}
    readme = CLIENT_README.read_text()
    lacking = [
        name
        for name in sorted(operations)
        if not (method := methods.get(name))
        or not hasattr(AsyncSessionaryClient, method)
        or f"`{method}(" not in readme
    ]
    assert lacking == [], "operations the Python client or its README lacks"
