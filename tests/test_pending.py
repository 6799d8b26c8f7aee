"""Queued input over HTTP: events queued apart from the log, promoted together once the
turn's function calls are answered."""

from typing import Any

import httpx

from tests.helpers import append, assert_problem, create_session, session_url

S = session_url("s")


def typed(text: str, **fields: Any) -> dict[str, Any]:
    return {"author": "user", "content": {"role": "user", "parts": [{"text": text}]}, **fields}


def call(call_id: str) -> dict[str, Any]:
    part = {"functionCall": {"id": call_id, "name": "lookup", "args": {}}}
    return {"author": "agent", "content": {"role": "model", "parts": [part]}}


def answer(call_id: str) -> dict[str, Any]:
    part = {"functionResponse": {"id": call_id, "name": "lookup", "response": {}}}
    return {"author": "agent", "content": {"role": "user", "parts": [part]}}


async def queue(client: httpx.AsyncClient, event: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(f"{S}/pending", json=event)
    assert response.status_code == 202, response.text
    queued: dict[str, Any] = response.json()
    return queued


async def test_queued_events_wait_apart_and_are_promoted_in_order(client):
    await create_session(client, sessionId="s")
    first = await queue(client, typed("one", id="q1", actions={"stateDelta": {"mood": "ok"}}))
    assert first["id"] == "q1" and "seq" not in first
    await queue(client, typed("two"))
    session = (await client.get(S)).json()
    assert session["events"] == [] and session["version"] == 0
    listed = (await client.get(f"{S}/pending")).json()["events"]
    assert [e["content"]["parts"][0]["text"] for e in listed] == ["one", "two"]
    response = await client.post(f"{S}/pending:promote")
    assert response.status_code == 201 and response.headers["etag"] == '"2"'
    stored = response.json()["events"]
    assert (stored[0]["seq"], stored[0]["id"]) == (1, "q1")
    assert [e["seq"] for e in stored] == [1, 2]
    assert (await client.get(S)).json()["state"] == {"mood": "ok"}
    assert (await client.get(f"{S}/pending")).json()["events"] == []
    empty = await client.post(f"{S}/pending:promote")
    assert empty.status_code == 200 and empty.json() == {"events": []}


async def test_promote_waits_for_unanswered_calls_unless_forced(client):
    await create_session(client, sessionId="s")
    assert (await append(client, "s", call("c1"))).status_code == 201
    await queue(client, typed("while the tool runs"))
    problem = assert_problem(await client.post(f"{S}/pending:promote"), 409, "tool_calls_pending")
    assert problem["callIds"] == ["c1"]
    assert (await append(client, "s", answer("c1"))).status_code == 201
    promoted = await client.post(f"{S}/pending:promote", json={"force": False})
    assert [e["seq"] for e in promoted.json()["events"]] == [3]
    assert (await append(client, "s", call("c2"))).status_code == 201
    await queue(client, typed("again"))
    forced = await client.post(f"{S}/pending:promote", json={"force": True})
    assert forced.status_code == 201 and forced.json()["events"][0]["seq"] == 5


async def test_the_same_event_is_queued_once_and_another_under_its_id_is_409(client):
    await create_session(client, sessionId="s")
    await queue(client, typed("hi", id="q1"))
    await queue(client, typed("hi", id="q1"))
    assert len((await client.get(f"{S}/pending")).json()["events"]) == 1
    assert_problem(
        await client.post(f"{S}/pending", json=typed("bye", id="q1")), 409, "event_conflict"
    )


async def test_promote_honours_if_match_and_closed_sessions_refuse_input(client):
    await create_session(client, sessionId="s")
    await queue(client, typed("hi"))
    stale = await client.post(f"{S}/pending:promote", headers={"If-Match": '"3"'})
    assert_problem(stale, 412, "stale_session")
    assert len((await client.get(f"{S}/pending")).json()["events"]) == 1
    assert (await client.post(f"{S}:close", json={"outcome": "canceled"})).status_code == 200
    assert_problem(await client.post(f"{S}/pending", json=typed("late")), 409, "session_closed")
    assert_problem(await client.post(f"{S}/pending:promote"), 409, "session_closed")


async def test_pending_refuses_bad_input_and_unknown_sessions(client):
    assert_problem(await client.post(f"{S}/pending", json=typed("x")), 404, "session_not_found")
    assert_problem(await client.get(f"{S}/pending"), 404, "session_not_found")
    await create_session(client, sessionId="s")
    for body in (typed("x", partial=True), {"author": 5}, [1]):
        assert_problem(await client.post(f"{S}/pending", json=body), 422, "validation_error")
    assert_problem(
        await client.post(f"{S}/pending:promote", json={"force": "yes"}), 422, "validation_error"
    )
    # Deleting the session drops its queue.
    await queue(client, typed("x"))
    assert (await client.delete(S)).status_code == 204


async def test_an_event_queued_without_a_timestamp_gets_one_when_promoted(client):
    await create_session(client, sessionId="s")
    queued = await queue(client, typed("later", id="q1"))
    assert "timestamp" not in queued
    assert (await append(client, "s", typed("first", timestamp=5.0))).status_code == 201
    promoted = (await client.post(f"{S}/pending:promote")).json()["events"]
    assert promoted[0]["timestamp"] > 5.0


async def test_promote_skips_what_was_appended_meanwhile_and_clear_unsticks_a_conflict(client):
    await create_session(client, sessionId="s")
    queued = await queue(client, typed("hi", id="q1", timestamp=1.0))
    await queue(client, typed("more", id="q2", timestamp=2.0))
    assert (await append(client, "s", queued)).status_code == 201  # a retry through the log
    promoted = await client.post(f"{S}/pending:promote")
    assert [e["id"] for e in promoted.json()["events"]] == ["q2"]
    await queue(client, typed("other", id="q1", timestamp=3.0))
    assert_problem(await client.post(f"{S}/pending:promote"), 409, "event_conflict")
    assert (await client.delete(f"{S}/pending")).status_code == 204
    assert (await client.get(f"{S}/pending")).json()["events"] == []
    assert (await client.post(f"{S}/pending:promote")).json() == {"events": []}
    assert_problem(await client.delete(session_url("nope") + "/pending"), 404, "session_not_found")


async def test_the_queue_holds_at_most_one_promotes_worth(client, settings):
    await create_session(client, sessionId="s")
    for n in range(settings.max_events_per_request):
        await queue(client, typed(f"{n}", id=f"q{n}"))
    await queue(client, typed("0", id="q0"))  # the same event again: still accepted
    assert_problem(await client.post(f"{S}/pending", json=typed("x")), 413, "payload_too_large")
