"""Sessions as ADK defines them: create, get with event filters, list, delete, state deltas."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app import pagination
from app.config import Settings
from app.domain import SessionKey, StoredSession
from app.errors import InvalidInput, SessionAlreadyExists, SessionNotFound
from app.observability import EVENTS_APPENDED
from app.repositories import events as event_rows
from app.repositories import sessions as session_rows
from app.repositories import state as state_rows
from app.schemas import EventIn, Order, SessionCreate
from app.services.events import (
    EventService,
    canonical_json,
    check_state_size,
    prepare_batch,
    server_time,
)
from app.state import merged_state, split_delta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def session_json(session: StoredSession, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": session.key.session_id,
        "appName": session.key.app_name,
        "userId": session.key.user_id,
        "state": merged_state(session.state, session.app_state, session.user_state),
        "events": events,
        "lastUpdateTime": (
            session.update_time.timestamp()
            if session.last_event_time is None
            else session.last_event_time
        ),
        "createTime": session.create_time.timestamp(),
        "version": session.version,
    }


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
    def __init__(self, db: AsyncSession, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.events = EventService(db, settings)

    async def create(self, app_name: str, user_id: str, body: SessionCreate) -> dict[str, Any]:
        key = SessionKey(app_name, user_id, body.session_id or str(uuid.uuid4()))
        created = server_time()  # before the events: theirs, when the server assigns, come later
        delta = split_delta(body.state or {})
        new_events = prepare_batch(body.events or [], self.settings)
        check_state_size(len(canonical_json(delta.session)), self.settings)
        if not await session_rows.insert_new(self.db, key, delta.session, created):
            raise SessionAlreadyExists(key.session_id)
        if delta.app:
            _, size = await state_rows.merge_app(self.db, app_name, delta.app)
            check_state_size(size, self.settings)
        if delta.user:
            _, size = await state_rows.merge_user(self.db, app_name, user_id, delta.user)
            check_state_size(size, self.settings)
        if new_events:
            await self.events.append_prepared(key, new_events, None)
        session = await self._read(key, num_recent_events=None, after_timestamp=None)
        await self.db.commit()
        EVENTS_APPENDED.inc(len(new_events))
        return session

    async def get(
        self, key: SessionKey, *, num_recent_events: int | None, after_timestamp: float | None
    ) -> dict[str, Any]:
        return await self._read(
            key, num_recent_events=num_recent_events, after_timestamp=after_timestamp
        )

    async def _read(
        self, key: SessionKey, *, num_recent_events: int | None, after_timestamp: float | None
    ) -> dict[str, Any]:
        session = await session_rows.get(self.db, key)
        if session is None:
            raise SessionNotFound(key.app_name, key.user_id, key.session_id)
        events: list[dict[str, Any]] = []
        if num_recent_events != 0:
            events = await event_rows.select_events(
                self.db,
                key,
                after_timestamp=after_timestamp,
                newest_first=num_recent_events is not None,
                limit=num_recent_events,
            )
            if num_recent_events is not None:
                events.reverse()
        return session_json(session, events)

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
        query = f"sessions:{order}"
        shape: tuple[type, ...] = (int, str, str) if across_users else (int, str)
        after = _position(pagination.decode(page_token, query, shape)) if page_token else None
        sessions = await session_rows.list_page(
            self.db,
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
            "sessions": [session_json(session, []) for session in sessions],
            "nextPageToken": next_token,
        }

    async def delete(self, key: SessionKey) -> None:
        if not await session_rows.delete_one(self.db, key):
            raise SessionNotFound(key.app_name, key.user_id, key.session_id)
        await self.db.commit()

    async def update_state(
        self, key: SessionKey, state_delta: dict[str, Any], expected_version: int | None
    ) -> dict[str, Any]:
        """Record the delta as an event by `user`, as ADK's own API server does."""
        event = EventIn.model_validate(
            {
                "author": "user",
                "invocationId": f"p-{uuid.uuid4()}",
                "actions": {"stateDelta": state_delta},
            }
        )
        await self.events.append(key, event, expected_version)
        return await self.get(key, num_recent_events=None, after_timestamp=None)
