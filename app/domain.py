"""Plain values passed between services and repositories."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.state import ScopedDelta


@dataclass(frozen=True)
class SessionKey:
    app_name: str
    user_id: str
    session_id: str


@dataclass(frozen=True)
class NewEvent:
    """An event ready to store: its JSON document and the columns extracted from it."""

    id: str
    timestamp: float
    request_hash: bytes
    document: dict[str, Any]
    delta: ScopedDelta


@dataclass(frozen=True)
class StoredSession:
    """A session row with the shared state of its app and user, before any events."""

    key: SessionKey
    state: dict[str, Any]
    app_state: dict[str, Any]
    user_state: dict[str, Any]
    version: int
    create_time: datetime
    update_time: datetime
    last_event_time: float | None


@dataclass(frozen=True)
class ApiKey:
    """An API key, without its secret. `app_name` None: every app; `user_id` None: every user."""

    id: str
    name: str
    app_name: str | None
    user_id: str | None
    read_only: bool
    app_state_write: bool
    create_time: datetime | None = None
    revoke_time: datetime | None = None
