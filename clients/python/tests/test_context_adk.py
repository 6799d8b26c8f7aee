"""The context view against google-adk's own context assembly.

Property: over random sessions of user messages, replies, parallel calls, responses,
compactions and rewinds, ADK builds the same model contents from the view as from the whole
session; with a budget, the view holds no response without its call, no call without the
answers the session has, and fits the budget unless it says it cannot.
A Runner fed the view of its own session makes the same model request as on the session.
"""

import itertools
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.events.event import Event as AdkEvent
from google.adk.flows.llm_flows.contents import _get_contents
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import Field
from scripted_agent import remember, user_message
from sessionary_client import AsyncSessionaryClient, ContextView, InvalidRequestError
from sessionary_client.adk import SessionaryService

AGENT = "agent"

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["user", "reply", "calls", "answer", "compact", "rewind"]),
        st.integers(min_value=0, max_value=9),
    ),
    min_size=1,
    max_size=24,
)


def contents(events: list[dict[str, Any]]) -> list[types.Content]:
    """What ADK's context assembly makes of these events for the agent."""
    return _get_contents(None, [AdkEvent.model_validate(event) for event in events], AGENT)


def ids_of(event: dict[str, Any], kind: str) -> list[str]:
    parts = (event.get("content") or {}).get("parts") or []
    return [part[kind]["id"] for part in parts if kind in part]


def check_whole_pairs(view: ContextView, answered_in: list[dict[str, Any]]) -> None:
    """No response in the view without an earlier call in it; no call in it without each
    answer the whole view holds."""
    made: set[str] = set()
    for event in view["events"]:
        assert set(ids_of(event, "functionResponse")) <= made, view
        made |= set(ids_of(event, "functionCall"))
    shown = {i for event in view["events"] for i in ids_of(event, "functionResponse")}
    answered = {i for event in answered_in for i in ids_of(event, "functionResponse")}
    assert made & answered <= shown, (made & answered) - shown


async def build(client: AsyncSessionaryClient, app: str, steps: list[tuple[str, int]]) -> str:
    """A session made of `steps`, each in an invocation of its own, one second apart."""
    session = (await client.create_session(app, "u"))["id"]
    names, clock = itertools.count(), itertools.count(1000)
    open_calls: list[str] = []
    invocations: list[str] = []

    async def add(author: str, role: str, parts: list[dict[str, Any]]) -> None:
        invocation = f"i{next(names)}"
        invocations.append(invocation)
        event = {
            "author": author,
            "invocationId": invocation,
            "timestamp": float(next(clock)),
            "content": {"role": role, "parts": parts},
        }
        await client.append_event(app, "u", session, event)

    for kind, n in steps:
        if kind == "user":
            await add("user", "user", [{"text": f"question {n} " * (n + 1)}])
        elif kind == "reply":
            await add(AGENT, "model", [{"text": f"answer {n} " * (n + 1)}])
        elif kind == "calls":
            made = [f"c{next(names)}" for _ in range(n % 3 + 1)]
            open_calls += made
            parts = [{"functionCall": {"id": c, "name": "f", "args": {"n": n}}} for c in made]
            await add(AGENT, "model", parts)
        elif kind == "answer" and open_calls:
            chosen, open_calls = open_calls[: n % 2 + 1], open_calls[n % 2 + 1 :]
            parts = [
                {"functionResponse": {"id": c, "name": "f", "response": {"r": "x" * n}}}
                for c in chosen
            ]
            await add(AGENT, "user", parts)
        elif kind == "compact" and invocations:
            summary = f"summary {n}"
            try:
                await client.compact_session(
                    app, "u", session, "summary", keep_last=n % 4, summary=summary
                )
            except InvalidRequestError as error:  # nothing to compact: the rule is a 422
                assert "Nothing to compact" in str(error)
        elif kind == "rewind" and invocations:
            await client.rewind_session(app, "u", session, invocations[n % len(invocations)])
    return session


@settings(
    max_examples=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS, budget=st.integers(min_value=1, max_value=60))
# A compaction between a call and its answer; parallel calls answered apart; a rewind over
# a compaction; an answer after the compaction of its call.
@example(steps=[("calls", 1), ("compact", 0), ("answer", 1), ("reply", 2)], budget=5)
@example(steps=[("user", 0), ("calls", 2), ("answer", 0), ("reply", 1), ("answer", 0)], budget=8)
@example(steps=[("user", 1), ("reply", 1), ("compact", 1), ("rewind", 1), ("user", 2)], budget=9)
@example(steps=[("calls", 0), ("user", 3), ("compact", 1), ("answer", 0)], budget=3)
async def test_adk_builds_the_same_contents_from_the_view_and_the_view_keeps_pairs_whole(
    client: AsyncSessionaryClient, app_name: str, steps: list[tuple[str, int]], budget: int
) -> None:
    session = await build(client, app_name, steps)
    whole = (await client.get_session(app_name, "u", session))["events"]
    view = await client.get_context(app_name, "u", session)
    assert contents(view["events"]) == contents(whole)
    check_whole_pairs(view, view["events"])

    fitted = await client.get_context(app_name, "u", session, token_budget=budget)
    check_whole_pairs(fitted, view["events"])
    assert fitted["overBudget"] or fitted["estimatedTokens"] <= budget
    tail = [event["id"] for event in view["events"]][-len(fitted["events"]) :]
    assert [event["id"] for event in fitted["events"]] == (tail if fitted["events"] else [])


class RecordingLlm(BaseLlm):
    """Calls `remember` with the user's message, then says so; keeps every request's
    contents."""

    model: str = "recording"
    requests: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(list(llm_request.contents))
        parts = llm_request.contents[-1].parts or []
        if any(part.function_response for part in parts):
            text = types.Part(text=f"noted, after {len(llm_request.contents)} messages")
            yield LlmResponse(content=types.Content(role="model", parts=[text]))
            return
        call = types.FunctionCall(name="remember", args={"city": parts[0].text})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


async def turn(runner: Runner, session_id: str, text: str) -> None:
    async for _ in runner.run_async(
        user_id="ada", session_id=session_id, new_message=user_message(text)
    ):
        pass


async def test_a_runner_given_the_view_of_its_session_makes_the_same_model_request(
    service: SessionaryService, client: AsyncSessionaryClient, app_name: str
) -> None:
    model = RecordingLlm()
    agent = LlmAgent(name="weather_agent", model=model, tools=[remember])
    runner = Runner(agent=agent, app_name=app_name, session_service=service)
    session = await service.create_session(app_name=app_name, user_id="ada")
    for city in ("Oslo", "Bergen", "Tromsø", "Bodø"):
        await turn(runner, session.id, city)
    stored = await client.get_session(app_name, "ada", session.id)
    invocations = list(dict.fromkeys(event["invocationId"] for event in stored["events"]))
    await client.rewind_session(app_name, "ada", session.id, invocations[-1])
    await client.compact_session(
        app_name, "ada", session.id, "summary", keep_last=3, summary="Oslo and Bergen noted."
    )
    view = await client.get_context(app_name, "ada", session.id)
    copy = await client.create_session(app_name, "ada", events=view["events"])

    model.requests.clear()
    await turn(runner, session.id, "Narvik")
    from_session = model.requests[0]
    model.requests.clear()
    await turn(runner, copy["id"], "Narvik")
    from_view = model.requests[0]

    assert from_view == from_session
    said = [part.text for content in from_session for part in content.parts or [] if part.text]
    assert said[0] == "Oslo and Bergen noted." and "Bodø" not in said
    assert uuid.UUID(copy["id"])
