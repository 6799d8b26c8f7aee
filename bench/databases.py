"""The bench databases: one per system on the same server, and set-based seeding.

Sessionary and the Floor each get a database built by `sessionary migrate`, so the Floor runs
its minimal SQL on exactly Sessionary's tables and indexes; ADK gets its own database, where
`DatabaseSessionService` creates its schema (same table names, so they cannot share one).

Large data (the 2,000-event session, the 10,000 listed sessions, S6's million events) is not
written through any API: one `INSERT … SELECT FROM generate_series` per chunk builds every
row inside PostgreSQL from the same event template the timed workload uses. Loading a million
events that way takes about a minute per database instead of an hour through ADK.
"""

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import asyncpg
from google.adk.events import Event
from sqlalchemy.engine import make_url

from app.domain import SessionKey
from app.rules.context import estimate_tokens, facts
from bench import workload

Schema = Literal["sessionary", "adk"]


@dataclass(frozen=True)
class Databases:
    """DSNs (postgresql://) of the bench databases on the server of DATABASE_URL: one per
    system, and an empty one that S14 imports the ADK database into."""

    admin: str
    sessionary: str
    adk: str
    floor: str
    adopted: str

    @classmethod
    def on(cls, database_url: str, prefix: str) -> "Databases":
        url = make_url(database_url.replace("postgres://", "postgresql://", 1)).set(
            drivername="postgresql"
        )

        def named(name: str) -> str:
            return url.set(database=name).render_as_string(hide_password=False)

        return cls(
            admin=url.render_as_string(hide_password=False),
            sessionary=named(prefix),
            adk=named(f"{prefix}_adk"),
            floor=named(f"{prefix}_floor"),
            adopted=named(f"{prefix}_adopted"),
        )

    def all(self) -> Iterator[str]:
        yield from (self.sessionary, self.adk, self.floor, self.adopted)


def asyncpg_url(dsn: str) -> str:
    """`dsn` as SQLAlchemy takes it with asyncpg, the driver ADK's and the Agents SDK's
    SQLAlchemy sessions are given."""
    return make_url(dsn).set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def database_name(dsn: str) -> str:
    name = make_url(dsn).database
    assert name, f"no database in {dsn}"
    return name


async def recreate(databases: Databases) -> None:
    """Drop and create the bench's own databases (never the one DATABASE_URL names)."""
    admin = await asyncpg.connect(databases.admin)
    try:
        for dsn in databases.all():
            name = database_name(dsn)
            if name == database_name(databases.admin):
                raise SystemExit(f"refusing to drop {name!r}: it is the DATABASE_URL database")
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


def migrate(dsn: str) -> None:
    """The schema users get: `sessionary migrate` (Alembic), run as its own command."""
    sessionary = Path(sys.executable).parent / "sessionary"
    subprocess.run(
        [str(sessionary), "migrate"], check=True, env=_env(DATABASE_URL=dsn), capture_output=True
    )


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _event_json(schema: Schema) -> str:
    """SQL turning the template into one row's event (id, turn, timestamp substituted)."""
    tpl = workload.template(wire=schema == "sessionary").replace("'", "''")
    return (
        f"replace(replace(replace(replace('{tpl}', "
        f"'\"{workload.ID_MARK}\"', to_json(e_id)::text), "
        f"'{workload.TURN_MARK}', n::text), "
        f"'{workload.TIME_MARK}', ts::text), "
        f"'\"{workload.INVOCATION_MARK}\"', to_json('inv-' || (n / 2))::text)::jsonb"
    )


# Row generator shared by both schemas: session s of the chunk, event n of the session.
_ROWS = """
    FROM generate_series($2::int, $3::int) AS s,
         LATERAL (SELECT $4::text || (s % $5::int) AS user_id, $6::text || s AS session_id) AS k,
         generate_series(1, $7::int) AS n,
         LATERAL (SELECT k.session_id || '-e' || n AS e_id,
                         $8::float8 + s + n * 0.001 AS ts) AS v
"""

_SESSIONS_SQL: dict[Schema, str] = {
    "sessionary": """
        INSERT INTO sessions (app_name, user_id, id, state, version, create_time, update_time,
                              update_second)
        SELECT $1, $4::text || (s % $5::int), $6::text || s,
               jsonb_build_object('turn', $7::int, 'last_city', 'Oslo'), $7::int,
               to_timestamp($8::float8), to_timestamp($8::float8 + s + $7::int * 0.001),
               floor(extract(epoch FROM to_timestamp($8::float8 + s + $7::int * 0.001)))
        FROM generate_series($2::int, $3::int) AS s
    """,
    "adk": """
        INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
        SELECT $1, $4::text || (s % $5::int), $6::text || s,
               jsonb_build_object('turn', $7::int, 'last_city', 'Oslo'),
               to_timestamp($8::float8) AT TIME ZONE 'UTC',
               to_timestamp($8::float8 + s + $7::int * 0.001) AT TIME ZONE 'UTC'
        FROM generate_series($2::int, $3::int) AS s
    """,
}


def _events_sql(schema: Schema) -> str:
    if schema == "sessionary":
        return f"""
            INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author,
                                timestamp, request_hash, event)
            SELECT $1, k.user_id, k.session_id, n, e_id, 'inv-' || (n / 2), 'weather_agent',
                   ts, sha256(convert_to(e_id, 'UTF8')),
                   {_event_json(schema)} || jsonb_build_object('seq', n)
            {_ROWS}
        """
    return f"""
        INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp,
                            event_data)
        SELECT e_id, $1, k.user_id, k.session_id, 'inv-' || (n / 2),
               to_timestamp(ts) AT TIME ZONE 'UTC', {_event_json(schema)}
        {_ROWS}
    """


# ADK's state tables have no server defaults for their times; Sessionary's do.
_SHARED_STATE_SQL: dict[Schema, tuple[str, str]] = {
    "sessionary": (
        "INSERT INTO app_states (app_name, state) VALUES ($1, '{}') ON CONFLICT DO NOTHING",
        "INSERT INTO user_states (app_name, user_id, state) "
        "SELECT $1, $2::text || u, '{}' FROM generate_series(0, $3::int - 1) AS u "
        "ON CONFLICT DO NOTHING",
    ),
    "adk": (
        "INSERT INTO app_states (app_name, state, update_time) "
        "VALUES ($1, '{}', now() AT TIME ZONE 'UTC') ON CONFLICT DO NOTHING",
        "INSERT INTO user_states (app_name, user_id, state, update_time) "
        "SELECT $1, $2::text || u, '{}', now() AT TIME ZONE 'UTC' "
        "FROM generate_series(0, $3::int - 1) AS u ON CONFLICT DO NOTHING",
    ),
}


async def seed(
    dsn: str,
    schema: Schema,
    *,
    app: str,
    sessions: int,
    events_per_session: int,
    users: int,
    user_prefix: str = "u",
    session_prefix: str = "s",
    chunk_events: int = 100_000,
) -> None:
    """Sessions `<session_prefix>1..N` of users `<user_prefix>0..users-1`, with their events.

    Chunked so each statement stays a few seconds long and one transaction never holds a
    million uncommitted rows.
    """
    connection = await asyncpg.connect(dsn)
    try:
        app_sql, user_sql = _SHARED_STATE_SQL[schema]
        await connection.execute(app_sql, app)
        await connection.execute(user_sql, app, user_prefix, users)
        per_chunk = max(1, chunk_events // max(1, events_per_session))
        base = workload.BASE_TIME
        for first in range(1, sessions + 1, per_chunk):
            last = min(sessions, first + per_chunk - 1)
            async with connection.transaction():
                chunk = (app, first, last, user_prefix, users, session_prefix)
                await connection.execute(_SESSIONS_SQL[schema], *chunk, events_per_session, base)
                if events_per_session:
                    await connection.execute(_events_sql(schema), *chunk, events_per_session, base)
        # VACUUM too: after a bulk load autovacuum would otherwise vacuum the new rows while
        # whichever system runs first is being measured.
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


def seeded_key(
    app: str, number: int, *, users: int, user_prefix: str = "u", session_prefix: str = "s"
) -> SessionKey:
    """The key `seed` gave session number `number`."""
    return SessionKey(app, f"{user_prefix}{number % users}", f"{session_prefix}{number}")


async def scan_counts(dsn: str) -> dict[str, tuple[int, int]]:
    """(sequential scans, index scans) so far on sessions and events: an index-use check."""
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT relname, seq_scan, coalesce(idx_scan, 0) AS idx_scan "
            "FROM pg_stat_user_tables WHERE relname IN ('sessions', 'events')"
        )
    finally:
        await connection.close()
    return {row["relname"]: (row["seq_scan"], row["idx_scan"]) for row in rows}


async def hot_updates(dsn: str) -> tuple[int, int, str]:
    """Updates of `sessions` so far, how many of them were HOT (no new index entries), and
    whether the server runs autovacuum: what S7's trend depends on."""
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'sessions'"
        )
        autovacuum: str = await connection.fetchval("SHOW autovacuum")
    finally:
        await connection.close()
    return row["n_tup_upd"], row["n_tup_hot_upd"], autovacuum


async def checkpoint(dsn: str) -> bool:
    """Write the loaded data out now. Otherwise the checkpoint after a large load runs
    (writing hundreds of MB) while the first system after it is measured, and the systems
    after it are not. Needs superuser or pg_checkpoint; False if refused."""
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("CHECKPOINT")
    except asyncpg.InsufficientPrivilegeError:
        return False
    finally:
        await connection.close()
    return True


async def seed_conversation(dsn: str, schema: Schema, key: SessionKey, events: list[Event]) -> None:
    """One session holding `events` (S9), written as rows the way each system stores them:
    Sessionary the camelCase JSON an ADK client sends, with its seq and the facts the context
    view reads (as an append stores them); ADK its own dump."""
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            await connection.execute(_SHARED_STATE_SQL[schema][0], key.app_name)
            await connection.execute(_SHARED_STATE_SQL[schema][1], key.app_name, key.user_id, 1)
            last = events[-1].timestamp
            if schema == "sessionary":
                await connection.execute(
                    "INSERT INTO sessions (app_name, user_id, id, version, update_time, "
                    "update_second) VALUES ($1, $2, $3, $4, to_timestamp($5), floor($5))",
                    *key.columns().values(),
                    len(events),
                    last,
                )
                rows = []
                for seq, event in enumerate(events, start=1):
                    wire = workload.dumped(event, wire=True)
                    told = facts(wire, estimate_tokens)
                    rows.append(
                        (
                            *key.columns().values(),
                            seq,
                            event.id,
                            event.invocation_id,
                            event.author,
                            event.timestamp,
                            hashlib.sha256(event.id.encode()).digest(),
                            json.dumps({**wire, "seq": seq}),
                            told.tokens,
                            list(told.calls),
                            list(told.responses),
                        )
                    )
                await connection.executemany(
                    "INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, "
                    "author, timestamp, request_hash, event, tokens, calls, responses) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13)",
                    rows,
                )
            else:
                await connection.execute(
                    "INSERT INTO sessions (app_name, user_id, id, state, create_time, "
                    "update_time) VALUES ($1, $2, $3, '{}', now() AT TIME ZONE 'UTC', "
                    "to_timestamp($4) AT TIME ZONE 'UTC')",
                    *key.columns().values(),
                    last,
                )
                rows = [
                    (
                        event.id,
                        *key.columns().values(),
                        event.invocation_id,
                        event.timestamp,
                        json.dumps(workload.dumped(event, wire=False)),
                    )
                    for event in events
                ]
                await connection.executemany(
                    "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, "
                    "timestamp, event_data) "
                    "VALUES ($1, $2, $3, $4, $5, to_timestamp($6) AT TIME ZONE 'UTC', $7::jsonb)",
                    rows,
                )
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


# S11's words: `word1` … `word<vocabulary>`, drawn so that a word's rank decides how common it
# is (the cube of a uniform draw: word1 is in about a third of events, word400 in 0.4%).
_SEARCH_SQL = """
    INSERT INTO events (app_name, user_id, session_id, seq, id, timestamp, request_hash, event,
                        search)
    SELECT $1, 'u' || (s % 100), 's' || s, n, 'e' || s || '-' || n, at.timestamp, '\\x00',
           -- As the service stores an event: with its id, timestamp and seq.
           jsonb_build_object('id', 'e' || s || '-' || n, 'author', 'user',
                              'timestamp', at.timestamp, 'seq', n,
                              'content', jsonb_build_object('role', 'user', 'parts',
                                  jsonb_build_array(jsonb_build_object('text', said.text)))),
           to_tsvector(CAST($7 AS regconfig), said.text)
    FROM generate_series($2::int, $3::int) AS s,
         generate_series(1, $4::int) AS n,
         -- One event a second, session after session: written in time order, as a log is.
         LATERAL (SELECT $5::float8 + (s - 1) * $4::int + n AS timestamp) AS at,
         -- The WHERE names the row, so that its words are drawn anew for each.
         LATERAL (SELECT string_agg('word' || (1 + floor(power(random(), 3) * $6::int)), ' ')
                  AS text FROM generate_series(1, 12) AS w WHERE n > 0) AS said
"""


async def seed_search(
    dsn: str, app: str, *, sessions: int, events_per_session: int, vocabulary: int, config: str
) -> None:
    """Sessions `s1..N` of users `u0..u99`, each with events of twelve words drawn from the
    vocabulary, indexed for search as Sessionary indexes them."""
    connection = await asyncpg.connect(dsn)
    try:
        per_chunk = max(1, 100_000 // events_per_session)
        for first in range(1, sessions + 1, per_chunk):
            last = min(sessions, first + per_chunk - 1)
            async with connection.transaction():
                chunk = (app, first, last, "u", 100, "s")
                await connection.execute(
                    _SESSIONS_SQL["sessionary"], *chunk, events_per_session, workload.BASE_TIME
                )
                await connection.execute(
                    _SEARCH_SQL,
                    app,
                    first,
                    last,
                    events_per_session,
                    workload.BASE_TIME,
                    vocabulary,
                    config,
                )
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()


async def search_index_bytes(dsn: str) -> int:
    connection = await asyncpg.connect(dsn)
    try:
        size: int = await connection.fetchval("SELECT pg_relation_size('ix_events_search')")
    finally:
        await connection.close()
    return size
