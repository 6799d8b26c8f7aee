"""Sessionary over HTTP, driven by the raw-asyncio load generator."""

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

from app.domain import SessionKey
from bench.loadgen import Connection, request
from bench.scenarios import median_call
from bench.systems import PageToken
from bench.workload import EventSpec, Sizes, wire_event


def session_path(key: SessionKey) -> str:
    return (
        f"/apps/{quote(key.app_name)}/users/{quote(key.user_id)}/sessions/{quote(key.session_id)}"
    )


class HttpLane:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def append(self, session: Any, event: bytes) -> None:
        await self.connection.send(event, 201)

    async def append_batch(self, session: Any, events: bytes) -> None:
        await self.connection.send(events, 201)

    async def read(self, key: SessionKey, recent: int | None) -> int:
        query = "" if recent is None else f"?numRecentEvents={recent}"
        response = await self.connection.call("GET", session_path(key) + query)
        # Counting is all the client does with the body: parsing 1 MB of JSON here would
        # charge the client's CPU to the server's latency.
        return response.body.count(b'"seq":')

    async def list_page(self, app: str, page_size: int, token: PageToken) -> tuple[int, PageToken]:
        query = {"pageSize": page_size} | ({"pageToken": token} if token else {})
        response = await self.connection.call(
            "GET", f"/apps/{quote(app)}/sessions?{urlencode(query)}"
        )
        page = json.loads(response.body)
        return len(page["sessions"]), page["nextPageToken"]


class Sessionary:
    """Sessionary's API over HTTP; also the HTTP floor's, which answers the same requests."""

    def __init__(
        self,
        host: str,
        port: int,
        name: str = "Sessionary",
        worker_pids: Callable[[], list[int]] | None = None,
    ) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._worker_pids = worker_pids

    def worker_pids(self) -> list[int]:
        """The processes serving it, when this bench started them: their CPU is measured."""
        return self._worker_pids() if self._worker_pids is not None else []

    async def create_sessions(self, keys: Sequence[SessionKey]) -> list[Any]:
        async with Connection(self.host, self.port) as connection:
            for key in keys:
                body = json.dumps({"sessionId": key.session_id}).encode()
                path = f"/apps/{quote(key.app_name)}/users/{quote(key.user_id)}/sessions"
                await connection.call("POST", path, body, expect=201)
        return list(keys)

    def encode(self, key: SessionKey, events: Sequence[EventSpec]) -> list[bytes]:
        path = session_path(key) + "/events"
        return [
            request(self.host, self.port, "POST", path, json.dumps(wire_event(event)).encode())
            for event in events
        ]

    def encode_batch(self, key: SessionKey, events: Sequence[EventSpec]) -> bytes:
        body = json.dumps({"events": [wire_event(event) for event in events]}).encode()
        return request(self.host, self.port, "POST", session_path(key) + "/events:batch", body)

    @asynccontextmanager
    async def lane(self) -> AsyncIterator[HttpLane]:
        async with Connection(self.host, self.port) as connection:
            yield HttpLane(connection)

    async def close(self) -> None:
        """Nothing to release: connections live only as long as their lane."""


async def lineage_times(
    system: Sessionary, key: SessionKey, sizes: Sizes
) -> tuple[float, float, float, float]:
    """S8, on a session of `sizes.lineage_events` events: median ms of a plain read, of a
    read as of the seq before its last (`untilSeq`: all events but one, and the state then:
    the last event's change undone), of a read as of its middle seq (half the events, and the
    state replayed from every delta up to it), and of forking it whole (a new session with a
    copy of every event)."""
    path = session_path(key)
    forks = iter(range(1_000_000))
    async with Connection(system.host, system.port) as connection:
        last_seq = sizes.lineage_events

        async def read(query: str = "", expected: int = last_seq) -> None:
            response = await connection.call("GET", path + query)
            if response.body.count(b'"seq":') != expected:
                raise AssertionError(f"S8 read {query!r} did not return {expected} events")

        async def fork() -> None:
            body = json.dumps({"sessionId": f"fork-{next(forks)}"}).encode()
            await connection.call("POST", path + ":fork", body, expect=201)

        plain = await median_call(sizes.read_repeat, read)
        until = await median_call(
            sizes.read_repeat, lambda: read(f"?untilSeq={last_seq - 1}", last_seq - 1)
        )
        middle = last_seq // 2
        halfway = await median_call(sizes.read_repeat, lambda: read(f"?untilSeq={middle}", middle))
        forked = await median_call(sizes.repeat, fork)
    return plain, until, halfway, forked


async def context_times(system: Sessionary, key: SessionKey, sizes: Sizes) -> tuple[float, float]:
    """S9, on a conversation of `sizes.context_events` events: median ms of reading its newest
    `sizes.context_recent` events, and of its context view within `sizes.context_budget`
    tokens (about as many events)."""
    path = session_path(key)
    budget = sizes.context_budget
    async with Connection(system.host, system.port) as connection:

        async def recent() -> None:
            response = await connection.call(
                "GET", f"{path}?numRecentEvents={sizes.context_recent}"
            )
            if response.body.count(b'"seq":') != sizes.context_recent:
                raise AssertionError("S9 read the wrong number of events")

        async def context() -> None:
            response = await connection.call("GET", f"{path}/context?tokenBudget={budget}")
            # As for the read, the client parses no event: only the view's closing fields.
            body = response.body
            tail = json.loads(b"{" + body[body.rindex(b'"estimatedTokens":') :])
            if not body.startswith(b'{"events":[{') or tail["estimatedTokens"] > budget:
                raise AssertionError(f"S9 context view out of budget: {tail['estimatedTokens']}")

        return (
            await median_call(sizes.read_repeat, recent),
            await median_call(sizes.read_repeat, context),
        )
