"""Sessions as ADK defines them: create, get with event filters, list, delete, state deltas."""

import uuid
from dataclasses import replace
from typing import Any

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import (
    ROOT,
    UNDESCRIBED,
    Change,
    Descriptor,
    Origin,
    Page,
    PageRequest,
    ScopedDelta,
    SessionKey,
    SessionQuery,
    SessionRead,
    StoredSession,
    Tally,
)
from app.errors import Conflict, InvalidInput, SessionAlreadyExists, SessionNotFound, StaleSession
from app.limits import MIN_LIFETIME
from app.observability import EVENTS_APPENDED
from app.repositories import positions
from app.repositories import sessions as session_rows
from app.repositories import shared_state as state_rows
from app.repositories.erasures import refuse_while_erasing
from app.repositories.live import announce
from app.rules.events import prepare, prepare_batch, server_time
from app.rules.scopes import split_delta
from app.schemas import SessionCreate, SessionUpdate
from app.services.audit import AuditLog
from app.services.events import EventService
from app.services.preconditions import read_session, require_app_state_write, require_session


class SessionService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(
        self, pool: DriverPool, settings: Settings, events: EventService, audit: AuditLog
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.events = events  # a state delta on a session is recorded as an event
        self.audit = audit

    async def create(
        self, app_name: str, user_id: str, body: SessionCreate, *, app_state_writable: bool
    ) -> SessionRead:
        """One transaction: the session, its shared state and its first events, or nothing."""
        key = SessionKey(app_name, user_id, body.session_id or str(uuid.uuid4()))
        created = server_time()  # before the events: theirs, when the server assigns, come later
        delta = split_delta(body.state or {})
        new_events = prepare_batch(
            [event.as_document() for event in body.events or []],
            self.settings.event_limits,
            self.settings.max_events_per_request,
        )
        require_app_state_write(app_state_writable, [delta, *(new.delta for new in new_events)])
        descriptor = Descriptor(
            body.display_name, body.labels or {}, expiry(body.ttl, body.expire_time, created)
        )
        async with self.pool.transaction() as connection:
            await self.insert(connection, key, delta, created=created, descriptor=descriptor)
            if new_events:
                await self.events.append_prepared(connection, key, new_events, None)
            session = await read_session(connection, key)
        EVENTS_APPENDED.inc(len(new_events))
        return session

    async def insert(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        delta: ScopedDelta,
        *,
        created: float | None = None,
        origin: Origin = ROOT,
        descriptor: Descriptor = UNDESCRIBED,
    ) -> None:
        """In the caller's transaction: the session's row with `delta.session` as its state,
        and `delta`'s app and user keys merged into the shared state. Without an expiry of
        its own, a session lives `default_ttl` seconds (when set)."""
        await refuse_while_erasing(connection, key.app_name, key.user_id)
        limit = self.settings.max_state_bytes
        created = server_time() if created is None else created
        default_ttl = self.settings.default_ttl
        if descriptor.expire_time is None and default_ttl is not None:
            descriptor = replace(descriptor, expire_time=created + default_ttl)
        if not await session_rows.insert_new(
            connection, key, delta.session, created, limit, origin, descriptor
        ):
            raise SessionAlreadyExists(key.session_id)
        parent_id = None if origin.parent is None else origin.parent.session_id
        detail = {"kind": origin.kind}
        await announce(connection, Change("created", key, origin.version, parent_id, detail))
        if delta.app:
            await state_rows.merge_app(connection, key.app_name, delta.app, limit)
        if delta.user:
            await state_rows.merge_user(connection, key.app_name, key.user_id, delta.user, limit)

    async def get(
        self,
        key: SessionKey,
        *,
        num_recent_events: int | None,
        after_timestamp: float | None,
        until_seq: int | None = None,
        min_version: int | None = None,
        min_position: int | None = None,
    ) -> SessionRead:
        """From the read replica when there is one that holds `min_version` and has replayed
        `min_position` (`Reads`)."""

        async def read(connection: asyncpg.Connection) -> tuple[int, SessionRead]:
            found = await read_session(
                connection,
                key,
                num_recent_events=num_recent_events,
                after_timestamp=after_timestamp,
                until_seq=until_seq,
            )
            return found.session.version, found

        return await self.events.reads.run(read, min_version, min_position)

    async def list(self, query: SessionQuery, page: PageRequest) -> Page[StoredSession]:
        listing = paging.listing("sessions", query)
        shape: tuple[type, ...] = (int, str, str) if query.user_id is None else (int, str)
        after = None
        if page.token:
            after = paging.time_position(paging.decode(page.token, listing, shape))
        async with self.pool.connection() as connection:
            rows = await session_rows.list_page(connection, query, after=after, limit=page.size + 1)

        def position(row: StoredSession) -> list[Any]:
            return paging.time_cursor(session_rows.sort_key(row, query))

        return Page(*paging.cut(rows, page.size, listing, position))

    async def tally(
        self,
        app_name: str | None,
        page: PageRequest,
        *,
        only: str | None,
        user_id: str | None = None,
    ) -> Page[Tally]:
        """A page of the apps (`app_name` None) or of an app's users; with `only`, of that
        one alone (what a key of one app, or of one user, may see); with `user_id`, the
        figures of that user's sessions alone (a key of one user sees no other's activity)."""
        kind = "apps" if app_name is None else "users"
        listing = paging.listing(kind, app_name, only, user_id)
        after = None
        if page.token:
            (after,) = paging.decode(page.token, listing, (str,))
        async with self.pool.connection() as connection:
            rows = await session_rows.tally(
                connection, app_name, only=only, user_id=user_id, after=after, limit=page.size + 1
            )
        return Page(*paging.cut(rows, page.size, listing, lambda row: [row.name]))

    async def delete(self, key: SessionKey, expected_version: int | None) -> int:
        """The primary's WAL position once the delete is committed, read on its connection
        after the commit: a read asking for it (`minPosition`) no longer finds the session on
        a replica that lags."""
        async with self.pool.connection() as connection:
            async with connection.transaction():
                deleted = await session_rows.delete_one(connection, key, expected_version)
                if deleted is None:
                    if expected_version is None:
                        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
                    raise StaleSession(expected_version, await require_session(connection, key))
                await self.audit.record(
                    connection,
                    "session.delete",
                    app_name=key.app_name,
                    user_id=key.user_id,
                    detail={"session": await self.audit.session_ref(connection, key)},
                )
                await announce(
                    connection, Change("deleted", key, deleted.version, deleted.parent_id)
                )
            return await positions.current(connection)

    async def update(
        self,
        key: SessionKey,
        body: SessionUpdate,
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> SessionRead:
        """One transaction: the state delta recorded as an event by `user`, as ADK's own API
        server does (refused on a closed session), and the descriptor changed (allowed on a
        closed one: its history is final, not what it is called or how long it is kept). The
        write takes one version, the event's when there is one."""
        events = []
        if body.state_delta is not None:
            event = {
                "author": "user",
                "invocationId": f"p-{uuid.uuid4()}",
                "actions": {"stateDelta": body.state_delta},
            }
            events = [prepare(event, self.settings.event_limits)]
            require_app_state_write(app_state_writable, [events[0].delta])
        changes = descriptor_changes(body)
        async with self.pool.transaction() as connection:
            written = True
            if changes:
                version = await session_rows.describe(
                    connection,
                    key,
                    changes,
                    None if events else expected_version,
                    takes_version=not events,
                )
                written = version is not None
                if version is not None and not events:  # else the append tells of it
                    await announce(connection, Change("described", key, version))
            if written and events:
                added = await self.events.append_prepared(connection, key, events, expected_version)
                written = added is not None
            if not written:
                version = await require_session(connection, key, writable=bool(events))
                if expected_version is None:  # it was there a moment ago: deleted or closed
                    raise Conflict("The session changed during the update; retry.")
                raise StaleSession(expected_version, version)
            read = await read_session(connection, key)
        EVENTS_APPENDED.inc(len(events))
        return read


def expiry(ttl: float | None, expire_time: float | None, now: float) -> float | None:
    """Epoch seconds when a session given `ttl` or `expireTime` expires; 422 if less than
    `MIN_LIFETIME` from now."""
    if ttl is not None:
        return now + ttl
    if expire_time is not None and expire_time < now + MIN_LIFETIME:
        raise InvalidInput(
            f"expireTime {expire_time} is not at least {MIN_LIFETIME:g} second from now "
            f"({now}); to end a session now, delete it.",
            field="expireTime",
        )
    return expire_time


def descriptor_changes(body: SessionUpdate) -> dict[str, Any]:
    """The descriptor columns a PATCH sets, by column name."""
    given = body.model_fields_set
    changes: dict[str, Any] = {
        column: getattr(body, column) for column in ("display_name", "labels") if column in given
    }
    if "ttl" in given or "expire_time" in given:
        changes["expire_time"] = expiry(body.ttl, body.expire_time, server_time())
    return changes
