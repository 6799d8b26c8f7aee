"""The runnable examples (`examples/`) run as their docstrings say, against a live server.

The OpenAI Agents SDK one is run by the client's tests (clients/python/tests/
test_openai_agents.py), which also check what it stored, and so is the ADK memory one
(clients/python/tests/test_adk_memory.py); the TypeScript one by the TypeScript client's
(`npm test`), the Ruby one by the Ruby client's (`rake test`). The Go agent (`go_agent/`) is
built by Go, then run as the Python ones."""

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from tests.helpers import go

EXAMPLES = Path(__file__).parents[1] / "examples"


def run(live_server: str, script: str | Path, *args: str) -> list[str]:
    """The output lines of an example, a Python script or a program; it must succeed."""
    command = (
        [str(script)] if isinstance(script, Path) else [sys.executable, str(EXAMPLES / script)]
    )
    done = subprocess.run(
        [*command, *args],
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_adk_agent_resumes_its_session_in_a_second_process(live_server: str) -> None:
    session_id = f"adk-{uuid.uuid4().hex[:8]}"
    assert run(live_server, "adk_agent.py", "Oslo", session_id) == [
        "remembered; I was given 3 messages",
        '{"app:x": "written by the tool", "user:y": "Oslo", "z": 1}',
    ]
    assert run(live_server, "adk_agent.py", "Bergen", session_id) == [
        "remembered; I was given 7 messages",
        '{"app:x": "written by the tool", "user:y": "Bergen", "z": 2}',
    ]


def test_the_go_agent_resumes_its_session_in_a_second_process_as_the_python_one(
    live_server: str, tmp_path: Path
) -> None:
    agent = tmp_path / "go_agent"
    built = subprocess.run(
        [go(), "build", "-o", str(agent), "."],
        cwd=EXAMPLES / "go_agent",
        capture_output=True,
        text=True,
        timeout=900,  # the first build downloads ADK-Go's dependencies
    )
    assert built.returncode == 0, built.stderr
    session_id = f"go-{uuid.uuid4().hex[:8]}"
    assert run(live_server, agent, "Oslo", session_id) == [
        "remembered; I was given 3 messages",
        '{"app:x":"written by the tool","user:y":"Oslo","z":1}',
    ]
    assert run(live_server, agent, "Bergen", session_id) == [
        "remembered; I was given 7 messages",
        '{"app:x":"written by the tool","user:y":"Bergen","z":2}',
    ]
    # The Python agent takes the same session up where the Go one left it.
    assert run(live_server, "adk_agent.py", "Tromso", session_id) == [
        "remembered; I was given 11 messages",
        '{"app:x": "written by the tool", "user:y": "Tromso", "z": 3}',
    ]


def test_a_child_answers_its_parents_call_and_a_fork_branches(live_server: str) -> None:
    session_id = f"planner-{uuid.uuid4().hex[:8]}"
    assert run(live_server, "fork_and_children.py", session_id) == [
        'planner got: {"id": "call-forecast", "name": "researcher", "response": '
        '{"result": {"forecast": "rain, then sun"}, "outcome": "completed"}}',
        "open calls: []",
        "fork sees: ['Plan a weekend in Bergen', 'Museums, then: KODE and Bryggens Museum.']",
        f"ancestors: ['{session_id}']",
        "planner's children: ['child', 'fork']",
    ]


def test_the_fork_example_runs_again_and_again_as_written(live_server: str) -> None:
    """Without an id, as its docstring runs it: each run makes a planner of its own."""
    first, second = (
        run(live_server, "fork_and_children.py"),
        run(live_server, "fork_and_children.py"),
    )
    for said in (first, second):
        assert said[1:3] == [
            "open calls: []",
            "fork sees: ['Plan a weekend in Bergen', 'Museums, then: KODE and Bryggens Museum.']",
        ]
        assert re.fullmatch(r"ancestors: \['planner-\w+'\]", said[3])
    assert first[3] != second[3]


def test_the_live_tail_prints_each_event_as_it_comes_until_the_close(live_server: str) -> None:
    session_id = f"tail-{uuid.uuid4().hex[:8]}"
    path = f"{live_server}/apps/examples/users/ada/sessions"
    said = {"author": "user", "content": {"parts": [{"text": "hello"}]}}
    with httpx.Client() as http:
        http.post(path, json={"sessionId": session_id, "events": [said]}).raise_for_status()
        tail = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "live_tail.py"), session_id],
            env={**os.environ, "SESSIONARY_URL": live_server},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert tail.stdout is not None
        assert tail.stdout.readline() == "    1 user: hello\n"  # from the log, then live
        call = {"functionCall": {"id": "c1", "name": "lookup", "args": {}}}
        event = {"author": "agent", "content": {"role": "model", "parts": [call]}}
        http.post(f"{path}/{session_id}/events", json=event).raise_for_status()
        http.post(f"{path}/{session_id}:close", json={"outcome": "completed"}).raise_for_status()
        rest, _ = tail.communicate(timeout=60)
    assert tail.returncode == 0
    assert rest.splitlines() == ["    2 agent: call lookup", "      (closed)"]


def test_the_live_tail_of_a_missing_session_says_so(live_server: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "live_tail.py"), "no-such-session"],
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr == "Session 'no-such-session' of user 'ada' in app 'examples' does not exist.\n"
    )
