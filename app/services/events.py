"""Appending to and reading a session's event log: seq, If-Match, idempotent retries, limits."""

import enum
from collections.abc import Callable
from typing import Any

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import (
    Append,
    Change,
    EventQuery,
    EventSpan,
    NewEvent,
    Page,
    PageRequest,
    SessionKey,
)
from app.errors import (
    Conflict,
    StaleSession,
)
from app.observability import EVENTS_APPENDED
from app.repositories import events as event_rows
from app.rules.events import prepare, prepare_batch
from app.schemas import EventIn
from app.services.group_commit import GroupCommit
from app.services.preconditions import (
    require_app_state_write,
    require_session,
    stored_identically,
)
from app.services.reads import Reads


class Appended(enum.Enum):
    CREATED = "created"
    REPLAYED = "replayed"  # this id was stored already, with the same content
    PARTIAL = "partial"  # a streaming fragment: acknowledged, never stored


class EventService:
    """Each public method is one unit of work on a connection of its own, committed before
    it returns, so a response never reports a write that did not happen."""

    def __init__(
        self,
        pool: DriverPool,
        settings: Settings,
        announce_later: Callable[[Change], None],
        reads: Reads,
        group_commit: GroupCommit,
    ) -> None:
        self.pool = pool
        self.reads = reads
        self.group_commit = group_commit
        self.settings = settings
        self.announce_later = announce_later  # tells every worker of a committed append

    async def append(
        self,
        key: SessionKey,
        event: EventIn,
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> tuple[dict[str, Any], Appended]:
        """Store one event; returns it as stored (with `seq`) and what the append did."""
        if event.partial:
            # ADK keeps streaming fragments out of the log; the session must still exist.
            async with self.pool.connection() as connection:
                await require_session(connection, key, writable=True)
            return event.model_dump(exclude_unset=True), Appended.PARTIAL
        new = prepare(event.as_document(), self.settings.event_limits)
        require_app_state_write(app_state_writable, [new.delta])
        stored, appended = await self._append(key, [new], expected_version)
        return stored[0], appended

    async def append_batch(
        self,
        key: SessionKey,
        events: list[EventIn],
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> tuple[list[dict[str, Any]], Appended]:
        """Store events all or nothing, at consecutive seqs; partial events are skipped."""
        new = prepare_batch(
            [event.as_document() for event in events],
            self.settings.event_limits,
            self.settings.max_events_per_request,
        )
        require_app_state_write(app_state_writable, [event.delta for event in new])
        if not new:
            async with self.pool.connection() as connection:
                await require_session(connection, key, writable=True)
            return [], Appended.PARTIAL
        return await self._append(key, new, expected_version)

    async def _append(
        self, key: SessionKey, events: list[NewEvent], expected_version: int | None
    ) -> tuple[list[dict[str, Any]], Appended]:
        """Idempotent per event id: events already stored identically are not stored again.

        No transaction around it: the append is one statement, its own transaction (or one
        shared with appends to other sessions: `GroupCommit`), and what explains a refusal
        only reads.
        """
        already: dict[str, dict[str, Any]] = {}
        pending = events
        for _ in range(3):  # a concurrent writer of the same ids may refuse us again
            try:
                base_seq = await self.group_commit.append(Append(key, pending, expected_version))
            except event_rows.DuplicateEventId:
                base_seq = None
            if base_seq is not None:
                added = _as_stored(pending, base_seq)
                self.announce_later(Change("appended", key, added[-1]["seq"]))
                break
            async with self.pool.connection() as connection:
                found = await stored_identically(connection, key, pending)
                already.update(found)
                pending = [event for event in pending if event.id not in already]
                if not pending:
                    return [already[event.id] for event in events], Appended.REPLAYED
                if not found:  # none was there: the session is absent, closed or has moved on
                    version = await require_session(connection, key, writable=True)
                    if expected_version is not None:
                        raise StaleSession(expected_version, version)
        else:
            raise Conflict("The session changed while the events were appended; retry.")
        EVENTS_APPENDED.inc(len(added))
        stored = {**already, **{document["id"]: document for document in added}}
        return [stored[event.id] for event in events], Appended.CREATED

    async def append_prepared(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        events: list[NewEvent],
        expected_version: int | None,
        *,
        announced: bool = True,
    ) -> list[dict[str, Any]] | None:
        """Append in the connection's transaction, if one is open; None if nothing could be
        written: the session is absent, closed, at another version, or holds one of the ids.
        `announced`: every worker hears of it when the transaction commits (else the caller
        tells them, once it has).
        """
        try:
            base_seq = await event_rows.append(
                connection,
                Append(key, events, expected_version),
                self.settings.max_state_bytes,
                self.settings.search_config,
                announced=announced,
            )
        except event_rows.DuplicateEventId:
            return None
        return None if base_seq is None else _as_stored(events, base_seq)

    async def page(
        self,
        key: SessionKey,
        query: EventQuery,
        page: PageRequest,
        min_version: int | None = None,
        min_position: int | None = None,
    ) -> Page[bytes]:
        """A page of events, each the UTF-8 JSON PostgreSQL rendered; from the read replica
        when there is one that holds `min_version` of the session and has replayed
        `min_position` (`Reads`)."""
        listing = paging.listing("events", key, query)
        last_seq = paging.decode(page.token, listing, (int,))[0] if page.token else None

        async def read(connection: asyncpg.Connection) -> tuple[int, list[tuple[int, bytes]]]:
            version = await require_session(connection, key)
            rows = await event_rows.select_events(
                connection, key, query, after_page_seq=last_seq, limit=page.size + 1
            )
            return version, rows

        rows = await self.reads.run(read, min_version, min_position)
        rows, next_token = paging.cut(rows, page.size, listing, lambda row: [row[0]])
        return Page([event for _, event in rows], next_token)

    async def span(self, key: SessionKey) -> tuple[EventSpan, int]:
        """How many events the session holds, its oldest and newest seq, and its version, in
        one snapshot; where its pages are read (`Reads`)."""

        async def read(connection: asyncpg.Connection) -> tuple[int, tuple[EventSpan, int]]:
            async with connection.transaction(isolation="repeatable_read", readonly=True):
                version = await require_session(connection, key)
                found = await event_rows.span(connection, key)
            return version, (found, version)

        return await self.reads.run(read, None)


def _as_stored(events: list[NewEvent], base_seq: int) -> list[dict[str, Any]]:
    """The events as they are stored after `base_seq`, their seqs in them."""
    return [
        {**event.document, "seq": base_seq + position}
        for position, event in enumerate(events, start=1)
    ]
