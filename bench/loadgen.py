"""A minimal HTTP/1.1 keep-alive client on raw asyncio streams.

The load generator must not be the bottleneck: on a 2-core machine one httpx.AsyncClient
tops out near 300 requests/s, which would hide the server's real throughput. One connection
per simulated client, requests written as prepared bytes and responses parsed just enough to
find their end, keeps the client's cost per request in the tens of microseconds.
"""

import asyncio
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Self


class HTTPError(Exception):
    """A response with an unexpected status: the benchmark measures only successful work."""


@dataclass
class Response:
    status: int
    body: bytes


def request(host: str, port: int, method: str, path: str, body: bytes | None = None) -> bytes:
    """Request bytes, built once and outside any timed section."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + (body or b"")


class Connection:
    """One keep-alive connection; requests on it are sequential, as a real client's are."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Self:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()

    def prepare(self, method: str, path: str, body: bytes | None = None) -> bytes:
        return request(self.host, self.port, method, path, body)

    async def exchange(self, request: bytes) -> Response:
        """The response to `request`, whatever its status."""
        assert self._reader is not None and self._writer is not None, "not connected"
        self._writer.write(request)
        return await self._read_response()

    async def send(self, request: bytes, expect: int) -> Response:
        response = await self.exchange(request)
        if response.status != expect:
            raise HTTPError(
                f"expected {expect}, got {response.status}: {response.body[:300]!r} "
                f"for {request[:120]!r}"
            )
        return response

    async def call(
        self, method: str, path: str, body: bytes | None = None, expect: int = 200
    ) -> Response:
        return await self.send(self.prepare(method, path, body), expect)

    async def _read_response(self) -> Response:
        assert self._reader is not None
        head = await self._reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        chunked = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            return Response(status, await self._read_chunked())
        return Response(status, await self._reader.readexactly(length) if length else b"")

    async def _read_chunked(self) -> bytes:
        assert self._reader is not None
        parts: list[bytes] = []
        while True:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await self._reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await self._reader.readexactly(size))
            await self._reader.readexactly(2)


async def ceiling(host: str, port: int, *, clients: int, requests: int) -> float:
    """Requests/s this generator reaches against a do-nothing endpoint (GET /healthz)."""
    per_client = max(1, requests // clients)

    async def client() -> None:
        async with Connection(host, port) as connection:
            request = connection.prepare("GET", "/healthz")
            for _ in range(per_client):
                await connection.send(request, 200)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return per_client * clients / (time.perf_counter() - started)
