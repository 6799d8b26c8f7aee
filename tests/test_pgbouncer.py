"""Behind a real PgBouncer in transaction pooling mode: the migrations, the key commands, the
server's appends and reads with their concurrency guarantees, and live streams; in the cluster
suite, PgBouncer in front of a Citus coordinator."""

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from app import db
from tests.fixtures import sessionary, start_server, stop_server
from tests.helpers import APP, USER, delta_event, session_url
from tests.pgbouncer import pgbouncer
from tests.sse import Reader

SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
POOLING = {"SESSIONARY_DB_TRANSACTION_POOLING": "true"}


@pytest.fixture(scope="module")
def direct_url(new_database: Callable[[], str]) -> str:
    """A database of its own: the server below is not one whose tables tests truncate."""
    return new_database()


@pytest.fixture(scope="module")
def pooled_url(direct_url: str) -> Iterator[str]:
    with pgbouncer(direct_url) as url:
        yield url


@pytest.fixture(scope="module")
def server(direct_url: str, pooled_url: str) -> Iterator[str]:
    """Two workers whose every request goes through PgBouncer (four server connections for
    their forty), migrated through it too; streams listen on the direct URL."""
    migrated = sessionary(pooled_url, "migrate", env=POOLING)
    assert migrated.returncode == 0, migrated.stderr
    process, base_url = start_server(
        pooled_url, "--workers", "2", env={**POOLING, "DATABASE_DIRECT_URL": direct_url}
    )
    try:
        yield base_url
    finally:
        stop_server(process)


@pytest.fixture
async def http(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        yield client


async def test_concurrent_appends_get_gap_free_seqs_and_every_read_sees_them(http):
    created = await http.post(SESSIONS, json={"sessionId": "busy", "state": {"user:u": 1}})
    assert created.status_code == 201, created.text

    async def writer(number: int) -> list[int]:
        seqs = []
        for n in range(10):
            appended = await http.post(
                f"{session_url('busy')}/events", json=delta_event({f"w{number}": n})
            )
            assert appended.status_code == 201, appended.text
            seqs.append(appended.json()["seq"])
            read = await http.get(session_url("busy"), params={"numRecentEvents": 1})
            assert read.status_code == 200, read.text
        return seqs

    acknowledged = await asyncio.gather(*(writer(number) for number in range(16)))
    assert sorted(seq for seqs in acknowledged for seq in seqs) == list(range(1, 161))
    session = (await http.get(session_url("busy"))).json()
    assert [event["seq"] for event in session["events"]] == list(range(1, 161))
    assert session["state"] == {"user:u": 1, **{f"w{number}": 9 for number in range(16)}}
    listed = (await http.get(SESSIONS)).json()["sessions"]
    assert [entry["id"] for entry in listed] == ["busy"]


async def test_if_match_has_one_winner_and_a_retry_is_stored_once(http):
    assert (await http.post(SESSIONS, json={"sessionId": "race"})).status_code == 201
    raced = await asyncio.gather(
        *(
            http.post(
                f"{session_url('race')}/events",
                json=delta_event({"winner": n}),
                headers={"If-Match": '"0"'},
            )
            for n in range(8)
        )
    )
    assert sorted(response.status_code for response in raced) == [201] + [412] * 7
    retried = await asyncio.gather(
        *(
            http.post(f"{session_url('race')}/events", json=delta_event({"n": 1}, id="once"))
            for _ in range(8)
        )
    )
    assert {response.status_code for response in retried} <= {200, 201}
    assert sum(response.status_code == 201 for response in retried) == 1
    assert (await http.get(session_url("race"))).json()["version"] == 2


async def test_a_stream_hears_appends_made_through_the_pooler(http, server):
    assert (await http.post(SESSIONS, json={"sessionId": "heard"})).status_code == 201
    async with http.stream("GET", f"{session_url('heard')}/events:stream") as response:
        await asyncio.sleep(0.3)  # open before the append
        appended = await http.post(f"{session_url('heard')}/events", json=delta_event({"a": 1}))
        assert appended.status_code == 201
        (frame,) = await asyncio.wait_for(Reader(response).take(1), 10)
    assert (frame.event, frame.id) == ("appended", 1)


async def test_a_user_is_erased_through_the_pooler_while_writers_race_it(http):
    """The erase's fence is transaction-scoped advisory locks: fine behind a transaction
    pooler, where a session-level lock would be another client's."""
    user = f"/apps/{APP}/users/erased"
    for n in range(3):
        created = await http.post(f"{user}/sessions", json={"sessionId": f"s{n}"})
        assert created.status_code == 201, created.text

    async def writer(n: int) -> set[int]:
        answered = set()
        for i in range(20):
            appended = await http.post(
                f"{user}/sessions/s{n % 3}/events", json=delta_event({f"w{n}": i})
            )
            state = await http.patch(f"{user}/state", json={"stateDelta": {f"w{n}": i}})
            answered |= {appended.status_code, state.status_code}
        return answered

    writers = [asyncio.create_task(writer(n)) for n in range(4)]
    await asyncio.sleep(0.1)
    erased = await http.delete(user)
    answered = set().union(*await asyncio.gather(*writers))
    assert erased.status_code == 200, erased.text
    assert erased.json()["status"] == "done" and erased.json()["removed"]["sessions"] == 3
    assert answered <= {200, 201, 404, 409}
    assert (await http.get(f"{user}/sessions")).json()["sessions"] == []


async def test_an_app_is_erased_through_the_pooler_while_writers_race_it(http):
    """The app's fence too: a shared lock on the app in each write's transaction."""
    app = "/apps/erased-app"
    erased_once = asyncio.Event()

    async def writer(n: int) -> set[int]:
        answered, i = set(), 0
        sessions = f"{app}/users/u{n}/sessions"
        while not erased_once.is_set():
            i += 1
            created = await http.post(sessions, json={"sessionId": f"s{i}"})
            appended = await http.post(f"{sessions}/s1/events", json=delta_event({"app:k": i}))
            state = await http.patch(f"{app}/state", json={"stateDelta": {f"w{n}": i}})
            answered |= {created.status_code, appended.status_code, state.status_code}
        return answered

    writers = [asyncio.create_task(writer(n)) for n in range(4)]
    await asyncio.sleep(0.3)
    erased = await http.delete(app)
    erased_once.set()
    answered = set().union(*await asyncio.gather(*writers))
    assert erased.status_code == 200, erased.text
    assert erased.json()["status"] == "done" and erased.json()["removed"]["sessions"] > 0
    assert answered <= {200, 201, 404, 409}
    again = await http.delete(app)  # what the writers wrote once it was done, if anything
    assert again.status_code == 200, again.text
    assert (await http.get(f"{app}/sessions")).json()["sessions"] == []
    assert (await http.get(f"{app}/state")).json()["state"] == {}


async def test_a_user_is_exported_and_imported_through_the_pooler(http):
    """The export reads one snapshot and the import writes one transaction: both hold their
    server connection for a transaction, as a transaction pooler lends it."""
    user = f"/apps/{APP}/users/exported"  # the module's tables are not emptied between tests
    for n in range(3):
        created = await http.post(
            f"{user}/sessions",
            json={"sessionId": f"x{n}", "events": [delta_event({"user:n": n})]},
        )
        assert created.status_code == 201, created.text
    memory = await http.post(f"{user}/memories", json={"text": "a fact"})
    assert memory.status_code == 201, memory.text
    exported = await http.get(f"{user}:export")
    assert exported.status_code == 200, exported.text
    imported = await http.post(
        f"/apps/{APP}/users/moved:import",
        content=exported.content,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 200, imported.text
    assert imported.json()["created"]["sessions"] == 3
    assert imported.json()["created"]["memories"] == 1
    moved = await http.get(f"/apps/{APP}/users/moved:export")
    assert moved.content.count(b"sessionary.session.v1") == 3


def test_keys_are_made_and_checked_through_the_pooler(pooled_url, direct_url):
    made = sessionary(pooled_url, "keys", "create", "--app", APP, env=POOLING)
    assert made.returncode == 0, made.stderr
    process, base_url = start_server(
        pooled_url, env={**POOLING, "DATABASE_DIRECT_URL": direct_url, "SESSIONARY_AUTH": "true"}
    )
    try:
        headers = {"Authorization": f"Bearer {made.stdout.decode().strip()}"}
        assert httpx.get(f"{base_url}{SESSIONS}", headers=headers).status_code == 200
        assert httpx.get(f"{base_url}{SESSIONS}").status_code == 401
    finally:
        stop_server(process)


def test_statement_cache_size_0_in_the_url_is_the_same_switch(pooled_url):
    connector = db.Connector.of(f"{pooled_url}?statement_cache_size=0&application_name=x")
    assert connector.transaction_pooling
    assert connector.dsn.endswith("?application_name=x")
    with pytest.raises(ValueError, match="only be 0"):
        db.Connector.of(f"{pooled_url}?statement_cache_size=100")

    async def many_clients() -> None:
        pool = await db.DriverPool.open(connector, size=12)
        try:

            async def query(n: int) -> int:
                async with pool.connection() as connection:
                    return int(await connection.fetchval("SELECT $1::int + 1", n))

            assert await asyncio.gather(*(query(n) for n in range(200))) == list(range(1, 201))
        finally:
            await pool.close()

    asyncio.run(many_clients())


def test_serve_says_what_streams_need_behind_a_transaction_pooler(pooled_url):
    refused = sessionary(pooled_url, "serve", env=POOLING)
    assert refused.returncode != 0
    assert b"need DATABASE_DIRECT_URL" in refused.stderr


def test_jit_is_off_on_a_direct_session_and_left_alone_behind_the_pooler(direct_url, pooled_url):
    """Straight to PostgreSQL each connection turns JIT off for its session; behind a
    transaction pooler it sets nothing (a session's setting would stay with the server
    connection, for whichever client gets it next)."""

    async def jit_of(connector: db.Connector) -> tuple[str, str]:
        connection = await connector.connect()
        try:
            row = await connection.fetchrow(
                "SELECT setting, source FROM pg_settings WHERE name = 'jit'"
            )
            assert row is not None
            return row["setting"], row["source"]
        finally:
            await connection.close()

    assert asyncio.run(jit_of(db.Connector.of(direct_url))) == ("off", "session")
    pooled = db.Connector.of(pooled_url, transaction_pooling=True)
    assert asyncio.run(jit_of(pooled))[1] != "session"
