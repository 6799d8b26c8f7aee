"""An ADK agent that remembers across sessions: ADK's `load_memory` over Sessionary.

Tell it something in one session, then ask in another, from another process: it calls
`load_memory`, which searches what earlier sessions added to memory.

    python examples/adk_memory.py "My favourite city is Tromsø."
    # Noted.
    python examples/adk_memory.py "Which city is my favourite?"
    # load_memory("Which city is my favourite?")
    # From memory: user said "My favourite city is Tromsø." (2026-…)

Each run is a new session of user `ada`; after each turn the agent adds its session to memory
(`after_agent_callback`). Needs `pip install './clients/python[adk]'` and a server
(SESSIONARY_URL, else http://127.0.0.1:8000). The model is scripted (no Gemini key): put a real
one in its place and nothing else changes.
"""

import asyncio
import sys
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.load_memory_tool import load_memory_tool
from google.genai import types
from sessionary_client.adk import SessionaryMemoryService, SessionaryService


class ScriptedLlm(BaseLlm):
    """Notes a statement; for a question, calls `load_memory` and answers with what it found."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        part = (llm_request.contents[-1].parts or [types.Part()])[0]
        if part.function_response:
            # `load_memory` answers {"result": {"memories": [MemoryEntry, …]}}.
            answer = part.function_response.model_dump(mode="json")["response"]
            memories = answer["result"]["memories"]
            found = [
                f'{memory["author"]} said "{memory["content"]["parts"][0]["text"]}" '
                f"({memory['timestamp']})"
                for memory in memories
            ]
            text = "From memory: " + "; ".join(found) if found else "I do not remember."
        elif part.text and part.text.endswith("?"):
            call = types.FunctionCall(name="load_memory", args={"query": part.text})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        else:
            text = "Noted."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def remember_this_session(callback_context: CallbackContext) -> None:
    await callback_context.add_session_to_memory()


def build_agent() -> LlmAgent:
    return LlmAgent(
        name="assistant",
        model=ScriptedLlm(),
        instruction="Answer from memory when asked about earlier conversations.",
        tools=[load_memory_tool],
        after_agent_callback=remember_this_session,
    )


async def main(text: str) -> None:
    sessions, memory = SessionaryService(), SessionaryMemoryService()
    runner = Runner(
        agent=build_agent(), app_name="examples", session_service=sessions, memory_service=memory
    )
    session = await sessions.create_session(app_name="examples", user_id="ada")
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id="ada", session_id=session.id, new_message=message):
        for part in (event.content and event.content.parts) or []:
            if part.function_call:
                print(f'{part.function_call.name}("{(part.function_call.args or {})["query"]}")')
            elif part.text:
                print(part.text)
    await sessions.close()
    await memory.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
