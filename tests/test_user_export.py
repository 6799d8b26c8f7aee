"""A user's data out and back in: everything stored of one user as one NDJSON stream
(`…/users/{user}:export`), which `…/users/{user}:import` loads into an empty database exactly:
every read there, at every seq, answers what it answers here. All or nothing; the same export
again creates nothing."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app import db
from app.config import Settings
from tests.fixtures import client_of, sessionary
from tests.helpers import APP, USER, append, assert_problem, create_session, session_url
from tests.test_memories import embedded

NDJSON = {"content-type": "application/x-ndjson"}
USER_PATH = f"/apps/{APP}/users/{USER}"
M = f"{USER_PATH}/memories"


def said(text: str, author: str = "user", **fields: Any) -> dict[str, Any]:
    return {"author": author, "content": {"role": author, "parts": [{"text": text}]}, **fields}


async def ok(response: httpx.Response, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def a_user_with_everything(client: httpx.AsyncClient) -> None:
    """Sessions (a fork, a closed one, an event removed), state of every scope, a session's
    and the user's artifacts with versions sharing bytes, memories revised and rolled back,
    remembered events, a client's vector; and another user's and the app's own data, which
    the user's export leaves out."""
    await create_session(
        client, sessionId="talk", state={"topic": "food", "user:name": "Ada", "app:model": "m1"}
    )
    for event in (
        said("I'm vegetarian and I live in Lisbon.", actions={"stateDelta": {"step": 1}}),
        said("Noted.", author="model", actions={"stateDelta": {"user:diet": "veg", "step": 2}}),
        said("My sister is called Maria."),
        said("Oops, ignore that.", actions={"stateDelta": {"step": 3}}),
    ):
        assert (await append(client, "talk", event)).status_code == 201
    await ok(await client.post(f"{session_url('talk')}:fork", json={"sessionId": "branch"}))
    assert (await append(client, "branch", said("On the branch."))).status_code == 201
    await create_session(client, sessionId="done")
    assert (await append(client, "done", said("Bye."))).status_code == 201
    await ok(await client.post(f"{session_url('done')}:close", json={"outcome": "completed"}), 200)
    for name, data in (("notes.txt", b"first"), ("notes.txt", b"second"), ("notes.txt", b"first")):
        await ok(await client.post(f"{session_url('talk')}/artifacts/{name}", content=data))
    for data in (b"\x89PNG one", b"\x89PNG two"):
        await ok(
            await client.post(
                f"{USER_PATH}/artifacts/user:avatar.png",
                content=data,
                headers={"content-type": "image/png"},
            )
        )
    diet = await ok(await client.post(M, json={"id": "diet", "text": "Eats no meat."}))
    await ok(await client.patch(f"{M}/diet", json={"text": "Eats fish.", "topics": ["food"]}), 200)
    await ok(await client.post(f"{M}/diet:rollback", json={"revision": diet["revision"]}), 200)
    await ok(
        await client.post(
            M,
            json={
                "text": "Prefers window seats.",
                "metadata": {"source": "booking"},
                "embedding": {"model": "mine", "vector": [0.25, -1.5, 3.0]},
                "source": {"sessionId": "talk", "eventIds": []},
                "ttl": 3600,
            },
        )
    )
    await ok(await client.post(f"{session_url('talk')}:remember"), 200)
    await create_session(client, user="bob", sessionId="bobs", state={"user:name": "Bob"})
    await ok(await client.post(f"/apps/{APP}/users/bob/memories", json={"text": "Bob's fact"}))
    await ok(await client.post(f"/apps/{APP}/users/bob/artifacts/user:x", content=b"bob"))
    await ok(await client.post(f"/apps/{APP}/memories", json={"text": "Closed on Sundays."}))
    await embedded(client)


async def export_user(client: httpx.AsyncClient, user: str = USER) -> bytes:
    response = await client.get(f"/apps/{APP}/users/{user}:export")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return response.content


async def import_user(client: httpx.AsyncClient, body: bytes, user: str = USER) -> httpx.Response:
    return await client.post(f"/apps/{APP}/users/{user}:import", content=body, headers=NDJSON)


def records(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines()]


def ndjson(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


async def reads(client: httpx.AsyncClient) -> dict[str, Any]:
    """Every read of the user: sessions at every seq, their events, artifacts (every version
    and its bytes), memories with their revisions, and a recall."""
    seen: dict[str, Any] = {}

    async def get(url: str, **params: Any) -> None:
        response = await client.get(url, params=params)
        seen[f"{url} {params}"] = (response.status_code, response.content)

    await get(f"{USER_PATH}/sessions")
    for session in (await client.get(f"{USER_PATH}/sessions")).json()["sessions"]:
        url = session_url(session["id"])
        for seq in range(session["version"] + 1):
            await get(url, untilSeq=seq)
        await get(url)
        await get(f"{url}/events")
        await get(f"{url}/artifacts")
    for base in [session_url("talk"), USER_PATH]:
        for newest in (await client.get(f"{base}/artifacts")).json()["artifacts"]:
            name = newest["name"]
            await get(f"{base}/artifacts/{name}/versions")
            for version in range(newest["version"] + 1):
                await get(f"{base}/artifacts/{name}/versions/{version}")
                await get(f"{base}/artifacts/{name}", version=version)
    await get(M)
    for memory in (await client.get(M)).json()["memories"]:
        await get(f"{M}/{memory['id']}")
        await get(f"{M}/{memory['id']}/revisions")
    for query in ("What do I eat?", "Where do I sit on a plane?", "sister"):
        response = await client.post(f"{M}:recall", json={"query": query, "includeApp": False})
        seen[f"recall {query}"] = (response.status_code, response.content)
    return seen


@pytest.fixture
async def target(new_database) -> AsyncIterator[httpx.AsyncClient]:
    """A server of its own, on an empty database."""
    url = await asyncio.to_thread(new_database)
    await asyncio.to_thread(db.upgrade, url)
    async with client_of(Settings(database_url=url, auth=False, sweep_interval=86_400)) as other:
        yield other


async def test_an_imported_user_reads_the_same_at_every_seq(client, target):
    await a_user_with_everything(client)
    exported = await export_user(client)
    kinds = [line.get("format", "artifact line") for line in records(exported)]
    assert kinds[0] == "sessionary.userState.v1"
    assert kinds.count("sessionary.session.v1") == 3
    assert kinds.count("sessionary.userArtifacts.v1") == 1
    assert kinds.count("sessionary.memory.v1") == 5  # 2 of their own, 3 remembered events
    assert b"Bob" not in exported and b"Sundays" not in exported  # not the user's
    assert b"app:model" in exported  # as the session's header shows its state
    assert not any(line.get("format") == "sessionary.appState.v1" for line in records(exported))

    imported = await ok(await import_user(target, exported), 200)
    assert imported == {
        "created": {"sessions": 3, "events": 10, "memories": 5, "artifactVersions": 2},
        "unchanged": {"sessions": 0, "events": 0, "memories": 0, "artifactVersions": 0},
        "userStateKeys": 2,
    }
    assert await reads(target) == await reads(client)
    assert await export_user(target) == exported
    status = (await target.get("/embeddings")).json()
    assert status["pending"] == 0  # the vectors came along: nothing to embed again

    again = await ok(await import_user(target, exported), 200)
    assert again["created"] == {"sessions": 0, "events": 0, "memories": 0, "artifactVersions": 0}
    assert again["unchanged"] == imported["created"]


async def test_an_import_is_all_or_nothing(client, target):
    await a_user_with_everything(client)
    exported = records(await export_user(client))
    assert (await import_user(target, ndjson(exported))).status_code == 200
    memory = next(line for line in exported if line.get("id") == "diet")
    revisions = [*memory["revisions"][:-1], {**memory["revisions"][-1], "metadata": {"x": 1}}]
    changed = {**memory, "metadata": {"x": 1}, "revisions": revisions}
    await create_session(client, sessionId="late")
    late = records((await client.get(f"{session_url('late')}:export")).content)
    refused = await import_user(target, ndjson([*late, changed]))
    assert_problem(refused, 409, "memory_already_exists")
    assert (await target.get(session_url("late"))).status_code == 404  # nothing of it stayed

    the_app_s = {"format": "sessionary.appState.v1", "appName": APP, "state": {"k": 1}}
    assert_problem(await import_user(target, ndjson([the_app_s])), 422, "validation_error")
    event_memory = next(line for line in exported if line.get("kind") == "event")
    before_its_session = await import_user(target, ndjson([event_memory]), user="carol")
    problem = assert_problem(before_its_session, 422, "validation_error")
    assert "which is not stored" in problem["detail"]
    sent_as_json = await target.post(f"{USER_PATH}:import", json=exported[0])
    assert_problem(sent_as_json, 415, "unsupported_media_type")
    assert (await target.get(f"/apps/{APP}/users/carol/sessions")).json()["sessions"] == []


async def test_the_path_decides_whose_data_it_becomes(client, target):
    await a_user_with_everything(client)
    exported = await export_user(client)
    assert (await import_user(target, exported, user="ada2")).status_code == 200
    moved = await export_user(target, "ada2")
    assert moved.count(b'"userId":"ada2"') + moved.count(b'"userId": "ada2"') > 0
    assert b'"userId":"' + USER.encode() + b'"' not in moved


async def test_a_user_with_nothing_exports_nothing(client):
    assert await export_user(client, "nobody") == b""
    audit = (await client.get("/audit", params={"userId": "nobody", "app": APP})).json()
    assert [record["action"] for record in audit["records"]] == ["user.export"]


async def test_the_commands_move_a_user_to_another_database(client, database_url, new_database):
    await a_user_with_everything(client)
    exported = sessionary(database_url, "export-user", "--app", APP, "--user", USER)
    assert exported.returncode == 0, exported.stderr
    assert b"exported 3 sessions, 10 events, 1 app or user states and 5 memories" in (
        exported.stderr
    )
    assert exported.stdout == await export_user(client)

    target = await asyncio.to_thread(new_database)  # it runs a loop of its own
    assert sessionary(target, "migrate").returncode == 0
    first = sessionary(target, "import", stdin=exported.stdout)
    assert first.returncode == 0, first.stderr
    assert b"imported 3 sessions (10 events), 0 already there" in first.stderr
    assert b"5 memories, 2 user artifact versions; 0 refused" in first.stderr
    moved = sessionary(target, "export-user", "--app", APP, "--user", USER)
    assert moved.stdout == exported.stdout


async def test_an_import_past_its_limit_is_a_413_and_leaves_nothing(client, database_url):
    await a_user_with_everything(client)
    exported = await export_user(client)
    settings = Settings(
        database_url=database_url,
        auth=False,
        sweep_interval=86_400,
        max_body_bytes=1024,
        max_import_bytes=len(exported) - 1,
    )
    async with client_of(settings) as limited:
        assert len(exported) > settings.max_body_bytes  # its own limit, not the body limit's

        async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            for start in range(0, len(exported), 1000):
                yield exported[start : start + 1000]

        refused = await limited.post(
            f"/apps/{APP}/users/dave:import", content=streamed(), headers=NDJSON
        )
        assert_problem(refused, 413, "payload_too_large")
        assert (await limited.get(f"/apps/{APP}/users/dave/sessions")).json()["sessions"] == []
        assert (await limited.get(f"/apps/{APP}/users/dave/memories")).json()["memories"] == []
        whole = await limited.post(
            f"/apps/{APP}/users/dave:import", content=exported + b"\n", headers=NDJSON
        )
        assert_problem(whole, 413, "payload_too_large")  # a Content-Length past it: at once


async def test_a_memory_is_the_same_whatever_its_vectors(client, target):
    """Each side's worker embeds in its own time: an export made before the source embedded
    a memory and one made after are the same memory to an import."""
    await ok(await client.post(M, json={"id": "tea", "text": "Takes her tea black."}))
    exported = records(await export_user(client))
    assert (await import_user(target, ndjson(exported))).status_code == 200
    (memory,) = exported
    embedded_elsewhere = {
        **memory,
        "embeddedModel": "elsewhere",
        "vectors": [{"model": "elsewhere", "vector": [0.5, 0.5]}],
    }
    again = await ok(await import_user(target, ndjson([embedded_elsewhere])), 200)
    assert again["unchanged"]["memories"] == 1
