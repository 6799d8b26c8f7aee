"""API keys through real HTTP: every endpoint against every kind of key.

Keys are made and revoked with the real `sessionary keys` command; the server runs with auth on.
"""

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts

from app.api.routing import StrictRoute, declared_needs
from tests.fixtures import keys_command, start_server, stop_server

APP, OTHER_APP = "shop", "bank"
ALICE, BOB = "alice", "bob"


@dataclass
class Keys:
    admin: str
    app: str
    other_app: str
    alice: str
    read_only: str
    revoked: str


@pytest.fixture(scope="module")
def secured(database_url: str) -> Iterator[tuple[str, Keys, str]]:
    def create(*args: str) -> str:
        return keys_command(database_url, "create", *args)

    keys = Keys(
        admin=create("--admin", "--name", "ops"),
        app=create("--app", APP),
        other_app=create("--app", OTHER_APP),
        alice=create("--app", APP, "--user", ALICE),
        read_only=create("--app", APP, "--read-only"),
        revoked=create("--app", APP),
    )
    keys_command(database_url, "revoke", keys.revoked.split("_")[1])
    process, base = start_server(database_url, env={"SESSIONARY_AUTH": "true"})
    try:
        yield base, keys, database_url
    finally:
        stop_server(process)


def bearer(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Authorization": f"Bearer {key}"}


def fresh_session(http: httpx.Client, admin: str, user: str) -> str:
    session_id = uuid.uuid4().hex
    response = http.post(
        f"/apps/{APP}/users/{user}/sessions", json={"sessionId": session_id}, headers=bearer(admin)
    )
    assert response.status_code == 201, response.text
    return session_id


Request = Callable[[httpx.Client, str, str | None], httpx.Response]


def endpoints(user: str) -> dict[str, tuple[Request, bool, str]]:
    """name → (request with a given key, is a write, what it touches: user/app/app_shared)."""
    base = f"/apps/{APP}/users/{user}"

    def on_session(method: str, tail: str = "", **kw: Any) -> Request:
        def call(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
            url = f"{base}/sessions/{fresh_session(http, admin, user)}{tail}"
            return http.request(method, url, headers=bearer(key), **kw)

        return call

    def plain(method: str, url: str, **kw: Any) -> Request:
        return lambda http, admin, key: http.request(method, url, headers=bearer(key), **kw)

    def create(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
        body = {"sessionId": uuid.uuid4().hex}
        return http.post(f"{base}/sessions", json=body, headers=bearer(key))

    return {
        "create session": (create, True, "user"),
        "get session": (on_session("GET"), False, "user"),
        "list user sessions": (plain("GET", f"{base}/sessions"), False, "user"),
        "list app sessions": (plain("GET", f"/apps/{APP}/sessions"), False, "app"),
        "delete session": (on_session("DELETE"), True, "user"),
        "patch session": (on_session("PATCH", json={"stateDelta": {"k": 1}}), True, "user"),
        "append event": (on_session("POST", "/events", json={"author": "u"}), True, "user"),
        "append batch": (
            on_session("POST", "/events:batch", json={"events": [{"author": "u"}]}),
            True,
            "user",
        ),
        "list events": (on_session("GET", "/events"), False, "user"),
        "get app state": (plain("GET", f"/apps/{APP}/state"), False, "app_shared"),
        "patch app state": (
            plain("PATCH", f"/apps/{APP}/state", json={"stateDelta": {"a": 1}}),
            True,
            "app",
        ),
        "get user state": (plain("GET", f"{base}/state"), False, "user"),
        "patch user state": (
            plain("PATCH", f"{base}/state", json={"stateDelta": {"u": 1}}),
            True,
            "user",
        ),
    }


def expected(key_kind: str, user: str, write: bool, touches: str) -> int | None:
    """401 or 403 for a refusal; None where the request must go through."""
    if key_kind in ("none", "wrong", "revoked"):
        return 401
    if key_kind == "other_app":
        return 403
    if key_kind == "read_only" and write:
        return 403
    if key_kind == "alice" and (touches == "app" or (touches == "user" and user != ALICE)):
        return 403
    return None


KEY_KINDS = ["none", "wrong", "revoked", "other_app", "alice", "read_only", "app", "admin"]


@pytest.mark.parametrize("key_kind", KEY_KINDS)
@pytest.mark.parametrize("user", [ALICE, BOB])
def test_every_endpoint_admits_exactly_the_keys_whose_scope_covers_it(secured, key_kind, user):
    base, keys, _ = secured
    key = {
        "none": None,
        "wrong": "sk_000000000000_not-a-key",
        **{kind: getattr(keys, kind) for kind in KEY_KINDS[2:]},
    }[key_kind]
    with httpx.Client(base_url=base, timeout=10) as http:
        for name, (call, write, touches) in endpoints(user).items():
            response = call(http, keys.admin, key)
            refusal = expected(key_kind, user, write, touches)
            if refusal is None:
                assert response.status_code < 300, (name, response.status_code, response.text)
            else:
                assert response.status_code == refusal, (name, response.text)
                code = "unauthorized" if refusal == 401 else "forbidden"
                assert response.json()["code"] == code
                if refusal == 401:
                    assert response.headers["www-authenticate"] == "Bearer"


def test_a_refusal_does_not_tell_whether_the_session_exists(secured):
    base, keys, _ = secured
    with httpx.Client(base_url=base, timeout=10) as http:
        existing = fresh_session(http, keys.admin, BOB)
        for key in (keys.other_app, keys.alice):
            answers = [
                http.get(f"/apps/{APP}/users/{BOB}/sessions/{session}", headers=bearer(key))
                for session in (existing, "never-created")
            ]
            assert answers[0].status_code == answers[1].status_code == 403
            assert answers[0].json()["detail"] == answers[1].json()["detail"]


@pytest.mark.parametrize(
    "request_kwargs",
    [
        {"content": b'{"author": ', "headers": {"content-type": "application/json"}},
        {"content": b"author=u", "headers": {"content-type": "text/plain"}},
        {"json": {"author": "u"}, "params": {"numRecentEvent": "5"}},
        {"json": {"author": "u"}, "headers": {"if-match": "not-a-version"}},
    ],
    ids=["malformed JSON", "not JSON", "unknown query parameter", "bad If-Match"],
)
def test_the_key_is_checked_before_the_request_is_read(secured, request_kwargs):
    """A caller without a valid key learns nothing, not even what is wrong with its input."""
    base, keys, _ = secured
    url = f"{base}/apps/{APP}/users/{ALICE}/sessions/s1/events"
    for key in (None, "sk_000000000000_not-a-key"):
        headers = {**request_kwargs.get("headers", {}), **bearer(key)}
        response = httpx.post(url, **{**request_kwargs, "headers": headers})
        assert response.status_code == 401, response.text
    response = httpx.post(
        url,
        **{
            **request_kwargs,
            "headers": {**request_kwargs.get("headers", {}), **bearer(keys.other_app)},
        },
    )
    assert response.status_code == 403, response.text


def test_every_api_route_declares_the_keys_that_may_call_it(app):
    routes = [
        context.original_route
        for context in iter_route_contexts(app.router.routes)
        if isinstance(context.original_route, APIRoute)
    ]
    unguarded = {route.path for route in routes if not declared_needs(route.dependant)}
    assert unguarded == {"/healthz", "/readyz", "/metrics"}
    assert all(isinstance(route, StrictRoute) for route in routes if route.path not in unguarded)


def test_health_probes_need_no_key(secured):
    base, _, _ = secured
    assert httpx.get(f"{base}/healthz").status_code == 200
    assert httpx.get(f"{base}/readyz").status_code == 200


def test_a_key_revoked_while_in_use_is_refused_at_once(secured):
    base, _, database_url = secured
    key = keys_command(database_url, "create", "--app", APP)
    url = f"{base}/apps/{APP}/state"
    assert httpx.get(url, headers=bearer(key)).status_code == 200
    keys_command(database_url, "revoke", key.split("_")[1])
    assert httpx.get(url, headers=bearer(key)).status_code == 401


def test_with_a_key_cache_a_revocation_takes_effect_within_its_time(database_url):
    ttl = 3
    key = keys_command(database_url, "create", "--app", APP)
    process, base = start_server(
        database_url, env={"SESSIONARY_AUTH": "true", "SESSIONARY_AUTH_CACHE_SECONDS": str(ttl)}
    )
    try:
        url = f"{base}/apps/{APP}/state"
        assert httpx.get(url, headers=bearer(key)).status_code == 200
        cached_at = time.monotonic()
        keys_command(database_url, "revoke", key.split("_")[1])
        still_trusted = httpx.get(url, headers=bearer(key)).status_code
        if time.monotonic() - cached_at < ttl - 0.5:  # a slow host may already be past the ttl
            assert still_trusted == 200, "the cached key is trusted until its time runs out"
        while httpx.get(url, headers=bearer(key)).status_code != 401:
            assert time.monotonic() - cached_at < ttl + 2, f"the cache time is {ttl} s here"
            time.sleep(0.1)
    finally:
        stop_server(process)


def test_keys_are_stored_hashed_and_listed_without_secrets(secured):
    _, keys, database_url = secured
    listing = keys_command(database_url, "list")
    assert keys.app.split("_")[1] in listing and "revoked" in listing
    assert all(key.split("_", 2)[2] not in listing for key in (keys.app, keys.admin))
