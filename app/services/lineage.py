"""Lineage: forks, child sessions for sub-agents and their close, ancestors and children.

A fork or a child copies what it takes from its parent (the events, with their ids and seqs)
instead of reading through to the parent: it stays whole when the parent is trimmed, edited or
deleted, and every read of it is the plain read of one session.
"""

import asyncio
import uuid
from contextlib import nullcontext
from typing import Any

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import (
    Change,
    History,
    NewEvent,
    Origin,
    Page,
    PageRequest,
    ParentLink,
    ScopedDelta,
    SessionKey,
    SessionRead,
    StoredSession,
)
from app.errors import Conflict, InvalidInput, SessionClosed, StaleSession
from app.repositories import artifacts as artifact_rows
from app.repositories import history as history_rows
from app.repositories import lineage as lineage_rows
from app.repositories.live import announce
from app.rules import tool_calls
from app.rules.events import prepare
from app.rules.rewinds import live_seqs
from app.rules.scopes import split_delta
from app.schemas import ChildCreate, SessionClose, SessionFork
from app.services.events import EventService
from app.services.preconditions import (
    hold_session,
    read_session,
    require_app_state_write,
    require_kept,
    require_session,
    seq_before_invocation,
)
from app.services.sessions import SessionService


class LineageService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(
        self,
        pool: DriverPool,
        settings: Settings,
        sessions: SessionService,
        events: EventService,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.sessions = sessions
        # A copy costs a row write per event: copies wait here for their turn, not in the
        # pool or on the cores, where every append would wait behind them.
        self.copies = asyncio.Semaphore(settings.copy_concurrency)
        self.events = events

    async def fork(self, key: SessionKey, body: SessionFork) -> SessionRead:
        """A new session with the parent's events up to the fork point and its session state
        then. The parent's history is held as it is while it is copied, and not changed; its
        appends go on meanwhile, past the fork point. Returned without its events, which can
        be thousands: a second read of them all would cost as much as the copy."""
        fork = _new_key(key, body.session_id)
        async with self.copies, self.pool.transaction() as connection:
            parent = await hold_session(connection, key, lock="key share")
            if body.before_invocation_id is not None:
                at = await seq_before_invocation(
                    connection, key, body.before_invocation_id, parent.base_seq
                )
            else:
                at = parent.version if body.at_seq is None else body.at_seq
                require_kept(parent.version, parent.base_seq, at, "atSeq")
            state = await lineage_rows.state_at(connection, key, at)
            # The fork's history is its parent's up to the fork point: a read of the fork at
            # an earlier seq is the parent's read there, and a rewind in the fork works.
            history = History(
                parent.base_seq,
                parent.base_state,
                [delta for delta in parent.removed_deltas if delta["seq"] <= at],
            )
            origin = Origin(
                kind="fork",
                parent=ParentLink(key.session_id, at, None),
                version=at,
                history=history,
            )
            await self.sessions.insert(connection, fork, ScopedDelta(session=state), origin=origin)
            await lineage_rows.copy_events(connection, key, fork, until_seq=at)
            # Its artifacts as they were at the fork point: those saved before the write that
            # took it, or, for a fork of the whole session, all of them.
            whole = body.at_seq is None and body.before_invocation_id is None
            await artifact_rows.copy_session_artifacts(
                connection, key, fork, before_seq=None if whole else at
            )
            return await read_session(connection, fork, num_recent_events=0)

    async def create_child(
        self, key: SessionKey, body: ChildCreate, *, app_state_writable: bool
    ) -> SessionRead:
        """A session for a sub-agent, linked to its parent and, with `functionCallId`, to the
        call it works on; it starts with what `inherit` says, then `state` over it."""
        child = _new_key(key, body.session_id)
        delta = split_delta(body.state or {})
        require_app_state_write(app_state_writable, [delta])
        inherits = body.inherit != "none"
        async with (
            self.copies if inherits else nullcontext(),
            self.pool.transaction() as connection,
        ):
            # Nothing written to the parent meanwhile: the call stays open, the version read
            # stays its latest (what `inherit` copies, live context included, is as of it).
            parent = await hold_session(connection, key, lock="share")
            if not parent.is_open:
                raise SessionClosed(key.session_id)
            call_id = body.function_call_id
            if call_id is not None:
                await _require_open_call(connection, key, call_id)
            state = {**(parent.state if inherits else {}), **delta.session}
            origin = Origin(
                kind="child",
                parent=ParentLink(key.session_id, parent.version, call_id),
                version=parent.version if inherits else 0,
            )
            own = ScopedDelta(app=delta.app, user=delta.user, session=state)
            await self.sessions.insert(connection, child, own, origin=origin)
            if inherits:
                live = None
                if body.inherit == "context":
                    live = await _live_context(connection, key)
                await lineage_rows.copy_events(
                    connection, key, child, until_seq=parent.version, only_seqs=live
                )
                await artifact_rows.copy_session_artifacts(connection, key, child, before_seq=None)
            return await read_session(connection, child, num_recent_events=0)

    async def close(
        self, key: SessionKey, body: SessionClose, expected_version: int | None
    ) -> SessionRead:
        """Close the session to writes. A child made for a function call answers it: the
        call's `functionResponse` is appended to the parent in the same transaction, the
        parent's row held so that the call cannot be removed meanwhile (unless the parent is
        gone or closed, when nobody waits for it, or the call is gone or answered already)."""
        async with self.pool.transaction() as connection:
            closed = await lineage_rows.close(connection, key, body.outcome, expected_version)
            if closed is None:  # absent, closed already, or (with If-Match) moved on
                version = await require_session(connection, key, writable=True)
                assert expected_version is not None
                raise StaleSession(expected_version, version)
            parent_id, call_id = closed
            if parent_id is not None and call_id is not None:
                parent = SessionKey(key.app_name, key.user_id, parent_id)
                answer = await self._answer(connection, parent, call_id, key.session_id, body)
                if answer is not None:
                    await self.events.append_prepared(connection, parent, [answer], None)
            read = await read_session(connection, key)
            detail = {"outcome": body.outcome}
            await announce(
                connection, Change("closed", key, read.session.version, parent_id, detail)
            )
        return read

    async def _answer(
        self,
        connection: asyncpg.Connection,
        parent: SessionKey,
        call_id: str,
        child_id: str,
        body: SessionClose,
    ) -> NewEvent | None:
        """The event answering the parent's call, as ADK writes a function's response: by the
        agent that called it (the child, named by its session id, when the call names no
        author), in the call's invocation when it has one; None when there is nothing to
        answer. Holds the parent's row (the child's is held already: always child, then
        parent)."""
        held = await lineage_rows.hold(connection, parent, lock="update")
        if (
            held is None
            or not held.is_open
            or await lineage_rows.is_answered(connection, parent, call_id)
        ):
            return None
        call = await lineage_rows.function_call(connection, parent, call_id)
        if call is None:  # the call was removed
            return None
        author, invocation_id, name = call
        response: dict[str, Any] = {"outcome": body.outcome}
        if body.result is not None:
            response["result"] = body.result
        event: dict[str, Any] = {
            "author": author or child_id,
            "content": {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": call_id, "name": name, "response": response}}
                ],
            },
        }
        if invocation_id is not None:
            event["invocationId"] = invocation_id
        return prepare(event, self.settings.event_limits)

    async def ancestors(self, key: SessionKey) -> list[StoredSession]:
        async with self.pool.connection() as connection:
            await require_session(connection, key)
            return await lineage_rows.ancestors(connection, key)

    async def children(self, key: SessionKey, page: PageRequest) -> Page[StoredSession]:
        listing = paging.listing("children", key)
        after = None
        if page.token:
            after = paging.time_position(paging.decode(page.token, listing, (int, str)))
        async with self.pool.connection() as connection:
            await require_session(connection, key)
            rows = await lineage_rows.children_page(
                connection, key, after=after, limit=page.size + 1
            )

        def position(row: StoredSession) -> list[Any]:
            return paging.time_cursor((row.create_time, row.key.session_id))

        return Page(*paging.cut(rows, page.size, listing, position))


async def _live_context(connection: asyncpg.Connection, key: SessionKey) -> list[int]:
    """The seqs of the live events (rewinds applied), less any that answers a call of a
    rewound one: a copy never holds a response without its call."""
    marks = await lineage_rows.rewind_marks(connection, key)
    live = live_seqs(marks)
    rewound = {seq for seq, _, _ in marks} - set(live)
    links = await history_rows.tool_links(connection, key)
    dropped = tool_calls.with_answers(links, rewound, strict=False)
    return [seq for seq in live if seq not in dropped]


def _new_key(parent: SessionKey, session_id: str | None) -> SessionKey:
    return SessionKey(parent.app_name, parent.user_id, session_id or str(uuid.uuid4()))


async def _require_open_call(connection: asyncpg.Connection, key: SessionKey, call_id: str) -> None:
    """422 unless the session holds the function call; 409 if it is answered already."""
    if await lineage_rows.function_call(connection, key, call_id) is None:
        raise InvalidInput(
            f"No event of session {key.session_id!r} holds a functionCall with id {call_id!r}.",
            field="functionCallId",
        )
    if await lineage_rows.is_answered(connection, key, call_id):
        raise Conflict(f"Function call {call_id!r} is answered already.")
