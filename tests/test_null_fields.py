"""Every field the spec says is nullable takes null: generated SDKs send null for what the user
left unset (openapi-generator's `from_dict` sends every nullable field so). On a create null is
what leaving the field out is; on a PATCH it clears (as it always did for `displayName`,
`ttl` and `expireTime`), `labels` included. docs/api.md (## Nulls) says so field by field."""

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.helpers import SESSIONS, append, assert_problem, create_session, session_url

SPEC = json.loads((Path(__file__).parents[1] / "openapi" / "openapi.json").read_text())
NULL = {"type": "null"}
SESSION = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"

# One call per operation whose JSON body has nullable fields: the body with nothing but what
# the call needs; the test adds every nullable field as null. (method, path, body, status)
USER_MEMORIES = SESSIONS.removesuffix("/sessions") + "/memories"
APP_MEMORIES = SESSIONS.split("/users/")[0] + "/memories"
CALLS: dict[str, tuple[str, str, dict[str, Any], int]] = {
    "create_session": ("POST", SESSIONS, {}, 201),
    "update_session_state": ("PATCH", session_url("base"), {}, 200),
    "append_event": ("POST", session_url("base") + "/events", {"author": "user"}, 201),
    "queue_event": ("POST", session_url("base") + "/pending", {"author": "user"}, 202),
    "fork_session": ("POST", session_url("base") + ":fork", {}, 201),
    "create_child_session": ("POST", session_url("base") + "/children", {}, 201),
    "compact_session": (
        "POST",
        session_url("base") + ":compact",
        {"strategy": "truncate"},
        201,
    ),
    "heal_session": ("POST", session_url("base") + ":heal", {}, 200),
    # A Part's other kinds null too, as a generated SDK sends a `Part` it was given one of.
    "save_artifact": (
        "POST",
        session_url("base") + "/artifacts",
        {"filename": "a", "artifact": {"text": "t", "inlineData": None, "fileData": None}},
        201,
    ),
    "save_user_artifact": (
        "POST",
        SESSIONS.removesuffix("/sessions") + "/artifacts",
        {"filename": "user:a", "artifact": {"text": "t", "inlineData": None, "fileData": None}},
        201,
    ),
    # Memories: `null` leaves a memory's text as it is, and clears the rest.
    "create_memory": ("POST", USER_MEMORIES, {"id": "m1", "text": "t"}, 201),
    "create_app_memory": ("POST", APP_MEMORIES, {"id": "m1", "text": "t"}, 201),
    "update_memory": ("PATCH", USER_MEMORIES + "/m1", {}, 200),
    "update_app_memory": ("PATCH", APP_MEMORIES + "/m1", {}, 200),
    "recall_memories": ("POST", USER_MEMORIES + ":recall", {"query": "t"}, 200),
    "recall_app_memories": ("POST", APP_MEMORIES + ":recall", {"query": "t"}, 200),
    "remember_session": ("POST", session_url("base") + ":remember", {}, 200),
}


def nullable_fields(operation: dict[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None or "$ref" not in content["schema"]:
        return []
    schema = SPEC["components"]["schemas"][content["schema"]["$ref"].rpartition("/")[2]]
    return [
        name
        for name, field in schema.get("properties", {}).items()
        if NULL in field.get("anyOf", [])
    ]


def operations_with_nullable_fields() -> dict[str, list[str]]:
    return {
        operation["operationId"]: fields
        for operations in SPEC["paths"].values()
        for operation in operations.values()
        if (fields := nullable_fields(operation))
    }


async def test_every_nullable_field_takes_null_all_at_once(client: httpx.AsyncClient):
    """As a generated SDK sends a body built from a dict: every nullable field it was not
    given, null."""
    nullable = operations_with_nullable_fields()
    assert set(nullable) == set(CALLS)
    await create_session(client, sessionId="base", labels={"team": "blue"}, ttl=3600)
    for operation, fields in nullable.items():
        method, path, body, status = CALLS[operation]
        if operation == "compact_session":  # something to compact
            for _ in range(2):
                assert (await append(client, "base", {"author": "user"})).status_code == 201
        sent = {**body, **{field: None for field in fields if field not in body}}
        response = await client.request(method, path, json=sent)
        assert response.status_code == status, (operation, sent, response.text)


async def test_a_create_takes_null_as_left_out(client: httpx.AsyncClient):
    created = await create_session(
        client,
        sessionId=None,
        state=None,
        events=None,
        displayName=None,
        labels=None,
        ttl=None,
        expireTime=None,
    )
    assert created["id"]
    assert (created["state"], created["events"]) == ({}, [])
    assert (created["displayName"], created["labels"], created["expireTime"]) == (None, {}, None)


async def test_null_beside_a_number_gives_way_to_it(client: httpx.AsyncClient):
    """`ttl` and `expireTime` name one moment: a number in one and null in the other is that
    number, on a create and on a PATCH; numbers in both are still refused."""
    before = time.time()
    created = await create_session(client, sessionId="n1", ttl=600, expireTime=None)
    assert before + 600 <= created["expireTime"] <= time.time() + 600
    when = round(time.time()) + 7200
    patched = await client.patch(session_url("n1"), json={"ttl": None, "expireTime": when})
    assert patched.status_code == 200, patched.text
    assert patched.json()["expireTime"] == when
    both = {"ttl": 60, "expireTime": when}
    assert_problem(await client.patch(session_url("n1"), json=both), 422, "validation_error")
    refused = await client.post(SESSIONS, json={"sessionId": "n2", **both})
    assert_problem(refused, 422, "validation_error")


async def test_null_clears_on_an_update(client: httpx.AsyncClient):
    """`labels: null` clears the labels as `{}` does; `ttl` and `expireTime` both null make the
    session never expire; `displayName: null` clears the name; `stateDelta: null` is no
    delta (no event)."""
    await create_session(
        client, sessionId="n1", displayName="Chat", labels={"team": "blue"}, ttl=600
    )
    response = await client.patch(
        session_url("n1"),
        json={
            "stateDelta": None,
            "displayName": None,
            "labels": None,
            "ttl": None,
            "expireTime": None,
        },
    )
    assert response.status_code == 200, response.text
    session = response.json()
    assert (session["displayName"], session["labels"], session["expireTime"]) == (None, {}, None)
    assert session["events"] == []
    listed = await client.get(SESSIONS, params={"label": "team:blue"})
    assert listed.json()["sessions"] == []


async def test_an_update_with_labels_alone_null_changes_nothing_else(client: httpx.AsyncClient):
    await create_session(client, sessionId="n1", displayName="Chat", labels={"a": "1"}, ttl=600)
    before = (await client.get(session_url("n1"))).json()
    response = await client.patch(session_url("n1"), json={"labels": None})
    assert response.status_code == 200, response.text
    after = response.json()
    assert after["labels"] == {}
    assert (after["displayName"], after["expireTime"]) == (
        before["displayName"],
        before["expireTime"],
    )
