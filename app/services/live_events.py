"""Which of a session's events are live (rewinds and compactions applied), and the status of
their function calls: read by the context view, tool-call integrity and the pending queue's
promote, each in its own snapshot or transaction."""

import time

import asyncpg

from app.domain import SessionKey
from app.errors import SessionNotFound
from app.repositories import context as context_rows
from app.repositories import tool_calls as tool_call_rows
from app.rules import context as rules
from app.rules.tool_calls import ToolCall, tool_calls


async def read_plan(
    connection: asyncpg.Connection, key: SessionKey, estimate: rules.TokenEstimator
) -> tuple[rules.Plan, int]:
    """The session's plan, from its marked events and the first seqs of what they rewind;
    and its version. SessionNotFound if there is no such session."""
    found = await context_rows.marks(connection, key)
    if found is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    version, marks = found
    targets = {target for mark in marks if (target := mark.rewinds_before) is not None}
    first = await context_rows.first_seqs(connection, key, targets) if targets else {}
    return rules.plan(marks, first, estimate), version


async def calls_of(
    connection: asyncpg.Connection,
    key: SessionKey,
    estimate: rules.TokenEstimator,
    orphaned_after: float,
) -> tuple[list[ToolCall], int]:
    """The function calls of the session's live events, each with its status (orphaned when
    unanswered for `orphaned_after` seconds); and the session's version. SessionNotFound if
    there is no such session."""
    plan, version = await read_plan(connection, key, estimate)
    calling = await tool_call_rows.calling_events(connection, key, plan)
    answered = await tool_call_rows.answered(connection, key, plan)
    return tool_calls(calling, answered, time.time(), orphaned_after), version
