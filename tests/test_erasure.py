"""Erasing a user: afterwards no table of the schema (read from the catalog, so that a table
added later is covered) holds a row with the user's id or anything they wrote; the app's other
users are untouched; writes racing the erase land before it and are erased, or are refused;
a big erase runs as a job whose progress can be read; the audit log finds it by the user's id.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from app import db
from app.config import Settings
from tests.fixtures import client_of, keys_command, sessionary
from tests.helpers import APP, assert_problem

ERASED, KEPT = "erase-me-u1", "keep-me-u2"
# What the erased user wrote, in words, keys and bytes: found nowhere afterwards. The other
# user writes the same things with another word.
MARK, OTHER_MARK = "zanzibarquokka", "kilimanjarowombat"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def user_url(user: str) -> str:
    return f"/apps/{APP}/users/{user}"


class Erasing:
    def __init__(self, client: httpx.AsyncClient, url: str, admin: str, app_key: str) -> None:
        self.client, self.url, self.admin, self.app_key = client, url, admin, app_key

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", bearer(self.app_key))
        return await self.client.request(method, path, headers=headers, **kwargs)

    async def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        answer = await self.call(method, path, **kwargs)
        assert answer.status_code == status, answer.text
        return answer.json() if answer.content else None


async def _erasing(new_database: Any, **settings: Any) -> AsyncIterator[Erasing]:
    url = await asyncio.to_thread(new_database)
    await asyncio.to_thread(db.upgrade, url)
    admin = await asyncio.to_thread(keys_command, url, "create", "--admin")
    app_key = await asyncio.to_thread(keys_command, url, "create", "--app", APP)
    # No model: the worker would embed the users' memories while their rows are counted.
    options = {"auth_cache_seconds": 0, "sweep_interval": 86_400, "embeddings": "none", **settings}
    async with client_of(Settings(database_url=url, auth=True, **options)) as client:
        yield Erasing(client, url, admin, app_key)


@pytest.fixture
async def erasing(new_database):
    async for made in _erasing(new_database, erase_batch=7):
        yield made


async def fill(e: Erasing, user: str, events: int = 4, mark: str = MARK) -> None:
    """One of everything a user can have: sessions (a root with events, labels and a name, a
    fork, a child, a closed one), queued input, user state, memories (written, remembered, with
    a client's vector), artifacts of a session and of the user."""
    said = [
        {"author": "user", "content": {"parts": [{"text": f"{mark} number {n}"}]}}
        for n in range(events)
    ]
    sessions = f"{user_url(user)}/sessions"
    await e.ok(
        "POST",
        sessions,
        201,
        json={
            "sessionId": f"{mark}-root",
            "events": said,
            "state": {"user:diet": mark, "topic": mark},
            "labels": {"mark": mark},
            "displayName": mark,
        },
    )
    await e.ok("POST", f"{sessions}/{mark}-root:fork", 201, json={"sessionId": f"{mark}-fork"})
    await e.ok("POST", sessions, 201, json={"sessionId": f"{mark}-closed"})
    await e.ok(
        "POST", f"{sessions}/{mark}-closed:close", json={"outcome": "completed", "result": mark}
    )
    await e.ok("POST", f"{sessions}/{mark}-root/pending", 202, json=said[0])
    await e.ok("PATCH", f"{user_url(user)}/state", json={"stateDelta": {mark: mark}})
    await e.ok("POST", f"{sessions}/{mark}-root:remember")
    memory = {
        "id": f"{mark}-memory",
        "text": f"I like {mark}",
        "topics": [mark],
        "embedding": {"model": mark, "vector": [0.6, 0.8]},
    }
    await e.ok("POST", f"{user_url(user)}/memories", 201, json=memory)
    await e.ok("PATCH", f"{user_url(user)}/memories/{mark}-memory", json={"topics": ["t"]})
    blob = mark.encode() * 100
    artifacts = f"{sessions}/{mark}-root/artifacts/{mark}.bin"
    await e.ok("POST", artifacts, 201, content=blob, headers=bearer(e.app_key))
    await e.ok("POST", f"{user_url(user)}/artifacts/user:{mark}.bin", 201, content=blob)


async def scan(url: str, *needles: str) -> dict[str, int]:
    """Rows of every table of the schema (from the catalog) whose columns, as text, hold any
    of the needles (bytes as hex too): table → how many."""
    hexed = ["\\x" + needle.encode().hex() for needle in needles]
    found: dict[str, int] = {}
    connection = await asyncpg.connect(url)
    try:
        tables = await connection.fetch(
            """SELECT table_name, array_agg(column_name::text) AS columns
               FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name IN (SELECT table_name FROM information_schema.tables
                                  WHERE table_schema = current_schema()
                                  AND table_type = 'BASE TABLE')
               GROUP BY table_name"""
        )
        assert {"events", "memories", "artifact_chunks", "erasures"} <= {
            row["table_name"] for row in tables
        }
        for row in tables:
            text = " || '|' || ".join(f"coalesce(\"{c}\"::text, '')" for c in row["columns"])
            hits = await connection.fetchval(
                f'SELECT count(*) FROM "{row["table_name"]}" WHERE '
                + " OR ".join(f"strpos({text}, ${n + 1}) > 0" for n in range(len(needles) * 2)),
                *needles,
                *(h.lower() for h in hexed),
            )
            if hits:
                found[row["table_name"]] = hits
    finally:
        await connection.close()
    return found


async def counts_of(url: str, user: str) -> dict[str, int]:
    """The user's rows in each table that has a user column."""
    connection = await asyncpg.connect(url)
    try:
        tables = await connection.fetch(
            """SELECT table_name FROM information_schema.columns
               WHERE table_schema = current_schema() AND column_name = 'user_id'"""
        )
        return {
            row["table_name"]: await connection.fetchval(
                f'SELECT count(*) FROM "{row["table_name"]}" WHERE user_id = $1', user
            )
            for row in tables
        }
    finally:
        await connection.close()


async def test_an_erase_leaves_nothing_of_the_user_in_any_table(erasing):
    e = erasing
    user_key = await asyncio.to_thread(
        keys_command, e.url, "create", "--app", APP, "--user", ERASED
    )
    await fill(e, ERASED)
    await fill(e, KEPT, mark=OTHER_MARK)
    kept_before = await counts_of(e.url, KEPT)
    assert all(kept_before[table] for table in ("sessions", "events", "memories", "artifacts"))

    erased = await e.ok("DELETE", user_url(ERASED))
    assert erased["status"] == "done" and erased["userId"] == ERASED
    assert erased["finishTime"] >= erased["createTime"]
    removed = erased["removed"]
    assert removed["sessions"] == 3 and removed["events"] >= 4
    assert removed["pendingEvents"] == 1 and removed["userStates"] == 1
    assert removed["memories"] == 1 + 4 and removed["memoryVectors"] == 1
    assert removed["apiKeys"] == 1 and len(erased["deletedKeyIds"]) == 1
    assert user_key.startswith(f"sk_{erased['deletedKeyIds'][0]}_")
    assert removed["artifactVersions"] == 2 and removed["artifactChunks"] >= 1

    assert await scan(e.url, ERASED, MARK) == {}
    assert await counts_of(e.url, KEPT) == kept_before
    assert_problem(
        await e.call("GET", f"{user_url(ERASED)}/state", headers=bearer(user_key)),
        401,
        "unauthorized",
    )
    assert (await e.ok("GET", f"{user_url(ERASED)}/sessions"))["sessions"] == []
    assert await e.ok("GET", f"{user_url(ERASED)}/erasure") == erased


async def test_an_erase_is_idempotent_and_the_audit_log_finds_it_by_the_user_id(erasing):
    e = erasing
    await fill(e, ERASED)
    await e.ok("DELETE", f"{user_url(ERASED)}/sessions/{MARK}-fork", 204)
    first = await e.ok("DELETE", user_url(ERASED))
    again = await e.ok("DELETE", user_url(ERASED))
    assert again["id"] != first["id"] and again["status"] == "done"
    assert not any(again["removed"].values())
    assert await scan(e.url, ERASED, MARK) == {}
    found = await e.ok(
        "GET", "/audit", params={"app": APP, "userId": ERASED}, headers=bearer(e.admin)
    )
    actions = [record["action"] for record in found["records"]]
    assert actions == ["user.erase", "user.erase", "session.delete"]
    assert found["records"][1]["detail"]["erasure"] == first["id"]
    assert found["records"][1]["detail"]["removed"] == first["removed"]
    assert found["records"][1]["keyId"] == e.app_key.split("_")[1]
    assert_problem(await e.call("GET", f"{user_url(KEPT)}/erasure"), 404, "erasure_not_found")
    # After the erase the user may start afresh.
    await e.ok("POST", f"{user_url(ERASED)}/sessions", 201, json={"sessionId": "again"})


async def until_done(e: Erasing, user: str) -> dict[str, Any]:
    for _ in range(1200):
        status: dict[str, Any] = await e.ok("GET", f"{user_url(user)}/erasure")
        if status["status"] == "done":
            return status
        await asyncio.sleep(0.05)
    raise AssertionError("the erase did not finish within a minute")


async def test_writes_racing_an_erase_land_before_it_or_are_refused(slow_erasing):
    """8 writers append, make sessions and write state and memories while the user is erased:
    each write is answered 2xx (and erased) or refused; nothing of the user is left. The erase
    is held before its end until the writers stop, so that no write comes after it."""
    e = slow_erasing
    await fill(e, ERASED, events=600)
    sessions = f"{user_url(ERASED)}/sessions"
    stop = asyncio.Event()
    answers: list[int] = []

    async def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            event = {"author": "user", "content": {"parts": [{"text": f"{MARK} {n} {i}"}]}}
            for answer in (
                await e.call("POST", f"{sessions}/{MARK}-root/events", json=event),
                await e.call("POST", sessions, json={"sessionId": f"{MARK}-w{n}-{i}"}),
                await e.call(
                    "PATCH", f"{user_url(ERASED)}/state", json={"stateDelta": {f"k{n}": MARK}}
                ),
                await e.call("POST", f"{user_url(ERASED)}/memories", json={"text": MARK}),
            ):
                answers.append(answer.status_code)
                assert answer.status_code in (200, 201, 404, 409), answer.text

    writers = [asyncio.create_task(writer(n)) for n in range(8)]
    await asyncio.sleep(0.3)
    started = await e.ok("DELETE", user_url(ERASED), 202)
    held = await asyncpg.connect(e.url)
    try:
        await held.execute(
            "SELECT pg_advisory_lock(hashtextextended('erasure/' || $1, 0))", started["id"]
        )
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.gather(*writers)
        assert (await e.ok("GET", f"{user_url(ERASED)}/erasure"))["status"] == "running"
    finally:
        await held.close()
    assert (await e.ok("DELETE", user_url(ERASED), 202))["id"] == started["id"]
    erased = await until_done(e, ERASED)
    assert erased["removed"]["events"] >= 600
    assert {201, 404, 409} <= set(answers)
    assert not any((await counts_of(e.url, ERASED)).values())
    assert await scan(e.url, ERASED, MARK) == {}


@pytest.fixture
async def slow_erasing(new_database):
    async for made in _erasing(new_database, erase_batch=3, erase_wait=0):
        yield made


async def test_a_big_erase_runs_as_a_job_whose_progress_can_be_read(slow_erasing):
    e = slow_erasing
    await fill(e, ERASED, events=600)
    started = await e.call("DELETE", user_url(ERASED))
    assert started.status_code == 202, started.text
    assert started.headers["location"] == f"{user_url(ERASED)}/erasure"
    assert started.json()["status"] == "running" and started.json()["finishTime"] is None
    refused = await e.call("POST", f"{user_url(ERASED)}/sessions", json={"sessionId": "new"})
    assert_problem(refused, 409, "user_erasing")
    assert_problem(
        await e.call("POST", f"{user_url(ERASED)}/memories", json={"text": MARK}),
        409,
        "user_erasing",
    )
    again = await e.call("DELETE", user_url(ERASED))
    assert again.status_code == 202 and again.json()["id"] == started.json()["id"]
    seen = []
    while (status := await e.ok("GET", started.headers["location"]))["status"] == "running":
        seen.append(status["removed"]["events"])
        await asyncio.sleep(0.05)
    assert seen == sorted(seen) and status["removed"]["events"] >= 600
    assert any(0 < n < 600 for n in seen)  # seen part way: in batches
    assert status["finishTime"] is not None
    assert await scan(e.url, ERASED, MARK) == {}


async def test_a_users_key_erases_its_user_only_where_allowed(new_database):
    async for e in _erasing(new_database):
        user_key = await asyncio.to_thread(
            keys_command, e.url, "create", "--app", APP, "--user", ERASED
        )
        refused = await e.call("DELETE", user_url(ERASED), headers=bearer(user_key))
        assert_problem(refused, 403, "forbidden")
        read_only = await asyncio.to_thread(
            keys_command, e.url, "create", "--app", APP, "--read-only"
        )
        assert_problem(
            await e.call("DELETE", user_url(ERASED), headers=bearer(read_only)), 403, "forbidden"
        )
    async for e in _erasing(new_database, user_self_erase=True):
        user_key = await asyncio.to_thread(
            keys_command, e.url, "create", "--app", APP, "--user", ERASED
        )
        other = await e.call("DELETE", user_url(KEPT), headers=bearer(user_key))
        assert_problem(other, 403, "forbidden")
        own = await e.ok("DELETE", user_url(ERASED), headers=bearer(user_key))
        assert own["removed"]["apiKeys"] == 1


async def test_the_command_line_erases_a_user(erasing):
    e = erasing
    await fill(e, ERASED)
    await fill(e, KEPT, mark=OTHER_MARK)
    kept = await counts_of(e.url, KEPT)
    done = await asyncio.to_thread(sessionary, e.url, "erase-user", "--app", APP, "--user", ERASED)
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode()
    assert f"erased user '{ERASED}' of app '{APP}': " in said
    assert ", 8 events, " in said and ", 3 sessions" in said
    assert await scan(e.url, ERASED, MARK) == {}
    assert await counts_of(e.url, KEPT) == kept
    found = await e.ok(
        "GET", "/audit", params={"app": APP, "userId": ERASED}, headers=bearer(e.admin)
    )
    assert [(r["action"], r["keyId"]) for r in found["records"]] == [("user.erase", None)]
