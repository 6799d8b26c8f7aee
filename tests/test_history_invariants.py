"""A session's history stays true under surgery and lineage: a read at a seq gives the same
answer forever, a fork starts from exactly that read, no operation moves a child's history
before its creation, and an export imports to the same reads. Each test is a case an outside
model-based test found (`test_history_model.py` now finds such cases itself)."""

import asyncio
import json
from typing import Any

import httpx

from tests.helpers import APP, USER, append, assert_problem, create_session, session_url
from tests.test_portability import lines, ndjson, sessionary

NDJSON = {"Content-Type": "application/x-ndjson"}


async def add(client: httpx.AsyncClient, session_id: str, *deltas: dict[str, Any]) -> None:
    for number, delta in enumerate(deltas):
        event: dict[str, Any] = {"author": "agent", "invocationId": f"{session_id}-{number}"}
        if delta:
            event["actions"] = {"stateDelta": delta}
        response = await append(client, session_id, event)
        assert response.status_code == 201, response.text


async def state_at(client: httpx.AsyncClient, session_id: str, seq: int) -> dict[str, Any]:
    response = await client.get(session_url(session_id), params={"untilSeq": seq})
    assert response.status_code == 200, response.text
    state: dict[str, Any] = response.json()["state"]
    return state


async def child_of_three(client: httpx.AsyncClient) -> None:
    """`p` at seq 3 with k = p1, p2, p3; `kid` inherits its events with k = child."""
    await create_session(client, sessionId="p")
    await add(client, "p", {"k": "p1"}, {"k": "p2"}, {"k": "p3"})
    body = {"sessionId": "kid", "inherit": "all", "state": {"k": "child"}}
    response = await client.post(f"{session_url('p')}/children", json=body)
    assert response.status_code == 201, response.text


async def test_a_trim_into_inherited_events_leaves_the_childs_history_where_it_starts(client):
    await child_of_three(client)
    await add(client, "kid", {}, {})
    response = await client.post(f"{session_url('kid')}:trim", json={"keepLast": 2})
    assert response.json()["removedEvents"] == 3
    too_early = await client.get(session_url("kid"), params={"untilSeq": 2})
    assert_problem(too_early, 422, "validation_error")
    assert await state_at(client, "kid", 3) == {"k": "child"}
    await add(client, "kid", *[{}] * 101)
    assert await state_at(client, "kid", 3) == {"k": "child"}
    fork = await client.post(f"{session_url('kid')}:fork", json={"atSeq": 4})
    assert fork.json()["state"] == {"k": "child"}


async def test_a_fork_or_rewind_before_an_inherited_invocation_is_refused(client):
    await child_of_three(client)
    await add(client, "kid", {"k": "own"})
    fork = await client.post(f"{session_url('kid')}:fork", json={"beforeInvocationId": "p-2"})
    assert "before the session's history" in assert_problem(fork, 422, "validation_error")["detail"]
    rewind = await client.post(f"{session_url('kid')}:rewind", json={"beforeInvocationId": "p-2"})
    assert_problem(rewind, 422, "validation_error")
    # Within its own history both work, from the state a read gives there.
    fork = await client.post(f"{session_url('kid')}:fork", json={"beforeInvocationId": "kid-0"})
    assert (fork.status_code, fork.json()["version"]) == (201, 3)
    assert fork.json()["state"] == {"k": "child"}
    rewind = await client.post(f"{session_url('kid')}:rewind", json={"beforeInvocationId": "kid-0"})
    assert rewind.json()["actions"]["stateDelta"] == {"k": "child"}


async def test_a_removed_events_delta_stays_in_the_history_at_every_seq(client):
    await create_session(client, sessionId="s")
    await add(client, "s", {"y": 0}, {}, {"x": 1})
    events = (await client.get(session_url("s"))).json()["events"]
    assert (await client.delete(f"{session_url('s')}/events/{events[2]['id']}")).status_code == 200
    assert await state_at(client, "s", 3) == {"y": 0, "x": 1}
    assert await state_at(client, "s", 4) == {"y": 0, "x": 1}
    await add(client, "s", {})
    assert await state_at(client, "s", 3) == {"y": 0, "x": 1}
    assert await state_at(client, "s", 2) == {"y": 0}
    fork = await client.post(f"{session_url('s')}:fork", json={"atSeq": 3})
    assert fork.json()["state"] == {"y": 0, "x": 1}
    assert await state_at(client, fork.json()["id"], 2) == {"y": 0}


async def import_under(client: httpx.AsyncClient, user: str, body: bytes) -> httpx.Response:
    url = f"/apps/{APP}/users/{user}/sessions:import"
    return await client.post(url, content=body, headers=NDJSON)


async def same_reads(client: httpx.AsyncClient, session_id: str, users: tuple[str, str]) -> None:
    """Both users' copies read the same at every seq of their history."""
    reads = []
    for user in users:
        url = session_url(session_id, user=user)
        header = json.loads(await export_header(client, session_id, user))
        at = [
            (await client.get(url, params={"untilSeq": seq})).json()
            for seq in range(header["baseSeq"], header["version"] + 1)
        ]
        reads.append([(read["state"], read["events"]) for read in at])
    assert reads[0] == reads[1]


async def export_header(client: httpx.AsyncClient, session_id: str, user: str) -> str:
    return (await client.get(f"{session_url(session_id, user=user)}:export")).text.split("\n")[0]


async def test_a_child_that_inherited_events_imports_from_its_own_export(client):
    await child_of_three(client)
    await add(client, "kid", {"k": "own"})
    exported = (await client.get(f"{session_url('kid')}:export")).content
    assert (await import_under(client, "bob", exported)).status_code == 201
    assert (await import_under(client, USER, exported)).status_code == 200
    await same_reads(client, "kid", (USER, "bob"))


async def test_a_forks_export_imports_again_where_it_came_from_unchanged(client):
    await create_session(client, sessionId="p")
    await add(client, "p", {"k": 1}, {"k": 2})
    fork = await client.post(f"{session_url('p')}:fork", json={"sessionId": "f", "atSeq": 1})
    assert fork.status_code == 201
    exported = (await client.get(f"{session_url('f')}:export")).content
    response = await import_under(client, USER, exported)
    assert response.status_code == 200, response.text
    assert (await import_under(client, "bob", exported)).status_code == 201
    await same_reads(client, "f", (USER, "bob"))


async def test_an_apps_export_with_forks_and_children_imports_whole_into_an_empty_database(
    client, database_url, new_database
):
    await child_of_three(client)
    await add(client, "kid", {"k": "own"})
    await client.post(f"{session_url('kid')}:fork", json={"sessionId": "kid-fork"})
    await client.post(
        f"{session_url('p')}/children", json={"sessionId": "ctx", "inherit": "context"}
    )
    events = (await client.get(session_url("p"))).json()["events"]
    await client.delete(f"{session_url('p')}/events/{events[0]['id']}")
    await client.post(f"{session_url('kid')}:close", json={"outcome": "completed"})
    exported = sessionary(database_url, "export", "--app", APP)
    assert exported.returncode == 0, exported.stderr
    again = sessionary(database_url, "import", stdin=exported.stdout)
    assert again.returncode == 0, again.stderr
    assert b"0 sessions (0 events), 4 already there" in again.stderr
    target = await asyncio.to_thread(new_database)
    assert sessionary(target, "migrate").returncode == 0
    moved = sessionary(target, "import", stdin=exported.stdout)
    assert moved.returncode == 0, moved.stderr
    assert b"imported 4 sessions" in moved.stderr
    assert sessionary(target, "export").stdout == exported.stdout


async def test_an_export_holding_a_large_float_imports(client):
    await create_session(client, sessionId="big")
    response = await append(client, "big", {"author": "agent", "customMetadata": {"n": 1e20}})
    assert response.status_code == 201
    exported = (await client.get(f"{session_url('big')}:export")).content
    assert b"100000000000000000000" in exported
    assert (await import_under(client, "bob", exported)).status_code == 201
    assert (await import_under(client, "bob", exported)).status_code == 200


async def test_an_import_sets_no_version_and_no_write_takes_one_past_2_53_minus_1(client):
    """2^53 - 1 is the largest seq a JSON reader reading numbers as doubles tells from the
    next (tests/test_version_limit.py tries every write at it)."""
    await create_session(client, sessionId="late")
    header, *events = lines((await client.get(f"{session_url('late')}:export")).content)
    for version, status in ((2**63 - 1, 422), (2**53, 422), (2**53 - 1, 201)):
        body = ndjson([{**header, "version": version, "baseSeq": version}, *events])
        response = await import_under(client, f"u{status}", body)
        assert response.status_code == status, response.text
    written = await append(client, "late", {"author": "agent"}, user="u201")
    assert_problem(written, 409, "version_exhausted")


async def test_an_old_export_whose_state_kept_a_removed_delta_reads_as_it_did(client):
    """Exports made before `removedDeltas` of a session an event was removed from: the state
    holds the removed event's delta, the history before the version does not."""
    await create_session(client, sessionId="old")
    await add(client, "old", {"x": 1}, {})
    header, *events = lines((await client.get(f"{session_url('old')}:export")).content)
    old = {key: value for key, value in header.items() if key != "removedDeltas"}
    body = ndjson([{**old, "version": 3, "eventCount": 1}, events[1]])
    assert (await import_under(client, "bob", body)).status_code == 201
    assert (await client.get(session_url("old", user="bob"))).json()["state"] == {"x": 1}
    response = await client.get(session_url("old", user="bob"), params={"untilSeq": 2})
    assert response.json()["state"] == {}
    assert (await import_under(client, "bob", body)).status_code == 200
    header = json.loads(await export_header(client, "old", "bob"))
    assert header["removedDeltas"] == [{"seq": 3, "stateDelta": {"x": 1}}]


async def test_an_import_places_no_removed_delta_at_the_seq_of_an_event_it_stores(client):
    """A removed delta stands for an event no longer there: at the seq of an event the import
    stores, the history would hold both, and a later removal of that event two deltas at one
    seq. Given by the header, or made up for an export older than `removedDeltas` whose last
    event is at its version: 422 naming the line, nothing stored."""
    await create_session(client, sessionId="both")
    await add(client, "both", {"x": 1}, {"y": 2}, {})
    header, *events = lines((await client.get(f"{session_url('both')}:export")).content)
    given = {
        **header,
        "removedDeltas": [{"seq": 2, "stateDelta": {"y": 3}}],
        "state": {"x": 1, "y": 3},
    }
    old = {key: value for key, value in header.items() if key != "removedDeltas"}
    made_up = {**old, "state": {"x": 1, "y": 2, "z": 0}}
    for name, body, line in (("given", given, 3), ("made up", made_up, 4)):
        response = await import_under(client, "bob", ndjson([body, *events]))
        problem = assert_problem(response, 422, "validation_error")
        assert problem["field"] == f"line {line}", (name, problem)
        assert f"seq {line - 1}" in problem["detail"], (name, problem)
        assert (await client.get(session_url("both", user="bob"))).status_code == 404
    # Event 3 removed instead: its seq is free for its delta.
    removed = {**given, "removedDeltas": [{"seq": 3, "stateDelta": {"y": 3}}], "eventCount": 2}
    assert (await import_under(client, "bob", ndjson([removed, *events[:2]]))).status_code == 201
