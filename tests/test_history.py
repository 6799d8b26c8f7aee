"""History surgery over HTTP: rewind, trim, reset, removing and rewriting events, with the
tool-call invariant kept."""

from typing import Any

import httpx

from tests.helpers import append, assert_problem, create_session, delta_event, session_url

S = session_url("s")
JSON = {"content-type": "application/json"}


def calls(*ids: str, invocation: str = "inv-1", **fields: Any) -> dict[str, Any]:
    parts = [{"functionCall": {"id": i, "name": "search", "args": {"q": i}}} for i in ids]
    return {"author": "planner", "invocationId": invocation, "content": {"parts": parts}, **fields}


def answers(*ids: str, invocation: str = "inv-1", **fields: Any) -> dict[str, Any]:
    parts = [{"functionResponse": {"id": i, "name": "search", "response": {"ok": i}}} for i in ids]
    return {"author": "planner", "invocationId": invocation, "content": {"parts": parts}, **fields}


async def add(client: httpx.AsyncClient, event: dict[str, Any]) -> dict[str, Any]:
    response = await append(client, "s", event)
    assert response.status_code == 201, response.text
    stored: dict[str, Any] = response.json()
    return stored


async def session(client: httpx.AsyncClient, query: str = "") -> dict[str, Any]:
    response = await client.get(S + query)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ids(read: dict[str, Any]) -> list[str]:
    return [event["id"] for event in read["events"]]


async def test_rewind_appends_adks_rewind_event_restoring_the_state_before(client):
    await create_session(client, sessionId="s", state={"kept": "yes", "step": 0})
    await add(client, delta_event({"step": 1, "a": 1}, invocationId="inv-1"))
    await add(client, delta_event({"step": 2, "b": 2, "app:x": 1}, invocationId="inv-2"))
    await add(client, delta_event({"step": 3, "a": 3}, invocationId="inv-3"))
    response = await client.post(f"{S}:rewind", json={"beforeInvocationId": "inv-2"})
    assert response.status_code == 201, response.text
    event = response.json()
    assert response.headers["etag"] == '"4"' and event["seq"] == 4
    assert event["author"] == "user" and event["invocationId"].startswith("e-")
    assert event["actions"] == {
        "rewindBeforeInvocationId": "inv-2",
        "stateDelta": {"step": 1, "a": 1, "b": None},
    }
    state = (await session(client))["state"]
    assert state == {"kept": "yes", "step": 1, "a": 1, "b": None, "app:x": 1}


async def test_a_rewind_restores_the_state_the_held_events_make_as_adks_runner_does(client):
    """The invocation's first event removed: its change is undone with the rest of it, as
    ADK's `Runner.rewind_async` undoes it from the events the session holds."""
    await create_session(client, sessionId="s", state={"a": "created"})
    batch = {
        "events": [
            delta_event({"a": 1}, id="j1", invocationId="inv-1"),
            delta_event({"a": 2}, id="j2", invocationId="inv-2"),
            delta_event({"b": 3}, id="j3", invocationId="inv-2"),
        ]
    }
    assert (await client.post(f"{S}/events:batch", json=batch)).status_code == 201
    assert (await client.delete(f"{S}/events/j2")).status_code == 200
    assert (await session(client))["state"] == {"a": 2, "b": 3}  # the removal keeps its change
    response = await client.post(f"{S}:rewind", json={"beforeInvocationId": "inv-2"})
    assert response.status_code == 201, response.text
    assert response.json()["actions"]["stateDelta"] == {"a": 1, "b": None}
    assert (await session(client))["state"] == {"a": 1, "b": None}


async def test_rewind_of_an_unknown_invocation_is_422_and_honours_if_match(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"a": 1}, invocationId="inv-1"))
    unknown = await client.post(f"{S}:rewind", json={"beforeInvocationId": "nope"})
    assert_problem(unknown, 422, "validation_error")
    stale = await client.post(
        f"{S}:rewind", json={"beforeInvocationId": "inv-1"}, headers={"If-Match": '"0"'}
    )
    assert_problem(stale, 412, "stale_session")
    assert (await session(client))["version"] == 1


async def test_trim_keeps_the_newest_events_and_no_answer_without_its_call(client):
    await create_session(client, sessionId="s", state={"n": 0})
    await add(client, delta_event({"n": 1}, id="e1"))
    await add(client, calls("c1", id="e2"))
    await add(client, delta_event({"n": 3}, id="e3"))
    await add(client, answers("c1", id="e4"))
    await add(client, delta_event({"n": 5}, id="e5"))
    response = await client.post(f"{S}:trim", json={"keepLast": 3})
    assert response.status_code == 200, response.text
    # e3, e4, e5 are the newest three; e4 answers e2's call, which goes: e4 goes with it.
    assert response.json() == {"removedEvents": 3, "keptEvents": 2, "version": 6}
    assert response.headers["etag"] == '"6"'
    read = await session(client)
    assert ids(read) == ["e3", "e5"] and read["state"] == {"n": 5}
    assert (await add(client, delta_event({"n": 7})))["seq"] == 7  # seqs are never reused
    assert (await session(client, "?untilSeq=3"))["state"] == {"n": 3}
    assert_problem(await client.get(S + "?untilSeq=1"), 422, "validation_error")
    assert_problem(await client.post(f"{S}:fork", json={"atSeq": 1}), 422, "validation_error")


async def test_trim_keeping_more_than_there_is_removes_nothing(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"n": 1}))
    response = await client.post(f"{S}:trim", json={"keepLast": 10})
    assert response.json() == {"removedEvents": 0, "keptEvents": 1, "version": 2}
    assert_problem(await client.post(f"{S}:trim", json={"keepLast": -1}), 422, "validation_error")


async def test_reset_removes_every_event_and_the_sessions_own_state(client):
    await create_session(client, sessionId="s", state={"k": 1, "user:u": 1})
    await add(client, delta_event({"k": 2, "app:a": 1}))
    response = await client.post(f"{S}:reset")
    assert response.json() == {"removedEvents": 1, "keptEvents": 0, "version": 2}
    read = await session(client)
    assert read["events"] == [] and read["state"] == {"user:u": 1, "app:a": 1}
    assert (await add(client, delta_event({"k": 3})))["seq"] == 3
    assert (await session(client, "?untilSeq=2"))["state"] == {"user:u": 1, "app:a": 1}


async def test_reset_takes_no_options_and_a_body_it_cannot_read_removes_nothing(client):
    await create_session(client, sessionId="s", state={"k": 1})
    await add(client, delta_event({"k": 2}))
    bodies = [
        b'{"keepLast": 5}',
        b"not json",
        b"[1, 2]",
        b'{"a": 1, "a": 1}',
    ]
    for body in bodies:
        response = await client.post(f"{S}:reset", content=body, headers=JSON)
        assert_problem(response, 422, "validation_error")
    assert len((await session(client))["events"]) == 1
    for body in (b"{}", b""):  # no options: an empty object, or no body at all
        response = await client.post(f"{S}:reset", content=body, headers=JSON)
        assert response.status_code == 200, response.text


async def test_a_route_that_takes_no_body_refuses_one(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"k": 2}, id="e1"))
    for method, url in [("DELETE", S), ("DELETE", f"{S}/events/e1"), ("GET", S)]:
        response = await client.request(method, url, json={"force": True})
        assert_problem(response, 422, "validation_error")
    assert ids(await session(client)) == ["e1"]


async def test_removing_a_call_removes_every_answer_with_it(client):
    await create_session(client, sessionId="s")
    await add(client, calls("c1", "c2", "c3", id="call"))  # parallel calls in one event
    await add(client, answers("c1", "c2", id="both"))
    await add(client, delta_event({"x": 1}, id="other"))
    await add(client, answers("c3", id="third"))
    response = await client.delete(f"{S}/events/call")
    assert response.status_code == 200, response.text
    assert response.json() == {"removedEventIds": ["call", "both", "third"], "version": 5}
    assert response.headers["etag"] == '"5"'
    assert ids(await session(client)) == ["other"]


async def test_removing_an_answer_whose_call_stays_is_409_and_changes_nothing(client):
    await create_session(client, sessionId="s")
    await add(client, calls("c1", id="call"))
    await add(client, answers("c1", id="answer"))
    response = await client.delete(f"{S}/events/answer")
    assert_problem(response, 409, "tool_pair_violation")
    read = await session(client)
    assert ids(read) == ["call", "answer"] and read["version"] == 2
    assert_problem(await client.delete(f"{S}/events/nope"), 404, "event_not_found")
    stale = await client.delete(f"{S}/events/call", headers={"If-Match": '"1"'})
    assert_problem(stale, 412, "stale_session")


async def test_a_plain_event_is_removed_alone(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"x": 1}, id="e1"))
    await add(client, delta_event({"x": 2}, id="e2"))
    response = await client.delete(f"{S}/events/e1", headers={"If-Match": '"2"'})
    assert response.json() == {"removedEventIds": ["e1"], "version": 3}
    assert [e["seq"] for e in (await session(client))["events"]] == [2]


async def test_rewriting_content_redacts_in_place_and_dropping_a_call_drops_its_answer(client):
    await create_session(client, sessionId="s")
    await add(client, calls("c1", "c2", id="call"))
    await add(client, answers("c1", id="a1"))
    await add(client, answers("c2", id="a2"))
    redacted = {"parts": [{"functionCall": {"id": "c2", "name": "search", "args": {}}}]}
    response = await client.patch(f"{S}/events/call", json={"content": redacted})
    assert response.status_code == 200, response.text
    assert response.json()["content"] == redacted and response.json()["seq"] == 1
    assert response.headers["etag"] == '"4"'
    read = await session(client)
    assert ids(read) == ["call", "a2"]
    assert read["events"][0]["content"] == redacted


async def test_a_rewrite_that_breaks_a_pair_is_409(client):
    await create_session(client, sessionId="s")
    await add(client, calls("c1", id="call"))
    await add(client, answers("c1", id="answer"))
    drop = await client.patch(f"{S}/events/answer", json={"content": {"parts": [{"text": "x"}]}})
    assert_problem(drop, 409, "tool_pair_violation")
    orphan = answers("nope")["content"]
    same = await client.patch(f"{S}/events/call", json={"content": calls("c1")["content"]})
    assert same.status_code == 200  # the same calls: nothing else changes
    stray = await client.patch(f"{S}/events/answer", json={"content": orphan})
    assert_problem(stray, 409, "tool_pair_violation")
    assert_problem(
        await client.patch(f"{S}/events/answer", json={"content": "text"}), 422, "validation_error"
    )
    assert ids(await session(client)) == ["call", "answer"]


async def test_surgery_on_a_closed_session_is_409(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"x": 1}, id="e1", invocationId="inv-1"))
    await client.post(f"{S}:close", json={"outcome": "completed"})
    for method, url, body in [
        ("POST", f"{S}:rewind", {"beforeInvocationId": "inv-1"}),
        ("POST", f"{S}:trim", {"keepLast": 0}),
        ("POST", f"{S}:reset", None),
        ("DELETE", f"{S}/events/e1", None),
        ("PATCH", f"{S}/events/e1", {"content": {"parts": []}}),
    ]:
        response = await client.request(method, url, json=body)
        assert_problem(response, 409, "session_closed")


async def test_a_rewrite_keeping_an_answer_to_a_call_it_drops_is_409(client):
    await create_session(client, sessionId="s")
    both = {"parts": [*calls("a")["content"]["parts"], *answers("a")["content"]["parts"]]}
    await add(client, {"id": "both", "author": "planner", "content": both})
    response = await client.patch(f"{S}/events/both", json={"content": answers("a")["content"]})
    assert_problem(response, 409, "tool_pair_violation")
    assert ids(await session(client)) == ["both"]


async def test_a_rewrite_cannot_answer_a_call_made_later(client):
    await create_session(client, sessionId="s")
    await add(client, delta_event({"x": 1}, id="early"))
    await add(client, calls("late", id="call"))
    response = await client.patch(f"{S}/events/early", json={"content": answers("late")["content"]})
    assert_problem(response, 409, "tool_pair_violation")


async def test_the_event_count_counts_what_is_left_where_seqs_and_the_version_cannot(client):
    await create_session(client, sessionId="s")
    empty = await client.get(f"{S}/events:count")
    assert empty.status_code == 200, empty.text
    assert empty.json() == {"count": 0, "firstSeq": None, "lastSeq": None}
    assert empty.headers["etag"] == '"0"'
    for n in range(1, 6):
        await add(client, delta_event({"n": n}, id=f"e{n}"))
    await add(client, calls("c1", id="e6"))
    await add(client, answers("c1", id="e7"))
    assert (await client.post(f"{S}:trim", json={"keepLast": 4})).status_code == 200
    assert (await client.delete(f"{S}/events/e6")).status_code == 200  # its answer goes too
    counted = await client.get(f"{S}/events:count")
    # e4 and e5 are left, at seqs 4 and 5, in a session at version 9.
    assert counted.json() == {"count": 2, "firstSeq": 4, "lastSeq": 5}
    assert counted.headers["etag"] == '"9"' == f'"{(await session(client))["version"]}"'
    missing = await client.get(session_url("nope") + "/events:count")
    assert_problem(missing, 404, "session_not_found")
    assert_problem(await client.get(f"{S}/events:count?order=desc"), 422, "validation_error")
