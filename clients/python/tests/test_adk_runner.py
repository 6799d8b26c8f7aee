"""A real ADK Runner on SessionaryService, resumed by a second Runner in another process."""

import asyncio
import json
import sys
from pathlib import Path

from google.adk.runners import Runner
from scripted_agent import build_agent, user_message
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
