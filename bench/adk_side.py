"""google-adk's DatabaseSessionService, in-process in the benchmark, on its own database.

This is ADK as an agent embeds it: no HTTP, its own SQLAlchemy engine on asyncpg. The pool is
sized to the client count so ADK never waits for a connection Sessionary would have had.
"""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from google.adk.events import Event
from google.adk.flows.llm_flows.contents import _get_contents
from google.adk.sessions import DatabaseSessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig

from app.domain import SessionKey
from bench.databases import asyncpg_url
from bench.scenarios import median_call
from bench.systems import PageToken
from bench.workload import EventSpec, Sizes, adk_event


class AdkLane:
    def __init__(self, service: DatabaseSessionService) -> None:
        self.service = service

    async def append(self, session: Session, event: Event) -> None:
        await self.service.append_event(session, event)

    async def append_batch(self, session: Session, events: list[Event]) -> None:
        """ADK has no batch append: one `append_event` per event is its only way."""
        for event in events:
            await self.service.append_event(session, event)

    async def read(self, key: SessionKey, recent: int | None) -> int:
        session = await self.service.get_session(
            app_name=key.app_name,
            user_id=key.user_id,
            session_id=key.session_id,
            config=None if recent is None else GetSessionConfig(num_recent_events=recent),
        )
        assert session is not None, key
        return len(session.events)

    async def list_page(self, app: str, page_size: int, token: PageToken) -> tuple[int, PageToken]:
        """ADK cannot page: `list_sessions` returns every session of the app at once."""
        if token is not None:
            raise NotImplementedError("ADK's list_sessions has no pages")
        listed = await self.service.list_sessions(app_name=app)
        return len(listed.sessions), None


class Adk:
    name = "ADK"

    def __init__(self, dsn: str, pool: int) -> None:
        self.service = DatabaseSessionService(asyncpg_url(dsn), pool_size=pool, max_overflow=0)

    async def prepare(self) -> None:
        """Let ADK create its tables, as it does on first use."""
        await self.service.prepare_tables()

    async def create_sessions(self, keys: Sequence[SessionKey]) -> list[Any]:
        return [
            await self.service.create_session(
                app_name=key.app_name, user_id=key.user_id, session_id=key.session_id
            )
            for key in keys
        ]

    def encode(self, key: SessionKey, events: Sequence[EventSpec]) -> list[Event]:
        return [adk_event(event) for event in events]

    def encode_batch(self, key: SessionKey, events: Sequence[EventSpec]) -> list[Event]:
        return self.encode(key, events)

    @asynccontextmanager
    async def lane(self) -> AsyncIterator[AdkLane]:
        yield AdkLane(self.service)

    async def close(self) -> None:
        await self.service.close()


async def context_ms(adk: Adk, key: SessionKey, sizes: Sizes) -> float:
    """S9 the way ADK builds a model's context: load the whole session, then run its context
    assembly (`_get_contents`, rewinds and compactions applied) on every event; median ms."""

    async def build() -> None:
        session = await adk.service.get_session(
            app_name=key.app_name, user_id=key.user_id, session_id=key.session_id
        )
        assert session is not None and len(session.events) == sizes.context_events, key
        if not _get_contents(None, session.events, "weather_agent"):
            raise AssertionError("ADK built no contents")

    return await median_call(sizes.read_repeat, build)
