"""CORS: off unless `SESSIONARY_CORS_ORIGINS` lists origins; then preflights are answered before
the key check, and a page may read the ETag and request id of an answer."""

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import ValidationError

from app.config import Settings
from tests.fixtures import client_of

PAGE = "https://app.example.com"
PREFLIGHT = {
    "Origin": PAGE,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, if-match",
}
EVENTS = "/apps/a/users/u/sessions/s/events"


@pytest.fixture(scope="module")
async def cors_client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(database_url=database_url, auth=True, cors_origins=[PAGE])
    async with client_of(settings) as http:
        yield http


async def test_off_by_default(client: httpx.AsyncClient) -> None:
    preflight = await client.options(EVENTS, headers=PREFLIGHT)
    assert preflight.status_code == 405
    answer = await client.get("/healthz", headers={"Origin": PAGE})
    assert "access-control-allow-origin" not in answer.headers


async def test_preflight_is_answered_without_a_key(cors_client: httpx.AsyncClient) -> None:
    preflight = await cors_client.options(EVENTS, headers=PREFLIGHT)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == PAGE
    allowed = preflight.headers["access-control-allow-headers"].lower()
    assert {"authorization", "content-type", "if-match"} <= set(allowed.split(", "))
    assert "POST" in preflight.headers["access-control-allow-methods"]


async def test_answers_expose_etag_and_request_id(cors_client: httpx.AsyncClient) -> None:
    answer = await cors_client.get("/apps/a/users/u/sessions/s", headers={"Origin": PAGE})
    assert answer.status_code == 401  # the key is still checked, and the refusal is readable
    assert answer.headers["access-control-allow-origin"] == PAGE
    exposed = answer.headers["access-control-expose-headers"].lower().split(", ")
    assert {"etag", "x-request-id"} <= set(exposed)


async def test_other_origins_are_not_allowed(cors_client: httpx.AsyncClient) -> None:
    other = {**PREFLIGHT, "Origin": "https://evil.example.com"}
    preflight = await cors_client.options(EVENTS, headers=other)
    assert preflight.status_code == 400
    assert "access-control-allow-origin" not in preflight.headers
    answer = await cors_client.get("/healthz", headers={"Origin": other["Origin"]})
    assert "access-control-allow-origin" not in answer.headers


def test_origins_are_read_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONARY_CORS_ORIGINS", f"{PAGE}, http://localhost:5173")
    assert Settings().cors_origins == [PAGE, "http://localhost:5173"]
    monkeypatch.setenv("SESSIONARY_CORS_ORIGINS", "")
    assert Settings().cors_origins == []


@pytest.mark.parametrize("origin", ["app.example.com", "https://app.example.com/", "ftp://x"])
def test_a_malformed_origin_is_refused_at_start(origin: str) -> None:
    with pytest.raises(ValidationError, match="is not an origin"):
        Settings(cors_origins=origin)
