"""SQL for live streams: announcing committed writes (`NOTIFY`), listening for them, and
reading what a stream sends.

A notification carries keys and a version only, never data: a stream reads events from the
table, so what it sends is what is committed, whichever worker or replica wrote it.
"""

import json
from typing import Any

import asyncpg
from sqlalchemy import text

from app.db import DriverStatement
from app.domain import Change, SessionKey
from app.models import LIVE_SQL

CHANNEL = "sessionary"
# PostgreSQL refuses a payload of 8000 bytes or more; a change that would not fit is sent as
# a `resync` (read the session again), which always does (keys are at most 128 characters).
MAX_PAYLOAD = 7900


def payload(change: Change) -> str:
    fields: dict[str, Any] = {
        "k": change.kind,
        "a": change.key.app_name,
        "u": change.key.user_id,
        "s": change.key.session_id,
        "v": change.version,
    }
    if change.parent_id is not None:
        fields["p"] = change.parent_id
    if change.detail:
        fields["d"] = change.detail
    encoded = json.dumps(fields, separators=(",", ":"))
    if len(encoded.encode()) > MAX_PAYLOAD:
        return payload(Change("resync", change.key, change.version, change.parent_id))
    return encoded


def change_of(payload: str) -> Change:
    fields = json.loads(payload)
    return Change(
        fields["k"],
        SessionKey(fields["a"], fields["u"], fields["s"]),
        fields["v"],
        fields.get("p"),
        fields.get("d", {}),
    )


async def announce(connection: asyncpg.Connection, change: Change) -> None:
    """Tell every worker, when the caller's transaction commits (never before, never if it
    rolls back)."""
    await connection.execute("SELECT pg_notify($1, $2)", CHANNEL, payload(change))


# Many changes in one transaction of their own, committed without waiting for the disk: it
# holds PostgreSQL's notification lock only briefly, and a notification lost in a crash
# costs a stream nothing it does not catch up on (`Feed`).
ANNOUNCE_MANY = (
    "SELECT set_config('synchronous_commit', 'off', true), "
    "(SELECT count(pg_notify($1, payload)) FROM unnest($2::text[]) AS payload)"
)


async def announce_many(connection: asyncpg.Connection, changes: list[Change]) -> None:
    """Tell every worker of changes already committed."""
    await connection.execute(ANNOUNCE_MANY, CHANNEL, [payload(change) for change in changes])


# The session's version and status, and its events in a seq range, as the UTF-8 JSON
# PostgreSQL renders: the first row carries the session (NULL seq when no event is in the
# range); no row when there is no (live) session.
EVENTS_BETWEEN = DriverStatement.compile(
    text(
        f"""
SELECT s.version, s.status, s.outcome, e.seq, convert_to(CAST(e.event AS text), 'UTF8') AS event
FROM sessions s LEFT JOIN LATERAL (
    SELECT seq, event FROM events
    WHERE app_name = s.app_name AND user_id = s.user_id AND session_id = s.id
      AND seq > :after_seq AND seq <= :until_seq
    ORDER BY seq LIMIT :limit
) e ON true
WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
  AND {LIVE_SQL.replace("expire_time", "s.expire_time")}
ORDER BY e.seq
"""
    )
)


async def events_between(
    connection: asyncpg.Connection, key: SessionKey, after_seq: int, until_seq: int, limit: int
) -> tuple[tuple[int, str, str | None], list[tuple[int, bytes]]] | None:
    """((version, status, outcome), up to `limit` events with seq in (after, until]), or None
    if the session is gone."""
    rows = await connection.fetch(
        EVENTS_BETWEEN.sql,
        *EVENTS_BETWEEN.arguments(
            {**key.columns(), "after_seq": after_seq, "until_seq": until_seq, "limit": limit}
        ),
    )
    if not rows:
        return None
    first = rows[0]
    events = [(row["seq"], row["event"]) for row in rows if row["seq"] is not None]
    return (first["version"], first["status"], first["outcome"]), events


EVENT_AT = DriverStatement.compile(
    text(
        "SELECT convert_to(CAST(event AS text), 'UTF8') FROM events "
        "WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id "
        "AND seq = :seq"
    )
)


async def event_at(connection: asyncpg.Connection, key: SessionKey, seq: int) -> bytes | None:
    """The event at `seq` as UTF-8 JSON, if it is (still) there."""
    found: bytes | None = await connection.fetchval(
        EVENT_AT.sql, *EVENT_AT.arguments({**key.columns(), "seq": seq})
    )
    return found


async def listen(connection: asyncpg.Connection, callback: Any) -> None:
    """Hear every change announced, on a connection of its own (one per worker)."""
    await connection.add_listener(CHANNEL, callback)
