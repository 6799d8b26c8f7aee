"""Property: whatever mix of appends, forks, trims, removals and rewrites a client sends, no
session ever holds a `functionResponse` without its `functionCall`, and seqs only grow."""

import itertools
import uuid
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

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


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
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
