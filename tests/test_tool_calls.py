"""Tool-call integrity over HTTP: answered, pending and orphaned calls; healing orphans."""

import time
from typing import Any

import httpx

from tests.helpers import append, assert_problem, create_session, session_url

S = session_url("s")


def calls(*ids: str, at: float, **fields: Any) -> dict[str, Any]:
    parts = [{"functionCall": {"id": i, "name": "lookup", "args": {}}} for i in ids]
    return {
        "author": "agent",
        "invocationId": "inv-1",
        "timestamp": at,
        "content": {"role": "model", "parts": parts},
        **fields,
    }


def answer(call_id: str) -> dict[str, Any]:
    part = {"functionResponse": {"id": call_id, "name": "lookup", "response": {"ok": True}}}
    return {"author": "agent", "content": {"role": "user", "parts": [part]}}


async def add(client: httpx.AsyncClient, *events: dict[str, Any]) -> None:
    for event in events:
        response = await append(client, "s", event)
        assert response.status_code == 201, response.text


async def listed(client: httpx.AsyncClient, query: str = "") -> list[dict[str, Any]]:
    response = await client.get(f"{S}/toolCalls{query}")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["toolCalls"]
    return found


async def test_calls_are_answered_pending_or_orphaned_by_their_age(client):
    now = time.time()
    await create_session(client, sessionId="s")
    await add(client, calls("old", "done", at=now - 600), answer("done"))
    await add(client, calls("slow", at=now - 600, longRunningToolIds=["slow"]))
    await add(client, calls("new", at=now - 5))
    found = await listed(client)
    assert [(c["id"], c["status"]) for c in found] == [
        ("old", "orphaned"),
        ("done", "answered"),
        ("slow", "pending"),
        ("new", "pending"),
    ]
    old = found[0]
    assert old["name"] == "lookup" and old["seq"] == 1 and old["deadline"] == now - 300
    assert found[2]["deadline"] is None and found[2]["longRunning"] is True
    assert [c["id"] for c in await listed(client, "?status=pending&timeoutSeconds=1")] == ["slow"]
    assert [c["id"] for c in await listed(client, "?status=orphaned&timeoutSeconds=1")] == [
        "old",
        "new",
    ]
    assert await listed(client, "?status=orphaned&timeoutSeconds=1000") == []


async def test_heal_answers_each_orphan_with_an_error_once(client):
    now = time.time()
    await create_session(client, sessionId="s")
    await add(client, calls("a", "b", at=now - 600), answer("b"), calls("c", at=now - 600))
    response = await client.post(f"{S}:heal", json={})
    assert response.status_code == 200, response.text
    assert response.json() == {"healed": 2, "version": 5}
    assert response.headers["etag"] == '"5"'
    events = (await client.get(S)).json()["events"]
    healing = [e for e in events if e["seq"] > 3]
    assert [e["content"]["parts"][0]["functionResponse"]["id"] for e in healing] == ["a", "c"]
    assert all(e["author"] == "agent" and e["invocationId"] == "inv-1" for e in healing)
    assert "error" in healing[0]["content"]["parts"][0]["functionResponse"]["response"]
    assert {c["status"] for c in await listed(client)} == {"answered"}
    again = await client.post(f"{S}:heal", json={})
    assert again.json() == {"healed": 0, "version": 5}
    # The context view now sends every call with its answer.
    view = (await client.get(f"{S}/context")).json()
    assert len(view["events"]) == 5


async def test_heal_honours_its_timeout_if_match_and_a_closed_session(client):
    now = time.time()
    await create_session(client, sessionId="s")
    await add(client, calls("a", at=now - 60))
    assert (await client.post(f"{S}:heal")).json()["healed"] == 0  # no body: the defaults
    stale = await client.post(f"{S}:heal", json={"timeoutSeconds": 10}, headers={"If-Match": '"9"'})
    assert_problem(stale, 412, "stale_session")
    healed = await client.post(
        f"{S}:heal", json={"timeoutSeconds": 10}, headers={"If-Match": '"1"'}
    )
    assert healed.json() == {"healed": 1, "version": 2}
    assert (await client.post(f"{S}:close", json={"outcome": "failed"})).status_code == 200
    assert_problem(await client.post(f"{S}:heal", json={}), 409, "session_closed")


async def test_rewound_calls_are_not_listed(client):
    now = time.time()
    await create_session(client, sessionId="s")
    await add(client, calls("kept", at=now - 600), answer("kept"))
    await add(client, calls("gone", at=now - 600, invocationId="inv-2"))
    assert (
        await client.post(f"{S}:rewind", json={"beforeInvocationId": "inv-2"})
    ).status_code == 201
    assert [c["id"] for c in await listed(client)] == ["kept"]
    assert (await client.post(f"{S}:heal", json={})).json()["healed"] == 0


async def test_tool_calls_refuse_bad_input_and_unknown_sessions(client):
    assert_problem(await client.get(f"{S}/toolCalls"), 404, "session_not_found")
    assert_problem(await client.post(f"{S}:heal", json={}), 404, "session_not_found")
    await create_session(client, sessionId="s")
    for query in ("?status=lost", "?timeoutSeconds=-1", "?timeoutSeconds=nan", "?after=1"):
        assert_problem(await client.get(f"{S}/toolCalls{query}"), 422, "validation_error")
    for body in ({"timeoutSeconds": -1}, {"timeout": 5}, {"timeoutSeconds": "5"}):
        assert_problem(await client.post(f"{S}:heal", json=body), 422, "validation_error")
