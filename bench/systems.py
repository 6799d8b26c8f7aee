"""What a scenario needs from a system under test, so one scenario drives all three.

A system prepares its inputs up front (`encode`, untimed) and opens lanes: a lane is one
client's channel (an HTTP keep-alive connection, a pooled database connection, or ADK's
service object), used sequentially by that client the way a real agent uses its store.
"""

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from app.domain import SessionKey
from bench.workload import EventSpec

# A token the system's own listing hands back for the next page (None: first page / no more).
PageToken = Any


class Lane(Protocol):
    async def append(self, session: Any, event: Any) -> None:
        """Store one event, one request or transaction."""

    async def append_batch(self, session: Any, events: Any) -> None:
        """Store several events of one session the cheapest way the system offers."""

    async def read(self, key: SessionKey, recent: int | None) -> int:
        """Read a session with all (None) or its `recent` latest events; the count read."""

    async def list_page(self, app: str, page_size: int, token: PageToken) -> tuple[int, PageToken]:
        """One page of an app's sessions: how many were listed and the next page's token."""


class System(Protocol):
    name: str

    async def create_sessions(self, keys: Sequence[SessionKey]) -> list[Any]:
        """Create empty sessions (untimed); returns the handle `append` takes for each."""

    def encode(self, key: SessionKey, events: Sequence[EventSpec]) -> list[Any]:
        """Each event as this system's append takes it."""

    def encode_batch(self, key: SessionKey, events: Sequence[EventSpec]) -> Any:
        """The events as this system's `append_batch` takes them."""

    def lane(self) -> AbstractAsyncContextManager[Lane]: ...

    async def close(self) -> None: ...
