"""A real streaming replica (`pg_basebackup`) behind DATABASE_READ_URL: session reads go to it,
a read with `minVersion` or `minPosition` falls back to the primary while the replica lags (its
replay paused here, so that it lags for sure), and a replica that is down hands its reads to
the primary."""

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sessionary_client import SessionaryClient
from sessionary_client.errors import SessionNotFoundError

from app.embedded import EmbeddedPostgres
from bench.citus import run
from tests.fixtures import start_server, stop_server
from tests.helpers import APP, USER, assert_problem, create_session, session_url
from tests.replication import Standby, primary_and_standby, wait_caught_up

SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
# A WAL position as PostgreSQL prints it.
POSITION = re.compile(r"^[0-9A-F]{1,8}/[0-9A-F]{1,8}$")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[EmbeddedPostgres, Standby]]:
    with primary_and_standby() as (primary, standby):
        migrate = [str(Path(sys.executable).with_name("sessionary")), "migrate"]
        subprocess.run(migrate, env={"DATABASE_URL": primary.dsn()}, check=True, timeout=120)
        yield primary, standby


@pytest.fixture(scope="module")
def http(servers: tuple[EmbeddedPostgres, Standby]) -> Iterator[httpx.Client]:
    primary, standby = servers
    process, base_url = start_server(primary.dsn(), env={"DATABASE_READ_URL": standby.dsn()})
    try:
        with httpx.Client(base_url=base_url, timeout=30) as client:
            yield client
    finally:
        stop_server(process)


def served_by(http: httpx.Client) -> dict[str, float]:
    metrics = http.get("/metrics").text
    found = re.findall(
        r'^sessionary_session_reads_total\{served_by="(\w+)"\} (\S+)$', metrics, re.M
    )
    return {who: float(count) for who, count in found}


def appended(http: httpx.Client, session_id: str, text: str) -> int:
    event = {"author": "user", "content": {"parts": [{"text": text}]}}
    response = http.post(f"{session_url(session_id)}/events", json=event)
    assert response.status_code == 201, response.text
    return int(response.json()["seq"])


def test_a_lagging_replica_answers_old_reads_and_min_version_reads_your_writes(servers, http):
    primary, standby = servers
    assert http.post(SESSIONS, json={"sessionId": "s"}).status_code == 201
    appended(http, "s", "first")
    wait_caught_up(primary.dsn(), standby.dsn())
    run(standby.dsn(), "SELECT pg_wal_replay_pause()")
    try:
        assert appended(http, "s", "second") == 2
        before = served_by(http)
        stale = http.get(session_url("s")).json()
        assert stale["version"] == 1  # the replica's, behind the primary
        assert len(http.get(f"{session_url('s')}/events").json()["events"]) == 1

        fresh = http.get(session_url("s"), params={"minVersion": 2})
        assert fresh.json()["version"] == 2 and fresh.headers["etag"] == '"2"'
        page = http.get(f"{session_url('s')}/events", params={"minVersion": 2}).json()
        assert [event["seq"] for event in page["events"]] == [1, 2]

        assert http.post(SESSIONS, json={"sessionId": "new"}).status_code == 201
        assert http.get(session_url("new")).status_code == 404  # not replayed yet
        assert http.get(session_url("new"), params={"minVersion": 0}).status_code == 200
        after = served_by(http)
        assert after["primary"] - before.get("primary", 0) == 3
        assert after["replica"] - before.get("replica", 0) == 3
    finally:
        run(standby.dsn(), "SELECT pg_wal_replay_resume()")
    wait_caught_up(primary.dsn(), standby.dsn())
    before = served_by(http)
    assert http.get(session_url("s"), params={"minVersion": 2}).json()["version"] == 2
    assert served_by(http)["replica"] - before["replica"] == 1  # caught up: the replica's


def replayed(standby: Standby, position: str) -> bool:
    (row,) = run(standby.dsn(), f"SELECT pg_last_wal_replay_lsn() >= '{position}'::pg_lsn")
    return bool(row[0])


def wait_replayed(standby: Standby, position: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not replayed(standby, position):
        assert time.monotonic() < deadline, f"the standby did not replay up to {position}"
        time.sleep(0.05)


def test_min_position_reads_a_delete_that_min_version_cannot(servers, http):
    primary, standby = servers
    for session_id in ("gone", "kept"):
        assert http.post(SESSIONS, json={"sessionId": session_id}).status_code == 201
        assert appended(http, session_id, "written before") == 1
    wait_caught_up(primary.dsn(), standby.dsn())
    run(standby.dsn(), "SELECT pg_wal_replay_pause()")
    try:
        deleted = http.delete(session_url("gone"))
        assert deleted.status_code == 204
        position = deleted.headers["sessionary-position"]
        assert POSITION.match(position) and not replayed(standby, position)
        before = served_by(http)
        # The gap: the replica holds the session at the version the reader knew.
        assert http.get(session_url("gone"), params={"minVersion": 1}).status_code == 200
        page = http.get(f"{session_url('gone')}/events", params={"minVersion": 1})
        assert len(page.json()["events"]) == 1
        # What closes it: the replica has not replayed the delete, so the primary answers.
        fresh = {"minPosition": position}
        assert_problem(http.get(session_url("gone"), params=fresh), 404, "session_not_found")
        events = http.get(f"{session_url('gone')}/events", params=fresh)
        assert_problem(events, 404, "session_not_found")
        both = http.get(session_url("gone"), params={**fresh, "minVersion": 1})
        assert_problem(both, 404, "session_not_found")
        # Another session, which the replica holds at the version asked: both must hold.
        kept = http.get(session_url("kept"), params={**fresh, "minVersion": 1})
        assert kept.status_code == 200 and kept.json()["version"] == 1
        after = served_by(http)
        assert after["replica"] - before["replica"] == 2
        assert after["primary"] - before["primary"] == 4
    finally:
        run(standby.dsn(), "SELECT pg_wal_replay_resume()")
    wait_replayed(standby, position)
    before = served_by(http)
    assert_problem(http.get(session_url("gone"), params=fresh), 404, "session_not_found")
    page = http.get(f"{session_url('kept')}/events", params={**fresh, "minVersion": 1})
    assert len(page.json()["events"]) == 1
    after = served_by(http)
    assert after["replica"] - before["replica"] == 2  # replayed: the replica's
    assert after.get("primary") == before.get("primary")


def test_an_erase_answers_the_position_its_reads_ask_for(servers, http):
    primary, standby = servers
    user = "erased"
    for session_id in ("e1", "e2"):
        created = http.post(f"/apps/{APP}/users/{user}/sessions", json={"sessionId": session_id})
        assert created.status_code == 201
    wait_caught_up(primary.dsn(), standby.dsn())
    run(standby.dsn(), "SELECT pg_wal_replay_pause()")
    try:
        erased = http.delete(f"/apps/{APP}/users/{user}")
        assert erased.status_code in (200, 202), erased.text
        position = erased.headers["sessionary-position"]
        assert POSITION.match(position) and not replayed(standby, position)
        before = served_by(http)
        for session_id in ("e1", "e2"):
            url = session_url(session_id, user=user)
            assert http.get(url, params={"minVersion": 0}).status_code == 200  # the gap
            fresh = http.get(url, params={"minPosition": position})
            assert_problem(fresh, 404, "session_not_found")
        after = served_by(http)
        assert after["replica"] - before["replica"] == 2
        assert after["primary"] - before["primary"] == 2
    finally:
        run(standby.dsn(), "SELECT pg_wal_replay_resume()")
    wait_replayed(standby, position)
    before = served_by(http)
    listed = http.get(f"{session_url('e1', user=user)}/events", params={"minPosition": position})
    assert_problem(listed, 404, "session_not_found")
    assert served_by(http)["replica"] - before["replica"] == 1


@pytest.mark.parametrize(
    "position", ["16B3748", "0/", "/1", "G/1", "0/123456789", "0x0/1", " 0/1", "0/1/2", ""]
)
def test_a_malformed_min_position_is_a_422_naming_it(http, position):
    for url in (session_url("any"), f"{session_url('any')}/events"):
        refused = http.get(url, params={"minPosition": position})
        assert "minPosition" in assert_problem(refused, 422, "validation_error")["detail"]


async def test_without_a_replica_min_position_is_taken_and_changes_nothing(client):
    await create_session(client, sessionId="alone")
    deleted = await client.delete(session_url("alone"))
    assert deleted.status_code == 204 and POSITION.match(deleted.headers["sessionary-position"])
    await create_session(client, sessionId="alone")
    params = {"minPosition": deleted.headers["sessionary-position"]}
    assert (await client.get(session_url("alone"), params=params)).json()["id"] == "alone"
    future = {"minPosition": "FFFFFFFF/FFFFFFFF"}  # past anything written: nothing to wait for
    assert (await client.get(f"{session_url('alone')}/events", params=future)).status_code == 200


def test_the_python_client_reads_its_own_writes_from_a_lagging_replica(servers, http):
    primary, standby = servers
    wait_caught_up(primary.dsn(), standby.dsn())
    run(standby.dsn(), "SELECT pg_wal_replay_pause()")
    try:
        with SessionaryClient(str(http.base_url)) as client:
            created = client.create_session(APP, USER, session_id="mine")
            assert client.get_session(APP, USER, "mine")["id"] == created["id"]
            client.append_event(APP, USER, "mine", {"author": "user"})
            forked = client.fork_session(APP, USER, "mine", session_id="mine-fork")
            assert len(client.get_session(APP, USER, "mine")["events"]) == 1
            assert client.list_events(APP, USER, "mine")["events"][0]["seq"] == 1
            assert len(client.get_session(APP, USER, forked["id"])["events"]) == 1
        with SessionaryClient(str(http.base_url)) as stranger:  # wrote nothing: the replica
            with pytest.raises(SessionNotFoundError):
                stranger.get_session(APP, USER, "mine")
    finally:
        run(standby.dsn(), "SELECT pg_wal_replay_resume()")


def test_the_python_client_reads_its_own_deletes_and_erases_from_a_lagging_replica(servers, http):
    primary, standby = servers
    with SessionaryClient(str(http.base_url)) as client:
        client.create_session(APP, USER, session_id="doomed")
        client.append_event(APP, USER, "doomed", {"author": "user"})
        client.create_session(APP, "leaving", session_id="theirs")
        wait_caught_up(primary.dsn(), standby.dsn())
        run(standby.dsn(), "SELECT pg_wal_replay_pause()")
        try:
            client.delete_session(APP, USER, "doomed")
            client.erase_user(APP, "leaving")
            with pytest.raises(SessionNotFoundError):
                client.get_session(APP, USER, "doomed")
            with pytest.raises(SessionNotFoundError):
                client.list_events(APP, USER, "doomed")
            with pytest.raises(SessionNotFoundError):
                client.get_session(APP, "leaving", "theirs")
            with SessionaryClient(str(http.base_url)) as stranger:  # deleted nothing
                assert len(stranger.get_session(APP, USER, "doomed")["events"]) == 1
                assert stranger.get_session(APP, "leaving", "theirs")["id"] == "theirs"
        finally:
            run(standby.dsn(), "SELECT pg_wal_replay_resume()")


def test_writes_never_go_to_the_replica(servers, http):
    primary, standby = servers
    assert http.post(SESSIONS, json={"sessionId": "w"}).status_code == 201
    appended(http, "w", "hello")
    (row,) = run(primary.dsn(), "SELECT version FROM sessions WHERE id = 'w'")
    assert row[0] == 1
    (recovering,) = run(standby.dsn(), "SELECT pg_is_in_recovery()")
    assert recovering[0]  # a standby refuses writes: they could only have gone to the primary


def test_a_replica_that_is_down_hands_its_reads_to_the_primary(servers, http):
    _, standby = servers
    assert http.post(SESSIONS, json={"sessionId": "d"}).status_code == 201
    appended(http, "d", "still here")
    standby.stop("immediate")
    try:
        before = served_by(http)
        read = http.get(session_url("d"))
        assert read.status_code == 200 and read.json()["version"] == 1
        assert served_by(http)["primary"] - before["primary"] == 1
    finally:
        standby.start(standby.port)
