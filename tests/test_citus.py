"""Sessionary sharded on a real Citus cluster (the cluster suite, SESSIONARY_TEST_CITUS=1, run
by `make test` after the single-node one): what `sessionary migrate` distributes, per-session
work on the one worker holding the user's shard (read from the plans Citus gives the statements
the service really sent), work across users fanning out, and a single-node database taken over.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from app import db
from app.config import Settings
from app.main import create_app
from app.models import Base
from app.repositories.events import APPEND, APPEND_ROUTED, ROUTED_FUNCTION, ROUTED_SIGNATURE
from app.sharding import CO_LOCATED, REFERENCE, SHARD_KEY, WorkerPools, shard_hash
from bench.citus import PG_BIN, TEST_OPTIONS, Cluster, citus_cluster, run
from tests.fixtures import client_of, free_port, sessionary, start_server, stop_server
from tests.helpers import APP, USER, append, assert_problem, create_session, session_url
from tests.replication import Standby, write_until
from tests.test_version_limit import full_session, snapshot

S = session_url("s1")


def test_migrate_distributes_by_user_and_copies_the_app_wide_tables(database_url: str) -> None:
    tables = run(
        database_url,
        "SELECT logicalrelid::regclass::text AS name, partmethod::text, colocationid,"
        " column_to_column_name(logicalrelid, partkey) AS key FROM pg_dist_partition",
    )
    placed = {row["name"]: row for row in tables}
    assert {name for name in placed} == {*CO_LOCATED, *REFERENCE}
    assert set(placed) == set(Base.metadata.tables)  # a new table must be placed too
    assert {placed[name]["partmethod"] for name in REFERENCE} == {"n"}  # reference tables
    assert {(placed[name]["partmethod"], placed[name]["key"]) for name in CO_LOCATED} == {
        ("h", SHARD_KEY)
    }
    assert len({placed[name]["colocationid"] for name in CO_LOCATED}) == 1


# --- per-session work on one worker -----------------------------------------------------------

Statement = tuple[str, tuple[Any, ...]]


@pytest.fixture
async def logged(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, app: FastAPI
) -> AsyncIterator[tuple[httpx.AsyncClient, list[Statement]]]:
    """A client of an app of its own whose connections record every statement they run (on
    the tests' database: asking for `app` has its tables emptied after the test)."""
    statements: list[Statement] = []
    decode_json = db._decode_json

    async def recording(connection: asyncpg.Connection) -> None:
        await decode_json(connection)
        connection.add_query_logger(lambda query: statements.append((query.query, query.args)))

    monkeypatch.setattr(db, "_decode_json", recording)
    # No embedding worker, whose statements in the background would mix with those observed.
    application = create_app(settings.model_copy(update={"embeddings": "none"}))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
            yield http, statements


def tasks(plan: Any) -> Iterator[dict[str, Any]]:
    """Every `Task` of a Citus plan (EXPLAIN's JSON), subplans' included."""
    if isinstance(plan, dict):
        if "Node" in plan and str(plan["Node"]).startswith("host="):
            yield plan
        for value in plan.values():
            yield from tasks(value)
    elif isinstance(plan, list):
        for value in plan:
            yield from tasks(value)


async def workers_of(database_url: str, statements: list[Statement]) -> list[list[str]]:
    """For each statement on a sharded table (or a call of the append routed to a worker),
    the node of each task of its plan."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SET citus.explain_all_tasks = on")
        placed = []
        for sql, args in statements:
            if not any(name in sql for name in (*CO_LOCATED, *REFERENCE, ROUTED_FUNCTION)):
                continue
            if "pg_dist_" in sql:  # the service reading where the shards are (`WorkerPools`)
                continue
            if (
                not sql.lstrip()
                .upper()
                .startswith(("SELECT", "WITH", "INSERT", "UPDATE", "DELETE"))
            ):
                continue
            plan = json.loads(await connection.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *args))
            nodes = [str(task["Node"]) for task in tasks(plan)]
            placed.append(nodes)
        return placed
    finally:
        await connection.close()


async def worker_port(database_url: str, user_id: str) -> int:
    """The port of the worker holding `user_id`'s shard, as Citus finds it."""
    connection = await asyncpg.connect(database_url)
    try:
        port: int = await connection.fetchval(
            "SELECT nodeport FROM pg_dist_placement JOIN pg_dist_node USING (groupid)"
            " WHERE shardid = get_shard_id_for_distribution_column('sessions', $1::text)",
            user_id,
        )
        return port
    finally:
        await connection.close()


async def worker_of_user(database_url: str, user_id: str) -> str:
    """That worker as an `EXPLAIN` names a task's node."""
    return f"port={await worker_port(database_url, user_id)} "


async def reimport(client: httpx.AsyncClient, session_id: str) -> httpx.Response:
    """The session exported, removed and imported back; the import's answer."""
    exported = (await client.get(f"{session_url(session_id)}:export")).content
    assert (await client.delete(session_url(session_id))).status_code == 204
    return await client.post(
        f"/apps/{APP}/users/{USER}/sessions:import",
        content=exported,
        headers={"content-type": "application/x-ndjson"},
    )


async def test_per_session_work_runs_on_the_workers_holding_the_users_shard(
    logged: tuple[httpx.AsyncClient, list[Statement]], database_url: str
) -> None:
    client, statements = logged
    await create_session(client, sessionId="s1", state={"user:name": "Ada", "topic": "t"})
    call = {"functionCall": {"id": "c1", "name": "lookup", "args": {}}}
    answer = {"functionResponse": {"id": "c1", "name": "lookup", "response": {"ok": True}}}
    steps: list[tuple[str, Callable[[], Any]]] = [
        (
            "append",
            lambda: append(
                client,
                "s1",
                {"author": "user", "invocationId": "i1", "content": {"parts": [{"text": "hi"}]}},
            ),
        ),
        (
            "append a call",
            lambda: append(
                client,
                "s1",
                {
                    "author": "agent",
                    "invocationId": "i2",
                    "content": {"parts": [call]},
                    "actions": {"stateDelta": {"step": 1}},
                },
            ),
        ),
        (
            "append an answer",
            lambda: append(
                client,
                "s1",
                {"author": "agent", "invocationId": "i2", "content": {"parts": [answer]}},
            ),
        ),
        ("read", lambda: client.get(S)),
        ("read as of a seq", lambda: client.get(S, params={"untilSeq": 1})),
        ("events page", lambda: client.get(f"{S}/events", params={"pageSize": 2})),
        ("context view", lambda: client.get(f"{S}/context", params={"tokenBudget": 1000})),
        ("tool calls", lambda: client.get(f"{S}/toolCalls")),
        ("heal", lambda: client.post(f"{S}:heal", json={})),
        ("queue pending", lambda: client.post(f"{S}/pending", json={"author": "user"})),
        ("pending", lambda: client.get(f"{S}/pending")),
        ("promote pending", lambda: client.post(f"{S}/pending:promote", json={"force": True})),
        ("fork", lambda: client.post(f"{S}:fork", json={"sessionId": "f1", "atSeq": 2})),
        ("child", lambda: client.post(f"{S}/children", json={"sessionId": "c1"})),
        ("children", lambda: client.get(f"{S}/children")),
        (
            "close a child",
            lambda: client.post(f"{session_url('c1')}:close", json={"outcome": "completed"}),
        ),
        ("lineage", lambda: client.get(f"{session_url('f1')}/lineage")),
        (
            "compact",
            lambda: client.post(
                f"{S}:compact", json={"strategy": "summary", "summary": "hello", "keepLast": 1}
            ),
        ),
        ("rewind", lambda: client.post(f"{S}:rewind", json={"beforeInvocationId": "i2"})),
        ("trim", lambda: client.post(f"{S}:trim", json={"keepLast": 1})),
        ("export", lambda: client.get(f"{S}:export")),
        ("import", lambda: reimport(client, "s1")),
        (
            "user state",
            lambda: client.patch(f"/apps/{APP}/users/{USER}/state", json={"stateDelta": {"a": 1}}),
        ),
        ("delete", lambda: client.delete(session_url("f1"))),
    ]
    home = await worker_of_user(database_url, USER)
    for name, step in steps:
        statements.clear()
        response = await step()
        assert response.status_code < 300, (name, response.text)
        # The audit log (its record, its secret) and the erasures that fence a user's writes
        # are reference tables, on every node.
        references = ("audit_log", "server_secrets", "erasures")
        placed = await workers_of(
            database_url, [s for s in statements if not any(r in s[0] for r in references)]
        )
        assert placed, f"{name}: no statement on a sharded table"
        for nodes in placed:
            remote = {node for node in nodes if "host=localhost" not in node}
            assert len(remote) <= 1 and all(home in node for node in remote), (name, nodes)
        if response.request.method == "GET":  # a read: one task per statement
            assert all(len(nodes) == 1 for nodes in placed), (name, placed)


async def test_an_append_is_one_call_citus_hands_whole_to_the_users_worker(
    logged: tuple[httpx.AsyncClient, list[Statement]], database_url: str
) -> None:
    """Its session, user state and events written there, in one call Citus hands whole to
    that worker (as the coordinator plans it; the service sends it to the worker itself); one
    that writes app state, a copy on every node, is the one statement."""
    client, statements = logged
    await create_session(client, sessionId="s1")
    home = await worker_of_user(database_url, USER)
    delta = {"user:name": "Ada", "topic": "t"}
    statements.clear()
    event = {"author": "user", "actions": {"stateDelta": delta}}
    assert (await append(client, "s1", event)).status_code == 201
    assert [sql for sql, _ in statements] == [APPEND_ROUTED.sql]
    [[node]] = await workers_of(database_url, statements)  # one task: the call, delegated
    assert home in node
    statements.clear()
    event = {"author": "user", "actions": {"stateDelta": {"app:motd": "hi"}}}
    assert (await append(client, "s1", event)).status_code == 201
    assert [sql for sql, _ in statements] == [APPEND.sql]
    session = (await client.get(S)).json()
    assert session["state"] == {**delta, "app:motd": "hi"}
    assert [event["seq"] for event in session["events"]] == [1, 2]


async def test_an_append_is_sent_straight_to_its_users_worker(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, app: FastAPI, database_url: str
) -> None:
    """The service calls the routed append on the worker itself, over a connection of its own,
    not through the coordinator; one that writes app state goes to the coordinator (and so
    does the announcement of each, for the live streams)."""
    sent: list[tuple[str, int]] = []
    decode_json = db._decode_json

    async def recording(connection: asyncpg.Connection) -> None:
        await decode_json(connection)

        def appended(query: asyncpg.connection.LoggedQuery) -> None:
            if query.query in (APPEND.sql, APPEND_ROUTED.sql):
                sent.append((query.query, query.conn_addr[1]))

        connection.add_query_logger(appended)

    monkeypatch.setattr(db, "_decode_json", recording)
    # No embedding worker, whose statements in the background would mix with those observed.
    application = create_app(settings.model_copy(update={"embeddings": "none"}))
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
            for user in USERS:
                await create_session(client, user=user, sessionId="s")
                sent.clear()
                event = {"author": "user", "actions": {"stateDelta": {"user:n": user}}}
                assert (await append(client, "s", event, user=user)).status_code == 201
                assert sent == [(APPEND_ROUTED.sql, await worker_port(database_url, user))]
                sent.clear()
                event = {"author": "user", "actions": {"stateDelta": {"app:seen": user}}}
                assert (await append(client, "s", event, user=user)).status_code == 201
                assert sent == [(APPEND.sql, make_url(database_url).port)]
                events = (await client.get(session_url("s", user=user))).json()["events"]
                assert [event["seq"] for event in events] == [1, 2]


async def test_a_worker_that_cannot_be_reached_has_its_appends_sent_to_the_coordinator(
    settings: Settings, database_url: str
) -> None:
    """Refused before anything is sent (nothing listening, or the service's role not let in),
    the append goes by the coordinator instead, and the worker is tried again at the next
    reading of the map, from then on when it answers."""
    pool = await db.DriverPool.open(db.connector(database_url, settings), size=2)
    workers = WorkerPools(pool, size=2)

    async def port_for(user: str) -> int:
        async with workers.connection(user) as connection:
            port: int = await connection.fetchval("SELECT inet_server_port()")
            return port

    try:
        await workers.refresh()
        assert [await port_for(user) for user in USERS] == [
            await worker_port(database_url, user) for user in USERS
        ]
        node = workers.map.node_of(USERS[0])
        assert node is not None
        await workers.pools[node].close()
        nowhere = pool.connector.at("127.0.0.1", free_port())
        workers.pools[node] = await db.DriverPool.open(nowhere, size=1, min_size=0)
        assert await port_for(USERS[0]) == make_url(database_url).port
        assert node in workers.unreachable
        await workers.refresh()
        assert node in workers.unreachable  # still refused
        await workers.pools[node].close()
        refusing = db.Connector.of(f"postgresql://nobody@{node[0]}:{node[1]}/postgres")
        workers.pools[node] = await db.DriverPool.open(refusing, size=1, min_size=0)
        workers.unreachable.clear()
        assert await port_for(USERS[0]) == make_url(database_url).port  # the role refused
        assert node in workers.unreachable
        await workers.pools[node].close()
        workers.pools[node] = await db.DriverPool.open(pool.connector.at(*node), size=1)
        await workers.refresh()
        assert node not in workers.unreachable
        assert await port_for(USERS[0]) == node[1]
    finally:
        await workers.close()
        await pool.close()


_USER_IDS = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(_USER_IDS, max_size=50))
def test_a_users_worker_is_found_by_the_hash_citus_places_rows_by(
    database_url: str, values: list[str]
) -> None:
    async def hashed() -> list[int]:
        connection = await asyncpg.connect(database_url)
        try:
            rows = await connection.fetch(
                "SELECT worker_hash(v::varchar) AS h"
                " FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n",
                values,
            )
            return [row["h"] for row in rows]
        finally:
            await connection.close()

    assert asyncio.run(hashed()) == [shard_hash(value) for value in values]


async def test_a_cluster_not_migrated_since_the_upgrade_appends_by_the_one_statement(
    citus: Cluster,
) -> None:
    """Without the routed append (`sessionary migrate` not yet run), appends take the one
    statement the coordinator plans, and are stored all the same."""
    url = await asyncio.to_thread(citus.create_database)
    try:
        await asyncio.to_thread(db.upgrade, url)
        await asyncio.to_thread(run, url, f"DROP FUNCTION {ROUTED_SIGNATURE}")
        application = create_app(Settings(database_url=url, auth=False, sweep_interval=86_400))
        async with application.router.lifespan_context(application):
            assert not application.state.services.events.group_commit.routed
            transport = httpx.ASGITransport(application)
            async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
                await create_session(client, sessionId="s")
                for _ in range(3):
                    assert (await append(client, "s", {"author": "user"})).status_code == 201
                events = (await client.get(session_url("s"))).json()["events"]
                assert [event["seq"] for event in events] == [1, 2, 3]
    finally:
        await asyncio.to_thread(citus.drop_database, make_url(url).database or "")


async def test_a_cluster_sharded_before_the_version_check_refuses_writes_past_it(
    citus: Cluster,
) -> None:
    """Migration 0021 on a cluster already sharded puts the check on every shard of
    `sessions`: a session at the last version refuses the append routed whole to its user's
    worker (`sessionary_append`) and the one statement alike, and writes nothing."""
    url = await asyncio.to_thread(citus.create_database)
    try:
        await asyncio.to_thread(db.upgrade, url, "0020")
        await asyncio.to_thread(db.upgrade, url)
        checked = await asyncio.to_thread(
            run,
            url,
            "SELECT result FROM run_command_on_placements('sessions', $$SELECT count(*) FROM"
            " pg_constraint WHERE conrelid = '%s'::regclass AND convalidated"
            " AND conname LIKE 'ck_sessions_version_max%%'$$)",
        )
        assert checked and {row["result"] for row in checked} == {"1"}
        application = create_app(Settings(database_url=url, auth=False, sweep_interval=86_400))
        async with application.router.lifespan_context(application):
            assert application.state.services.events.group_commit.routed
            transport = httpx.ASGITransport(application)
            async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
                await full_session(client)
                before = await snapshot(client)
                for delta in ({"k": 1}, {"app:k": 1}):  # routed; the one statement
                    event = {"author": "user", "actions": {"stateDelta": delta}}
                    refused = await append(client, "full", event)
                    assert_problem(refused, 409, "version_exhausted")
                assert await snapshot(client) == before
    finally:
        await asyncio.to_thread(citus.drop_database, make_url(url).database or "")


async def test_appends_to_different_users_never_share_a_statement(app: FastAPI) -> None:
    """Group commit would put sessions of several shards into one statement: on Citus every
    append is written alone (tests/test_group_commit.py covers grouping on one node)."""
    assert app.state.services.events.group_commit.lanes is None


USERS = [f"user-{n}" for n in range(8)]  # over 8 shards on 2 workers: both hold some


async def test_work_across_users_reaches_every_worker_and_misses_no_one(
    logged: tuple[httpx.AsyncClient, list[Statement]], database_url: str
) -> None:
    client, statements = logged
    homes = {await worker_of_user(database_url, user) for user in USERS}
    assert len(homes) == 2
    for user in USERS:
        await create_session(client, user=user, sessionId="s")
        event = {
            "author": "agent",
            "content": {"parts": [{"text": f"hello from {user}"}]},
            "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1},
        }
        assert (await append(client, "s", event, user=user)).status_code == 201
    across: dict[str, tuple[str, dict[str, Any], Callable[[Any], Any]]] = {
        "app's sessions": (
            f"/apps/{APP}/sessions",
            {"pageSize": 100},
            lambda body: sorted(s["userId"] for s in body["sessions"]),
        ),
        "app's users": (
            f"/apps/{APP}/users",
            {},
            lambda body: sorted(user["userId"] for user in body["users"]),
        ),
        "app's usage": (
            f"/apps/{APP}/usage",
            {},
            lambda body: sorted(user["userId"] for user in body["users"]),
        ),
        "search": (
            f"/apps/{APP}/search",
            {"q": "hello"},
            lambda body: sorted(hit["userId"] for hit in body["hits"]),
        ),
    }
    for name, (path, params, users) in across.items():
        statements.clear()
        response = await client.get(path, params=params)
        assert response.status_code == 200, (name, response.text)
        assert users(response.json()) == USERS, name
        reached = {node for nodes in await workers_of(database_url, statements) for node in nodes}
        assert all(any(home in node for node in reached) for home in homes), (name, reached)
    apps = (await client.get("/apps")).json()["apps"]
    assert [app["appName"] for app in apps] == [APP]


# --- a single-node database taken over --------------------------------------------------------


async def test_migrate_shards_a_single_node_database_with_its_data(citus: Cluster) -> None:
    """The way over: the database's server becomes the coordinator (Citus installed and
    preloaded, the workers added), then `sessionary migrate` moves every row into shards."""
    url = await asyncio.to_thread(citus.create_database, sharded=False)
    try:
        await asyncio.to_thread(sessionary, url, "migrate")
        settings = Settings(database_url=url, auth=False, sweep_interval=86_400)
        async with client_of(settings) as client:
            for user in USERS:
                await create_session(client, user=user, sessionId="s", state={"user:n": user})
                event = {"author": "user", "actions": {"stateDelta": {"app:seen": user, "k": 1}}}
                assert (await append(client, "s", event, user=user)).status_code == 201
            before = [(await client.get(session_url("s", user=user))).json() for user in USERS]

        await asyncio.to_thread(citus.shard, make_url(url).database or "")
        migrated = await asyncio.to_thread(sessionary, url, "migrate")
        assert migrated.returncode == 0, migrated.stderr
        assert migrated.stdout.decode().splitlines()[-1] == (
            f"distributed on Citus by {SHARD_KEY}: {', '.join([*REFERENCE, *CO_LOCATED])}"
        )
        async with client_of(settings) as client:
            after = [(await client.get(session_url("s", user=user))).json() for user in USERS]
            assert after == before
            event = {"author": "user", "invocationId": "later"}
            assert (await append(client, "s", event, user=USERS[0])).status_code == 201
        rows = await asyncio.to_thread(
            run,
            url,
            "SELECT nodeport, count(*) AS n FROM citus_shards"
            " WHERE table_name = 'events'::regclass AND shard_size > 0 GROUP BY nodeport",
        )
        assert len(rows) == 2  # both workers hold events
    finally:
        await asyncio.to_thread(citus.drop_database, make_url(url).database or "")


# --- a node holding shards itself --------------------------------------------------------------


async def test_a_connection_to_a_node_holding_shards_keeps_its_memory(citus: Cluster) -> None:
    """Citus on one node, its coordinator holding the shards (as a deployment starts out): the
    one connection of a server that appends and reads again and again keeps its memory. Citus
    13.2 plans a prepared statement on a node holding its shard anew on every run and keeps
    every such plan, ~250 kB an append and its read, unless each run is planned for its values."""
    url = await asyncio.to_thread(citus.create_database, sharded=False)
    port = citus.coordinator.port
    try:
        await asyncio.to_thread(
            run,
            url,
            "CREATE EXTENSION citus",
            f"SELECT citus_set_coordinator_host('127.0.0.1', {port})",
            f"SELECT citus_set_node_property('127.0.0.1', {port}, 'shouldhaveshards', true)",
        )
        migrated = await asyncio.to_thread(sessionary, url, "migrate")
        assert migrated.returncode == 0, migrated.stderr
        settings = Settings(database_url=url, auth=False, sweep_interval=86_400, db_pool_size=1)
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(application)
            async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:

                async def turns(count: int) -> None:
                    for _ in range(count):
                        assert (await append(client, "s1", {"author": "user"})).status_code == 201
                        assert (await client.get(S)).status_code == 200

                async def memory() -> int:
                    async with application.state.pool.connection() as connection:
                        used: int = await connection.fetchval(
                            "SELECT sum(total_bytes) FROM pg_backend_memory_contexts"
                        )
                        return used

                await create_session(client, sessionId="s1")
                await turns(20)  # the statements prepared, their plans made, caches filled
                before = await memory()
                await turns(200)
                grown = await memory() - before
        assert grown < 5_000_000, f"{grown:,} bytes more after 200 appends and reads"
    finally:
        await asyncio.to_thread(citus.drop_database, make_url(url).database or "")


# --- rebalancing under load -------------------------------------------------------------------


async def test_a_rebalance_onto_a_new_worker_under_load_loses_nothing() -> None:
    """Appends and reads go on while a third worker joins and Citus's rebalancer moves shards
    onto it: every acknowledged event is stored once, seqs have no gap, every read answers."""
    with citus_cluster(workers=2) as cluster:
        url = await asyncio.to_thread(cluster.create_database)
        await asyncio.to_thread(db.upgrade, url)
        server, base_url = await asyncio.to_thread(start_server, url, "--workers", "2")
        acknowledged: dict[str, list[str]] = {user: [] for user in USERS}
        reads: list[int] = []
        moving = True

        async def write(http: httpx.AsyncClient, user: str) -> None:
            n = 0
            while moving or n < 5:
                event = {"id": f"{user}-{n}", "author": "user", "invocationId": f"i{n}"}
                while True:  # an unknown outcome is retried with the same id: stored once
                    try:
                        response = await append(http, "s", event, user=user)
                    except httpx.TransportError:
                        continue
                    if response.status_code < 500:
                        break
                assert response.status_code in (200, 201), response.text
                acknowledged[user].append(event["id"])
                n += 1

        async def read(http: httpx.AsyncClient) -> None:
            while moving:
                for user in USERS:
                    response = await http.get(
                        session_url("s", user=user), params={"numRecentEvents": 1}
                    )
                    reads.append(response.status_code)

        def rebalance() -> list[asyncpg.Record]:
            cluster.add_worker()
            return run(
                url,
                "SELECT rebalance_table_shards(shard_transfer_mode => 'force_logical')",
                "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = 'events'::regclass",
            )

        try:
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
                for user in USERS:
                    await create_session(http, user=user, sessionId="s")
                load = [asyncio.create_task(write(http, user)) for user in USERS]
                load += [asyncio.create_task(read(http)) for _ in range(2)]
                await asyncio.sleep(2)
                before = sum(map(len, acknowledged.values()))
                ports = await asyncio.to_thread(rebalance)
                during = sum(map(len, acknowledged.values())) - before
                await asyncio.sleep(2)
                moving = False
                await asyncio.gather(*load)
                assert {row["nodeport"] for row in ports} == {w.port for w in cluster.workers}
                assert during > 0, "no append was answered while shards moved"
                assert reads and set(reads) == {200}
                for user, ids in acknowledged.items():
                    stored = (await http.get(session_url("s", user=user))).json()["events"]
                    assert [event["id"] for event in stored] == ids
                    assert [event["seq"] for event in stored] == list(range(1, len(ids) + 1))
        finally:
            stop_server(server)


# --- a worker's failover ----------------------------------------------------------------------


async def test_a_worker_fails_over_to_its_standby_under_load_and_loses_nothing() -> None:
    """The worker holding the user's shards, with a synchronous streaming standby, dies under 8
    writers; the standby is promoted and put in its place (`citus_update_node`). Meanwhile the
    API answers 503, never 500 (`write_until`), and then goes on by itself: every acknowledged
    event is stored once, seqs without a gap."""
    with citus_cluster(workers=2) as cluster:
        url = await asyncio.to_thread(cluster.create_database)
        await asyncio.to_thread(db.upgrade, url)
        home = await worker_of_user(url, USER)
        [worker] = [w for w in cluster.workers if f"port={w.port} " == home]
        assert worker.port is not None
        await asyncio.to_thread(
            run,
            worker.dsn(),
            "ALTER SYSTEM SET synchronous_standby_names = '*'",
            "SELECT pg_reload_conf()",
        )
        standby = Standby(
            cluster.folder / "standby", worker.port, bin_dir=PG_BIN, options=TEST_OPTIONS
        )
        await asyncio.to_thread(standby.start)
        server, base_url = await asyncio.to_thread(start_server, url, "--workers", "2")
        try:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
                await create_session(http, sessionId="s")
                acknowledged: set[str] = set()
                stop = asyncio.Event()
                writing = asyncio.create_task(write_until(base_url, stop, acknowledged))
                await asyncio.sleep(1.5)
                before = len(acknowledged)

                def fail_over() -> None:
                    worker.stop("immediate")  # the worker dies
                    standby.promote()
                    run(
                        url,
                        "SELECT citus_update_node(nodeid, '127.0.0.1', "
                        f"{standby.port}) FROM pg_dist_node WHERE nodeport = {worker.port}",
                    )

                await asyncio.to_thread(fail_over)
                promoted = len(acknowledged)
                await asyncio.sleep(3)
                stop.set()
                assert await writing > 0  # the switch was seen: 503s, never a 500
                assert before > 50  # appends ran before the failover
                assert len(acknowledged) > promoted + 50  # and after it, through the same server
                events = (await http.get(session_url("s"))).json()["events"]
                stored = [event["id"] for event in events]
                assert acknowledged <= set(stored), acknowledged - set(stored)
                assert len(stored) == len(set(stored))
                assert [event["seq"] for event in events] == list(range(1, len(stored) + 1))
        finally:
            await asyncio.to_thread(stop_server, server)
            await asyncio.to_thread(standby.stop, "immediate")
