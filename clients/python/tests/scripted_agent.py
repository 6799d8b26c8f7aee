"""The agent of the Runner tests: an LlmAgent whose model is a script (no network) and one tool."""

from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types


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
    """Remember the city the user named."""
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
