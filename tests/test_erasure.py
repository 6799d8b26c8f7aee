"""Erasing a user, or a whole app: afterwards no table of the schema (read from the catalog,
so that a table added later is covered) holds a row with the user's id (the app's users' ids)
or anything they wrote; the app's other users (other apps) are untouched; writes racing the
erase land before it and are erased, or are refused; a big erase runs as a job whose progress
can be read; the audit log finds it by the user's id (by the app).
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


def user_url(user: str, app: str = APP) -> str:
    return f"/apps/{app}/users/{user}"


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


async def fill(e: Erasing, user: str, events: int = 4, mark: str = MARK, app: str = APP) -> None:
    """One of everything a user can have: sessions (a root with events, labels and a name, a
    fork, a child, a closed one), queued input, user state, memories (written, remembered, with
    a client's vector), artifacts of a session and of the user. Written with the app's key, or
    for another app with the admin key."""
    said = [
        {"author": "user", "content": {"parts": [{"text": f"{mark} number {n}"}]}}
        for n in range(events)
    ]
    key = bearer(e.app_key if app == APP else e.admin)

    async def ok(method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        return await e.ok(method, path, status, headers=key, **kwargs)

    sessions = f"{user_url(user, app)}/sessions"
    await ok(
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
    await ok("POST", f"{sessions}/{mark}-root:fork", 201, json={"sessionId": f"{mark}-fork"})
    await ok("POST", sessions, 201, json={"sessionId": f"{mark}-closed"})
    await ok(
        "POST", f"{sessions}/{mark}-closed:close", json={"outcome": "completed", "result": mark}
    )
    await ok("POST", f"{sessions}/{mark}-root/pending", 202, json=said[0])
    await ok("PATCH", f"{user_url(user, app)}/state", json={"stateDelta": {mark: mark}})
    await ok("POST", f"{sessions}/{mark}-root:remember")
    memory = {
        "id": f"{mark}-memory",
        "text": f"I like {mark}",
        "topics": [mark],
        "embedding": {"model": mark, "vector": [0.6, 0.8]},
    }
    await ok("POST", f"{user_url(user, app)}/memories", 201, json=memory)
    await ok("PATCH", f"{user_url(user, app)}/memories/{mark}-memory", json={"topics": ["t"]})
    blob = mark.encode() * 100
    artifacts = f"{sessions}/{mark}-root/artifacts/{mark}.bin"
    await ok("POST", artifacts, 201, content=blob)
    await ok("POST", f"{user_url(user, app)}/artifacts/user:{mark}.bin", 201, content=blob)


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


# Erasing an app: APP's two users and its own state and memory go; OTHER_APP, with a user of
# its own, is untouched.
TOO, TOO_MARK = "erase-me-too-u3", "patagoniatapir"
APP_MARK = "galapagosaxolotl"
OTHER_APP = "keep-me-app"


def app_url(app: str = APP) -> str:
    return f"/apps/{app}"


async def fill_app(e: Erasing, app: str = APP, mark: str = APP_MARK) -> None:
    """What an app has of its own: its state (written directly, and by a session's `app:`
    keys) and a memory of the app."""
    key = bearer(e.app_key if app == APP else e.admin)
    state = {"stateDelta": {mark: mark}}
    await e.ok("PATCH", f"{app_url(app)}/state", json=state, headers=key)
    created = {"sessionId": f"{mark}-app", "state": {f"app:{mark}-too": mark}}
    await e.ok("POST", f"{user_url(mark, app)}/sessions", 201, json=created, headers=key)
    memory = {"text": f"Everyone likes {mark}", "topics": [mark]}
    await e.ok("POST", f"{app_url(app)}/memories", 201, json=memory, headers=key)


async def rows_of_app(url: str, app: str) -> dict[str, int]:
    """The app's rows in each table that has an app column."""
    connection = await asyncpg.connect(url)
    try:
        tables = await connection.fetch(
            """SELECT table_name FROM information_schema.columns
               WHERE table_schema = current_schema() AND column_name = 'app_name'"""
        )
        return {
            row["table_name"]: await connection.fetchval(
                f'SELECT count(*) FROM "{row["table_name"]}" WHERE app_name = $1', app
            )
            for row in tables
        }
    finally:
        await connection.close()


async def test_an_app_erase_leaves_nothing_of_the_app_in_any_table(erasing):
    e = erasing
    admin = bearer(e.admin)
    user_key = await asyncio.to_thread(
        keys_command, e.url, "create", "--app", APP, "--user", ERASED
    )
    await fill(e, ERASED)
    await fill(e, TOO, mark=TOO_MARK)
    await fill_app(e)
    await fill(e, KEPT, mark=OTHER_MARK, app=OTHER_APP)
    await fill_app(e, OTHER_APP, OTHER_MARK)
    kept_before = await rows_of_app(e.url, OTHER_APP)
    assert all(kept_before[t] for t in ("sessions", "events", "memories", "app_states"))
    never = await e.call("GET", f"{app_url()}/erasure", headers=admin)
    assert_problem(never, 404, "erasure_not_found")

    erased = await e.ok("DELETE", app_url(), headers=admin)
    assert erased["status"] == "done" and erased["appName"] == APP and "userId" not in erased
    assert erased["finishTime"] >= erased["createTime"]
    removed = erased["removed"]
    assert removed["sessions"] == 3 + 3 + 1 and removed["events"] >= 8
    assert removed["appStates"] == 1 and removed["userStates"] == 2
    assert removed["memories"] == 5 + 5 + 1 and removed["memoryVectors"] == 2
    assert removed["artifactVersions"] == 4 and removed["pendingEvents"] == 2
    assert removed["apiKeys"] == 2
    made = sorted(key.split("_")[1] for key in (e.app_key, user_key))
    assert sorted(erased["deletedKeyIds"]) == made

    assert await scan(e.url, ERASED, TOO, MARK, TOO_MARK, APP_MARK) == {}
    left = await rows_of_app(e.url, APP)
    assert {table for table, rows in left.items() if rows} == {"audit_log", "erasures"}
    assert await rows_of_app(e.url, OTHER_APP) == kept_before
    for key in (e.app_key, user_key):
        refused = await e.call("GET", f"{app_url()}/state", headers=bearer(key))
        assert_problem(refused, 401, "unauthorized")
    assert (await e.ok("GET", f"{app_url()}/sessions", headers=admin))["sessions"] == []
    assert (await e.ok("GET", f"{app_url()}/state", headers=admin))["state"] == {}
    assert await e.ok("GET", f"{app_url()}/erasure", headers=admin) == erased


async def test_an_app_erase_is_idempotent_and_the_audit_log_records_it(erasing):
    e = erasing
    admin = bearer(e.admin)
    await fill(e, ERASED)
    await fill_app(e)
    first = await e.ok("DELETE", app_url(), headers=admin)
    again = await e.ok("DELETE", app_url(), headers=admin)
    assert again["id"] != first["id"] and again["status"] == "done"
    assert not any(again["removed"].values()) and again["deletedKeyIds"] == []
    found = await e.ok("GET", "/audit", params={"app": APP, "action": "app.erase"}, headers=admin)
    records = found["records"]
    assert [record["detail"]["erasure"] for record in records] == [again["id"], first["id"]]
    assert records[1]["detail"]["removed"] == first["removed"]
    assert records[1]["detail"]["keys"] == first["deletedKeyIds"]
    assert records[1]["keyId"] == e.admin.split("_")[1] and records[1]["user"] is None
    # After the erase the app may start afresh.
    fresh = {"sessionId": "again"}
    await e.ok("POST", f"{user_url(ERASED)}/sessions", 201, json=fresh, headers=admin)
    await e.ok("PATCH", f"{app_url()}/state", json={"stateDelta": {"a": 1}}, headers=admin)


async def test_only_an_admin_key_erases_an_app(erasing):
    e = erasing
    made = [
        ("create", "--app", APP, "--user", ERASED),
        ("create", "--app", OTHER_APP),
        ("create", "--admin", "--read-only"),
    ]
    user_key, other_app_key, read_only_admin = [
        await asyncio.to_thread(keys_command, e.url, *args) for args in made
    ]
    for key in (e.app_key, user_key, other_app_key):
        for method, path in (("DELETE", app_url()), ("GET", f"{app_url()}/erasure")):
            refused = await e.call(method, path, headers=bearer(key))
            assert_problem(refused, 403, "forbidden")
    refused = await e.call("DELETE", app_url(), headers=bearer(read_only_admin))
    assert_problem(refused, 403, "forbidden")
    never = await e.call("GET", f"{app_url()}/erasure", headers=bearer(read_only_admin))
    assert_problem(never, 404, "erasure_not_found")
    assert (await e.ok("DELETE", app_url(), headers=bearer(e.admin)))["status"] == "done"


async def test_a_big_app_erase_runs_as_a_job_refusing_the_apps_writes(slow_erasing):
    e = slow_erasing
    admin = bearer(e.admin)
    await fill(e, ERASED, events=600)
    await fill_app(e)
    started = await e.call("DELETE", app_url(), headers=admin)
    assert started.status_code == 202, started.text
    assert started.headers["location"] == f"{app_url()}/erasure"
    assert started.json()["status"] == "running" and started.json()["finishTime"] is None
    for method, path, body in (
        ("POST", f"{user_url(TOO)}/sessions", {"sessionId": "new"}),
        ("PATCH", f"{user_url(TOO)}/state", {"stateDelta": {"k": 1}}),
        ("POST", f"{user_url(TOO)}/memories", {"text": MARK}),
        ("PATCH", f"{app_url()}/state", {"stateDelta": {"k": 1}}),
        ("POST", f"{app_url()}/memories", {"text": MARK}),
    ):
        refused = await e.call(method, path, json=body, headers=admin)
        assert_problem(refused, 409, "app_erasing")
    again = await e.call("DELETE", app_url(), headers=admin)
    assert again.status_code == 202 and again.json()["id"] == started.json()["id"]
    seen = []
    while (status := await e.ok("GET", f"{app_url()}/erasure", headers=admin))[
        "status"
    ] == "running":
        seen.append(status["removed"]["events"])
        await asyncio.sleep(0.05)
    assert seen == sorted(seen) and status["removed"]["events"] >= 600
    assert any(0 < n < 600 for n in seen)  # seen part way: in batches
    assert await scan(e.url, ERASED, MARK, APP_MARK) == {}


async def test_writes_racing_an_app_erase_land_before_it_or_are_refused(slow_erasing):
    """8 writers, each a user of the app, append to their session (with `app:` state) and
    make sessions, and write the app's and their own state and memories while the app is
    erased. From the fence on, every write that makes something is refused; appends land while
    their session is not yet deleted: the writers' sessions are held (by a lock that appends do
    not wait for, and a delete does) until the writers stop, so that some surely do, and the
    erase cannot end before a write. Nothing of the app is left."""
    e = slow_erasing
    admin = bearer(e.admin)
    writers = [f"{MARK}-writer{n}" for n in range(8)]
    for user in writers:
        await e.ok("POST", f"{user_url(user)}/sessions", 201, json={"sessionId": "s"})
    await fill(e, ERASED)
    erasing = asyncio.Event()
    stop = asyncio.Event()
    answers: list[tuple[bool, str, int]] = []

    async def writer(user: str) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            fenced = erasing.is_set()
            event = {
                "author": "user",
                "content": {"parts": [{"text": f"{MARK} {i}"}]},
                "actions": {"stateDelta": {f"app:{user}": i}},
            }
            for kind, method, path, body in (
                ("append", "POST", f"{user_url(user)}/sessions/s/events", event),
                ("make", "POST", f"{user_url(user)}/sessions", {"sessionId": f"s{i}"}),
                ("make", "PATCH", f"{app_url()}/state", {"stateDelta": {user: MARK}}),
                ("make", "PATCH", f"{user_url(user)}/state", {"stateDelta": {"k": MARK}}),
                ("make", "POST", f"{app_url()}/memories", {"text": f"{MARK} {user}"}),
            ):
                answer = await e.call(method, path, json=body, headers=admin)
                assert answer.status_code in (200, 201, 404, 409), answer.text
                answers.append((fenced, kind, answer.status_code))

    running = [asyncio.create_task(writer(user)) for user in writers]
    await asyncio.sleep(0.3)
    held = await asyncpg.connect(e.url)
    try:
        async with held.transaction():
            for user in writers:  # one user at a time: on Citus, one shard each
                await held.execute(
                    "SELECT id FROM sessions WHERE app_name = $1 AND user_id = $2 FOR KEY SHARE",
                    APP,
                    user,
                )
            started = await e.ok("DELETE", app_url(), 202, headers=admin)
            erasing.set()
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.gather(*running)
            made = await asyncio.to_thread(sessionary, e.url, "keys", "create", "--app", APP)
            assert made.returncode != 0 and b"is being erased" in made.stderr
            assert (await e.ok("GET", f"{app_url()}/erasure", headers=admin))["status"] == "running"
    finally:
        await held.close()
    assert (await e.ok("DELETE", app_url(), 202, headers=admin))["id"] == started["id"]
    for _ in range(1200):
        erased = await e.ok("GET", f"{app_url()}/erasure", headers=admin)
        if erased["status"] == "done":
            break
        await asyncio.sleep(0.05)
    assert erased["status"] == "done", "the erase did not finish within a minute"
    before = {(kind, status) for fenced, kind, status in answers if not fenced}
    after = {(kind, status) for fenced, kind, status in answers if fenced}
    assert {("append", 201), ("make", 200), ("make", 201)} <= before
    assert ("append", 201) in after  # an append to a session not yet deleted lands
    assert {status for kind, status in after if kind == "make"} == {409}
    assert {status for kind, status in after if kind == "append"} <= {201, 404}
    assert erased["removed"]["events"] >= sum(1 for _, k, s in answers if (k, s) == ("append", 201))
    left = await rows_of_app(e.url, APP)
    assert {table for table, rows in left.items() if rows} == {"audit_log", "erasures"}
    assert await scan(e.url, ERASED, MARK) == {}


async def test_the_command_line_erases_an_app(erasing):
    e = erasing
    await fill(e, ERASED)
    await fill_app(e)
    await fill(e, KEPT, mark=OTHER_MARK, app=OTHER_APP)
    kept = await rows_of_app(e.url, OTHER_APP)
    done = await asyncio.to_thread(sessionary, e.url, "erase-app", "--app", APP)
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode()
    assert f"erased app '{APP}': " in said
    assert ", 1 appStates, " in said and ", 4 sessions" in said
    assert await scan(e.url, ERASED, MARK, APP_MARK) == {}
    assert await rows_of_app(e.url, OTHER_APP) == kept
    found = await e.ok("GET", "/audit", params={"app": APP}, headers=bearer(e.admin))
    newest = found["records"][0]
    assert (newest["action"], newest["keyId"]) == ("app.erase", None)
