"""A real streaming replica (`pg_basebackup`) behind DATABASE_READ_URL: session reads go to it,
a read with `minVersion` falls back to the primary while the replica lags (its replay paused
here, so that it lags for sure), and a replica that is down hands its reads to the primary."""

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sessionary_client import SessionaryClient
from sessionary_client.errors import SessionNotFoundError

from app.embedded import EmbeddedPostgres
from bench.citus import run
from tests.fixtures import start_server, stop_server
from tests.helpers import APP, USER, session_url
from tests.replication import Standby, primary_and_standby, wait_caught_up

SESSIONS = f"/apps/{APP}/users/{USER}/sessions"


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
