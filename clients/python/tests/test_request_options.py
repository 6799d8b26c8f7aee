"""What every request does alike in the four clients (docs/clients.md): its User-Agent, the
request id its errors carry, the resends after a 429 and the wait `Retry-After` asks."""

import socket

import httpx
import pytest
from sessionary_client import (
    APIConnectionError,
    AsyncSessionaryClient,
    SessionaryClient,
    SessionNotFoundError,
)
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
