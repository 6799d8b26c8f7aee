"""`AiohttpTransport`: the asyncio client's requests sent by aiohttp, under httpx's API.

aiohttp parses HTTP in C and keeps its idle connections in a list it takes from in constant
time; httpx's own transport parses in Python (h11) through anyio. With 32 tasks sharing one
client, an append costs the client process about a third of the CPU it costs through
`AsyncPoolTransport` (`make bench`'s S17). The client's API is httpx's either way: requests,
responses, timeouts and errors are httpx's, so retries, typed errors and streams behave the
same. Installed with the `aiohttp` extra (`pip install './clients/python[aiohttp]'`), it is
the asyncio client's default transport.
"""

import io
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import aiohttp
import httpx
import yarl
from aiohttp.payload import TOO_LARGE_BYTES_BODY

from sessionary_client._transport import MAX_CONNECTIONS, PerLoop

# Sent by aiohttp itself, from the URL and the body.
_OWN_HEADERS = frozenset({b"host", b"content-length", b"transfer-encoding"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Up to `max_connections` keep-alive connections in each event loop that uses it: an
    `aiohttp.ClientSession` belongs to the loop it was made in, so each loop has its own."""

    def __init__(self, max_connections: int = MAX_CONNECTIONS) -> None:
        self._sessions = PerLoop(partial(_session, max_connections), aiohttp.ClientSession.close)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._sessions.current()
        if session is None:
            session = await self._sessions.open()
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in request.headers.raw
            if name.lower() not in _OWN_HEADERS
        ]
        timeout = request.extensions.get("timeout", {})
        try:
            answer = await session.request(
                request.method,
                # As httpx encoded it: yarl would decode `%2E` and resolve dot segments, and an
                # id `..` would change the route.
                yarl.URL(str(request.url), encoded=True),
                headers=headers,
                data=_body(request),
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=timeout.get("pool"),
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                ),
            )
        except (TimeoutError, aiohttp.ClientError) as error:
            raise _httpx_error(error, request) from error
        return httpx.Response(
            answer.status,
            headers=[(name, value) for name, value in answer.raw_headers],
            stream=_Body(answer, request),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        await self._sessions.aclose()


def _session(max_connections: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=max_connections, ttl_dns_cache=300)
    # Bodies are decoded by httpx, as from its own transport; cookies are not kept.
    return aiohttp.ClientSession(
        connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
    )


def _body(request: httpx.Request) -> Any:
    """The request's body: its bytes, or, for a streamed one, its chunks as they come. Bytes
    past aiohttp's `TOO_LARGE_BYTES_BODY` go as a file, which aiohttp writes a piece at a time
    between other tasks' turns (and warns of as bytes)."""
    try:
        content = request.content
    except httpx.RequestNotRead:
        stream = request.stream
        assert isinstance(stream, httpx.AsyncByteStream)

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in stream:
                yield chunk

        return chunks()
    return io.BytesIO(content) if len(content) > TOO_LARGE_BYTES_BODY else content


class _Body(httpx.AsyncByteStream):
    """The response's body as it arrives; its connection goes back to the pool when the body
    is read to the end, and is dropped when it is closed before."""

    def __init__(self, answer: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._answer, self._request = answer, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._answer.content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError) as error:
            raise _httpx_error(error, self._request) from error

    async def aclose(self) -> None:
        if self._answer.content.at_eof():
            self._answer.release()
        else:
            self._answer.close()


def _httpx_error(error: BaseException, request: httpx.Request) -> httpx.TransportError:
    """aiohttp's error as the one httpx's own transport raises for the same failure, which is
    what the clients' retries decide on (a request that never left may always be resent)."""
    message = str(error) or type(error).__name__
    kind: type[httpx.TransportError]
    if isinstance(error, aiohttp.ConnectionTimeoutError):  # connecting, or waiting for one
        kind = httpx.ConnectTimeout
    elif isinstance(error, TimeoutError):  # between two reads of the answer
        kind = httpx.ReadTimeout
    elif isinstance(error, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
    elif isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError)):
        kind = httpx.RemoteProtocolError
    elif isinstance(error, aiohttp.ClientOSError):
        kind = httpx.ReadError
    else:
        kind = httpx.NetworkError
    return kind(message, request=request)
