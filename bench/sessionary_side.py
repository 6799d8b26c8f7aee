"""Sessionary over HTTP, driven by the raw-asyncio load generator."""

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

from app.domain import SessionKey
from bench.loadgen import Connection, request
from bench.systems import PageToken
from bench.workload import EventSpec, wire_event


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

    def __init__(self, host: str, port: int, name: str = "Sessionary") -> None:
        self.name = name
        self.host = host
        self.port = port

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
