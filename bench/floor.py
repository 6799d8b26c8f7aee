"""The Floor: the least any service could do for the same work, in plain asyncpg.

It runs on Sessionary's own tables (a database built by `sessionary migrate`) and writes the
same rows, but with hand-written SQL and nothing around it: no HTTP, no validation, no ORM.
An append is one statement, hence one transaction and one round trip: bump the version and
merge the session state, insert the event at the new seq. Reads fetch the stored JSONB as
text and never decode it. Sessionary cannot beat this; the question is how close it gets.
"""

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from app.domain import SessionKey
from bench.scenarios import median_call
from bench.systems import PageToken
from bench.workload import EventSpec, wire_event

APPEND = """
WITH bump AS (
    UPDATE sessions
    SET version = version + $4, state = state || $5::jsonb, update_time = to_timestamp($6),
        update_second = floor(extract(epoch FROM to_timestamp($6)))
    WHERE app_name = $1 AND user_id = $2 AND id = $3
    RETURNING version - $4 AS base
)
INSERT INTO events (app_name, user_id, session_id, seq, id, invocation_id, author, timestamp,
                    request_hash, event)
SELECT $1, $2, $3, bump.base + e.n, e.id, e.invocation_id, e.author, e.ts, e.hash,
       e.doc::jsonb || jsonb_build_object('seq', bump.base + e.n)
FROM bump, unnest($7::text[], $8::text[], $9::text[], $10::float8[], $11::bytea[], $12::text[])
     WITH ORDINALITY AS e(id, invocation_id, author, ts, hash, doc, n)
"""

READ_SESSION = """
SELECT s.state, s.version, s.update_time, a.state AS app_state, u.state AS user_state
FROM sessions s
LEFT JOIN app_states a ON a.app_name = s.app_name
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3
"""
READ_ALL = """
SELECT event FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY seq
"""
READ_RECENT = """
SELECT event FROM (
    SELECT seq, event FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
    ORDER BY seq DESC LIMIT $4
) recent ORDER BY seq
"""
# S3's copy floor: the events as PostgreSQL renders their stored JSON, as bytes, in order.
COPY_READ = """
SELECT convert_to(CAST(event AS text), 'UTF8') FROM events
WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY seq
"""
LIST = """
SELECT s.user_id, s.id, s.state, s.version, s.create_time, s.update_time,
       a.state AS app_state, u.state AS user_state
FROM sessions s
LEFT JOIN app_states a ON a.app_name = s.app_name
LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
WHERE s.app_name = $1 {after}
ORDER BY s.update_time, s.user_id, s.id
LIMIT $2
"""
LIST_FIRST = LIST.format(after="")
LIST_AFTER = LIST.format(after="AND (s.update_time, s.user_id, s.id) > ($3, $4, $5)")


def _arguments(key: SessionKey, events: Sequence[EventSpec]) -> tuple[Any, ...]:
    documents = [wire_event(event) for event in events]
    delta: dict[str, Any] = {}
    for document in documents:
        delta.update(document["actions"]["stateDelta"])
    texts = [json.dumps(document) for document in documents]
    return (
        key.app_name,
        key.user_id,
        key.session_id,
        len(documents),
        json.dumps(delta),
        documents[-1]["timestamp"],
        [document["id"] for document in documents],
        [document["invocationId"] for document in documents],
        [document["author"] for document in documents],
        [document["timestamp"] for document in documents],
        [hashlib.sha256(text.encode()).digest() for text in texts],
        texts,
    )


class FloorLane:
    def __init__(self, connection: asyncpg.Connection) -> None:
        self.connection = connection

    async def append(self, session: Any, event: tuple[Any, ...]) -> None:
        await self.connection.execute(APPEND, *event)

    async def append_batch(self, session: Any, events: tuple[Any, ...]) -> None:
        await self.connection.execute(APPEND, *events)

    async def read(self, key: SessionKey, recent: int | None) -> int:
        names = (key.app_name, key.user_id, key.session_id)
        # Two statements, no transaction around them: the fewest round trips for this read.
        session = await self.connection.fetchrow(READ_SESSION, *names)
        assert session is not None, key
        if recent is None:
            events = await self.connection.fetch(READ_ALL, *names)
        else:
            events = await self.connection.fetch(READ_RECENT, *names, recent)
        return len(events)

    async def list_page(self, app: str, page_size: int, token: PageToken) -> tuple[int, PageToken]:
        if token is None:
            rows = await self.connection.fetch(LIST_FIRST, app, page_size + 1)
        else:
            rows = await self.connection.fetch(LIST_AFTER, app, page_size + 1, *token)
        if len(rows) <= page_size:
            return len(rows), None
        last = rows[page_size - 1]
        return page_size, (last["update_time"], last["user_id"], last["id"])


class Floor:
    name = "Floor"

    def __init__(self, dsn: str, pool: int) -> None:
        self.dsn = dsn
        self.size = pool
        self.pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        self.pool = await asyncpg.create_pool(self.dsn, min_size=self.size, max_size=self.size)

    async def create_sessions(self, keys: Sequence[SessionKey]) -> list[Any]:
        assert self.pool is not None
        await self.pool.executemany(
            "INSERT INTO sessions (app_name, user_id, id, update_second) "
            "VALUES ($1, $2, $3, floor(extract(epoch FROM now())))",
            [(key.app_name, key.user_id, key.session_id) for key in keys],
        )
        return list(keys)

    def encode(self, key: SessionKey, events: Sequence[EventSpec]) -> list[tuple[Any, ...]]:
        return [_arguments(key, [event]) for event in events]

    def encode_batch(self, key: SessionKey, events: Sequence[EventSpec]) -> tuple[Any, ...]:
        return _arguments(key, events)

    @asynccontextmanager
    async def lane(self) -> AsyncIterator[FloorLane]:
        assert self.pool is not None
        async with self.pool.acquire() as connection:
            yield FloorLane(connection)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()


async def copy_read_ms(dsn: str, key: SessionKey, events: int, repeat: int) -> float:
    """S3's copy floor: median ms of fetching a session's events over one connection as the
    JSON text PostgreSQL holds and joining them into one body, nothing parsed or converted
    in Python: what any read of the whole session must at least do."""
    connection = await asyncpg.connect(dsn)
    try:

        async def call() -> None:
            rows = await connection.fetch(COPY_READ, key.app_name, key.user_id, key.session_id)
            body = b"[" + b",".join(row[0] for row in rows) + b"]"
            if body.count(b'"seq":') != events:
                raise AssertionError(f"the copy floor read the wrong events of {key}")

        return await median_call(repeat, call)
    finally:
        await connection.close()
