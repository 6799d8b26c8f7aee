"""SQL for tool-call integrity: a session's live events that make function calls, and the ids
of the calls its live events answer. From the ids stored beside each event (migration 0008),
or, for an event stored before them, from the event itself."""

from typing import Any

import asyncpg
from sqlalchemy import text

from app.db import DriverStatement
from app.domain import SessionKey
from app.repositories.context import LIVE, live_values
from app.rules.context import Plan

CALLING = DriverStatement.compile(
    text(
        f"""
SELECT e.seq, e.event FROM events e
WHERE {LIVE} AND (cardinality(e.calls) > 0
      OR (e.tokens IS NULL AND e.event #> '{{content,parts}}' @? '$[*].functionCall.id'))
ORDER BY e.seq
"""
    )
)

ANSWERED = DriverStatement.compile(
    text(
        f"""
SELECT DISTINCT answered FROM events e, unnest(coalesce(e.responses, ARRAY(
    SELECT jsonb_array_elements_text(jsonb_path_query_array(
        e.event, '$.content.parts[*].functionResponse.id ? (@.type() == "string")'))))) AS answered
WHERE {LIVE}
"""
    )
)


async def calling_events(
    connection: asyncpg.Connection, key: SessionKey, plan: Plan
) -> list[tuple[int, dict[str, Any]]]:
    """The live events that make function calls, in seq order."""
    rows = await connection.fetch(CALLING.sql, *CALLING.arguments(live_values(key, plan)))
    return [(row["seq"], row["event"]) for row in rows]


async def answered(connection: asyncpg.Connection, key: SessionKey, plan: Plan) -> set[str]:
    """The ids of the calls the live events answer."""
    rows = await connection.fetch(ANSWERED.sql, *ANSWERED.arguments(live_values(key, plan)))
    return {row["answered"] for row in rows}
