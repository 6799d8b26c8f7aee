"""Export and import over HTTP: the NDJSON a session becomes, and the same session back from it,
exactly, once; bad files refused whole."""

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures import sessionary
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

NDJSON = {"Content-Type": "application/x-ndjson"}


def call(call_id: str) -> dict[str, Any]:
    part = {"functionCall": {"id": call_id, "name": "lookup", "args": {"q": "weather"}}}
    return {"author": "planner", "invocationId": "inv-2", "content": {"parts": [part]}}


def answer(call_id: str) -> dict[str, Any]:
    part = {"functionResponse": {"id": call_id, "name": "lookup", "response": {"sky": "blue"}}}
    return {
        "author": "planner",
        "invocationId": "inv-2",
        "content": {"parts": [part]},
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
    }


async def conversation(client: httpx.AsyncClient, session_id: str = "talk") -> dict[str, Any]:
    """A session with state of every scope, a tool call and its answer, labels and a name."""
    await create_session(
        client,
        sessionId=session_id,
        state={"topic": "weather", "user:name": "Ada", "app:model": "m1", "temp:x": 1},
        labels={"team": "blue"},
        displayName="Weather chat",
        ttl=3600,
    )
    for event in (
        delta_event(
            {"step": 1, "user:seen": True}, content={"parts": [{"text": "sunshine today"}]}
        ),
        call("c1"),
        answer("c1"),
    ):
        assert (await append(client, session_id, event)).status_code == 201
    return await read(client, session_id)


async def read(client: httpx.AsyncClient, session_id: str, user: str = USER) -> dict[str, Any]:
    response = await client.get(session_url(session_id, user=user))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def export(client: httpx.AsyncClient, session_id: str) -> bytes:
    response = await client.get(f"{session_url(session_id)}:export")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return response.content


async def import_(
    client: httpx.AsyncClient, body: bytes, user: str = USER, **headers: str
) -> httpx.Response:
    return await client.post(
        f"/apps/{APP}/users/{user}/sessions:import", content=body, headers={**NDJSON, **headers}
    )


def lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines()]


def ndjson(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


async def test_an_export_is_the_header_then_each_event_as_a_read_shows_it(client):
    session = await conversation(client)
    response = await client.get(f"{session_url('talk')}:export")
    assert response.headers["etag"] == f'"{session["version"]}"'
    header, *events = lines(response.content)
    assert events == session["events"]
    assert header == {
        "format": "sessionary.session.v1",
        **{key: value for key, value in session.items() if key != "events"},
        "baseSeq": 0,
        "baseState": {"topic": "weather"},
        "removedDeltas": [],
        "eventCount": 3,
        "artifactLines": 0,
    }
    assert header["state"] == {
        "topic": "weather",
        "step": 1,
        "user:name": "Ada",
        "user:seen": True,
        "app:model": "m1",
    }


async def test_an_imported_session_reads_exactly_as_the_exported_one(client):
    session = await conversation(client)
    body = await export(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    imported = await import_(client, body)
    assert imported.status_code == 201, imported.text
    assert imported.headers["etag"] == f'"{session["version"]}"'
    assert imported.json() == {**session, "events": []}
    assert await read(client, "talk") == session
    tool_calls = (await client.get(f"{session_url('talk')}/toolCalls")).json()["toolCalls"]
    assert [(call["id"], call["status"]) for call in tool_calls] == [("c1", "answered")]
    found = await client.get(f"/apps/{APP}/search", params={"q": "sunshine"})
    assert [hit["seq"] for hit in found.json()["hits"]] == [1]
    assert await export(client, "talk") == body  # and it exports as it was


async def test_usage_is_the_sum_of_the_imported_events(client):
    await conversation(client)
    header, *events = lines(await export(client, "talk"))
    assert header["usage"] == {
        "promptTokenCount": 7,
        "candidatesTokenCount": 3,
        "totalTokenCount": 10,
    }
    assert (await client.delete(session_url("talk"))).status_code == 204
    unannounced = {key: value for key, value in header.items() if key != "usage"}
    assert (await import_(client, ndjson([unannounced, *events]))).status_code == 201
    assert (await read(client, "talk"))["usage"] == header["usage"]
    wrong = {**header, "usage": {**header["usage"], "totalTokenCount": 11}}
    again = await import_(client, ndjson([wrong, *events]))  # the same session, but for usage
    assert_problem(again, 422, "validation_error")
    trimmed = await client.post(f"{session_url('talk')}:trim", json={"keepLast": 0})
    assert trimmed.status_code == 200
    assert (await read(client, "talk"))["usage"] == dict.fromkeys(header["usage"], 0)


async def test_the_same_export_again_is_200_and_writes_nothing(client):
    await conversation(client)
    body = await export(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    assert (await import_(client, body)).status_code == 201
    again = await import_(client, body)
    assert again.status_code == 200, again.text
    assert (await read(client, "talk"))["version"] == 3
    assert await export(client, "talk") == body


async def test_different_content_under_a_taken_id_is_409_and_changes_nothing(client):
    await conversation(client)
    body = await export(client, "talk")
    header, *events = lines(body)
    events[0]["content"]["parts"][0]["text"] = "changed"
    for changed in (
        ndjson([header, *events]),
        ndjson([{**header, "labels": {"team": "red"}}, *lines(body)[1:]]),
        ndjson([{**header, "state": {**header["state"], "topic": "rain"}}, *lines(body)[1:]]),
    ):
        assert_problem(await import_(client, changed), 409, "session_already_exists")
    assert await export(client, "talk") == body


async def test_the_path_decides_the_user_and_shared_keys_join_that_users_state(client):
    session = await conversation(client)
    body = await export(client, "talk")
    moved = await import_(client, body, user="bob")
    assert moved.status_code == 201, moved.text
    copy = await read(client, "talk", user="bob")
    assert copy["userId"] == "bob"
    assert copy["events"] == session["events"]
    assert copy["state"] == session["state"]  # bob's user state now holds the user: keys
    bobs = (await client.get(f"/apps/{APP}/users/bob/state")).json()["state"]
    assert bobs == {"name": "Ada", "seen": True}


async def test_a_fork_keeps_its_lineage_and_earlier_states(client):
    await conversation(client)
    forked = await client.post(f"{session_url('talk')}:fork", json={"sessionId": "f", "atSeq": 2})
    assert forked.status_code == 201, forked.text
    trimmed = await client.post(f"{session_url('talk')}:trim", json={"keepLast": 2})
    assert trimmed.status_code == 200, trimmed.text
    for session_id in ("f", "talk"):
        before = await read(client, session_id)
        at_base = await client.get(
            session_url(session_id), params={"untilSeq": before["events"][0]["seq"]}
        )
        body = await export(client, session_id)
        assert (await client.delete(session_url(session_id))).status_code == 204
        assert (await import_(client, body)).status_code == 201
        assert await read(client, session_id) == before
        again = await client.get(
            session_url(session_id), params={"untilSeq": before["events"][0]["seq"]}
        )
        assert again.json() == at_base.json()
    assert (await read(client, "f"))["parent"] == {
        "sessionId": "talk",
        "seq": 2,
        "functionCallId": None,
    }


async def test_concurrent_imports_of_one_export_store_it_once(client):
    await conversation(client)
    body = await export(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    answers = await asyncio.gather(*(import_(client, body) for _ in range(6)))
    assert sorted(answer.status_code for answer in answers) == [200] * 5 + [201]
    assert len((await read(client, "talk"))["events"]) == 3


async def test_a_bad_file_is_refused_whole_with_the_line_it_failed_at(client):
    await conversation(client)
    header, *events = lines(await export(client, "talk"))
    assert (await client.delete(session_url("talk"))).status_code == 204
    bad_files = {
        "no header": b"",
        "not json": b"{nope\n",
        "not a header": ndjson(events),
        "unknown field": ndjson([{**header, "extra": 1}, *events]),
        "a root with a parent": ndjson(
            [{**header, "parent": {"sessionId": "x", "seq": 1, "functionCallId": None}}, *events]
        ),
        "fewer events than announced": ndjson([header, *events[:2]]),
        "more events than announced": ndjson([{**header, "eventCount": 2}, *events]),
        "seqs out of order": ndjson([header, events[1], events[0], events[2]]),
        "a seq past the version": ndjson([header, *events[:2], {**events[2], "seq": 9}]),
        "an event without its seq": ndjson(
            [header, *events[:2], {k: v for k, v in events[2].items() if k != "seq"}]
        ),
        "an event id twice": ndjson([header, *events[:2], {**events[2], "id": events[0]["id"]}]),
        "expired": ndjson([{**header, "expireTime": 1_000_000.0}, *events]),
        "a negative parent seq": ndjson(
            [
                {
                    **header,
                    "kind": "fork",
                    "parent": {"sessionId": "x", "seq": -5, "functionCallId": None},
                },
                *events,
            ]
        ),
        "negative usage": ndjson(
            [{**header, "usage": {**header["usage"], "promptTokenCount": -1_000_000}}, *events]
        ),
        "usage that is not the events' sum": ndjson(
            [{**header, "usage": {**header["usage"], "promptTokenCount": 8}}, *events]
        ),
        "a session id `..`": ndjson([{**header, "id": ".."}, *events]),
        "an event id `.`": ndjson([header, *events[:2], {**events[2], "id": "."}]),
        "a parent id `..`": ndjson(
            [
                {
                    **header,
                    "kind": "fork",
                    "parent": {"sessionId": "..", "seq": 1, "functionCallId": None},
                },
                *events,
            ]
        ),
        "a duplicate key": lines_text(header, events).replace(
            b'"author"', b'"author":1,"author"', 1
        ),
    }
    for name, body in bad_files.items():
        response = await import_(client, body)
        assert response.status_code == 422, (name, response.text)
        assert response.json()["code"] == "validation_error", name
    assert (await client.get(session_url("talk"))).status_code == 404  # nothing half-written
    assert (await client.get(f"/apps/{APP}/users/{USER}/state")).json()["state"] == {
        "name": "Ada",
        "seen": True,
    }


async def test_what_a_create_refuses_an_import_refuses_too(client):
    await conversation(client)
    header, *events = lines(await export(client, "talk"))
    too_big = {**header, "id": "big", "state": {"blob": "x" * (5 * 1024 * 1024)}}
    assert_problem(await import_(client, ndjson([too_big, *events])), 413, "payload_too_large")
    child = {"sessionId": "talk", "seq": 2, "functionCallId": "c9"}
    first = {**header, "id": "child-1", "kind": "child", "parent": child}
    assert (await import_(client, ndjson([first, *events]))).status_code == 201
    second = {**first, "id": "child-2"}  # a second child for the same call
    assert_problem(await import_(client, ndjson([second, *events])), 409, "conflict")
    assert (await client.get(session_url("big"))).status_code == 404


def lines_text(header: dict[str, Any], events: list[dict[str, Any]]) -> bytes:
    return ndjson([header, *events])


async def test_an_import_must_say_it_is_ndjson(client):
    """NDJSON, or one JSON document (`test_export_json.py`): NDJSON sent as JSON is not JSON."""
    await conversation(client)
    body = await export(client, "talk")
    response = await client.post(
        f"{SESSIONS}:import", content=body, headers={"Content-Type": "application/json"}
    )
    refused = assert_problem(response, 422, "validation_error")
    assert "Content-Type: application/x-ndjson" in refused["detail"]
    response = await client.post(
        f"{SESSIONS}:import", content=body, headers={"Content-Type": "text/plain"}
    )
    assert_problem(response, 415, "unsupported_media_type")


async def test_exporting_an_absent_session_is_a_404(client):
    assert_problem(await client.get(f"{session_url('nope')}:export"), 404, "session_not_found")


async def test_the_commands_move_every_session_and_shared_state_to_another_database(
    client, database_url, new_database
):
    await conversation(client)
    await conversation(client, "other")
    await create_session(client, user="bob", sessionId="b", state={"app:flag": 1, "user:x": 2})
    exported = sessionary(database_url, "export", "--app", APP)
    assert exported.returncode == 0, exported.stderr
    assert b"exported 3 sessions, 6 events, 3 app or user states and 0 memories" in exported.stderr
    kinds = [json.loads(line)["format"] for line in exported.stdout.splitlines()[:3]]
    assert kinds == ["sessionary.appState.v1", *["sessionary.userState.v1"] * 2]

    target = await asyncio.to_thread(new_database)  # it runs a loop of its own
    assert sessionary(target, "migrate").returncode == 0
    first = sessionary(target, "import", stdin=exported.stdout)
    assert first.returncode == 0, first.stderr
    assert b"imported 3 sessions (6 events), 0 already there" in first.stderr
    again = sessionary(target, "import", stdin=exported.stdout)
    assert b"imported 0 sessions (0 events), 3 already there" in again.stderr
    assert sessionary(target, "export").stdout == exported.stdout

    header, *events = lines(await export(client, "other"))
    changed = ndjson([{**header, "displayName": "Renamed"}, *events])
    refused = sessionary(target, "import", stdin=changed + exported.stdout)
    assert refused.returncode == 1
    assert b"1 refused" in refused.stderr
    assert f"session {APP}/{USER}/other: ".encode() in refused.stderr
    assert b"3 already there" in refused.stderr  # the rest went on


def export_to_a_closed_pipe(database_url: str) -> tuple[int, bytes]:
    """`sessionary export`'s exit status and stderr, its reader gone before the first line."""
    exporting = subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), "export"],
        env={**os.environ, "DATABASE_URL": database_url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert exporting.stdout is not None and exporting.stderr is not None
    exporting.stdout.close()
    with exporting.stderr:
        said = exporting.stderr.read()
    return exporting.wait(timeout=120), said


async def test_an_export_whose_reader_left_ends_quietly(client, database_url):
    """`sessionary export | head`: once the reader is gone, no error is said; the status is
    that of a Unix tool ended by SIGPIPE."""
    await conversation(client)
    ended = await asyncio.to_thread(export_to_a_closed_pipe, database_url)
    assert ended == (128 + signal.SIGPIPE, b"")


def test_a_refused_line_is_named_once(database_url):
    refused = sessionary(database_url, "import", stdin=b"{}\nnot json\n")
    assert refused.returncode == 1
    lines = refused.stderr.decode().splitlines()
    assert lines[1:] == [
        "  Line 1 is not a header: its `format` must be one of sessionary.session.v1, "
        "sessionary.appState.v1, sessionary.userState.v1, sessionary.userArtifacts.v1, "
        "sessionary.memory.v1.",
        "  Line 2 is not JSON: Expecting value: line 1 column 1 (char 0)",
    ]
