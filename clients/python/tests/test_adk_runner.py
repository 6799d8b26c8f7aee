"""A real ADK Runner on SessionaryService, resumed by a second Runner in another process."""

import asyncio
import json
import sys
from pathlib import Path

from google.adk.events._rewind_events import _apply_rewinds
from google.adk.runners import Runner
from scripted_agent import build_agent, user_message
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryService

RESUME = Path(__file__).with_name("resume_session.py")


def texts(session: dict) -> list[str]:
    """Each event as one line: who, and what (text, call or result)."""
    lines = []
    for event in session["events"]:
        for part in event.get("content", {}).get("parts", []):
            what = (
                part.get("text")
                or ("call " + part["functionCall"]["name"] if "functionCall" in part else None)
                or "result " + json.dumps(part["functionResponse"]["response"])
            )
            lines.append(f"{event['author']}: {what}")
    return lines


async def test_a_second_runner_in_another_process_resumes_history_and_state(
    service: SessionaryService, live_server: str, app_name: str
) -> None:
    runner = Runner(agent=build_agent(), app_name=app_name, session_service=service)
    session = await service.create_session(app_name=app_name, user_id="ada")
    async for _ in runner.run_async(
        user_id="ada", session_id=session.id, new_message=user_message("Oslo")
    ):
        pass
    first = await service.get_session(app_name=app_name, user_id="ada", session_id=session.id)
    assert first is not None
    assert first.state == {"app:x": "written by the tool", "user:y": "Oslo", "z": 1}

    resumed = await asyncio.create_subprocess_exec(
        *(sys.executable, str(RESUME), live_server, app_name, "ada", session.id, "Bergen"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(resumed.communicate(), timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    seen = json.loads(stdout.decode().strip().splitlines()[-1])

    assert seen["before"] == first.model_dump(mode="json", by_alias=True, exclude_none=True)
    after = seen["after"]
    assert after["state"] == {"app:x": "written by the tool", "user:y": "Bergen", "z": 2}
    assert texts(after) == [
        "user: Oslo",
        "weather_agent: call remember",
        'weather_agent: result {"remembered": "Oslo"}',
        "weather_agent: remembered; I was given 3 messages",
        "user: Bergen",
        "weather_agent: call remember",
        'weather_agent: result {"remembered": "Bergen"}',
        "weather_agent: remembered; I was given 7 messages",
    ]


async def run(runner: Runner, session_id: str, text: str) -> list[str]:
    """One invocation; the model's texts."""
    said = []
    async for event in runner.run_async(
        user_id="ada", session_id=session_id, new_message=user_message(text)
    ):
        said += [part.text for part in (event.content and event.content.parts) or [] if part.text]
    return said


async def test_a_rewind_through_sessionary_is_the_one_adks_runner_makes(
    service: SessionaryService, client: AsyncSessionaryClient, app_name: str
) -> None:
    """Two twins: Sessionary rewinds one, ADK's `Runner.rewind_async` the other. ADK's runner
    then sees the same live events and state in both, and answers alike."""
    runner = Runner(agent=build_agent(), app_name=app_name, session_service=service)
    session = await service.create_session(app_name=app_name, user_id="ada")
    for city in ("Oslo", "Bergen", "Tromsø"):
        await run(runner, session.id, city)
    twin = await client.fork_session(app_name, "ada", session.id)
    stored = await service.get_session(app_name=app_name, user_id="ada", session_id=session.id)
    assert stored is not None
    second = list(dict.fromkeys(event.invocation_id for event in stored.events))[1]

    await client.rewind_session(app_name, "ada", session.id, second)
    await runner.rewind_async(
        user_id="ada", session_id=twin["id"], rewind_before_invocation_id=second
    )

    ours, adks = [
        await service.get_session(app_name=app_name, user_id="ada", session_id=session_id)
        for session_id in (session.id, twin["id"])
    ]
    assert ours is not None and adks is not None
    assert ours.state == adks.state
    assert ours.state["z"] == 1  # the tool's count from the first invocation only
    live = [[event.id for event in _apply_rewinds(s.events)] for s in (ours, adks)]
    assert live[0] == live[1] == [event.id for event in stored.events[:4]]
    assert await run(runner, session.id, "Bodø") == await run(runner, twin["id"], "Bodø")
    assert (await run(runner, session.id, "Narvik"))[-1].endswith("I was given 11 messages")
