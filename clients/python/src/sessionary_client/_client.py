"""`SessionaryClient` and `AsyncSessionaryClient`: the same methods, sending `_calls` over httpx."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from sessionary_client import _calls as calls
from sessionary_client._calls import Call, Pager, RetryPolicy
from sessionary_client.models import (
    Event,
    EventPage,
    Health,
    Order,
    Readiness,
    Session,
    SessionPage,
    State,
)

T = TypeVar("T")
Item = TypeVar("Item")

DEFAULT_TIMEOUT = 10.0


def _headers(api_key: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    credentials = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
    return {**credentials, **(headers or {})}


class _Base:
    def __init__(self, retries: int, backoff: float) -> None:
        self._retry = RetryPolicy(retries=retries, backoff=backoff)

    @staticmethod
    def _request(http: httpx.Client | httpx.AsyncClient, call: Call[Any]) -> httpx.Request:
        return http.build_request(
            call.method, call.path, params=call.params, json=call.body, headers=call.headers
        )


class SessionaryClient(_Base):
    """A blocking client. Errors are `sessionary_client.errors` exceptions, keyed by `code`.

    Retries: requests that never reached the server are resent; reads, appends (each event
    carries its id) and app/user state merges are also resent after a lost answer or a 502-504.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        backoff: float = 0.25,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        """`http` replaces the connection pool (its own base URL, transport, timeouts, auth)."""
        super().__init__(retries, backoff)
        self._http = http or httpx.Client(
            base_url=base_url, timeout=timeout, headers=_headers(api_key, headers)
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = self._http.send(self._request(self._http, call))
            except httpx.TransportError as error:
                outcome = error
            delay = self._retry.delay(call, attempt, outcome)
            if delay is None:
                if isinstance(outcome, Exception):
                    raise outcome
                return call.result(outcome)
            time.sleep(delay)
            attempt += 1

    def _iterate(self, pager: Pager[Item]) -> Iterator[Item]:
        token: str | None = None
        while True:
            items, token = self._run(pager(token))
            yield from items
            if token is None:
                return

    def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: str | None = None,
        state: State | None = None,
        events: list[Event] | None = None,
    ) -> Session:
        return self._run(
            calls.create_session(
                app_name, user_id, session_id=session_id, state=state, events=events
            )
        )

    def get_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> Session:
        return self._run(
            calls.get_session(
                app_name,
                user_id,
                session_id,
                num_recent_events=num_recent_events,
                after_timestamp=after_timestamp,
            )
        )

    def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        order: Order = "asc",
    ) -> SessionPage:
        """One page of sessions (without events); `user_id=None` lists every user's."""
        return self._run(
            calls.list_sessions(
                app_name, user_id, page_size=page_size, page_token=page_token, order=order
            )
        )

    def iter_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        order: Order = "asc",
    ) -> Iterator[Session]:
        """Every session, fetching pages as the iteration reaches them."""
        return self._iterate(
            calls.session_pager(app_name, user_id, page_size=page_size, order=order)
        )

    def delete_session(self, app_name: str, user_id: str, session_id: str) -> None:
        self._run(calls.delete_session(app_name, user_id, session_id))

    def update_session_state(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: State,
        *,
        if_match: int | None = None,
    ) -> Session:
        """Record `state_delta` as an event authored by `user`; returns the session."""
        return self._run(
            calls.update_session_state(
                app_name, user_id, session_id, state_delta, if_match=if_match
            )
        )

    def append_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event: Event,
        *,
        if_match: int | None = None,
    ) -> Event:
        """Store `event` (given an `id` if it has none); returns it as stored, with `seq`.

        `if_match` is a session `version`: the append fails with `StaleSessionError` if another
        event was appended since. A `partial` event is echoed back without `seq`, not stored.
        """
        return self._run(
            calls.append_event(app_name, user_id, session_id, event, if_match=if_match)
        )

    def append_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: list[Event],
        *,
        if_match: int | None = None,
    ) -> list[Event]:
        """Store `events` at consecutive seqs, all or none; `partial` ones are skipped."""
        return self._run(
            calls.append_events(app_name, user_id, session_id, events, if_match=if_match)
        )

    def list_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
    ) -> EventPage:
        return self._run(
            calls.list_events(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                page_token=page_token,
                after_seq=after_seq,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                order=order,
            )
        )

    def iter_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
    ) -> Iterator[Event]:
        return self._iterate(
            calls.event_pager(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                after_seq=after_seq,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                order=order,
            )
        )

    def get_app_state(self, app_name: str) -> State:
        return self._run(calls.get_state(app_name, None))

    def update_app_state(self, app_name: str, state_delta: State) -> State:
        return self._run(calls.update_state(app_name, None, state_delta))

    def get_user_state(self, app_name: str, user_id: str) -> State:
        return self._run(calls.get_state(app_name, user_id))

    def update_user_state(self, app_name: str, user_id: str, state_delta: State) -> State:
        return self._run(calls.update_state(app_name, user_id, state_delta))

    def health(self) -> Health:
        """The process answers (`/healthz`); says nothing about the database."""
        return self._run(calls.health())

    def readiness(self) -> Readiness:
        """The database answers, at the expected schema (`/readyz`); else a 503 error."""
        return self._run(calls.readiness())


class AsyncSessionaryClient(_Base):
    """The asyncio twin of `SessionaryClient`: the same methods, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        backoff: float = 0.25,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        """`http` replaces the connection pool (its own base URL, transport, timeouts, auth)."""
        super().__init__(retries, backoff)
        self._http = http or httpx.AsyncClient(
            base_url=base_url, timeout=timeout, headers=_headers(api_key, headers)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = await self._http.send(self._request(self._http, call))
            except httpx.TransportError as error:
                outcome = error
            delay = self._retry.delay(call, attempt, outcome)
            if delay is None:
                if isinstance(outcome, Exception):
                    raise outcome
                return call.result(outcome)
            await asyncio.sleep(delay)
            attempt += 1

    async def _iterate(self, pager: Pager[Item]) -> AsyncIterator[Item]:
        token: str | None = None
        while True:
            items, token = await self._run(pager(token))
            for item in items:
                yield item
            if token is None:
                return

    async def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: str | None = None,
        state: State | None = None,
        events: list[Event] | None = None,
    ) -> Session:
        return await self._run(
            calls.create_session(
                app_name, user_id, session_id=session_id, state=state, events=events
            )
        )

    async def get_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> Session:
        return await self._run(
            calls.get_session(
                app_name,
                user_id,
                session_id,
                num_recent_events=num_recent_events,
                after_timestamp=after_timestamp,
            )
        )

    async def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        order: Order = "asc",
    ) -> SessionPage:
        return await self._run(
            calls.list_sessions(
                app_name, user_id, page_size=page_size, page_token=page_token, order=order
            )
        )

    def iter_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        order: Order = "asc",
    ) -> AsyncIterator[Session]:
        return self._iterate(
            calls.session_pager(app_name, user_id, page_size=page_size, order=order)
        )

    async def delete_session(self, app_name: str, user_id: str, session_id: str) -> None:
        await self._run(calls.delete_session(app_name, user_id, session_id))

    async def update_session_state(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: State,
        *,
        if_match: int | None = None,
    ) -> Session:
        return await self._run(
            calls.update_session_state(
                app_name, user_id, session_id, state_delta, if_match=if_match
            )
        )

    async def append_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event: Event,
        *,
        if_match: int | None = None,
    ) -> Event:
        return await self._run(
            calls.append_event(app_name, user_id, session_id, event, if_match=if_match)
        )

    async def append_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: list[Event],
        *,
        if_match: int | None = None,
    ) -> list[Event]:
        return await self._run(
            calls.append_events(app_name, user_id, session_id, events, if_match=if_match)
        )

    async def list_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
    ) -> EventPage:
        return await self._run(
            calls.list_events(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                page_token=page_token,
                after_seq=after_seq,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                order=order,
            )
        )

    def iter_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
    ) -> AsyncIterator[Event]:
        return self._iterate(
            calls.event_pager(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                after_seq=after_seq,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                order=order,
            )
        )

    async def get_app_state(self, app_name: str) -> State:
        return await self._run(calls.get_state(app_name, None))

    async def update_app_state(self, app_name: str, state_delta: State) -> State:
        return await self._run(calls.update_state(app_name, None, state_delta))

    async def get_user_state(self, app_name: str, user_id: str) -> State:
        return await self._run(calls.get_state(app_name, user_id))

    async def update_user_state(self, app_name: str, user_id: str, state_delta: State) -> State:
        return await self._run(calls.update_state(app_name, user_id, state_delta))

    async def health(self) -> Health:
        return await self._run(calls.health())

    async def readiness(self) -> Readiness:
        return await self._run(calls.readiness())
