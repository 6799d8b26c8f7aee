"""Properties: whatever mix of appends, forks, trims, removals and rewrites a client sends, no
session ever holds a `functionResponse` without its `functionCall`, and seqs only grow; and
the state a point-in-time read gives is the one the docs define."""

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.repositories.sessions import UNDO_REACH
from tests.helpers import SESSIONS, session_url

OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["plain", "call", "answer", "fork", "trim", "remove", "rewrite", "switch"]),
        st.integers(min_value=0, max_value=7),
    ),
    min_size=1,
    max_size=25,
)


def tool_ids(event: dict[str, Any], kind: str) -> set[str]:
    parts = (event.get("content") or {}).get("parts") or []
    return {part[kind]["id"] for part in parts if kind in part}


async def check(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    """The invariants, on the session as read back; its events."""
    read = (await client.get(session_url(session_id))).json()
    seqs = [event["seq"] for event in read["events"]]
    assert seqs == sorted(set(seqs)), seqs
    assert not seqs or seqs[-1] <= read["version"]
    calls = set().union(*(tool_ids(event, "functionCall") for event in read["events"]))
    responses = set().union(*(tool_ids(event, "functionResponse") for event in read["events"]))
    assert responses <= calls, (session_id, responses - calls)
    events: list[dict[str, Any]] = read["events"]
    return events


def repeatable(examples: int) -> Any:
    """Hypothesis settings for a property run against the service: the same examples every run,
    no deadline (each is a series of requests), the client fixture shared by them."""
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


@repeatable(60)
@given(operations=OPERATIONS)
# The cases that matter most, each run first: a trim between a call and its answer, removing a
# call with parallel answers, a fork between them, a rewrite dropping a call.
@example(operations=[("call", 0), ("answer", 0), ("trim", 1)])
@example(operations=[("call", 1), ("answer", 1), ("plain", 0), ("remove", 0)])
@example(operations=[("call", 0), ("plain", 0), ("answer", 0), ("fork", 1), ("answer", 0)])
@example(operations=[("call", 2), ("answer", 0), ("rewrite", 0), ("remove", 0)])
async def test_surgery_never_orphans_a_response_nor_reorders_seqs(client, operations):
    names = itertools.count()
    root = f"p-{uuid.uuid4().hex[:8]}"
    assert (await client.post(SESSIONS, json={"sessionId": root})).status_code == 201
    sessions, current = [root], root
    for kind, n in operations:
        events = await check(client, current)
        base = session_url(current)
        calls = set().union(*(tool_ids(event, "functionCall") for event in events))
        answered = set().union(*(tool_ids(event, "functionResponse") for event in events))
        open_calls = sorted(calls - answered)
        if kind == "plain":
            response = await client.post(f"{base}/events", json={"author": "user"})
        elif kind == "call":
            ids = [f"c{next(names)}" for _ in range(n % 3 + 1)]
            parts = [{"functionCall": {"id": call, "name": "f", "args": {}}} for call in ids]
            response = await client.post(f"{base}/events", json={"content": {"parts": parts}})
        elif kind == "answer" and open_calls:
            chosen = open_calls[: n % 2 + 1]
            parts = [{"functionResponse": {"id": c, "name": "f", "response": {}}} for c in chosen]
            response = await client.post(f"{base}/events", json={"content": {"parts": parts}})
        elif kind == "fork":
            point = {"atSeq": events[n % len(events)]["seq"]} if events else {}  # else the end
            response = await client.post(f"{base}:fork", json=point)
            current = response.json()["id"]
            sessions.append(current)
        elif kind == "trim":
            response = await client.post(f"{base}:trim", json={"keepLast": n % 5})
        elif kind == "remove" and events:
            event_id = events[n % len(events)]["id"]
            response = await client.delete(f"{base}/events/{event_id}")
        elif kind == "rewrite" and events:
            event_id = events[n % len(events)]["id"]
            redacted = {"parts": [{"text": "redacted"}]}
            response = await client.patch(f"{base}/events/{event_id}", json={"content": redacted})
        else:
            current = sessions[n % len(sessions)]
            continue
        # A refusal is a 409 that changed nothing; anything else succeeded.
        assert response.status_code in (200, 201, 409), response.text
        if response.status_code == 409:
            assert response.json()["code"] == "tool_pair_violation"
            assert await check(client, current) == events
    for session_id in sessions:
        await check(client, session_id)


# The state a point-in-time read gives, against a model of what the docs say it is: the base
# state with the deltas of the events that remain applied in order, whatever surgery came
# before. Batches of `LONG` events put most seqs beyond the reach of undoing the recent changes
# (`UNDO_REACH`), so reads take either way, and a key set only long ago makes undoing fall
# back to replaying.
KEYS = ["a", "b", "c", "app:shared", "user:mine", "temp:scratch"]
LONG = UNDO_REACH + 10
STATE_OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["delta", "plain", "long", "fork", "trim", "remove", "reset", "switch"]),
        st.integers(min_value=0, max_value=7),
        st.dictionaries(st.sampled_from(KEYS), st.none() | st.integers(0, 3), max_size=3),
    ),
    min_size=1,
    max_size=15,
)


SHARED = ("app:", "user:", "temp:")


def own(delta: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in delta.items() if not key.startswith(SHARED)}


@dataclass
class Model:
    """A session's own state and history as the docs define them: a removed event's delta
    stays in the history."""

    version: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    base_seq: int = 0
    base_state: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # seq, own delta
    removed: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # the same

    def then(self, seq: int) -> dict[str, Any]:
        if seq >= self.version:
            return dict(self.state)
        state = dict(self.base_state)
        for at, delta in sorted(self.events + self.removed):
            if at <= seq:
                state.update(delta)
        return state

    def append(self, delta: dict[str, Any]) -> None:
        self.version += 1
        self.events.append((self.version, own(delta)))
        self.state.update(own(delta))


async def check_states(client: httpx.AsyncClient, session_id: str, model: Model) -> None:
    """The state then at the seqs where the two ways of finding it meet, and a few others."""
    near = [model.version - k for k in (0, 1, 2, 3, UNDO_REACH - 1, UNDO_REACH, UNDO_REACH + 1)]
    seqs = {model.base_seq, *near, *(seq for seq, _ in model.events[:3])}
    for seq in sorted(seq for seq in seqs if model.base_seq <= seq <= model.version):
        query = {"untilSeq": seq, "numRecentEvents": 0}
        response = await client.get(session_url(session_id), params=query)
        assert response.status_code == 200, response.text
        assert own(response.json()["state"]) == model.then(seq), (session_id, seq, model)


@repeatable(40)
@given(operations=STATE_OPERATIONS)
# Undoing past a key set long ago; undoing after a removal (the history keeps the removed
# event's delta); a fork of such a session at its end; a trim.
@example(operations=[("delta", 0, {"b": 1}), ("long", 0, {}), ("delta", 0, {"b": 2})])
@example(operations=[("delta", 0, {"a": 1}), ("delta", 0, {"b": 1}), ("remove", 0, {})])
@example(operations=[("delta", 0, {"a": 1}), ("remove", 0, {}), ("fork", 7, {})])
@example(operations=[("long", 0, {}), ("delta", 0, {"c": None}), ("trim", 3, {})])
async def test_the_state_then_is_the_base_with_the_remaining_deltas(client, operations):
    root = f"s-{uuid.uuid4().hex[:8]}"
    assert (await client.post(SESSIONS, json={"sessionId": root})).status_code == 201
    models, current = {root: Model()}, root
    for kind, n, delta in operations:
        model, base = models[current], session_url(current)
        if kind in ("delta", "plain"):
            event = {"author": "agent"} | ({"actions": {"stateDelta": delta}} if delta else {})
            response = await client.post(f"{base}/events", json=event)
            model.append(delta)
        elif kind == "long":
            events = [{"actions": {"stateDelta": {"a": i}}} for i in range(LONG)]
            response = await client.post(f"{base}/events:batch", json={"events": events})
            for event in events:
                model.append(event["actions"]["stateDelta"])
        elif kind == "fork":
            points = [model.base_seq, *(seq for seq, _ in model.events), model.version]
            at = points[n % len(points)]
            response = await client.post(f"{base}:fork", json={"atSeq": at})
            current = response.json()["id"]
            kept = [(seq, delta) for seq, delta in model.events if seq <= at]
            removed = [(seq, delta) for seq, delta in model.removed if seq <= at]
            models[current] = Model(
                at, model.then(at), model.base_seq, model.base_state, kept, removed
            )
        elif kind == "trim":
            response = await client.post(f"{base}:trim", json={"keepLast": n % 5})
            if len(model.events) > n % 5:
                cut = model.events[-(n % 5) - 1][0]
                model.base_seq, model.base_state = cut, model.then(cut)
                model.events = [(seq, delta) for seq, delta in model.events if seq > cut]
                model.removed = [(seq, delta) for seq, delta in model.removed if seq > cut]
            model.version += 1
        elif kind == "remove" and model.events:
            seq, delta = model.events.pop(n % len(model.events))
            model.removed.append((seq, delta))
            events = (await client.get(base, params={"untilSeq": seq})).json()["events"]
            response = await client.delete(f"{base}/events/{events[-1]['id']}")
            model.version += 1
        elif kind == "reset":
            response = await client.post(f"{base}:reset", json={})
            model.version += 1
            model.state, model.base_seq, model.base_state = {}, model.version, {}
            model.events, model.removed = [], []
        else:
            current = list(models)[n % len(models)]
            continue
        assert response.status_code in (200, 201), response.text
    for session_id, model in models.items():
        await check_states(client, session_id, model)
