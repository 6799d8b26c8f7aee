"""The audit log: session deletes, imports, keys created and revoked and retention sweeps are
recorded with the key that asked (its id), ids as keyed hashes and counts, never content;
readable by admin keys alone, filtered by app, user, action and time, and swept when old."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from app import db
from app.config import Settings
from tests.fixtures import client_of, keys_command
from tests.helpers import APP, USER, assert_problem, session_url

SECRET_WORDS = "my card number is 4111 1111 1111 1111"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
async def audited(new_database):
    """A fresh database, an admin key and an app key made by the command line, and a client of
    a server with keys on."""
    url = await asyncio.to_thread(new_database)
    await asyncio.to_thread(db.upgrade, url)
    admin = await asyncio.to_thread(keys_command, url, "create", "--admin")
    app_key = await asyncio.to_thread(keys_command, url, "create", "--app", APP)
    settings = Settings(database_url=url, auth=True, sweep_interval=86_400)
    async with client_of(settings) as client:
        yield client, admin, app_key, url


async def records(client: httpx.AsyncClient, admin: str, **params: Any) -> list[dict[str, Any]]:
    answer = await client.get("/audit", params=params, headers=bearer(admin))
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["records"]
    return found


async def test_a_session_delete_is_recorded_with_its_key_and_no_content(audited):
    client, admin, app_key, _ = audited
    event = {"author": "user", "content": {"parts": [{"text": SECRET_WORDS}]}}
    created = await client.post(
        f"/apps/{APP}/users/{USER}/sessions",
        json={"sessionId": "private-chat", "events": [event]},
        headers=bearer(app_key),
    )
    assert created.status_code == 201, created.text
    deleted = await client.delete(session_url("private-chat"), headers=bearer(app_key))
    assert deleted.status_code == 204
    (record,) = await records(client, admin, app=APP, userId=USER, action="session.delete")
    app_key_id = app_key.split("_")[1]
    assert record["keyId"] == app_key_id and record["appName"] == APP
    assert record["outcome"] == "ok" and abs(record["time"] - time.time()) < 60
    said = json.dumps(record)
    for private in (USER, "private-chat", "4111"):
        assert private not in said
    assert await records(client, admin, app=APP, userId="bob") == []


async def test_keys_imports_and_sweeps_are_recorded(audited):
    client, admin, app_key, url = audited
    created = await records(client, admin, action="key.create")
    assert sorted(r["detail"]["scope"] for r in created) == ["admin", "app"]
    assert all(r["keyId"] is None for r in created)  # the command line's
    user_key = await asyncio.to_thread(keys_command, url, "create", "--app", APP, "--user", USER)
    (mine,) = await records(client, admin, action="key.create", app=APP, userId=USER)
    assert mine["detail"]["keyId"] == user_key.split("_")[1]
    await asyncio.to_thread(keys_command, url, "revoke", user_key.split("_")[1])
    (revoked,) = await records(client, admin, action="key.revoke")
    assert revoked["detail"] == {"keyId": user_key.split("_")[1]}
    event = {"author": "user", "content": {"parts": [{"text": SECRET_WORDS}]}}
    made = await client.post(
        f"/apps/{APP}/users/{USER}/sessions",
        json={"sessionId": "moved", "events": [event]},
        headers=bearer(app_key),
    )
    assert made.status_code == 201, made.text
    exported = await client.get(f"{session_url('moved')}:export", headers=bearer(app_key))
    assert (await client.delete(session_url("moved"), headers=bearer(app_key))).status_code == 204
    imported = await client.post(
        f"/apps/{APP}/users/{USER}/sessions:import",
        content=exported.content,
        headers={**bearer(app_key), "content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    (record,) = await records(client, admin, action="session.import", app=APP, userId=USER)
    assert record["detail"]["events"] == 1 and "4111" not in json.dumps(record)
    expiring = await client.post(
        f"/apps/{APP}/users/{USER}/sessions",
        json={"sessionId": "brief", "ttl": 1},
        headers=bearer(app_key),
    )
    assert expiring.status_code == 201, expiring.text
    await asyncio.sleep(1.1)
    swept = await asyncio.to_thread(_sweep, url)
    assert swept.returncode == 0, swept.stderr
    (sweep,) = await records(client, admin, action="retention.sweep")
    assert sweep["detail"]["sessions"] == 1 and sweep["keyId"] is None


def _sweep(url: str) -> subprocess.CompletedProcess[str]:
    """The real `sessionary sweep` command."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("sessionary")), "sweep"],
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_only_admin_keys_read_the_log(audited):
    client, admin, app_key, _ = audited
    assert_problem(await client.get("/audit", headers=bearer(app_key)), 403, "forbidden")
    assert_problem(await client.get("/audit"), 401, "unauthorized")
    needs_app = await client.get("/audit", params={"userId": USER}, headers=bearer(admin))
    assert_problem(needs_app, 422, "validation_error")
    first = await client.get("/audit", params={"pageSize": 1}, headers=bearer(admin))
    token = first.json()["nextPageToken"]
    second = await client.get(
        "/audit", params={"pageSize": 1, "pageToken": token}, headers=bearer(admin)
    )
    assert second.json()["records"][0]["seq"] < first.json()["records"][0]["seq"]


async def test_old_records_are_swept(audited):
    client, admin, _, url = audited
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("UPDATE audit_log SET time = now() - interval '500 days'")
        kept = await connection.fetchval("SELECT count(*) FROM audit_log")
    finally:
        await connection.close()
    swept = await asyncio.to_thread(_sweep, url)
    assert swept.returncode == 0, swept.stderr
    (sweep,) = await records(client, admin)
    assert sweep["action"] == "retention.sweep" and sweep["detail"]["auditRecords"] == kept


async def test_the_log_holds_every_action_of_a_users_life_and_no_content(audited):
    """A user's keys, sessions deleted and imported, their data exported and imported, the
    sweep and the erase: each is in the log, and nothing the user said or named is, in any
    column of any record."""
    client, admin, app_key, url = audited
    user_key = await asyncio.to_thread(keys_command, url, "create", "--app", APP, "--user", USER)
    event = {"author": "user", "content": {"parts": [{"text": SECRET_WORDS}]}}
    for session_id, ttl in (("private-chat", None), ("brief", 1)):
        made = await client.post(
            f"/apps/{APP}/users/{USER}/sessions",
            json={"sessionId": session_id, "events": [event], "ttl": ttl},
            headers=bearer(user_key),
        )
        assert made.status_code == 201, made.text
    exported = await client.get(f"{session_url('private-chat')}:export", headers=bearer(app_key))
    assert (await client.delete(session_url("private-chat"), headers=bearer(app_key))).is_success
    ndjson = {"content-type": "application/x-ndjson"}
    imported = await client.post(
        f"/apps/{APP}/users/{USER}/sessions:import",
        content=exported.content,
        headers={**bearer(app_key), **ndjson},
    )
    assert imported.status_code == 201, imported.text
    everything = await client.get(f"/apps/{APP}/users/{USER}:export", headers=bearer(user_key))
    moved = await client.post(
        f"/apps/{APP}/users/carol:import",
        content=everything.content,
        headers={**bearer(app_key), **ndjson},
    )
    assert moved.status_code == 200, moved.text
    await asyncio.sleep(1.1)
    assert (await asyncio.to_thread(_sweep, url)).returncode == 0
    await asyncio.to_thread(keys_command, url, "revoke", user_key.split("_")[1])  # checked
    erased = await client.delete(f"/apps/{APP}/users/{USER}", headers=bearer(app_key))
    assert erased.status_code == 200, erased.text

    actions = {record["action"] for record in await records(client, admin, pageSize=100)}
    assert actions == {
        "key.create",
        "key.revoke",
        "session.delete",
        "session.import",
        "user.export",
        "user.import",
        "retention.sweep",
        "user.erase",
    }
    mine = {record["action"] for record in await records(client, admin, app=APP, userId=USER)}
    # The sweep names no user, a revocation names its key; the import was carol's.
    assert mine == actions - {"retention.sweep", "key.revoke", "user.import"}
    carols = await records(client, admin, app=APP, userId="carol")
    assert [record["action"] for record in carols] == ["user.import"]
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch("SELECT audit_log::text AS said FROM audit_log")
    finally:
        await connection.close()
    assert len(rows) >= len(actions)
    for row in rows:
        for private in (USER, "carol", "private-chat", "brief", "4111", "card number"):
            assert private not in row["said"], (private, row["said"])
