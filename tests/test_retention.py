"""Retention: a session past its expiry is gone at once (404 on every path, out of every list)
and deleted later by the sweeper, one sweeper at a time across processes."""

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.fixtures import start_server, stop_server
from tests.helpers import APP, SESSIONS, append, assert_problem, create_session, session_url

EXPIRE_NOW = "UPDATE sessions SET expire_time = now() - interval '1 second' WHERE id = ANY($1)"


async def expire(app, *session_ids: str) -> None:
    """Move the sessions' expiry into the past, as time would."""
    async with app.state.pool.connection() as connection:
        await connection.execute(EXPIRE_NOW, list(session_ids))


async def stored_ids(app) -> set[str]:
    """The sessions still in the table, expired or not."""
    async with app.state.pool.connection() as connection:
        return {row["id"] for row in await connection.fetch("SELECT id FROM sessions")}


async def test_ttl_and_expire_time_set_the_expiry(client):
    before = time.time()
    by_ttl = await create_session(client, sessionId="ttl", ttl=3600)
    assert before + 3600 <= by_ttl["expireTime"] <= time.time() + 3600
    at = time.time() + 7200
    by_time = await create_session(client, sessionId="at", expireTime=at)
    assert by_time["expireTime"] == pytest.approx(at, abs=1e-6)
    assert (await create_session(client, sessionId="forever"))["expireTime"] is None

    renewed = await client.patch(session_url("ttl"), json={"ttl": 60})
    assert renewed.status_code == 200
    assert renewed.json()["expireTime"] < by_ttl["expireTime"]
    assert renewed.json()["version"] == by_ttl["version"] + 1  # a write takes a version
    kept = await client.patch(session_url("ttl"), json={"expireTime": None})
    assert kept.json()["expireTime"] is None
    await client.patch(session_url("at"), json={"ttl": 60})
    cleared = await client.patch(session_url("at"), json={"ttl": None})  # as expireTime: null
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["expireTime"] is None
    await client.patch(session_url("at"), json={"ttl": 60})
    both = await client.patch(session_url("at"), json={"ttl": None, "expireTime": None})
    assert both.status_code == 200, both.text  # null in both: as in one (docs/api.md, Nulls)
    assert both.json()["expireTime"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"ttl": 60, "expireTime": 2e9},  # one moment, two ways: ambiguous
        {"ttl": 0},
        {"ttl": 0.5},  # under a second: it could expire before its create answers
        {"ttl": 2.5e11},  # past year 9999: no time the wire could carry
        {"ttl": -5},
        {"ttl": "60"},
        {"expireTime": 1.0},  # in the past
        {"expireTime": time.time() + 0.5},
    ],
)
async def test_a_bad_expiry_is_refused_and_creates_nothing(client, body):
    response = await client.post(SESSIONS, json={"sessionId": "s", **body})
    assert_problem(response, 422, "validation_error")
    assert (await client.get(session_url("s"))).status_code == 404


async def test_an_expired_session_is_absent_at_once_everywhere(app, client):
    await create_session(client, sessionId="old", labels={"team": "a"})
    await create_session(client, sessionId="new", labels={"team": "a"})
    assert (await append(client, "old", {"author": "user"})).status_code == 201
    await expire(app, "old")

    url = session_url("old")
    for response in (
        await client.get(url),
        await client.get(f"{url}/events"),
        await append(client, "old", {"author": "user"}),
        await client.patch(url, json={"stateDelta": {"k": 1}}),
        await client.patch(url, json={"ttl": 60}),  # too late to renew
        await client.post(f"{url}:fork", json={}),
        await client.get(f"{url}/context"),
        await client.delete(url),
    ):
        assert_problem(response, 404, "session_not_found")
    for listing in (SESSIONS, f"/apps/{APP}/sessions", f"{SESSIONS}?label=team:a"):
        listed = (await client.get(listing)).json()["sessions"]
        assert [session["id"] for session in listed] == ["new"]
    # Its id is free again: a new session takes it, and none of the old one's events.
    reborn = await create_session(client, sessionId="old")
    assert reborn["events"] == [] and reborn["version"] == 0


async def test_a_session_expires_when_its_ttl_runs_out(client):
    await create_session(client, sessionId="brief", ttl=1)
    assert (await client.get(session_url("brief"))).status_code == 200
    await asyncio.sleep(1.1)
    assert_problem(await client.get(session_url("brief")), 404, "session_not_found")


async def test_the_default_ttl_applies_to_sessions_that_give_none(database_url):
    from app.config import Settings
    from app.main import create_app

    application = create_app(Settings(database_url=database_url, auth=False, default_ttl=60))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
            start = time.time()
            plain = await create_session(client, sessionId="d1")
            assert start + 60 <= plain["expireTime"] <= time.time() + 60
            own = await create_session(client, sessionId="d2", ttl=10)
            assert own["expireTime"] <= time.time() + 10
            fork = (await client.post(f"{session_url('d1')}:fork", json={})).json()
            assert fork["expireTime"] is not None
            await client.delete(session_url("d1"))
            await client.delete(session_url("d2"))
            await client.delete(session_url(fork["id"]))


def sweep_command(database_url: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("sessionary")), "sweep"],
        env={**os.environ, "DATABASE_URL": database_url, **env},
        stdout=subprocess.PIPE,
        text=True,
    )


async def test_sweep_deletes_expired_sessions_with_their_events(app, client, database_url):
    for number in range(25):
        await create_session(client, sessionId=f"e{number}", events=[{"author": "user"}] * 2)
    await create_session(client, sessionId="live", ttl=3600)
    await expire(app, *(f"e{number}" for number in range(25)))

    output, _ = sweep_command(database_url, SESSIONARY_SWEEP_BATCH="10").communicate(timeout=60)
    assert output.strip() == "swept 25 expired sessions"
    assert await stored_ids(app) == {"live"}
    async with app.state.pool.connection() as connection:
        assert await connection.fetchval("SELECT count(*) FROM events") == 0


async def test_sweep_deletes_an_expired_sessions_artifacts_not_its_users(app, client):
    await create_session(client, sessionId="e")
    for name, data in (("own.txt", b"the session's"), ("user:kept.txt", b"the user's")):
        saved = await client.post(f"{session_url('e')}/artifacts/{name}", content=data)
        assert saved.status_code == 201, saved.text
    await expire(app, "e")
    assert await app.state.services.retention.sweep() == 1
    async with app.state.pool.connection() as connection:
        names = await connection.fetch("SELECT name FROM artifact_versions")
        chunks = await connection.fetchval("SELECT count(*) FROM artifact_chunks")
    assert [row["name"] for row in names] == ["user:kept.txt"] and chunks == 1


async def test_one_sweeper_at_a_time(app, client, database_url):
    ids = [f"e{number}" for number in range(300)]
    for session_id in ids:
        await create_session(client, sessionId=session_id)
    await expire(app, *ids)

    # While another sweeper holds the lock, a sweep deletes nothing and says so.
    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():
            assert await holder.fetchval("SELECT pg_try_advisory_xact_lock($1)", 0x5E55105EEB)
            output, _ = sweep_command(database_url).communicate(timeout=60)
            assert output.startswith("another sweeper is at work")
            assert len(await stored_ids(app)) == 300
    finally:
        await holder.close()

    # Two at once: every session deleted once, by whichever held the lock.
    sweepers = [sweep_command(database_url, SESSIONARY_SWEEP_BATCH="5") for _ in range(2)]
    outputs = [sweeper.communicate(timeout=120)[0].strip() for sweeper in sweepers]
    swept = [int(line.split()[1]) for line in outputs if line.startswith("swept")]
    assert sum(swept) == 300 and max(swept) in (300, 300 - min(swept)), outputs
    assert await stored_ids(app) == set()


async def test_a_server_sweeps_by_itself_and_counts_it(app, client, database_url):
    for number in range(3):
        await create_session(client, sessionId=f"e{number}")
    await expire(app, "e0", "e1", "e2")
    process, base_url = start_server(
        database_url, "--workers", "2", env={"SESSIONARY_SWEEP_INTERVAL": "0.2"}
    )
    try:
        for _ in range(200):  # up to 20 s
            if not await stored_ids(app):
                break
            await asyncio.sleep(0.1)
        assert await stored_ids(app) == set()
        async with httpx.AsyncClient() as http:
            metrics = (await http.get(f"{base_url}/metrics")).text
        assert "sessionary_sessions_swept_total 3.0" in metrics, metrics
    finally:
        stop_server(process)
