"""Sessions as ADK defines them: create, get with event filters, list, delete, state deltas."""

import uuid
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app import paging
from app.config import Settings
from app.db import DriverPool, driver
from app.domain import (
    ROOT,
    Origin,
    Page,
    PageRequest,
    SessionKey,
    SessionQuery,
    SessionRead,
    StoredSession,
)
from app.errors import InvalidInput, SessionAlreadyExists, SessionNotFound, StaleSession
from app.observability import EVENTS_APPENDED
from app.repositories import sessions as session_rows
from app.repositories import shared_state as state_rows
from app.rules.events import prepare_batch, server_time
from app.rules.scopes import ScopedDelta, split_delta
from app.schemas import EventIn, SessionCreate
from app.services.auth import require_app_state_write
from app.services.events import EventService, require_session


class SessionService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(
        self, engine: AsyncEngine, pool: DriverPool, settings: Settings, events: EventService
    ) -> None:
        self.engine = engine
        self.pool = pool
        self.settings = settings
        self.events = events  # a state delta on a session is recorded as an event

    async def create(
        self, app_name: str, user_id: str, body: SessionCreate, *, app_state_writable: bool
    ) -> SessionRead:
        """One transaction: the session, its shared state and its first events, or nothing."""
        key = SessionKey(app_name, user_id, body.session_id or str(uuid.uuid4()))
        created = server_time()  # before the events: theirs, when the server assigns, come later
        delta = split_delta(body.state or {})
        new_events = prepare_batch(body.events or [], self.settings)
        require_app_state_write(app_state_writable, [delta, *(new.delta for new in new_events)])
        async with self.engine.begin() as db:
            await self.insert(db, key, delta, created=created)
            async with driver(db) as connection:  # the same transaction
                if new_events:
                    await self.events.append_prepared(connection, key, new_events, None)
                session = await read_session(connection, key)
        EVENTS_APPENDED.inc(len(new_events))
        return session

    async def insert(
        self,
        db: AsyncConnection,
        key: SessionKey,
        delta: ScopedDelta,
        *,
        created: float | None = None,
        origin: Origin = ROOT,
    ) -> None:
        """In the caller's transaction: the session's row with `delta.session` as its state,
        and `delta`'s app and user keys merged into the shared state."""
        limit = self.settings.max_state_bytes
        created = server_time() if created is None else created
        if not await session_rows.insert_new(db, key, delta.session, created, limit, origin):
            raise SessionAlreadyExists(key.session_id)
        if delta.app:
            await state_rows.merge_app(db, key.app_name, delta.app, limit)
        if delta.user:
            await state_rows.merge_user(db, key.app_name, key.user_id, delta.user, limit)

    async def get(
        self,
        key: SessionKey,
        *,
        num_recent_events: int | None,
        after_timestamp: float | None,
        until_seq: int | None = None,
    ) -> SessionRead:
        async with self.pool.connection() as connection:
            return await read_session(
                connection,
                key,
                num_recent_events=num_recent_events,
                after_timestamp=after_timestamp,
                until_seq=until_seq,
            )

    async def list(self, query: SessionQuery, page: PageRequest) -> Page[StoredSession]:
        listing = paging.listing("sessions", query)
        shape: tuple[type, ...] = (int, str, str) if query.user_id is None else (int, str)
        after = None
        if page.token:
            after = paging.time_position(paging.decode(page.token, listing, shape))
        async with self.engine.connect() as db:
            rows = await session_rows.list_page(db, query, after=after, limit=page.size + 1)

        def position(row: StoredSession) -> list[Any]:
            return paging.time_cursor(session_rows.sort_key(row, query))

        return Page(*paging.cut(rows, page.size, listing, position))

    async def delete(self, key: SessionKey, expected_version: int | None) -> None:
        async with self.engine.begin() as db:
            if await session_rows.delete_one(db, key, expected_version):
                return
            if expected_version is None:
                raise SessionNotFound(key.app_name, key.user_id, key.session_id)
            async with driver(db) as connection:
                raise StaleSession(expected_version, await require_session(connection, key))

    async def update_state(
        self,
        key: SessionKey,
        state_delta: dict[str, Any],
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> SessionRead:
        """Record the delta as an event by `user`, as ADK's own API server does."""
        event = EventIn.model_validate(
            {
                "author": "user",
                "invocationId": f"p-{uuid.uuid4()}",
                "actions": {"stateDelta": state_delta},
            }
        )
        await self.events.append(
            key, event, expected_version, app_state_writable=app_state_writable
        )
        return await self.get(key, num_recent_events=None, after_timestamp=None)


async def read_session(
    connection: asyncpg.Connection,
    key: SessionKey,
    *,
    num_recent_events: int | None = None,
    after_timestamp: float | None = None,
    until_seq: int | None = None,
) -> SessionRead:
    """The session with the events asked for; with `until_seq`, as it was at that seq."""
    found = await session_rows.read(
        connection,
        key,
        limit=num_recent_events,
        after_timestamp=after_timestamp,
        until_seq=until_seq,
    )
    if found is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    if until_seq is not None:
        require_kept(found[0].version, found[0].base_seq, until_seq, "untilSeq")
    return SessionRead(*found)


def require_kept(version: int, base_seq: int, seq: int, field: str) -> None:
    """422 unless `seq` lies in the session's kept history: from `base_seq` (before which a
    trim or a reset removed it) to `version`."""
    if seq > version:
        raise InvalidInput(
            f"{field} {seq} is past the end: the session is at version {version}.", field=field
        )
    if seq < base_seq:
        raise InvalidInput(
            f"{field} {seq} is before the session's kept history, which starts after seq "
            f"{base_seq} (a trim or a reset removed what came before).",
            field=field,
        )
