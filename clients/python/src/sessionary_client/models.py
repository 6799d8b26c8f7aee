"""The wire types, as typed dicts of the server's camelCase JSON (no parsing layer, no copies)."""

from typing import Any, Literal, TypedDict

State = dict[str, Any]
"""Key-value state. In a session: its own keys, app keys as `app:k`, user keys as `user:k`."""

Event = dict[str, Any]
"""An ADK event as JSON (`id`, `author`, `invocationId`, `timestamp`, `content`, `actions`, …).

Stored events also carry `seq`, their position in the log. Kept open: the server stores and
returns fields it does not know, so newer ADK fields survive a round trip.
"""

Order = Literal["asc", "desc"]


class Session(TypedDict):
    id: str
    appName: str
    userId: str
    state: State
    events: list[Event]
    lastUpdateTime: float
    createTime: float
    version: int
    """The `seq` of the last event (0 when empty): what `if_match` takes."""


class SessionPage(TypedDict):
    sessions: list[Session]
    nextPageToken: str | None


class EventPage(TypedDict):
    events: list[Event]
    nextPageToken: str | None


class EventList(TypedDict):
    events: list[Event]


class ScopeState(TypedDict):
    state: State


class CreateSession(TypedDict, total=False):
    """The body of a create: all optional."""

    sessionId: str
    state: State
    events: list[Event]


class Health(TypedDict):
    status: Literal["ok"]


class Readiness(TypedDict):
    status: Literal["ready"]
    schemaRevision: str
