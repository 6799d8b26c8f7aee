"""An OpenAI Agents SDK agent whose conversation lives in Sessionary.

Run it twice: the second run, a new process, is given the first run's conversation.

    python examples/openai_agents_session.py Oslo     # remembered; I was given 3 items
    python examples/openai_agents_session.py Bergen   # remembered; I was given 7 items

Needs `pip install './clients/python[openai-agents]'` and a server (SESSIONARY_URL, else
http://127.0.0.1:8000). The model is a script, so no OpenAI key is needed: put a real one
(`model="gpt-5-mini"`) in its place and nothing else changes.
"""

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from sessionary_client.openai_agents import SessionarySession


class ScriptedModel(Model):
    """Calls `remember` with the user's message, then says how many items it was given."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        last = input[-1]
        output: Any
        if last.get("type") == "function_call_output":
            text = f"remembered; I was given {len(input)} items"
            content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
            output = ResponseOutputMessage(
                id="msg-1", type="message", role="assistant", status="completed", content=content
            )
        else:
            output = ResponseFunctionToolCall(
                type="function_call",
                id="fc-1",
                call_id=f"call-{last['content']}",
                name="remember",
                arguments=json.dumps({"city": last["content"]}),
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example runs the agent without streaming")


@function_tool
def remember(city: str) -> str:
    """Remember the city the user named."""
    return f"remembered {city}"


async def main(city: str, session_id: str) -> None:
    set_tracing_disabled(True)  # no traces sent to OpenAI from an example
    agent = Agent(
        name="weather", instructions="Remember cities.", model=ScriptedModel(), tools=[remember]
    )
    session = SessionarySession(session_id, app_name="examples", user_id="ada")
    result = await Runner.run(agent, city, session=session)
    await session.close()
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "openai-agents-demo"))
