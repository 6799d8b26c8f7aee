"""An ADK agent whose sessions live in Sessionary, with a scripted model (no Gemini key).

Run it twice: the second run, a new process, resumes the session the first one started, its
history and its `app:`, `user:` and session state.

    python examples/adk_agent.py Oslo     # remembered; I was given 3 messages
    python examples/adk_agent.py Bergen   # remembered; I was given 7 messages

Needs `pip install './clients/python[adk]'` and a server (SESSIONARY_URL, else
http://127.0.0.1:8000). Put a real model (`model="gemini-2.5-flash"`) in place of the script
and nothing else changes.
"""

import asyncio
import json
import sys
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from sessionary_client.adk import SessionaryService


class ScriptedLlm(BaseLlm):
    """Calls `remember` with the user's message, then says how much history it was given."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        parts = last.parts or []
        if any(part.function_response for part in parts):
            text = f"remembered; I was given {len(llm_request.contents)} messages"
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        call = types.FunctionCall(name="remember", args={"city": parts[0].text})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


def remember(city: str, tool_context: ToolContext) -> dict[str, str]:
    """Remember the city the user named: in app, user and session state."""
    tool_context.state["app:x"] = "written by the tool"
    tool_context.state["user:y"] = city
    tool_context.state["z"] = tool_context.state.get("z", 0) + 1
    return {"remembered": city}


def build_agent() -> LlmAgent:
    return LlmAgent(
        name="weather_agent",
        model=ScriptedLlm(),
        instruction="Remember the cities the user names.",
        tools=[remember],
    )


def user_message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def main(city: str, session_id: str) -> None:
    service = SessionaryService()
    runner = Runner(agent=build_agent(), app_name="examples", session_service=service)
    known = await service.get_session(app_name="examples", user_id="ada", session_id=session_id)
    if known is None:
        await service.create_session(app_name="examples", user_id="ada", session_id=session_id)
    async for event in runner.run_async(
        user_id="ada", session_id=session_id, new_message=user_message(city)
    ):
        if event.is_final_response() and event.content and event.content.parts:
            print(event.content.parts[0].text)
    session = await service.get_session(app_name="examples", user_id="ada", session_id=session_id)
    assert session is not None
    print(json.dumps(session.state, sort_keys=True))
    await service.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "adk-demo"))
