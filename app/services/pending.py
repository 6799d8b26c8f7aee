"""Queued input: a user's messages sent while a turn runs wait in a queue of their own, and
are promoted into the log together once the turn's function calls are answered, so that a
provider never sees a user message between a call and its result."""

from typing import Any

from app.config import Settings
from app.db import DriverPool
from app.domain import SessionKey
from app.errors import (
    EventConflict,
    PayloadTooLarge,
    SessionClosed,
    ToolCallsPending,
)
from app.repositories import pending as pending_rows
from app.rules.events import canonical_json, prepare
from app.schemas import EventIn
from app.services.events import EventService
from app.services.live_events import calls_of
from app.services.preconditions import (
    hold_for_write,
    hold_session,
    require_app_state_write,
    require_session,
    stored_identically,
)


class PendingService:
    """Each public method is one transaction."""

    def __init__(self, pool: DriverPool, settings: Settings, events: EventService) -> None:
        self.pool = pool
        self.settings = settings
        self.events = events
        self.estimate = settings.event_limits.estimate

    async def enqueue(
        self, key: SessionKey, event: EventIn, *, app_state_writable: bool
    ) -> dict[str, Any]:
        """Queue the event, its id filled in now (its timestamp, if it has none, when it is
        promoted: it then sorts after the turn it waited for); the same event again is queued
        once, another under a queued id is an EventConflict. The queue holds at most what one
        promote appends (PayloadTooLarge)."""
        new = prepare(event.as_document(), self.settings.event_limits)
        require_app_state_write(app_state_writable, [new.delta])
        document = dict(new.document)
        if event.timestamp is None:
            del document["timestamp"]
        async with self.pool.transaction() as connection:
            # Its key held: a delete of the session waits, rather than break the queue's key.
            if not (await hold_session(connection, key, lock="key share")).is_open:
                raise SessionClosed(key.session_id)
            queued, added = await pending_rows.enqueue(connection, key, document)
            limit = self.settings.max_events_per_request
            if added and await pending_rows.count(connection, key) > limit:
                raise PayloadTooLarge(
                    f"The queue holds {limit} events, the most one promote appends "
                    "(SESSIONARY_MAX_EVENTS_PER_REQUEST): promote or clear it first."
                )
        if canonical_json(queued) != canonical_json(document):
            raise EventConflict(new.id)
        return queued

    async def clear(self, key: SessionKey) -> None:
        """Empty the queue (the log is untouched)."""
        async with self.pool.transaction() as connection:
            await hold_session(connection, key, lock="key share")
            await pending_rows.clear(connection, key)

    async def queued(self, key: SessionKey) -> list[dict[str, Any]]:
        async with self.pool.connection() as connection:
            await require_session(connection, key)
            return await pending_rows.queued(connection, key)

    async def promote(
        self,
        key: SessionKey,
        force: bool,
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> list[dict[str, Any]]:
        """Append every queued event, in order, at consecutive seqs, and empty the queue, in
        one transaction; ToolCallsPending while a function call is unanswered, unless
        `force`. The events as stored ([] when none was queued)."""
        async with self.pool.transaction() as connection:
            held = await hold_for_write(connection, key, expected_version)
            queued = await pending_rows.queued(connection, key, lock=True)
            if not queued:
                return []
            if not force:
                calls, _ = await calls_of(
                    connection, key, self.estimate, self.settings.tool_call_timeout
                )
                waiting = [call.id for call in calls if call.status != "answered"]
                if waiting:
                    raise ToolCallsPending(waiting)
            events = [prepare(event, self.settings.event_limits) for event in queued]
            require_app_state_write(app_state_writable, [event.delta for event in events])
            # One appended meanwhile (a client's retry through the log) is not appended again;
            # one in the log with other content is an EventConflict (clear the queue).
            already = await stored_identically(connection, key, events)
            events = [event for event in events if event.id not in already]
            await pending_rows.clear(connection, key)
            if not events:
                return []
            stored = await self.events.append_prepared(connection, key, events, held.version)
        assert stored is not None  # the row was held, and no id was in the log
        return stored
