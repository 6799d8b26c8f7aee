"""Lineage over HTTP: forks, point-in-time reads, child sessions and their close."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest

from tests import ON_CITUS
from tests.helpers import (
    APP,
    SESSIONS,
    USER,
    append,
    assert_problem,
    create_session,
    delta_event,
    session_url,
)


def call_event(call_ids: list[str], invocation: str = "inv-2") -> dict[str, Any]:
    parts = [{"functionCall": {"id": call, "name": "search", "args": {}}} for call in call_ids]
    return {"author": "planner", "invocationId": invocation, "content": {"parts": parts}}


async def history(client: httpx.AsyncClient, session_id: str = "p") -> None:
    """Four events over three invocations; each sets `step`, and its own key, in every scope."""
    await create_session(client, sessionId=session_id, state={"step": 0, "kept": "yes"})
    for n, invocation in enumerate(["inv-1", "inv-2", "inv-2", "inv-3"], start=1):
        delta = {"step": n, f"k{n}": n, "app:seen": n, "user:seen": n, "temp:scratch": n}
        response = await append(client, session_id, delta_event(delta, invocationId=invocation))
        assert response.status_code == 201, response.text


async def read(client: httpx.AsyncClient, session_id: str, query: str = "") -> dict[str, Any]:
    response = await client.get(session_url(session_id) + query)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def fork(client: httpx.AsyncClient, session_id: str = "p", **body: Any) -> dict[str, Any]:
    """The fork as a read returns it: the answer to the fork is the same, without events."""
    response = await client.post(f"{session_url(session_id)}:fork", json=body)
    assert response.status_code == 201, response.text
    answered = response.json()
    assert response.headers["etag"] == f'"{answered["version"]}"'
    forked = await read(client, answered["id"])
    assert answered == {**forked, "events": []}
    return forked


async def test_a_fork_holds_the_history_and_state_up_to_its_seq(client):
    await history(client)
    parent = await read(client, "p")
    forked = await fork(client, sessionId="f", atSeq=2)
    assert forked["kind"] == "fork"
    assert forked["parent"] == {"sessionId": "p", "seq": 2, "functionCallId": None}
    assert forked["events"] == parent["events"][:2]  # same ids, seqs, everything
    assert forked["version"] == 2
    # Session state as of seq 2; app and user state are shared, so as they are now.
    assert forked["state"] == {
        "step": 2,
        "kept": "yes",
        "k1": 1,
        "k2": 2,
        "app:seen": 4,
        "user:seen": 4,
    }
    assert await read(client, "p") == parent  # the parent is unchanged, its version too


async def test_fork_then_append_to_both_sides_independently(client):
    await history(client)
    await fork(client, sessionId="f", atSeq=2)
    to_fork = await append(client, "f", delta_event({"side": "fork"}, invocationId="f-1"))
    to_parent = await append(client, "p", delta_event({"side": "parent"}, invocationId="p-5"))
    assert to_fork.json()["seq"] == 3
    assert to_parent.json()["seq"] == 5
    fork_session, parent = await read(client, "f"), await read(client, "p")
    assert (fork_session["version"], parent["version"]) == (3, 5)
    assert fork_session["state"]["side"] == "fork"
    assert parent["state"]["side"] == "parent"
    assert [e["seq"] for e in fork_session["events"]] == [1, 2, 3]


async def test_fork_at_zero_at_the_end_and_before_an_invocation(client):
    await history(client)
    at_zero = await fork(client, atSeq=0)
    assert at_zero["events"] == []
    assert at_zero["state"] == {"step": 0, "kept": "yes", "app:seen": 4, "user:seen": 4}
    at_end = await fork(client)
    assert at_end["parent"]["seq"] == 4
    assert len(at_end["events"]) == 4
    before = await fork(client, beforeInvocationId="inv-2")
    assert [e["invocationId"] for e in before["events"]] == ["inv-1"]
    assert before["parent"]["seq"] == 1
    assert before["state"]["step"] == 1


async def test_a_fork_point_outside_the_history_is_422(client):
    await history(client)
    assert_problem(
        await client.post(f"{session_url('p')}:fork", json={"atSeq": 5}), 422, "validation_error"
    )
    response = await client.post(f"{session_url('p')}:fork", json={"beforeInvocationId": "nope"})
    assert_problem(response, 422, "validation_error")
    both = {"atSeq": 1, "beforeInvocationId": "inv-2"}
    assert_problem(
        await client.post(f"{session_url('p')}:fork", json=both), 422, "validation_error"
    )
    unknown = {"atSeq": 1, "colour": "red"}
    assert_problem(
        await client.post(f"{session_url('p')}:fork", json=unknown), 422, "validation_error"
    )
    assert_problem(await client.post(f"{session_url('nope')}:fork"), 404, "session_not_found")
    assert (await read(client, "p"))["version"] == 4


async def test_a_fork_id_that_is_taken_is_409_and_changes_nothing(client):
    await history(client)
    await create_session(client, sessionId="taken")
    response = await client.post(f"{session_url('p')}:fork", json={"sessionId": "taken"})
    assert_problem(response, 409, "session_already_exists")
    assert (await read(client, "taken"))["events"] == []


async def test_a_fork_of_a_fork_and_the_lineage_root_first(client):
    await history(client)
    await fork(client, sessionId="f1", atSeq=3)
    await append(client, "f1", delta_event({"in_f1": True}, invocationId="f1-1"))
    grandchild = await fork(client, "f1", sessionId="f2")
    assert grandchild["parent"] == {"sessionId": "f1", "seq": 4, "functionCallId": None}
    assert grandchild["state"]["in_f1"] is True
    assert grandchild["state"]["step"] == 3
    lineage = (await client.get(f"{session_url('f2')}/lineage")).json()["sessions"]
    assert [(s["id"], s["kind"]) for s in lineage] == [("p", "root"), ("f1", "fork")]
    assert all(s["events"] == [] for s in lineage)
    assert (await client.get(f"{session_url('p')}/lineage")).json() == {"sessions": []}


async def test_deleting_a_parent_leaves_its_forks_and_children_whole(client):
    await history(client)
    await fork(client, sessionId="f", atSeq=3)
    await client.post(f"{session_url('p')}/children", json={"sessionId": "c", "inherit": "all"})
    before = {name: await read(client, name) for name in ("f", "c")}
    assert (await client.delete(session_url("p"))).status_code == 204
    for name in ("f", "c"):
        assert await read(client, name) == before[name]
        assert (await client.get(f"{session_url(name)}/lineage")).json() == {"sessions": []}
    assert (await append(client, "f", delta_event({"after": 1}))).status_code == 201


async def test_point_in_time_reads_give_the_events_and_the_state_then(client):
    await history(client)
    then = await read(client, "p", "?untilSeq=2")
    now = await read(client, "p")
    assert [e["seq"] for e in then["events"]] == [1, 2]
    assert then["state"] == {
        "step": 2,
        "kept": "yes",
        "k1": 1,
        "k2": 2,
        "app:seen": 4,
        "user:seen": 4,
    }
    assert then["version"] == now["version"] == 4  # the ETag stays the current version
    at_zero = await read(client, "p", "?untilSeq=0")
    assert at_zero["events"] == []
    assert at_zero["state"] == {"step": 0, "kept": "yes", "app:seen": 4, "user:seen": 4}
    recent = await read(client, "p", "?untilSeq=3&numRecentEvents=2")
    assert [e["seq"] for e in recent["events"]] == [2, 3]
    timestamps = [e["timestamp"] for e in now["events"]]
    after = await read(client, "p", f"?untilSeq=3&afterTimestamp={timestamps[1]}")
    assert [e["seq"] for e in after["events"]] == [2, 3]
    response = await client.get(session_url("p") + "?untilSeq=5")
    assert_problem(response, 422, "validation_error")


async def test_a_null_in_a_delta_is_kept_in_the_state_then(client):
    await create_session(client, sessionId="p", state={"a": 1})
    await append(client, "p", delta_event({"a": None}))
    await append(client, "p", delta_event({"a": 2}))
    assert (await read(client, "p", "?untilSeq=1"))["state"] == {"a": None}


async def test_children_are_listed_in_order_with_their_status_and_paged(client):
    await history(client)
    await fork(client, sessionId="f1")
    for name in ("c1", "c2"):
        response = await client.post(f"{session_url('p')}/children", json={"sessionId": name})
        assert response.status_code == 201, response.text
    await client.post(f"{session_url('c1')}:close", json={"outcome": "failed"})
    first = (await client.get(f"{session_url('p')}/children?pageSize=2")).json()
    assert [(s["id"], s["kind"], s["status"]) for s in first["sessions"]] == [
        ("f1", "fork", "open"),
        ("c1", "child", "closed"),
    ]
    assert first["sessions"][1]["outcome"] == "failed"
    token = first["nextPageToken"]
    rest = (await client.get(f"{session_url('p')}/children?pageSize=2&pageToken={token}")).json()
    assert [s["id"] for s in rest["sessions"]] == ["c2"]
    assert rest["nextPageToken"] is None
    assert_problem(await client.get(f"{session_url('nope')}/children"), 404, "session_not_found")


async def test_a_child_inherits_nothing_everything_or_the_live_context(client):
    await history(client)
    rewind = {
        "author": "user",
        "invocationId": "rw",
        "actions": {"rewindBeforeInvocationId": "inv-2", "stateDelta": {}},
    }
    assert (await append(client, "p", rewind)).status_code == 201
    children = {}
    for inherit in ("none", "all", "context"):
        body = {"sessionId": inherit, "inherit": inherit, "state": {"mine": 1, "user:u": 1}}
        response = await client.post(f"{session_url('p')}/children", json=body)
        assert response.status_code == 201, response.text
        assert response.json()["events"] == []  # the child is answered without its events
        children[inherit] = await read(client, inherit)
    assert children["none"]["events"] == []
    assert children["none"]["state"] == {"mine": 1, "app:seen": 4, "user:seen": 4, "user:u": 1}
    assert children["none"]["version"] == 0
    assert [e["seq"] for e in children["all"]["events"]] == [1, 2, 3, 4, 5]
    assert [e["seq"] for e in children["context"]["events"]] == [1]  # inv-2 on was rewound
    parent_state = (await read(client, "p"))["state"]
    for inherit in ("all", "context"):
        assert children[inherit]["state"] == {**parent_state, "mine": 1, "user:u": 1}
        assert children[inherit]["version"] == 5
        assert children[inherit]["parent"] == {"sessionId": "p", "seq": 5, "functionCallId": None}
    seq = (await append(client, "context", delta_event({"x": 1}))).json()["seq"]
    assert seq == 6


async def test_closing_a_child_answers_its_function_call_in_the_parent(client):
    await create_session(client, sessionId="p")
    await append(client, "p", call_event(["call-1", "call-2"]))
    body = {"sessionId": "c", "functionCallId": "call-2"}
    child = await client.post(f"{session_url('p')}/children", json=body)
    assert child.json()["parent"] == {"sessionId": "p", "seq": 1, "functionCallId": "call-2"}
    closed = await client.post(
        f"{session_url('c')}:close", json={"outcome": "completed", "result": {"hits": 3}}
    )
    assert closed.status_code == 200, closed.text
    assert (closed.json()["status"], closed.json()["outcome"]) == ("closed", "completed")
    assert closed.headers["etag"] == f'"{closed.json()["version"]}"'
    parent = await read(client, "p")
    answer = parent["events"][-1]
    assert answer["author"] == "planner"
    assert answer["invocationId"] == "inv-2"
    assert answer["content"]["parts"] == [
        {
            "functionResponse": {
                "id": "call-2",
                "name": "search",
                "response": {"outcome": "completed", "result": {"hits": 3}},
            }
        }
    ]
    # Now answered, the call takes no other child.
    again = await client.post(f"{session_url('p')}/children", json={"functionCallId": "call-2"})
    assert_problem(again, 409, "conflict")


async def test_a_call_without_author_or_invocation_is_answered_by_the_child(client):
    """Both are optional in ADK: the answer is then the child's (by its session id), in the
    call's invocation when it has one."""
    calls = {
        "bare": {"content": {"parts": [{"functionCall": {"id": "f1", "name": "f"}}]}},
        "authored": {
            "author": "planner",
            "content": {"parts": [{"functionCall": {"id": "f1", "name": "f"}}]},
        },
        "in an invocation": {
            "invocationId": "inv-9",
            "content": {"parts": [{"functionCall": {"id": "f1", "name": "f"}}]},
        },
    }
    for number, call in enumerate(calls.values()):
        parent, child = f"p{number}", f"c{number}"
        await create_session(client, sessionId=parent)
        assert (await append(client, parent, call)).status_code == 201
        body = {"sessionId": child, "functionCallId": "f1"}
        assert (await client.post(f"{session_url(parent)}/children", json=body)).status_code == 201
        closed = await client.post(f"{session_url(child)}:close", json={"outcome": "failed"})
        assert closed.status_code == 200, closed.text
        events = (await read(client, parent))["events"]
        answers = [e for e in events if "functionResponse" in e["content"]["parts"][0]]
        assert len(answers) == 1
        assert answers[0]["author"] == call.get("author", child)
        assert answers[0].get("invocationId") == call.get("invocationId")
        assert answers[0]["content"]["parts"][0]["functionResponse"] == {
            "id": "f1",
            "name": "f",
            "response": {"outcome": "failed"},
        }


async def test_a_child_for_a_call_must_name_an_unanswered_call_of_its_parent(client):
    await create_session(client, sessionId="p")
    await append(client, "p", call_event(["call-1"]))
    missing = await client.post(f"{session_url('p')}/children", json={"functionCallId": "nope"})
    assert_problem(missing, 422, "validation_error")
    first = await client.post(f"{session_url('p')}/children", json={"functionCallId": "call-1"})
    assert first.status_code == 201
    second = await client.post(f"{session_url('p')}/children", json={"functionCallId": "call-1"})
    assert_problem(second, 409, "conflict")


async def test_a_closed_session_refuses_every_write(client):
    await history(client)
    await client.post(f"{session_url('p')}:close", json={"outcome": "canceled"})
    version = (await read(client, "p"))["version"]
    writes = [
        ("POST", f"{session_url('p')}/events", delta_event({"x": 1})),
        ("POST", f"{session_url('p')}/events", delta_event({"x": 1}, partial=True)),
        ("POST", f"{session_url('p')}/events:batch", {"events": [delta_event({"x": 1})]}),
        ("PATCH", session_url("p"), {"stateDelta": {"x": 1}}),
        ("POST", f"{session_url('p')}/children", {}),
        ("POST", f"{session_url('p')}:close", {"outcome": "completed"}),
    ]
    for method, url, body in writes:
        assert_problem(await client.request(method, url, json=body), 409, "session_closed")
    assert (await read(client, "p"))["version"] == version
    # Still readable and forkable; the fork is open.
    assert (await fork(client))["status"] == "open"
    assert (await client.delete(session_url("p"))).status_code == 204


async def test_of_concurrent_closes_exactly_one_wins(client):
    await create_session(client, sessionId="p")
    await append(client, "p", call_event(["call-1"]))
    await client.post(
        f"{session_url('p')}/children", json={"sessionId": "c", "functionCallId": "call-1"}
    )
    outcomes = ["completed", "failed", "canceled"] * 4
    responses = await asyncio.gather(
        *(client.post(f"{session_url('c')}:close", json={"outcome": o}) for o in outcomes)
    )
    codes = sorted(response.status_code for response in responses)
    assert codes == [200] + [409] * (len(outcomes) - 1)
    winner = next(r for r in responses if r.status_code == 200).json()["outcome"]
    assert (await read(client, "c"))["outcome"] == winner
    answers = [
        e for e in (await read(client, "p"))["events"] if "functionResponse" in str(e["content"])
    ]
    assert len(answers) == 1
    assert answers[0]["content"]["parts"][0]["functionResponse"]["response"]["outcome"] == winner


async def test_close_honours_if_match(client):
    await create_session(client, sessionId="p")
    stale = await client.post(
        f"{session_url('p')}:close", json={"outcome": "completed"}, headers={"If-Match": '"3"'}
    )
    assert_problem(stale, 412, "stale_session")
    assert (await read(client, "p"))["status"] == "open"
    fresh = await client.post(
        f"{session_url('p')}:close", json={"outcome": "completed"}, headers={"If-Match": '"0"'}
    )
    assert fresh.status_code == 200
    assert fresh.json()["version"] == 1


async def test_ids_ending_in_a_verb_of_the_session_paths_are_refused(client):
    for verb in ("fork", "close", "rewind", "trim", "reset"):
        response = await client.post(SESSIONS, json={"sessionId": f"s:{verb}"})
        assert_problem(response, 422, "validation_error")
    assert (await client.post(SESSIONS, json={"sessionId": "s:forked"})).status_code == 201


async def test_a_verb_suffix_is_matched_before_an_id(client):
    await create_session(client, sessionId="p")
    response = await client.get(f"{session_url('p')}:fork")
    assert_problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    assert (await client.post(f"{session_url('p')}:fork")).json()["parent"]["sessionId"] == "p"


async def test_closing_a_child_whose_call_is_answered_already_appends_nothing(client):
    await create_session(client, sessionId="p")
    await append(client, "p", call_event(["call-1"]))
    child = {"sessionId": "c", "functionCallId": "call-1"}
    assert (await client.post(f"{session_url('p')}/children", json=child)).status_code == 201
    parts = [{"functionResponse": {"id": "call-1", "name": "search", "response": {}}}]
    await append(client, "p", {"author": "planner", "content": {"parts": parts}})
    closed = await client.post(f"{session_url('c')}:close", json={"outcome": "completed"})
    assert closed.status_code == 200
    assert [e["seq"] for e in (await read(client, "p"))["events"]] == [1, 2]


async def test_a_context_child_leaves_out_an_answer_to_a_rewound_call(client):
    await create_session(client, sessionId="p")
    await append(client, "p", delta_event({"a": 1}, invocationId="inv-1"))
    await append(client, "p", call_event(["call-1"], invocation="inv-2"))
    rewind = {
        "author": "user",
        "invocationId": "rw",
        "actions": {"rewindBeforeInvocationId": "inv-2"},
    }
    await append(client, "p", rewind)
    parts = [{"functionResponse": {"id": "call-1", "name": "search", "response": {}}}]
    await append(
        client, "p", {"author": "planner", "invocationId": "inv-2", "content": {"parts": parts}}
    )
    body = {"sessionId": "c", "inherit": "context"}
    assert (await client.post(f"{session_url('p')}/children", json=body)).status_code == 201
    assert [e["seq"] for e in (await read(client, "c"))["events"]] == [1]


@pytest.mark.skipif(
    ON_CITUS,
    reason="the fork is stopped by a row held through the coordinator and its wait watched in "
    "the coordinator's pg_locks; on a cluster both happen on a worker",
)
async def test_appends_go_on_while_a_fork_copies_and_the_fork_keeps_its_point(
    client: httpx.AsyncClient, database_url: str
) -> None:
    """A fork holds its parent's history, not its appends: with the fork stopped mid-way
    (another transaction holds its new id), an append to the parent is answered at once, and
    the fork, once it goes on, holds the parent as it was when the fork began."""
    await history(client)
    async with stopped_fork(client, database_url) as (forking, release):
        appended = await asyncio.wait_for(append(client, "p", delta_event({"step": 5})), 10)
        assert appended.status_code == 201, appended.text
        assert not forking.done()
        await release()
    forked = await forking
    assert forked.status_code == 201, forked.text
    assert forked.json()["parent"] == {"sessionId": "p", "seq": 4, "functionCallId": None}
    copy = await read(client, "f")
    assert [event["seq"] for event in copy["events"]] == [1, 2, 3, 4]
    assert copy["state"]["step"] == 4
    assert (await read(client, "p"))["state"]["step"] == 5


@pytest.mark.skipif(ON_CITUS, reason="as above: the held row and the wait are on a worker")
async def test_copies_wait_their_turn_and_appends_do_not(
    client: httpx.AsyncClient, database_url: str
) -> None:
    """With one copy at a time (the default), a second fork and an inheriting child wait for
    the first fork, stopped mid-way; a child that copies nothing and appends go on."""
    await history(client)
    await history(client, "q")
    async with stopped_fork(client, database_url) as (first, release):
        waiting = [
            asyncio.ensure_future(client.post(session_url("q") + ":fork", json={"sessionId": "g"})),
            asyncio.ensure_future(
                client.post(session_url("q") + "/children", json={"inherit": "all"})
            ),
        ]
        bare = await asyncio.wait_for(client.post(session_url("q") + "/children", json={}), 10)
        assert bare.status_code == 201, bare.text
        appended = await asyncio.wait_for(append(client, "q", delta_event({"step": 5})), 10)
        assert appended.status_code == 201, appended.text
        await asyncio.sleep(1)
        assert not any(task.done() for task in [first, *waiting])
        await release()
    for task in [first, *waiting]:
        answer = await asyncio.wait_for(task, 30)
        assert answer.status_code == 201, answer.text
    assert [e["seq"] for e in (await read(client, "g"))["events"]] == [1, 2, 3, 4, 5]


@asynccontextmanager
async def stopped_fork(
    client: httpx.AsyncClient, database_url: str
) -> AsyncIterator[tuple["asyncio.Future[httpx.Response]", Callable[[], Awaitable[None]]]]:
    """A fork of `p` as `f`, stopped mid-way: the parent already held, it waits to insert `f`,
    which another transaction holds uncommitted; `release` rolls that back and the fork goes
    on."""
    blocker = await asyncpg.connect(database_url)
    try:
        holding = blocker.transaction()
        await holding.start()
        await blocker.execute(
            "CREATE TEMP TABLE twin ON COMMIT DROP AS SELECT * FROM sessions "
            "WHERE app_name = $1 AND user_id = $2 AND id = 'p'",
            APP,
            USER,
        )
        await blocker.execute("UPDATE twin SET id = 'f'")
        await blocker.execute("INSERT INTO sessions SELECT * FROM twin")
        forking = asyncio.ensure_future(
            client.post(session_url("p") + ":fork", json={"sessionId": "f"})
        )
        await until_waiting(blocker)
        yield forking, holding.rollback
    finally:
        await blocker.close()


async def until_waiting(connection: asyncpg.Connection) -> None:
    """Once another backend waits for a lock (the fork, for the row `connection` inserted)."""
    for _ in range(200):
        waiting = await connection.fetchval(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> pg_backend_pid()"
        )
        if waiting:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the fork never waited for the row held by the test")
