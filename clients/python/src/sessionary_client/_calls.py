"""Every endpoint once, as a `Call`: the request to send, how to read the answer, the retry rule.

The sync and async clients only differ in how they send a `Call`; nothing here does I/O.
"""

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

import httpx

from sessionary_client.errors import error_for
from sessionary_client.models import (
    CreateSession,
    Event,
    EventList,
    EventPage,
    Health,
    Order,
    Readiness,
    ScopeState,
    Session,
    SessionPage,
    State,
)

T = TypeVar("T")
U = TypeVar("U")
Item = TypeVar("Item")

Params = dict[str, str | int | float]


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Params | None = None
    body: Any = None
    headers: dict[str, str] | None = None
    # True when sending it twice has the effect of sending it once, so an answer lost to a
    # timeout may be asked for again. Requests that never left are retried regardless.
    idempotent: bool = False

    def result(self, response: httpx.Response) -> T:
        if response.is_error:
            raise error_for(response)
        return self.read(response)

    def then(self, convert: Callable[[T], U]) -> "Call[U]":
        """The same request, its answer converted."""
        read = self.read
        return Call(
            self.method,
            self.path,
            lambda response: convert(read(response)),
            self.params,
            self.body,
            self.headers,
            self.idempotent,
        )


Pager = Callable[[str | None], Call[tuple[list[Item], str | None]]]
"""Given a page token (None for the first page), the call for that page's items and next token."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how soon to resend a call whose answer was lost or was a transient error."""

    retries: int = 2
    backoff: float = 0.25
    max_backoff: float = 5.0

    # The request never reached the server: resending cannot duplicate anything.
    _NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    # The server, or a proxy in front of it, could not serve the request right now.
    _TRANSIENT = frozenset({502, 503, 504})

    def delay(
        self, call: Call[Any], attempt: int, outcome: httpx.Response | Exception
    ) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to give up with this outcome."""
        if attempt >= self.retries:
            return None
        if isinstance(outcome, httpx.Response):
            retry = call.idempotent and outcome.status_code in self._TRANSIENT
        else:
            retry = isinstance(outcome, self._NOT_SENT) or (
                call.idempotent and isinstance(outcome, httpx.TransportError)
            )
        if not retry:
            return None
        # Full jitter, so clients that failed together do not come back together.
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


def _path(*segments: str) -> str:
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def _sessions(app_name: str, user_id: str, *rest: str) -> str:
    return _path("apps", app_name, "users", user_id, "sessions", *rest)


def _params(**values: str | int | float | None) -> Params:
    return {name: value for name, value in values.items() if value is not None}


def _if_match(version: int | None) -> dict[str, str] | None:
    return None if version is None else {"If-Match": f'"{version}"'}


def _json(response: httpx.Response) -> Any:
    return response.json()


def _nothing(response: httpx.Response) -> None:
    return None


def _state(response: httpx.Response) -> State:
    return cast(ScopeState, response.json())["state"]


def create_session(
    app_name: str,
    user_id: str,
    *,
    session_id: str | None,
    state: State | None,
    events: list[Event] | None,
) -> Call[Session]:
    body: CreateSession = {}
    if session_id is not None:
        body["sessionId"] = session_id
    if state is not None:
        body["state"] = state
    if events is not None:
        body["events"] = [with_id(event) for event in events]
    return Call("POST", _sessions(app_name, user_id), _json, body=body)


def get_session(
    app_name: str,
    user_id: str,
    session_id: str,
    *,
    num_recent_events: int | None,
    after_timestamp: float | None,
) -> Call[Session]:
    params = _params(numRecentEvents=num_recent_events, afterTimestamp=after_timestamp)
    return Call("GET", _sessions(app_name, user_id, session_id), _json, params, idempotent=True)


def list_sessions(
    app_name: str, user_id: str | None, *, page_size: int, page_token: str | None, order: Order
) -> Call[SessionPage]:
    path = _path("apps", app_name, "sessions") if user_id is None else _sessions(app_name, user_id)
    params = _params(pageSize=page_size, pageToken=page_token, order=order)
    return Call("GET", path, _json, params, idempotent=True)


def session_pager(
    app_name: str, user_id: str | None, *, page_size: int, order: Order
) -> Pager[Session]:
    def page(token: str | None) -> Call[tuple[list[Session], str | None]]:
        call = list_sessions(app_name, user_id, page_size=page_size, page_token=token, order=order)
        return call.then(lambda page: (page["sessions"], page["nextPageToken"]))

    return page


def delete_session(app_name: str, user_id: str, session_id: str) -> Call[None]:
    # Not idempotent for the caller: a resend after a lost 204 would answer 404.
    return Call("DELETE", _sessions(app_name, user_id, session_id), _nothing)


def update_session_state(
    app_name: str, user_id: str, session_id: str, state_delta: State, *, if_match: int | None
) -> Call[Session]:
    # Each PATCH records a new event with a server-chosen id, so a resend would record two.
    path = _sessions(app_name, user_id, session_id)
    return Call("PATCH", path, _json, body={"stateDelta": state_delta}, headers=_if_match(if_match))


def with_id(event: Event) -> Event:
    """The event with an `id`, so that resending it is recognised as the same event."""
    return event if event.get("id") else {**event, "id": str(uuid.uuid4())}


def append_event(
    app_name: str, user_id: str, session_id: str, event: Event, *, if_match: int | None
) -> Call[Event]:
    # Idempotent because the event always carries its id: the server answers a resend of a
    # stored event with that event (200), even when If-Match has moved on since.
    return Call(
        "POST",
        _sessions(app_name, user_id, session_id, "events"),
        _json,
        body=with_id(event),
        headers=_if_match(if_match),
        idempotent=True,
    )


def append_events(
    app_name: str, user_id: str, session_id: str, events: list[Event], *, if_match: int | None
) -> Call[list[Event]]:
    # Idempotent for the same reason as one append: every event carries its id.
    return Call(
        "POST",
        _sessions(app_name, user_id, session_id, "events") + ":batch",
        lambda response: cast(EventList, response.json())["events"],
        body={"events": [with_id(event) for event in events]},
        headers=_if_match(if_match),
        idempotent=True,
    )


def list_events(
    app_name: str,
    user_id: str,
    session_id: str,
    *,
    page_size: int,
    page_token: str | None,
    after_seq: int | None,
    after_timestamp: float | None,
    before_timestamp: float | None,
    order: Order,
) -> Call[EventPage]:
    params = _params(
        pageSize=page_size,
        pageToken=page_token,
        afterSeq=after_seq,
        afterTimestamp=after_timestamp,
        beforeTimestamp=before_timestamp,
        order=order,
    )
    path = _sessions(app_name, user_id, session_id, "events")
    return Call("GET", path, _json, params, idempotent=True)


def event_pager(
    app_name: str,
    user_id: str,
    session_id: str,
    *,
    page_size: int,
    after_seq: int | None,
    after_timestamp: float | None,
    before_timestamp: float | None,
    order: Order,
) -> Pager[Event]:
    def page(token: str | None) -> Call[tuple[list[Event], str | None]]:
        call = list_events(
            app_name,
            user_id,
            session_id,
            page_size=page_size,
            page_token=token,
            after_seq=after_seq,
            after_timestamp=after_timestamp,
            before_timestamp=before_timestamp,
            order=order,
        )
        return call.then(lambda page: (page["events"], page["nextPageToken"]))

    return page


def _scope(app_name: str, user_id: str | None) -> str:
    if user_id is None:
        return _path("apps", app_name, "state")
    return _path("apps", app_name, "users", user_id, "state")


def get_state(app_name: str, user_id: str | None) -> Call[State]:
    return Call("GET", _scope(app_name, user_id), _state, idempotent=True)


def update_state(app_name: str, user_id: str | None, state_delta: State) -> Call[State]:
    # A top-level merge of the same keys twice leaves what merging them once leaves.
    path = _scope(app_name, user_id)
    return Call("PATCH", path, _state, body={"stateDelta": state_delta}, idempotent=True)


def health() -> Call[Health]:
    return Call("GET", "/healthz", _json, idempotent=True)


def readiness() -> Call[Readiness]:
    return Call("GET", "/readyz", _json, idempotent=True)
