"""Sessionary's `:rewind` against ADK's own `Runner.rewind_async`, over random sessions of
appends, removals and rewinds: each rewind is made twice, on twins (a fork at the end), once by
Sessionary and once by ADK's runner through `SessionaryService`, and both leave the same state.
For ADK a removed event is simply not in the session: its runner rebuilds the state before the
invocation from the events it is given.

Sessions are made without state and never trimmed: ADK rebuilds the earlier state from event
deltas alone, Sessionary from the state its history starts with (docs/semantics.md).
"""

import asyncio
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryService

from tests.helpers import USER, create_session, session_url

T = TypeVar("T")
APP = "rewinds"
SHARED = ("app:", "user:", "temp:")
VALUES = st.none() | st.integers(0, 3) | st.sampled_from(["x", "y"])
DELTAS = st.dictionaries(st.sampled_from(["a", "b", "c", "user:u", "app:p"]), VALUES, max_size=3)
APPEND = st.tuples(st.just("append"), DELTAS, st.booleans())
REMOVE = st.tuples(st.just("remove"), st.integers(0, 20))
REWIND = st.tuples(st.just("rewind"), st.integers(0, 20))
# Some appends first, then any steps, and a rewind at the end.
STEPS = st.builds(
    lambda first, then, last: [*first, *then, last],
    st.lists(APPEND, min_size=2, max_size=6),
    st.lists(st.one_of(APPEND, REMOVE, REWIND), max_size=10),
    REWIND,
)


def own(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if not key.startswith(SHARED)}


class Twins:
    """One session driven by the steps, and the twins each rewind is checked on."""

    def __init__(
        self, client: httpx.AsyncClient, runner: Runner, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.client, self.runner, self.loop = client, runner, loop
        self.id = f"s-{uuid.uuid4().hex[:8]}"
        self.invocations = 0
        self.removals = 0
        self.checked: list[int] = []  # each rewind checked: the removals before it
        self.call(create_session(self.client, APP, USER, sessionId=self.id))

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        return self.call(self.client.request(method, url, **options))

    def url(self, session_id: str, suffix: str = "") -> str:
        return session_url(session_id, APP) + suffix

    def read(self, session_id: str) -> dict[str, Any]:
        response = self.request("GET", self.url(session_id))
        assert response.status_code == 200, response.text
        read: dict[str, Any] = response.json()
        return read

    def append(self, delta: dict[str, Any], new_invocation: bool) -> None:
        events = self.read(self.id)["events"]
        if new_invocation or not events:
            self.invocations += 1
        event = {"author": "agent", "invocationId": f"inv-{self.invocations}"}
        if delta:
            event["actions"] = {"stateDelta": delta}
        response = self.request("POST", self.url(self.id, "/events"), json=event)
        assert response.status_code == 201, response.text

    def remove(self, which: int) -> None:
        events = self.read(self.id)["events"]
        if events:
            event = events[which % len(events)]
            response = self.request("DELETE", self.url(self.id, f"/events/{event['id']}"))
            assert response.status_code == 200, response.text
            self.removals += 1

    def rewind(self, which: int) -> None:
        events = self.read(self.id)["events"]
        invocations = list(dict.fromkeys(e["invocationId"] for e in events))
        if not invocations:
            return
        invocation = invocations[which % len(invocations)]
        twin = f"{self.id}-{uuid.uuid4().hex[:6]}"
        forked = self.request("POST", self.url(self.id, ":fork"), json={"sessionId": twin})
        assert forked.status_code == 201, forked.text
        ours = self.request(
            "POST", self.url(self.id, ":rewind"), json={"beforeInvocationId": invocation}
        )
        assert ours.status_code == 201, ours.text
        self.call(
            self.runner.rewind_async(
                user_id=USER, session_id=twin, rewind_before_invocation_id=invocation
            )
        )
        sessionary, adk = self.read(self.id), self.read(twin)
        assert own(sessionary["state"]) == own(adk["state"]), (invocation, events)
        self.checked.append(self.removals)


async def test_a_rewind_leaves_the_state_adks_runner_leaves(client: httpx.AsyncClient) -> None:
    service = SessionaryService(client=AsyncSessionaryClient(http=client))
    agent = LlmAgent(name="agent", model="gemini-2.0-flash")
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    loop = asyncio.get_running_loop()
    checked: list[int] = []

    @settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(steps=STEPS)
    def compare(steps: list[tuple[Any, ...]]) -> None:
        twins = Twins(client, runner, loop)
        for name, *arguments in steps:
            getattr(twins, name)(*arguments)
        checked.extend(twins.checked)

    await asyncio.to_thread(compare)
    assert sum(removals > 0 for removals in checked) >= 10, checked  # removals came first


async def test_adks_runner_given_the_reported_case_agrees(client: httpx.AsyncClient) -> None:
    """The case an outside check found: the invocation's first event removed."""
    service = SessionaryService(client=AsyncSessionaryClient(http=client))
    runner = Runner(
        app_name=APP,
        agent=LlmAgent(name="agent", model="gemini-2.0-flash"),
        session_service=service,
    )
    loop = asyncio.get_running_loop()

    def case() -> dict[str, Any]:
        twins = Twins(client, runner, loop)
        twins.append({"a": 1}, True)
        twins.append({"a": 2}, True)
        twins.append({"b": 3}, False)
        twins.remove(1)
        twins.rewind(1)
        return own(twins.read(twins.id)["state"])

    assert await asyncio.to_thread(case) == {"a": 1, "b": None}
