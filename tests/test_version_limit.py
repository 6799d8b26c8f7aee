"""No write takes a session's version (and so a seq) past 2^53 - 1, the largest integer every
JSON reader holds exactly: at the limit, every path that takes a version is a 409
`version_exhausted` and writes nothing. Sessions get there by an import (the only way to set a
version), each path family is tried at the limit, and the session reads as it did."""

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from app.domain import Append, SessionKey
from app.errors import VersionExhausted
from app.repositories import events as event_rows
from app.rules.events import prepare
from tests import ON_CITUS
from tests.helpers import APP, USER, append, assert_problem, create_session, session_url

MAX = 2**53 - 1
NDJSON = {"Content-Type": "application/x-ndjson"}
S = session_url("full")


def call_event(call_id: str) -> dict[str, Any]:
    part = {"functionCall": {"id": call_id, "name": "lookup", "args": {}}}
    return {
        "id": f"call-{call_id}",
        "author": "planner",
        "invocationId": "inv-2",
        "timestamp": 1_000_000.0,
        "content": {"role": "model", "parts": [part]},
    }


async def full_session(client: httpx.AsyncClient, version: int = MAX, **state: Any) -> None:
    """`full` at `version`: a state change in `inv-1`, an unanswered call in `inv-2` and a
    text in `inv-3`, imported from a session made as usual."""
    await create_session(client, sessionId="source", state=state)
    events = [
        {
            "id": "e1",
            "author": "user",
            "invocationId": "inv-1",
            "actions": {"stateDelta": {"a": 1}},
        },
        call_event("c1"),
        {
            "id": "e3",
            "author": "agent",
            "invocationId": "inv-3",
            "content": {"parts": [{"text": "hi"}]},
        },
    ]
    batch = await client.post(f"{session_url('source')}/events:batch", json={"events": events})
    assert batch.status_code == 201, batch.text
    header, *lines = (await client.get(f"{session_url('source')}:export")).content.splitlines()
    moved = json.dumps({**json.loads(header), "id": "full", "version": version}).encode()
    body = b"\n".join([moved, *lines]) + b"\n"
    imported = await client.post(
        f"/apps/{APP}/users/{USER}/sessions:import", content=body, headers=NDJSON
    )
    assert imported.status_code == 201, imported.text


async def snapshot(client: httpx.AsyncClient, session_id: str = "full") -> dict[str, Any]:
    read = await client.get(session_url(session_id))
    assert read.status_code == 200, read.text
    pending = await client.get(f"{session_url(session_id)}/pending")
    body: dict[str, Any] = read.json()
    return {**body, "pending": pending.json()["events"]}


Write = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]


def post(suffix: str, body: Any = None) -> Write:
    return lambda client: client.post(S + suffix, json=body)


WRITES: dict[str, Write] = {
    "append": lambda client: append(client, "full", {"author": "user"}),
    "batch": post("/events:batch", {"events": [{"author": "user"}]}),
    "state PATCH": lambda client: client.patch(S, json={"stateDelta": {"a": 2}}),
    "rename": lambda client: client.patch(S, json={"displayName": "full"}),
    "rewind": post(":rewind", {"beforeInvocationId": "inv-3"}),
    "trim": post(":trim", {"keepLast": 1}),
    "reset": post(":reset"),
    "removal": lambda client: client.delete(f"{S}/events/e3"),
    "rewrite": lambda client: client.patch(f"{S}/events/e3", json={"content": {"parts": []}}),
    "close": post(":close", {"outcome": "completed"}),
    "heal": post(":heal", {"timeoutSeconds": 0}),
    "compact": post(":compact", {"strategy": "summary", "summary": "Before: a chat."}),
}


@pytest.mark.parametrize("path", WRITES)
async def test_a_session_at_the_limit_refuses_every_write_and_keeps_what_it_was(client, path):
    await full_session(client)
    before = await snapshot(client)
    assert before["version"] == MAX
    body = assert_problem(await WRITES[path](client), 409, "version_exhausted")
    assert str(MAX) in body["detail"]
    assert await snapshot(client) == before


async def test_a_batch_that_would_pass_the_limit_writes_none_of_its_events(client):
    await full_session(client, version=MAX - 1)
    two = {"events": [{"id": "n1", "author": "user"}, {"id": "n2", "author": "user"}]}
    before = await snapshot(client)
    assert_problem(await client.post(f"{S}/events:batch", json=two), 409, "version_exhausted")
    assert await snapshot(client) == before
    one = await client.post(f"{S}/events:batch", json={"events": two["events"][:1]})
    assert one.status_code == 201, one.text
    assert one.json()["events"][0]["seq"] == MAX  # the last seq there is
    assert_problem(await append(client, "full", {"author": "user"}), 409, "version_exhausted")


async def test_promoting_queued_input_at_the_limit_keeps_the_queue(client):
    await full_session(client)
    queued = await client.post(f"{S}/pending", json={"author": "user", "id": "q1"})
    assert queued.status_code == 202, queued.text
    before = await snapshot(client)
    promoted = await client.post(f"{S}/pending:promote", json={"force": True})
    assert_problem(promoted, 409, "version_exhausted")
    assert await snapshot(client) == before
    assert [event["id"] for event in before["pending"]] == ["q1"]


async def test_a_child_whose_answer_its_parent_cannot_take_stays_open(client):
    await full_session(client)
    child = await client.post(
        f"{S}/children", json={"sessionId": "kid", "functionCallId": "c1", "inherit": "none"}
    )
    assert child.status_code == 201, child.text
    parent, kid = await snapshot(client), await snapshot(client, "kid")
    closed = await client.post(f"{session_url('kid')}:close", json={"outcome": "completed"})
    assert_problem(closed, 409, "version_exhausted")
    assert await snapshot(client) == parent
    assert await snapshot(client, "kid") == kid
    assert kid["status"] == "open"


@pytest.mark.skipif(ON_CITUS, reason="on Citus every append runs alone")
async def test_appends_sharing_a_statement_leave_one_at_the_limit_to_itself(client, app):
    """Group commit: one append of the group at the limit fails the statement, which writes
    none of them; each is then run alone, where that one is refused."""
    await full_session(client)
    await create_session(client, sessionId="roomy")
    settings = app.state.settings
    appends = [
        Append(SessionKey(APP, USER, session_id), [prepare({}, settings.event_limits)], None)
        for session_id in ("roomy", "full")
    ]
    limits = (settings.max_state_bytes, settings.search_config)
    async with app.state.pool.connection() as connection:
        with pytest.raises(event_rows.GroupRefused):
            await event_rows.append_group(connection, appends, *limits)
    assert (await snapshot(client, "roomy"))["version"] == 0
    with pytest.raises(VersionExhausted):
        async with app.state.pool.connection() as connection:
            await event_rows.append(connection, appends[1], *limits, announced=False)
    assert (await snapshot(client))["version"] == MAX


async def test_a_write_just_below_the_limit_takes_the_last_version(client):
    await full_session(client, version=MAX - 1)
    renamed = await client.patch(S, json={"displayName": "last"})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["version"] == MAX
    assert_problem(await client.patch(S, json={"displayName": "past"}), 409, "version_exhausted")
