"""CORS: off unless `SESSIONARY_CORS_ORIGINS` lists origins; then preflights are answered before
the key check, and a page may read the ETag and request id of an answer. Writes from pages of
other origins without that grant are refused, keys on or off, and so are requests for a host
the server does not answer for."""

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import ValidationError

from app.config import Settings
from tests.fixtures import client_of
from tests.helpers import assert_problem

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
    assert {"artifact-metadata", "range", "if-range", "if-none-match"} <= set(allowed.split(", "))
    assert "POST" in preflight.headers["access-control-allow-methods"]


async def test_answers_expose_etag_and_request_id(cors_client: httpx.AsyncClient) -> None:
    answer = await cors_client.get("/apps/a/users/u/sessions/s", headers={"Origin": PAGE})
    assert answer.status_code == 401  # the key is still checked, and the refusal is readable
    assert answer.headers["access-control-allow-origin"] == PAGE
    exposed = answer.headers["access-control-expose-headers"].lower().split(", ")
    assert {"etag", "x-request-id"} <= set(exposed)
    # What an artifact's download says besides its bytes: which version, which part.
    assert {"artifact-version", "content-range", "content-disposition"} <= set(exposed)


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


SESSIONS = "/apps/a/users/u/sessions"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example.com"},
        {"Origin": "null"},  # a sandboxed frame, a file
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another port of this host is another origin
    ],
)
async def test_a_write_from_another_origin_is_refused_with_keys_off(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    """A page may POST with no body or as text/plain anywhere without a preflight: with keys
    off, nothing else would stop it from creating or resetting sessions."""
    created = await client.post(SESSIONS, headers=headers)
    assert_problem(created, 403, "cross_origin_refused")
    reset = await client.post(
        f"{SESSIONS}/s:reset", content=b"{}", headers={**headers, "Content-Type": "text/plain"}
    )
    assert_problem(reset, 403, "cross_origin_refused")
    assert (await client.get(SESSIONS)).json()["sessions"] == []
    assert (await client.get(SESSIONS, headers=headers)).status_code == 200  # reads are not


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://sessionary"},  # the page's own origin (the explorer's)
        {"Origin": "http://sessionary", "Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},  # typed by the user
        {},  # not a browser
    ],
)
async def test_a_write_from_the_same_origin_or_a_program_goes_through(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    assert (await client.post(SESSIONS, headers=headers)).status_code == 201


async def test_an_allowed_origin_may_write(cors_client: httpx.AsyncClient) -> None:
    allowed = await cors_client.post(SESSIONS, headers={"Origin": PAGE})
    assert_problem(allowed, 401, "unauthorized")  # past the origin check: the key's turn
    other = await cors_client.post(SESSIONS, headers={"Origin": "https://evil.example.com"})
    assert_problem(other, 403, "cross_origin_refused")


async def test_only_the_allowed_hosts_are_answered(database_url: str) -> None:
    loopback = ["localhost", "127.0.0.1", "[::1]"]
    settings = Settings(database_url=database_url, auth=False, allowed_hosts=loopback)
    async with client_of(settings) as http:
        for host in ("localhost:8000", "127.0.0.1", "[::1]:8000", "LOCALHOST"):
            answer = await http.get(f"{SESSIONS}", headers={"Host": host})
            assert answer.status_code == 200, (host, answer.text)
        for host in ("rebound.example.com", "rebound.example.com:8000", "sessionary", ""):
            refused = await http.get(SESSIONS, headers={"Host": host})
            assert_problem(refused, 400, "host_not_allowed")
        assert (await http.get("/healthz", headers={"Host": "10.1.2.3"})).status_code == 200


def test_serve_on_loopback_answers_its_own_names_alone(live_server: str) -> None:
    port = live_server.rpartition(":")[2]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert httpx.get(f"{live_server}/apps", headers={"Host": host}).status_code == 200
    rebound = httpx.get(f"{live_server}/apps", headers={"Host": f"rebound.example:{port}"})
    assert_problem(rebound, 400, "host_not_allowed")


def test_allowed_hosts_are_read_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONARY_ALLOWED_HOSTS", "Sessions.Example.com, 10.0.0.5")
    assert Settings().allowed_hosts == ["sessions.example.com", "10.0.0.5"]
