"""The clients' HTTP transports: httpx's own, with each connection a pool of its own; or,
with the `aiohttp` extra, aiohttp's for the asyncio client (`aiohttp_transport`).

httpcore's connection pool walks every waiting request and every connection on each request
and each response it hands back, so its cost per request grows with the requests in flight
(encode/httpx#3215): one client shared by 32 tasks spent about three times the server's own
CPU per append in it. Here each connection is a pool of one, which that walk finishes at once,
and a request takes the connection freed last (or, when all are busy, the least busy) in
constant time. The HTTP itself is httpx's and httpcore's, unchanged: timeouts, errors,
keep-alive, TLS and proxies behave as with `httpx.AsyncHTTPTransport`.

A connection belongs to the event loop that opened it, so the asyncio transports keep one pool
for each loop they are used from (`PerLoop`): one client serves `asyncio.run` after
`asyncio.run`, and threads that each run a loop, at once.
"""

import asyncio
import atexit
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

import httpx

MAX_CONNECTIONS = 64

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One `T` (a connection pool) for each event loop it is used from, made by `make` in that
    loop: what a pool holds (sockets, futures, locks) works in its own loop alone.

    Each is closed by `close` when its loop shuts down (the end of `asyncio.run`), or when this
    is closed. One whose loop was closed without shutting down (`loop.close()` alone) is closed
    once a new loop comes, or at exit; `close` then runs in another loop. `make` and `close`
    must not refer to what holds this: a pool left unclosed is then closed in its loop when
    its holder is collected, never found unclosed by the collector.
    """

    def __init__(self, make: Callable[[], T], close: Callable[[T], Awaitable[None]]) -> None:
        self._make, self._close = make, close
        self._values: dict[asyncio.AbstractEventLoop, T] = {}
        self._watches: dict[asyncio.AbstractEventLoop, AsyncGenerator[None]] = {}
        self._lock = threading.Lock()
        _EVERY.add(self)

    def current(self) -> T | None:
        """The running loop's, if it has one yet: the hot path, one dict read."""
        return self._values.get(asyncio.get_running_loop())

    async def open(self) -> T:
        """The running loop's, made at its first use; the values of loops closed since go."""
        loop = asyncio.get_running_loop()
        value = self._make()
        watch = _closed_with(weakref.ref(self), loop, value, self._close)
        with self._lock:
            self._values[loop], self._watches[loop] = value, watch
            ended = [old for gone, old in self._watches.items() if gone.is_closed()]
        await anext(watch)  # the loop now holds it, until it shuts down
        await _finish(*ended)
        return value

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._values.pop(loop, None)
            self._watches.pop(loop, None)

    async def aclose(self) -> None:
        """Close each loop's: the running one's and those of closed loops here, those of other
        loops in their own (whenever they next run)."""
        here = asyncio.get_running_loop()
        with self._lock:
            watches = list(self._watches.items())
        for loop, watch in watches:
            if loop is here or loop.is_closed():
                await watch.aclose()
            else:
                asyncio.run_coroutine_threadsafe(_finish(watch), loop)

    def close_at_exit(self) -> None:
        """Close what loops left open, each in its own loop when that is not closed."""
        with self._lock:
            watches = list(self._watches.items())
        ended = [watch for loop, watch in watches if loop.is_closed()]
        for loop, watch in watches:
            if not loop.is_closed() and not loop.is_running():
                loop.run_until_complete(_finish(watch))
        if ended:
            asyncio.run(_finish(*ended))


async def _closed_with(
    owner: "weakref.ref[PerLoop[T]]",
    loop: asyncio.AbstractEventLoop,
    value: T,
    close: Callable[[T], Awaitable[None]],
) -> AsyncGenerator[None]:
    """Held by `loop` from its first step: a loop shutting down closes the async generators it
    holds, and this one then closes `value`, in the loop. Its owner is held weakly, so that
    nothing `value` is held by is held by it."""
    try:
        yield
    finally:
        if (per_loop := owner()) is not None:
            per_loop._forget(loop)
        await close(value)


async def _finish(*watches: AsyncGenerator[None]) -> None:
    for watch in watches:
        await watch.aclose()


_EVERY: "weakref.WeakSet[PerLoop[Any]]" = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    """Pools that loops left open are closed before the interpreter's last collection, which
    would find them unclosed (aiohttp would say so)."""
    for per_loop in list(_EVERY):
        per_loop.close_at_exit()


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
    """Up to `max_connections` keep-alive connections in each event loop that uses it, each an
    `httpx.AsyncHTTPTransport` of one connection, made as they are first needed; `options` are
    that transport's (`verify`, `cert`, `proxy`, `retries`, …)."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS, **options: Any) -> None:
        options = _single_connection(**options)
        self._pools = PerLoop(lambda: _LoopPool(max_connections, options), _LoopPool.aclose)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pool = self._pools.current()
        if pool is None:
            pool = await self._pools.open()
        index = pool.connections.take()
        transport = pool.transports.get(index)
        if transport is None:
            transport = pool.transports[index] = httpx.AsyncHTTPTransport(**pool.options)
        try:
            response = await transport.handle_async_request(request)
        except BaseException:
            pool.connections.give_back(index)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _AsyncReleasing(
            response.stream, lambda: pool.connections.give_back(index)
        )
        return response

    async def aclose(self) -> None:
        await self._pools.aclose()


class _LoopPool:
    """`AsyncPoolTransport`'s connections in one event loop."""

    def __init__(self, max_connections: int, options: dict[str, Any]) -> None:
        self.loop = asyncio.get_running_loop()
        self.options = options
        self.connections = _Connections(max_connections)
        self.transports: dict[int, httpx.AsyncHTTPTransport] = {}

    async def aclose(self) -> None:
        if self.loop.is_closed():
            return  # no loop can close its sockets now: they go with their transports
        for transport in self.transports.values():
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
