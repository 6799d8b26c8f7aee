"""SQL for the context view: the marked events; then, newest first, a page at a time, the
other events, each with the facts stored beside it (token estimate, call and response ids)
and as the UTF-8 JSON PostgreSQL renders (never decoded unless the view changes it), with
what rewinds drop and compactions cover left out in the query; and the calls and responses
the view must find beyond its pages.

Fixed statements, sent on the driver connection: prepared once per connection, so PostgreSQL
plans each once, not on every view (planning a statement on `events` is costly). What the
plan decides goes in as parameters: the seqs to skip as a multirange, the covered timestamps
as arrays of bounds.
"""

from collections.abc import Collection
from typing import Any

import asyncpg
from sqlalchemy import text

from app.db import DriverStatement
from app.domain import Facts, SessionKey
from app.models import LIVE_SQL, MARKED
from app.rules.context import Mark, Plan

# What the view reads of an event: seq, timestamp, its stored facts (None for an event stored
# before they were), and the event as the UTF-8 JSON PostgreSQL renders.
Row = tuple[int, float, Facts | None, bytes]

_SESSION = "e.app_name = :app_name AND e.user_id = :user_id AND e.session_id = :session_id"

# The session's version, and its marked events (a partial index holds them): one row with a
# NULL seq when it has none, no row when there is no such session.
MARKS = DriverStatement.compile(
    text(
        f"""
SELECT s.version, e.seq, e.event
FROM sessions s LEFT JOIN events e
  ON e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id
 AND ({MARKED.text})
WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
  AND {LIVE_SQL.replace("expire_time", "s.expire_time")}
ORDER BY e.seq
"""
    )
)

FIRST_SEQS = DriverStatement.compile(
    text(
        f"""
SELECT e.invocation_id, min(e.seq) AS seq FROM events e
WHERE {_SESSION} AND e.invocation_id = ANY(CAST(:invocation_ids AS text[]))
GROUP BY e.invocation_id
"""
    )
)

_FACTS = """e.seq, e.timestamp, e.tokens, e.calls, e.responses,
convert_to(CAST(e.event AS text), 'UTF8') AS body"""
# Live: not in a seq range a rewind drops, nor marked (parameters: `live_values`); `covered`:
# in a compaction's range.
LIVE = f"""
{_SESSION}
AND NOT (e.seq <@ CAST(CAST(:skipped AS text) AS int8multirange))
"""
_COVERED = """
EXISTS (SELECT FROM unnest(CAST(:starts AS float8[]), CAST(:ends AS float8[])) AS c(start, stop)
        WHERE e.timestamp BETWEEN c.start AND c.stop)
"""

# A page, newest first, before a seq; or, once a compaction orders the view by time, before a
# (timestamp, seq).
PAGES = {
    by_time: DriverStatement.compile(
        text(
            f"""
SELECT {_FACTS} FROM events e
WHERE {LIVE} AND NOT {_COVERED} AND {keyset}
ORDER BY {order} LIMIT :limit
"""
        )
    )
    for by_time, keyset, order in (
        (False, "e.seq < :before_seq", "e.seq DESC"),
        (
            True,
            "(e.timestamp, e.seq) < (:before_time, :before_seq)",
            "e.timestamp DESC, e.seq DESC",
        ),
    )
}


def _making(column: str, kind: str) -> str:
    """Events whose stored ids (`column`) meet `:ids`, or for one stored without them, whose
    parts of `kind` do."""
    path = f"'$.content.parts[*].{kind}.id'"
    return f"""(e.{column} && CAST(:ids AS text[])
    OR (e.tokens IS NULL AND jsonb_path_query_array(e.event, {path}) ?| CAST(:ids AS text[])))"""


CALLS_TO = DriverStatement.compile(
    text(
        f"""
SELECT {_FACTS} FROM events e
WHERE {LIVE} AND e.seq < :before_seq AND {_making("calls", "functionCall")}
ORDER BY e.seq
"""
    )
)

COVERED_ANSWERS = DriverStatement.compile(
    text(
        f"""
SELECT {_FACTS} FROM events e
WHERE {LIVE} AND {_COVERED} AND {_making("responses", "functionResponse")}
"""
    )
)

INT64_MAX = 2**63 - 1


async def marks(connection: asyncpg.Connection, key: SessionKey) -> tuple[int, list[Mark]] | None:
    """The session's version and its rewinds, compactions and observation masks, in seq
    order; None if there is no such session."""
    rows = await connection.fetch(MARKS.sql, *MARKS.arguments(key.columns()))
    if not rows:
        return None
    return rows[0]["version"], [Mark(row["seq"], row["event"]) for row in rows if row["seq"]]


async def first_seqs(
    connection: asyncpg.Connection, key: SessionKey, invocation_ids: Collection[str]
) -> dict[str, int]:
    """The seq of each invocation's first event, for those the session has."""
    arguments = FIRST_SEQS.arguments({**key.columns(), "invocation_ids": sorted(invocation_ids)})
    rows = await connection.fetch(FIRST_SEQS.sql, *arguments)
    return {row["invocation_id"]: row["seq"] for row in rows}


def live_values(key: SessionKey, plan: Plan) -> dict[str, Any]:
    skipped = [*plan.dropped, *((seq, seq) for seq in plan.marks)]
    return {
        **key.columns(),
        "skipped": "{" + ",".join(f"[{low},{high}]" for low, high in skipped) + "}",
        "starts": [start for start, _ in plan.coverage],
        "ends": [end for _, end in plan.coverage],
    }


async def _rows(
    connection: asyncpg.Connection, statement: DriverStatement, values: dict[str, Any]
) -> list[Row]:
    records = await connection.fetch(statement.sql, *statement.arguments(values))
    return [
        (
            record["seq"],
            record["timestamp"],
            None
            if record["tokens"] is None
            else Facts(record["tokens"], tuple(record["calls"]), tuple(record["responses"])),
            record["body"],
        )
        for record in records
    ]


async def page(
    connection: asyncpg.Connection,
    key: SessionKey,
    plan: Plan,
    *,
    before: tuple[float, ...] | None,
    limit: int | None,
) -> list[Row]:
    """The next `limit` live events no compaction covers, newest first, from just before the
    `order` of the last one of the previous page."""
    if before is None:
        before = (float("inf"), INT64_MAX) if plan.by_time else (INT64_MAX,)
    values = {**live_values(key, plan), "before_seq": int(before[-1]), "limit": limit}
    if plan.by_time:
        values["before_time"] = before[0]
    return await _rows(connection, PAGES[plan.by_time], values)


async def calls_to(
    connection: asyncpg.Connection,
    key: SessionKey,
    plan: Plan,
    call_ids: Collection[str],
    before_seq: int,
) -> list[Row]:
    """The live events before `before_seq` that make one of these calls, covered or not, in
    seq order."""
    values = {**live_values(key, plan), "ids": sorted(call_ids), "before_seq": before_seq}
    return await _rows(connection, CALLS_TO, values)


async def covered_answers(
    connection: asyncpg.Connection, key: SessionKey, plan: Plan, call_ids: Collection[str]
) -> list[Row]:
    """The live events a compaction covers that answer one of these calls."""
    return await _rows(
        connection, COVERED_ANSWERS, {**live_values(key, plan), "ids": sorted(call_ids)}
    )
