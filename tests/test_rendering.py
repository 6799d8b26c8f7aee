"""Every body the API renders matches the schema the committed spec declares for its answer,
and every ETag it sends is declared there.

The bodies are built by hand (`app.api.render`, with events spliced in as PostgreSQL rendered
them), not by FastAPI from the response models, so nothing else checks them against the spec.
The test fails too when the spec gains a JSON answer that no request here produces.
"""

import asyncio
import json
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import jsonschema
import pytest

from app.config import Settings
from tests.fixtures import client_of

SPEC = json.loads((Path(__file__).parent.parent / "openapi" / "openapi.json").read_text())
APP, USER, SESSION = "render-app", "ada", "s1"
PATHS = {
    "app_name": APP,
    "user_id": USER,
    "session_id": SESSION,
    "event_id": "e1",
    "name": "user:notes.txt",
    "version": "0",
    "memory_id": "m1",
}
S_ARTIFACTS = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts"
U_ARTIFACTS = "/apps/{app_name}/users/{user_id}/artifacts"
SAVED = {"json": {"filename": "user:notes.txt", "artifact": {"text": "hi"}, "customMetadata": {}}}

EVENT = {
    "id": "e1",
    "author": "model",
    "invocationId": "inv-1",
    "content": {"role": "model", "parts": [{"text": "Sunny."}, {"functionCall": {"name": "f"}}]},
    "actions": {"stateDelta": {"k": 1, "user:u": [1, 2], "app:a": {"x": None}, "temp:t": 0}},
    "usageMetadata": {"totalTokenCount": 12},
}

# A session's export: its header, then its one event.
EXPORT = {
    "content": "\n".join(
        json.dumps(line)
        for line in (
            {
                "format": "sessionary.session.v1",
                **{"id": "imported", "appName": APP, "userId": USER, "state": {"k": 1}},
                **{"lastUpdateTime": 1700000000.5, "createTime": 1700000000.0, "version": 1},
                **{"kind": "root", "parent": None, "status": "open", "outcome": None},
                "usage": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
                **{"displayName": None, "labels": {}, "expireTime": None},
                **{"baseSeq": 0, "baseState": {"k": 1}, "eventCount": 1},
            },
            {"id": "i1", "author": "user", "timestamp": 1700000000.5, "seq": 1},
        )
    ),
    "headers": {"Content-Type": "application/x-ndjson"},
}

# (method, path template, request options, status expected): one call per JSON answer.
CALLS: list[tuple[str, str, dict[str, Any], int]] = [
    ("POST", "/apps/{app_name}/users/{user_id}/sessions", {"json": {"sessionId": SESSION}}, 201),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events", {"json": EVENT}, 201),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events", {"json": EVENT}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events",
        {"json": {"author": "model", "partial": True}},
        202,
    ),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events:batch",
        {"json": {"events": [{"id": "e2", "author": "user"}, {"author": "model"}]}},
        201,
    ),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events:batch",
        {"json": {"events": [{"id": "e2", "author": "user"}]}},
        200,
    ),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events:batch",
        {"json": {"events": [{"author": "model", "partial": True}]}},
        202,
    ),
    (
        "PATCH",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}",
        {"json": {"stateDelta": {"s": 1}}},
        200,
    ),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}", {}, 200),
    (
        "GET",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events",
        {"params": {"pageSize": 2}},
        200,
    ),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events:count", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:fork",
        {"json": {"sessionId": "f1", "atSeq": 1}},
        201,
    ),
    (
        "GET",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:export",
        {"headers": {"Accept": "application/json"}},
        200,
    ),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions:import", EXPORT, 201),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions:import", EXPORT, 200),
    ("POST", "/apps/{app_name}/users/{user_id}:import", EXPORT, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/children",
        {"json": {"sessionId": "c1", "inherit": "all", "state": {"user:v": 2}}},
        201,
    ),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/children", {}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/lineage", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:rewind",
        {"json": {"beforeInvocationId": "inv-1"}},
        201,
    ),
    (
        "PATCH",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/{event_id}",
        {"json": {"content": {"role": "model", "parts": [{"text": "[redacted]"}]}}},
        200,
    ),
    (
        "DELETE",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/{event_id}",
        {},
        200,
    ),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:compact",
        {"json": {"strategy": "summary", "summary": "Said hello.", "keepLast": 1}},
        201,
    ),
    (
        "GET",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/context",
        {"params": {"tokenBudget": 100}},
        200,
    ),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/toolCalls", {}, 200),
    ("GET", "/apps/{app_name}/usage", {"params": {"afterTimestamp": 0}}, 200),
    ("GET", "/apps/{app_name}/search", {"params": {"q": "hello"}}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/pending",
        {"json": {"author": "user", "content": {"parts": [{"text": "typed ahead"}]}}},
        202,
    ),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/pending", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/pending:promote",
        {"json": {"force": True}},
        201,
    ),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions/{session_id}/pending:promote", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:heal",
        {"json": {"timeoutSeconds": 0}},
        200,
    ),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:trim",
        {"json": {"keepLast": 2}},
        200,
    ),
    # Artifacts: a `user:` name, which both the session's paths and the user's reach.
    ("POST", S_ARTIFACTS, SAVED, 201),
    ("POST", U_ARTIFACTS, SAVED, 201),
    ("POST", S_ARTIFACTS + "/{name}", {"content": b"bytes"}, 201),
    ("POST", U_ARTIFACTS + "/{name}", {"content": b"bytes"}, 201),
    ("GET", S_ARTIFACTS, {}, 200),
    ("GET", U_ARTIFACTS, {}, 200),
    ("GET", S_ARTIFACTS + "/{name}/versions", {}, 200),
    ("GET", U_ARTIFACTS + "/{name}/versions", {}, 200),
    ("GET", S_ARTIFACTS + "/{name}/versions/{version}", {}, 200),
    ("GET", U_ARTIFACTS + "/{name}/versions/{version}", {}, 200),
    # Memories: the user's and the app's, each `m1`; events of the session added to memory.
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/memories",
        {"json": {"id": "m1", "text": "likes tea", "ttl": 3600}},
        201,
    ),
    ("POST", "/apps/{app_name}/memories", {"json": {"id": "m1", "text": "shop opens at 9"}}, 201),
    (
        "PATCH",
        "/apps/{app_name}/users/{user_id}/memories" + "/{memory_id}",
        {"json": {"topics": ["drinks"]}},
        200,
    ),
    ("PATCH", "/apps/{app_name}/memories" + "/{memory_id}", {"json": {"topics": ["hours"]}}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/memories" + "/{memory_id}:rollback",
        {"json": {"revision": 1}},
        200,
    ),
    ("POST", "/apps/{app_name}/memories" + "/{memory_id}:rollback", {"json": {"revision": 1}}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/memories" + "/{memory_id}", {}, 200),
    ("GET", "/apps/{app_name}/memories" + "/{memory_id}", {}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/memories", {}, 200),
    ("GET", "/apps/{app_name}/memories", {}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/memories" + "/{memory_id}/revisions", {}, 200),
    ("GET", "/apps/{app_name}/memories" + "/{memory_id}/revisions", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/memories" + ":recall",
        {"json": {"query": "tea"}},
        200,
    ),
    ("POST", "/apps/{app_name}/memories" + ":recall", {"json": {"query": "shop"}}, 200),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions/{session_id}:remember", {}, 200),
    ("GET", "/embeddings", {}, 200),
    ("GET", "/audit", {}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/sessions", {}, 200),
    ("GET", "/apps", {"params": {"pageSize": 1}}, 200),
    ("GET", "/apps/{app_name}/users", {}, 200),
    ("GET", "/apps/{app_name}/sessions", {"params": {"order": "desc"}}, 200),
    ("POST", "/apps/{app_name}/users/{user_id}/sessions/{session_id}:reset", {}, 200),
    (
        "POST",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}:close",
        {"json": {"outcome": "completed", "result": [1, "two"]}},
        200,
    ),
    ("PATCH", "/apps/{app_name}/state", {"json": {"stateDelta": {"theme": "dark"}}}, 200),
    ("GET", "/apps/{app_name}/state", {}, 200),
    ("PATCH", "/apps/{app_name}/users/{user_id}/state", {"json": {"stateDelta": {"n": 1}}}, 200),
    ("GET", "/apps/{app_name}/users/{user_id}/state", {}, 200),
    ("GET", "/auth/key", {}, 200),
    ("GET", "/healthz", {}, 200),
    ("GET", "/readyz", {}, 200),
]


def declared_json_answers() -> set[tuple[str, str, int]]:
    return {
        (method.upper(), path, int(status))
        for path, operations in SPEC["paths"].items()
        for method, operation in operations.items()
        for status, answer in operation["responses"].items()
        if status.startswith("2") and "application/json" in answer.get("content", {})
    }


def validator(method: str, path: str, status: int) -> jsonschema.Draft202012Validator:
    answer = SPEC["paths"][path][method.lower()]["responses"][str(status)]
    schema = {**answer["content"]["application/json"]["schema"], "components": SPEC["components"]}
    return jsonschema.Draft202012Validator(schema)


# Erasing the user the calls above need, and a whole app (another, which the calls do not
# need): in a test of their own. Each erased path, and the app its user is of.
ERASURES = {"/apps/{app_name}/users/{user_id}": APP, "/apps/{app_name}": "render-erased-app"}
ERASURE_ANSWERS = {
    answer
    for erased in ERASURES
    for answer in (
        ("DELETE", erased, 200),
        ("DELETE", erased, 202),
        ("GET", f"{erased}/erasure", 200),
    )
}


async def test_every_rendered_body_matches_the_schema_of_its_answer(client: httpx.AsyncClient):
    answers = {(method, path, status) for method, path, _, status in CALLS}
    assert answers | ERASURE_ANSWERS == declared_json_answers()
    for method, path, options, status in CALLS:
        response = await client.request(method, path.format(**PATHS), **options)
        assert response.status_code == status, (method, path, response.text)
        assert response.headers["content-type"] == "application/json"
        # The spec names the ETag exactly where the answer carries one.
        answer = SPEC["paths"][path][method.lower()]["responses"][str(status)]
        assert ("etag" in response.headers) == ("ETag" in answer.get("headers", {})), (
            method,
            path,
            status,
        )
        body = response.json()
        errors = [error.message for error in validator(method, path, status).iter_errors(body)]
        assert not errors, (method, path, status, errors)
    session = (await client.get(CALLS[0][1].format(**PATHS) + f"/{SESSION}")).json()
    assert (session["events"], session["status"]) == ([], "closed")  # reset, then closed


@pytest.mark.parametrize("erased", ERASURES)
async def test_an_erasures_answers_match_their_schemas(
    client: httpx.AsyncClient, settings: Settings, erased: str
):
    """Done within its wait (200), not done (202, with the erase's own settings), its status."""
    app = ERASURES[erased]
    base = erased.format(**{**PATHS, "app_name": app})
    sessions = f"/apps/{app}/users/{USER}/sessions"
    assert (await client.post(sessions, json={"events": [EVENT]})).status_code == 201
    async with client_of(settings.model_copy(update={"erase_wait": 0})) as hasty:
        answers = [
            ("DELETE", erased, await client.delete(base)),
            ("GET", f"{erased}/erasure", await client.get(f"{base}/erasure")),
        ]
        assert (await client.post(sessions, json={"events": [EVENT]})).is_success
        # The event's row held: the erase cannot be done before it answers.
        held = await asyncpg.connect(settings.database_url.unicode_string())
        try:
            async with held.transaction():
                await held.execute(
                    "SELECT FROM events WHERE app_name = $1 AND user_id = $2 FOR UPDATE",
                    app,
                    USER,
                )
                answers.append(("DELETE", erased, await hasty.delete(base)))
        finally:
            await held.close()
        for method, path, response in answers:
            body = response.json()
            errors = validator(method, path, response.status_code).iter_errors(body)
            assert not [error.message for error in errors], (method, path, body)
        assert [response.status_code for _, _, response in answers] == [200, 200, 202]
        for _ in range(1000):  # done before its server stops
            if (await client.get(f"{base}/erasure")).json()["status"] == "done":
                break
            await asyncio.sleep(0.01)


async def test_a_large_float_in_state_reads_back_as_jsonb_renders_it(client: httpx.AsyncClient):
    """JSONB keeps 8.8e142 as a numeric and renders it as a 143-digit integer, which the
    fast JSON writer cannot hold; the answer is still a 201 and a 200 with that number."""
    sessions = f"/apps/{APP}/users/big-numbers/sessions"
    created = await client.post(sessions, json={"state": {"n": 8.8e142}})
    assert created.status_code == 201, created.text
    read = await client.get(f"{sessions}/{created.json()['id']}")
    assert read.status_code == 200, read.text
    assert read.json()["state"]["n"] == 88 * 10**141


async def test_an_export_has_the_header_and_the_events_the_spec_describes(
    client: httpx.AsyncClient,
):
    sessions = f"/apps/{APP}/users/{USER}/sessions"
    assert (await client.post(sessions, json={"sessionId": "x", "events": [EVENT]})).is_success
    exported = await client.get(f"{sessions}/x:export")
    header, *events = [json.loads(line) for line in exported.text.splitlines()]
    components = {"components": SPEC["components"]}
    for line, schema in [(header, "SessionExport"), *((event, "Event") for event in events)]:
        validating = {"$ref": f"#/components/schemas/{schema}", **components}
        errors = [e.message for e in jsonschema.Draft202012Validator(validating).iter_errors(line)]
        assert not errors, (schema, errors)
    assert len(events) == header["eventCount"] == 1
