"""`SessionaryService`: google-adk's `BaseSessionService` backed by a Sessionary server.

    runner = Runner(agent=agent, app_name="my-app",
                    session_service=SessionaryService("http://127.0.0.1:8000"))

It keeps ADK's in-process contract: `get_session` gives None for a missing session,
`create_session` raises `AlreadyExistsError`, `append_event` applies `temp:` keys to the live
session and strips them from the stored event, skips partial events, raises
`SessionNotFoundError` for a missing session and `StaleSessionError` when the session changed
on the server since it was loaded (the append carries the loaded version as If-Match).
"""

import weakref
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from sessionary_client import errors
from sessionary_client import models as wire
from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._core import DEFAULT_TIMEOUT, SessionReads
from sessionary_client.adk_artifacts import SessionaryArtifactService as SessionaryArtifactService
from sessionary_client.adk_memory import SessionaryMemoryService as SessionaryMemoryService

_STALE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


class _Versions:
    """The server version of each Session object handed out, without touching the object.

    A private attribute on the Session would make it compare unequal to the one ADK's own
    services return (pydantic compares private attributes), so the version lives here,
    keyed by object identity and dropped when the object is collected.
    """

    def __init__(self) -> None:
        self._by_object: dict[int, int] = {}

    def get(self, session: Session) -> int | None:
        return self._by_object.get(id(session))

    def set(self, session: Session, version: int) -> None:
        key = id(session)
        if key not in self._by_object:
            weakref.finalize(session, self._by_object.pop, key, None)
        self._by_object[key] = version


class _Read(BaseModel):
    """A session as a read answers it, with its events as ADK's (which ignore `seq`)."""

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel)

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any]
    events: list[Event]
    last_update_time: float
    create_time: float
    version: int


class _Seq(BaseModel):
    model_config = ConfigDict(extra="ignore")

    seq: int


class _Seqs(BaseModel):
    """The seqs of a read's events."""

    model_config = ConfigDict(extra="ignore")

    events: list[_Seq]


# A turn's load asks for this many of the newest events, and takes the rest from what this
# service read before, when only appends came since (`_appended`).
_RECENT = 32

# The events of a session read whole, with the read (at its version) they came from.
_Loaded = tuple[_Read, list[Event]]


def _events_in(loaded: _Loaded) -> int:
    return len(loaded[1])


def _appended(
    before: list[Event], earlier: _Read, read: _Read, seqs: list[int]
) -> list[Event] | None:
    """The session's events: `before` (its events as `earlier` read them) and those of `read`
    (its newest, at `seqs`) appended since; None unless appends alone came since to the same
    session (not one deleted and made again under its id), which is when its version moved on
    by exactly the events after it (a removal, rewrite, trim or close takes a version and
    appends nothing)."""
    if read.create_time != earlier.create_time:
        return None
    new = [seq for seq in seqs if seq > earlier.version]
    if new != list(range(earlier.version + 1, read.version + 1)):
        return None
    return before + read.events[len(seqs) - len(new) :]


def _event(data: wire.Event) -> Event:
    # `seq` is ours, not ADK's; Event ignores unknown fields today, but must not have to.
    return Event.model_validate({k: v for k, v in data.items() if k != "seq"})


class SessionaryService(BaseSessionService):
    """ADK sessions stored in Sessionary: any number of processes may share them."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: AsyncSessionaryClient | None = None,
        cached_events: int = 100_000,
    ) -> None:
        """`cached_events` bounds the events kept from whole reads, for the next read of the
        same session to ask only for what is new (0: every read is whole)."""
        self.client = client or AsyncSessionaryClient(
            base_url, timeout=timeout, retries=retries, api_key=api_key, headers=headers
        )
        self._versions = _Versions()
        self._loaded: SessionReads[_Loaded] = SessionReads(cached_events, _events_in)

    async def close(self) -> None:
        await self.client.aclose()

    def _session(self, data: wire.Session) -> Session:
        session = Session(
            id=data["id"],
            app_name=data["appName"],
            user_id=data["userId"],
            state=data["state"],
            events=[_event(event) for event in data["events"]],
            last_update_time=data["lastUpdateTime"],
        )
        self._versions.set(session, data["version"])
        return session

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        # As ADK's in-memory service: surrounding blanks are ignored, a blank id means "pick one".
        chosen = session_id.strip() or None if session_id is not None else None
        try:
            created = await self.client.create_session(
                app_name, user_id, session_id=chosen, state=state
            )
        except errors.SessionAlreadyExistsError as error:
            raise AlreadyExistsError(f"Session with id {chosen} already exists.") from error
        return self._session(created)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        config = config or GetSessionConfig()
        key = (app_name, user_id, session_id)
        whole = config.num_recent_events is None and config.after_timestamp is None
        loaded = self._loaded.get(key) if whole else None
        try:
            if loaded is None:
                read = await self._read(
                    key,
                    num_recent_events=config.num_recent_events,
                    after_timestamp=config.after_timestamp,
                )
                events = read.events
            else:
                read, events = await self._read_since(key, *loaded)
        except errors.SessionNotFoundError:
            self._loaded.put(key, None)
            return None
        if whole:
            self._loaded.put(key, (read, events))
        session = Session(
            id=read.id,
            app_name=read.app_name,
            user_id=read.user_id,
            state=read.state,
            events=list(events),
            last_update_time=read.last_update_time,
        )
        self._versions.set(session, read.version)
        return session

    async def _read(
        self,
        key: tuple[str, str, str],
        *,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> _Read:
        found = await self.client.get_session_json(
            *key, num_recent_events=num_recent_events, after_timestamp=after_timestamp
        )
        # One pass of pydantic-core from the bytes to ADK's models: no dicts in between.
        return _Read.model_validate_json(found)

    async def _read_since(
        self, key: tuple[str, str, str], earlier: _Read, before: list[Event]
    ) -> tuple[_Read, list[Event]]:
        """The session and all its events, given its events `before` as `earlier` read them:
        only its newest are asked for, unless more than appends came since."""
        found = await self.client.get_session_json(*key, num_recent_events=_RECENT)
        read = _Read.model_validate_json(found)
        seqs = [event.seq for event in _Seqs.model_validate_json(found).events]
        events = _appended(before, earlier, read, seqs)
        if events is None:
            read = await self._read(key)
            events = read.events
        return read, events

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        sessions = [
            self._session(data)
            async for data in self.client.iter_sessions(app_name, user_id, page_size=1000)
        ]
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._loaded.put((app_name, user_id, session_id), None)
        try:
            await self.client.delete_session(app_name, user_id, session_id)
        except errors.SessionNotFoundError:
            pass  # ADK's services delete a missing session silently.

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self.client.get_user_state(app_name, user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # The same steps, in the same order, as ADK's own services: temp keys reach the live
        # session (later agents of this invocation read them), never the store.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        loaded = self._versions.get(session)
        try:
            stored = await self.client.append_event(
                session.app_name,
                session.user_id,
                session.id,
                event.model_dump(mode="json", by_alias=True, exclude_none=True),
                if_match=loaded,
            )
        except errors.StaleSessionError as error:
            raise StaleSessionError(_STALE) from error
        except errors.SessionNotFoundError as error:
            raise SessionNotFoundError(f"Session {session.id} not found.") from error
        if loaded is not None and stored["seq"] <= loaded:
            # The server already held this very event (a re-delivery): like ADK's in-memory
            # service, leave the session as it is rather than apply the event twice.
            return event
        self._versions.set(session, stored["seq"])
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)


async def read_adk_database(
    db_url: str,
) -> AsyncIterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every session of a google-adk `DatabaseSessionService` database, read by ADK itself
    (whichever of its schemas the database has: ADK reads both), as Sessionary's export of it:
    a header and its events, as `POST …/sessions:import` and `sessionary import-adk` take them.

    What ADK keeps is carried exactly: ids, events (as ADK dumps them over the wire) and the
    state a read merges (`app:` and `user:` keys included). What it does not keep is made up
    the plain way: seqs 1, 2, 3, … in ADK's event order, version the number of events, and
    the state before the first event (`baseState`) the session's own keys that no event set.
    """
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from sqlalchemy import text

    scheme, _, rest = db_url.partition("://")
    if scheme in ("postgres", "postgresql"):  # ADK's service needs an async driver
        db_url = f"postgresql+asyncpg://{rest}"
    service = DatabaseSessionService(db_url=db_url)
    try:
        async with service.db_engine.connect() as connection:
            # ADK makes its tables where they are missing: never in a database not its own.
            found = await connection.scalar(text(_ADK_TABLES))
            if not found:
                raise ValueError(
                    "not a google-adk DatabaseSessionService database (no adk_internal_metadata "
                    "table, no events.actions column)"
                )
            keys = await connection.stream(
                text("SELECT app_name, user_id, id, create_time FROM sessions ORDER BY 1, 2, 3")
            )
            async for app_name, user_id, session_id, created in keys:
                session = await service.get_session(
                    app_name=app_name, user_id=user_id, session_id=session_id
                )
                if session is not None:  # deleted meanwhile
                    yield _export_of(session, created)
    finally:
        await service.close()


# Either schema of ADK's: the current one records its version, ADK 1.x's pickles `actions`.
_ADK_TABLES = """
SELECT EXISTS (SELECT FROM information_schema.tables
               WHERE table_schema = current_schema() AND table_name = 'adk_internal_metadata')
    OR EXISTS (SELECT FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'events'
                 AND column_name = 'actions')
"""


def _export_of(session: Session, created: datetime) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = [
        {**event.model_dump(mode="json", by_alias=True, exclude_none=True), "seq": seq}
        for seq, event in enumerate(session.events, 1)
    ]
    touched = {key for event in session.events for key in event.actions.state_delta}
    shared = ("app:", "user:", "temp:")
    header = {
        "format": "sessionary.session.v1",
        "id": session.id,
        "appName": session.app_name,
        "userId": session.user_id,
        "state": session.state,
        "lastUpdateTime": session.last_update_time,
        # ADK keeps it naive, in UTC.
        "createTime": (created if created.tzinfo else created.replace(tzinfo=UTC)).timestamp(),
        "version": len(events),
        "kind": "root",
        "parent": None,
        "status": "open",
        "outcome": None,
        "displayName": None,
        "labels": {},
        "expireTime": None,
        "baseSeq": 0,
        "baseState": {
            key: value
            for key, value in session.state.items()
            if not key.startswith(shared) and key not in touched
        },
        "eventCount": len(events),
    }
    return header, events
