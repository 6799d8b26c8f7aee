"""What every request does alike in the four clients (docs/clients.md): its User-Agent, the
request id its errors carry, the resends after a 429 and the wait `Retry-After` asks."""

import asyncio
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from sessionary_client import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncSessionaryClient,
    RequestOptions,
    SessionaryClient,
    SessionNotFoundError,
)
from sessionary_client._core import retry_after
from sessionary_client._transport import AsyncPoolTransport, PoolTransport

USER = "ada"


class Recording(httpx.BaseTransport):
    """The live server's answers, each request's headers kept."""

    def __init__(self) -> None:
        self.sent: list[httpx.Headers] = []
        self._real = PoolTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.headers)
        return self._real.handle_request(request)

    def close(self) -> None:
        self._real.close()


def test_each_request_names_the_client_and_its_version(live_server: str) -> None:
    recording = Recording()
    with SessionaryClient(live_server, transport=recording) as client:
        client.health()
    assert recording.sent[0]["user-agent"] == "sessionary-python/0.1.0"


def test_a_user_agent_among_the_clients_headers_replaces_it(live_server: str) -> None:
    recording = Recording()
    headers = {"user-agent": "my-agent/2"}
    with SessionaryClient(live_server, transport=recording, headers=headers) as client:
        client.health()
    assert recording.sent[0].get_list("user-agent") == ["my-agent/2"]


async def test_an_error_carries_its_status_code_headers_and_request_id(
    live_server: str, app_name: str
) -> None:
    named = {"X-Request-ID": "req-42"}
    async with AsyncSessionaryClient(live_server, transport=AsyncPoolTransport()) as client:
        with pytest.raises(SessionNotFoundError) as unnamed:
            await client.get_session(app_name, USER, "nope")
    made = unnamed.value.request_id
    assert made and made == unnamed.value.headers["x-request-id"]
    assert (unnamed.value.status_code, unnamed.value.code) == (404, "session_not_found")
    async with AsyncSessionaryClient(live_server, headers=named) as client:
        with pytest.raises(SessionNotFoundError) as missing:
            await client.get_session(app_name, USER, "nope")
    assert missing.value.request_id == "req-42"


def closed_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


@pytest.mark.parametrize("headers", [{"X-Request-ID": "req-7"}, {}])
def test_a_request_without_an_answer_carries_the_id_it_was_sent_with(
    headers: dict[str, str],
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with SessionaryClient(url, headers=headers, retries=0) as client:
        with pytest.raises(APIConnectionError) as refused:
            client.health()
    assert refused.value.request_id == headers.get("X-Request-ID")


class Scripted:
    """A real HTTP server on a local socket, answering each request with the next of its
    `answers` (status, headers), the last one for every request after; `sent` their times."""

    def __init__(self, *answers: tuple[int, dict[str, str]]) -> None:
        self.answers, self.sent = list(answers), list[float]()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.answer, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readuntil(b"\r\n\r\n")) and not writer.is_closing():
            self.sent.append(time.monotonic())
            status, headers = self.answers[min(len(self.sent), len(self.answers)) - 1]
            body = b'{"status":"ok"}' if status == 200 else b'{"code":"busy"}'
            lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
            lines += ["Content-Type: application/json", *(f"{k}: {v}" for k, v in headers.items())]
            writer.write("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
            await writer.drain()


@pytest.mark.parametrize("status", [429, 503])
async def test_a_read_is_resent_after_the_wait_retry_after_asks(status: int) -> None:
    """No jitter: not before the second asked, though the backoff alone would be far less."""
    server = Scripted((status, {"Retry-After": "1"}), (200, {}))
    async with server as url, AsyncSessionaryClient(url, backoff=0.001) as client:
        assert await client.health() == {"status": "ok"}
    assert len(server.sent) == 2 and server.sent[1] - server.sent[0] >= 1.0


async def test_a_write_is_not_resent_after_a_429() -> None:
    server = Scripted((429, {"Retry-After": "0"}))
    async with server as url, AsyncSessionaryClient(url, backoff=0.001) as client:
        with pytest.raises(APIError) as limited:
            await client.create_session("app", USER)
    assert limited.value.status_code == 429 and len(server.sent) == 1


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "wait"),
    [
        ("2", 2.0),
        ("0.5", 0.5),
        ("0", 0.0),
        ("3600", 60.0),
        (format_datetime(NOW + timedelta(seconds=30), usegmt=True), 30.0),
        (format_datetime(NOW + timedelta(hours=2), usegmt=True), 60.0),
        (format_datetime(NOW - timedelta(hours=2), usegmt=True), 0.0),
        (None, None),
        ("", None),
        ("-1", None),
        ("nan", None),
        ("soon", None),
    ],
)
def test_retry_after_is_seconds_or_a_date_cut_to_a_minute(
    value: str | None, wait: float | None
) -> None:
    headers = httpx.Headers({} if value is None else {"Retry-After": value})
    assert retry_after(headers, now=NOW) == wait


def test_a_calls_headers_go_over_the_clients_but_not_over_the_operations(
    live_server: str, app_name: str
) -> None:
    recording = Recording()
    headers = {"X-Request-ID": "client", "X-Tag": "client"}
    with SessionaryClient(live_server, transport=recording, headers=headers) as client:
        mine = {"x-request-id": "call-1", "User-Agent": "mine/1", "Content-Type": "text/plain"}
        client.create_session(app_name, USER, session_id="s1", extra_headers=mine)
        with pytest.raises(SessionNotFoundError) as missing:
            client.get_session(app_name, USER, "nope", extra_headers={"X-Request-ID": "call-2"})
        client.health()
    assert missing.value.request_id == "call-2"
    sent = [
        (h["x-request-id"], h["x-tag"], h.get_list("user-agent"), h.get("content-type"))
        for h in recording.sent
    ]
    assert sent == [
        ("call-1", "client", ["mine/1"], "application/json"),
        ("call-2", "client", ["sessionary-python/0.1.0"], None),
        ("client", "client", ["sessionary-python/0.1.0"], None),
    ]


async def test_a_calls_timeout_replaces_the_clients(live_server: str) -> None:
    async with AsyncSessionaryClient(live_server, retries=0) as client:
        with pytest.raises(APITimeoutError):
            await client.health(timeout=1e-6)
        assert await client.health() == {"status": "ok"}


@pytest.mark.parametrize("max_retries", [0, 3])
async def test_a_calls_max_retries_replaces_the_clients(max_retries: int) -> None:
    server = Scripted((503, {"Retry-After": "0"}))
    options: RequestOptions = {"max_retries": max_retries}  # typed, to pass along
    async with server as url, AsyncSessionaryClient(url, retries=1) as client:
        with pytest.raises(APIError):
            await client.session("app", USER, "s1").list_events(**options)
    assert len(server.sent) == 1 + max_retries


async def test_a_streams_max_retries_bounds_its_reconnects_in_a_row() -> None:
    attempts: list[httpx.Headers] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request.headers)
        raise httpx.ConnectError("connection refused", request=request)

    refusing = httpx.MockTransport(refuse)
    async with AsyncSessionaryClient(
        "http://s", transport=refusing, retries=5, backoff=0
    ) as client:
        watch = client.stream_events(
            "app", USER, "s1", max_retries=1, extra_headers={"X-Request-ID": "w"}
        )
        with pytest.raises(APIConnectionError) as lost:
            async for _ in watch:
                pass
    assert len(attempts) == 2 and lost.value.request_id == "w"
