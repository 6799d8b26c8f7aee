"""Fixtures for the client's tests: clients on the live server, one fresh app name per test.

The live server (`live_server`) and its throwaway database come from the repository's root
conftest. Tests share that database, so each works inside an app name of its own.
"""

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from sessionary_client import AsyncSessionaryClient, SessionaryClient
from sessionary_client.adk import SessionaryService


@pytest.fixture
def app_name() -> str:
    return f"client-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def client(live_server: str) -> AsyncIterator[AsyncSessionaryClient]:
    async with AsyncSessionaryClient(live_server) as http:
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
