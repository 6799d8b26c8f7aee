"""The clients' HTTP transports: httpx's own, with each connection a pool of its own; or,
with the `aiohttp` extra, aiohttp's for the asyncio client (`aiohttp_transport`).

httpcore's connection pool walks every waiting request and every connection on each request
and each response it hands back, so its cost per request grows with the requests in flight
(encode/httpx#3215): one client shared by 32 tasks spent about three times the server's own
CPU per append in it. Here each connection is a pool of one, which that walk finishes at once,
and a request takes the connection freed last (or, when all are busy, the least busy) in
constant time. The HTTP itself is httpx's and httpcore's, unchanged: timeouts, errors,
keep-alive, TLS and proxies behave as with `httpx.AsyncHTTPTransport`.
"""

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx

MAX_CONNECTIONS = 64


class _Connections:
    """Which connection a request takes: the one freed last, else the least busy."""

    def __init__(self, size: int) -> None:
        self.busy = [0] * size
        self.idle = list(range(size - 1, -1, -1))  # a stack: a warm connection first

    def take(self) -> int:
        if self.idle:
            index = self.idle.pop()
        else:
            index = min(range(len(self.busy)), key=self.busy.__getitem__)
        self.busy[index] += 1
        return index

    def give_back(self, index: int) -> None:
        self.busy[index] -= 1
        if not self.busy[index]:
            self.idle.append(index)


def _single_connection(**options: Any) -> dict[str, Any]:
    return {**options, "limits": httpx.Limits(max_connections=1, max_keepalive_connections=1)}


class AsyncPoolTransport(httpx.AsyncBaseTransport):
    """Up to `max_connections` keep-alive connections, each an `httpx.AsyncHTTPTransport` of
    one connection, made as they are first needed; `options` are that transport's (`verify`,
    `cert`, `proxy`, `retries`, …)."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS, **options: Any) -> None:
        self._options = _single_connection(**options)
        self._connections = _Connections(max_connections)
        self._transports: dict[int, httpx.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self._connections.take()
        transport = self._transports.get(index)
        if transport is None:
            transport = self._transports[index] = httpx.AsyncHTTPTransport(**self._options)
        try:
            response = await transport.handle_async_request(request)
        except BaseException:
            self._connections.give_back(index)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _AsyncReleasing(
            response.stream, lambda: self._connections.give_back(index)
        )
        return response

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()


class PoolTransport(httpx.BaseTransport):
    """`AsyncPoolTransport` for the blocking client, its connections shared by threads."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS, **options: Any) -> None:
        self._options = _single_connection(**options)
        self._connections = _Connections(max_connections)
        self._transports: dict[int, httpx.HTTPTransport] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            index = self._connections.take()
            transport = self._transports.get(index)
            if transport is None:
                transport = self._transports[index] = httpx.HTTPTransport(**self._options)
        try:
            response = transport.handle_request(request)
        except BaseException:
            self._give_back(index)
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _Releasing(response.stream, lambda: self._give_back(index))
        return response

    def _give_back(self, index: int) -> None:
        with self._lock:
            self._connections.give_back(index)

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()


class _AsyncReleasing(httpx.AsyncByteStream):
    """A response's body that gives its connection back once, when it is closed (httpx closes
    it when the body is read, or when a stream's block ends)."""

    def __init__(self, stream: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._stream, self._release = stream, release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            release, self._release = self._release, _nothing
            release()


class _Releasing(httpx.SyncByteStream):
    def __init__(self, stream: httpx.SyncByteStream, release: Callable[[], None]) -> None:
        self._stream, self._release = stream, release

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            release, self._release = self._release, _nothing
            release()


def _nothing() -> None:
    pass


def default_async_transport() -> httpx.AsyncBaseTransport:
    """aiohttp's (`sessionary_client.aiohttp_transport`) when the `aiohttp` extra is installed,
    else `AsyncPoolTransport`."""
    try:
        from sessionary_client.aiohttp_transport import AiohttpTransport
    except ImportError:
        return AsyncPoolTransport()
    return AiohttpTransport()


def default_transport() -> httpx.BaseTransport:
    """The blocking client's: `PoolTransport` (aiohttp is asyncio's only)."""
    return PoolTransport()
