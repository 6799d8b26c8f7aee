"""Sessions as ADK defines them: create, get with event filters, list, delete, state deltas."""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app import pagination
from app.config import Settings
from app.domain import SessionKey, StoredSession
from app.errors import InvalidInput, SessionAlreadyExists, SessionNotFound, StaleSession
from app.observability import EVENTS_APPENDED
from app.repositories import sessions as session_rows
from app.repositories import state as state_rows
from app.schemas import EventIn, Order, SessionCreate
from app.services import bodies
from app.services.auth import require_app_state_write
from app.services.events import EventService, prepare_batch, require_session, server_time
from app.state import merged_state, split_delta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class SessionDocument:
    """A session as its JSON response body, and its version for the ETag."""

    body: bytes
    version: int


def _identity(session: StoredSession) -> dict[str, Any]:
    return {
        "id": session.key.session_id,
        "appName": session.key.app_name,
        "userId": session.key.user_id,
        "state": merged_state(session.state, session.app_state, session.user_state),
    }


def _times(session: StoredSession) -> dict[str, Any]:
    return {
        "lastUpdateTime": (
            session.update_time.timestamp()
            if session.last_event_time is None
            else session.last_event_time
        ),
        "createTime": session.create_time.timestamp(),
        "version": session.version,
    }


def session_json(session: StoredSession) -> dict[str, Any]:
    """A session as listings show it: without events."""
    return {**_identity(session), "events": [], **_times(session)}


def session_document(session: StoredSession, events: list[bytes]) -> SessionDocument:
    """The session's JSON with its events as PostgreSQL rendered them."""
    body = bodies.with_array(_identity(session), "events", events, _times(session))
    return SessionDocument(body, session.version)


def _cursor(position: tuple[Any, ...]) -> list[Any]:
    """A keyset position with its timestamp as exact integer microseconds."""
    update_time, *ids = position
    return [(update_time - EPOCH) // MICROSECOND, *ids]


def _position(cursor: list[Any]) -> tuple[Any, ...]:
    microseconds, *ids = cursor
    try:
        return (EPOCH + microseconds * MICROSECOND, *ids)
    except OverflowError:
        raise InvalidInput("pageToken is malformed.", field="pageToken") from None


class SessionService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.events = EventService(engine, settings)

    async def create(
        self, app_name: str, user_id: str, body: SessionCreate, *, app_state_writable: bool
    ) -> SessionDocument:
        """One transaction: the session, its shared state and its first events, or nothing."""
        key = SessionKey(app_name, user_id, body.session_id or str(uuid.uuid4()))
        created = server_time()  # before the events: theirs, when the server assigns, come later
        delta = split_delta(body.state or {})
        new_events = prepare_batch(body.events or [], self.settings)
        require_app_state_write(app_state_writable, [delta, *(new.delta for new in new_events)])
        limit = self.settings.max_state_bytes
        async with self.engine.begin() as db:
            if not await session_rows.insert_new(db, key, delta.session, created, limit):
                raise SessionAlreadyExists(key.session_id)
            if delta.app:
                await state_rows.merge_app(db, app_name, delta.app, limit)
            if delta.user:
                await state_rows.merge_user(db, app_name, user_id, delta.user, limit)
            if new_events:
                await self.events.append_prepared(db, key, new_events, None)
            session = await _read(db, key, num_recent_events=None, after_timestamp=None)
        EVENTS_APPENDED.inc(len(new_events))
        return session

    async def get(
        self, key: SessionKey, *, num_recent_events: int | None, after_timestamp: float | None
    ) -> SessionDocument:
        async with self.engine.connect() as db:
            return await _read(
                db, key, num_recent_events=num_recent_events, after_timestamp=after_timestamp
            )

    async def list(
        self,
        app_name: str,
        user_id: str | None,
        *,
        order: Order,
        page_size: int,
        page_token: str | None,
    ) -> dict[str, Any]:
        across_users = user_id is None
        query = pagination.listing("sessions", app_name, user_id, order)
        shape: tuple[type, ...] = (int, str, str) if across_users else (int, str)
        after = _position(pagination.decode(page_token, query, shape)) if page_token else None
        async with self.engine.connect() as db:
            sessions = await session_rows.list_page(
                db,
                app_name,
                user_id,
                newest_first=order is Order.DESC,
                after=after,
                limit=page_size + 1,
            )
        next_token = None
        if len(sessions) > page_size:
            sessions = sessions[:page_size]
            last = session_rows.sort_key(sessions[-1], across_users=across_users)
            next_token = pagination.encode(query, _cursor(last))
        return {
            "sessions": [session_json(session) for session in sessions],
            "nextPageToken": next_token,
        }

    async def delete(self, key: SessionKey, expected_version: int | None) -> None:
        async with self.engine.begin() as db:
            if await session_rows.delete_one(db, key, expected_version):
                return
            if expected_version is None:
                raise SessionNotFound(key.app_name, key.user_id, key.session_id)
            raise StaleSession(expected_version, await require_session(db, key))

    async def update_state(
        self,
        key: SessionKey,
        state_delta: dict[str, Any],
        expected_version: int | None,
        *,
        app_state_writable: bool,
    ) -> SessionDocument:
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


async def _read(
    db: AsyncConnection,
    key: SessionKey,
    *,
    num_recent_events: int | None,
    after_timestamp: float | None,
) -> SessionDocument:
    found = await session_rows.read(
        db, key, limit=num_recent_events, after_timestamp=after_timestamp
    )
    if found is None:
        raise SessionNotFound(key.app_name, key.user_id, key.session_id)
    return session_document(*found)
