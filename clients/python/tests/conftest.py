"""Fixtures for the client's tests: clients on the live server, one fresh app name per test.

The live server (`live_server`) and its throwaway database come from the repository's root
conftest. Tests share that database, so each works inside an app name of its own.
"""

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest
from sessionary_client import AsyncSessionaryClient, SessionaryClient
from sessionary_client._transport import AsyncPoolTransport
from sessionary_client.adk import SessionaryService
from sessionary_client.aiohttp_transport import AiohttpTransport


@pytest.fixture
def app_name() -> str:
    return f"client-test-{uuid.uuid4().hex[:12]}"


# The asyncio client's transports: aiohttp's (its default with the `aiohttp` extra) and
# httpx's own, pooled; every test of it runs on both.
TRANSPORTS: dict[str, Callable[[], httpx.AsyncBaseTransport]] = {
    "aiohttp": AiohttpTransport,
    "httpx": AsyncPoolTransport,
}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> httpx.AsyncBaseTransport:
    return TRANSPORTS[request.param]()


@pytest.fixture
async def client(
    live_server: str, transport: httpx.AsyncBaseTransport
) -> AsyncIterator[AsyncSessionaryClient]:
    async with AsyncSessionaryClient(live_server, transport=transport) as http:
        yield http


@pytest.fixture
def sync_client(live_server: str) -> Iterator[SessionaryClient]:
    with SessionaryClient(live_server) as http:
        yield http


@pytest.fixture
async def service(live_server: str) -> AsyncIterator[SessionaryService]:
    service = SessionaryService(live_server)
    yield service
    await service.close()
