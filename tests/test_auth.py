"""API keys through real HTTP: every endpoint against every kind of key.

Keys are made and revoked with the real `sessionary keys` command; the server runs with auth on.
"""

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute, iter_route_contexts

from app.api.deps import authorized
from app.api.routing import StrictRoute, declared_needs, unguarded_routes
from app.config import Settings
from app.main import create_app
from app.services.auth import Need
from tests.fixtures import keys_command, start_server, stop_server

APP, OTHER_APP = "shop", "bank"
ALICE, BOB = "alice", "bob"


@dataclass
class Keys:
    admin: str
    app: str
    other_app: str
    alice: str
    alice_app_state: str
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
        alice_app_state=create("--app", APP, "--user", ALICE, "--app-state", "write"),
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


def endpoints(user: str) -> dict[str, tuple[Request, bool, set[str]]]:
    """name → (request with a given key, is a write, what it touches: one user's data, every
    user's (app), app state read (app_shared) or written (app_state))."""
    base = f"/apps/{APP}/users/{user}"

    def on_session(method: str, tail: str = "", **kw: Any) -> Request:
        def call(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
            url = f"{base}/sessions/{fresh_session(http, admin, user)}{tail}"
            return http.request(method, url, headers=bearer(key), **kw)

        return call

    def on_artifact(method: str, tail: str = "", **kw: Any) -> Request:
        """On `a.txt` of a fresh session, which an admin key saved."""

        def call(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
            url = f"{base}/sessions/{fresh_session(http, admin, user)}/artifacts/a.txt"
            saved = http.post(url, content=b"a", headers=bearer(admin))
            assert saved.status_code == 201, saved.text
            return http.request(method, url + tail, headers=bearer(key), **kw)

        return call

    def plain(method: str, url: str, **kw: Any) -> Request:
        return lambda http, admin, key: http.request(method, url, headers=bearer(key), **kw)

    def on_memory(memories: str, method: str, tail: str = "", **kw: Any) -> Request:
        """On a fresh memory of `memories` (a user's or the app's), which an admin key made."""

        def call(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
            made = http.post(memories, json={"text": "a fact"}, headers=bearer(admin))
            assert made.status_code == 201, made.text
            url = f"{memories}/{made.json()['id']}{tail}"
            return http.request(method, url, headers=bearer(key), **kw)

        return call

    def create(**body: Any) -> Request:
        def call(http: httpx.Client, admin: str, key: str | None) -> httpx.Response:
            body_with_id = {"sessionId": uuid.uuid4().hex, **body}
            return http.post(f"{base}/sessions", json=body_with_id, headers=bearer(key))

        return call

    app_delta = {"stateDelta": {"app:banner": "hi", "k": 1}}
    app_event = {"author": "u", "actions": app_delta}
    own, every, shared, app_state = {"user"}, {"app"}, {"app_shared"}, {"app_state"}
    return {
        "create session": (create(), True, own),
        "get session": (on_session("GET"), False, own),
        "list user sessions": (plain("GET", f"{base}/sessions"), False, own),
        "list app sessions": (plain("GET", f"/apps/{APP}/sessions"), False, every),
        "delete session": (on_session("DELETE"), True, own),
        "patch session": (on_session("PATCH", json={"stateDelta": {"k": 1}}), True, own),
        "append event": (on_session("POST", "/events", json={"author": "u"}), True, own),
        "append batch": (
            on_session("POST", "/events:batch", json={"events": [{"author": "u"}]}),
            True,
            own,
        ),
        "list events": (on_session("GET", "/events"), False, own),
        "upload artifact": (on_session("POST", "/artifacts/a.txt", content=b"a"), True, own),
        "save artifact": (
            on_session("POST", "/artifacts", json={"filename": "b", "artifact": {"text": "b"}}),
            True,
            own,
        ),
        "list artifacts": (on_session("GET", "/artifacts"), False, own),
        "download artifact": (on_artifact("GET"), False, own),
        "artifact versions": (on_artifact("GET", "/versions"), False, own),
        "artifact version": (on_artifact("GET", "/versions/latest"), False, own),
        "delete artifact": (on_artifact("DELETE"), True, own),
        "upload user artifact": (
            plain("POST", f"{base}/artifacts/user:{uuid.uuid4().hex}", content=b"u"),
            True,
            own,
        ),
        "list user artifacts": (plain("GET", f"{base}/artifacts"), False, own),
        "remember session": (on_session("POST", ":remember"), True, own),
        "create memory": (plain("POST", f"{base}/memories", json={"text": "t"}), True, own),
        "list memories": (plain("GET", f"{base}/memories"), False, own),
        "recall memories": (
            plain("POST", f"{base}/memories:recall", json={"query": "fact"}),
            False,
            own,
        ),
        "get memory": (on_memory(f"{base}/memories", "GET"), False, own),
        "update memory": (
            on_memory(f"{base}/memories", "PATCH", json={"topics": ["t"]}),
            True,
            own,
        ),
        "memory revisions": (on_memory(f"{base}/memories", "GET", "/revisions"), False, own),
        "roll back memory": (
            on_memory(f"{base}/memories", "POST", ":rollback", json={"revision": 1}),
            True,
            own,
        ),
        "delete memory": (on_memory(f"{base}/memories", "DELETE"), True, own),
        "create app memory": (
            plain("POST", f"/apps/{APP}/memories", json={"text": "t"}),
            True,
            app_state,
        ),
        "list app memories": (plain("GET", f"/apps/{APP}/memories"), False, shared),
        "recall app memories": (
            plain("POST", f"/apps/{APP}/memories:recall", json={"query": "fact"}),
            False,
            shared,
        ),
        "get app memory": (on_memory(f"/apps/{APP}/memories", "GET"), False, shared),
        "update app memory": (
            on_memory(f"/apps/{APP}/memories", "PATCH", json={"topics": ["t"]}),
            True,
            app_state,
        ),
        "delete app memory": (on_memory(f"/apps/{APP}/memories", "DELETE"), True, app_state),
        "get app state": (plain("GET", f"/apps/{APP}/state"), False, shared),
        "patch app state": (
            plain("PATCH", f"/apps/{APP}/state", json={"stateDelta": {"a": 1}}),
            True,
            app_state,
        ),
        "export user": (plain("GET", f"{base}:export"), False, own),
        "import user": (
            lambda http, admin, key: http.post(
                f"{base}:import",
                content=b'{"format": "sessionary.userState.v1", "appName": "a", '
                b'"userId": "u", "state": {"k": 1}}\n',
                headers={**bearer(key), "content-type": "application/x-ndjson"},
            ),
            True,
            own,
        ),
        "get user state": (plain("GET", f"{base}/state"), False, own),
        "patch user state": (
            plain("PATCH", f"{base}/state", json={"stateDelta": {"u": 1}}),
            True,
            own,
        ),
        # `app:` keys reach app state through a user's own paths too.
        "create with app: state": (create(state={"app:banner": "hi"}), True, own | app_state),
        "create with an app: event": (create(events=[app_event]), True, own | app_state),
        "patch session with app:": (on_session("PATCH", json=app_delta), True, own | app_state),
        "append an app: event": (
            on_session("POST", "/events", json=app_event),
            True,
            own | app_state,
        ),
        "append an app: batch": (
            on_session("POST", "/events:batch", json={"events": [{"author": "u"}, app_event]}),
            True,
            own | app_state,
        ),
    }


def expected(key_kind: str, user: str, write: bool, touches: set[str]) -> int | None:
    """401 or 403 for a refusal; None where the request must go through."""
    if key_kind in ("none", "wrong", "revoked"):
        return 401
    if key_kind == "other_app":
        return 403
    if key_kind == "read_only" and write:
        return 403
    if key_kind in ("alice", "alice_app_state"):
        if "app" in touches or ("user" in touches and user != ALICE):
            return 403
        if "app_state" in touches and key_kind == "alice":
            return 403
    return None


KEY_KINDS = [
    "none",
    "wrong",
    "revoked",
    "other_app",
    "alice",
    "alice_app_state",
    "read_only",
    "app",
    "admin",
]


def key_of(keys: Keys, key_kind: str) -> str | None:
    """The key of a kind: none, a made-up one, or one of the fixture's."""
    if key_kind == "none":
        return None
    if key_kind == "wrong":
        return "sk_000000000000_not-a-key"
    key: str = getattr(keys, key_kind)
    return key


@pytest.mark.parametrize("key_kind", KEY_KINDS)
@pytest.mark.parametrize("user", [ALICE, BOB])
def test_every_endpoint_admits_exactly_the_keys_whose_scope_covers_it(secured, key_kind, user):
    base, keys, _ = secured
    key = key_of(keys, key_kind)
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


def test_any_valid_key_may_ask_what_it_may_do(secured):
    """`GET /auth/key`: the key's own scope, so that a client (the explorer) offers to write
    only where the key may."""
    base, keys, _ = secured
    scopes = {
        "admin": (None, None, False, True),
        "app": (APP, None, False, True),
        "other_app": (OTHER_APP, None, False, True),
        "alice": (APP, ALICE, False, False),
        "alice_app_state": (APP, ALICE, False, True),
        "read_only": (APP, None, True, False),
    }
    with httpx.Client(base_url=base, timeout=10) as http:
        for kind, (app, user, read_only, app_state) in scopes.items():
            key = key_of(keys, kind)
            assert key is not None
            response = http.get("/auth/key", headers=bearer(key))
            assert response.status_code == 200, (kind, response.text)
            assert response.json() == {
                "authEnabled": True,
                "keyId": key.split("_")[1],
                "appName": app,
                "userId": user,
                "readOnly": read_only,
                "writesAppState": app_state,
            }, kind
        for kind in ("none", "wrong", "revoked"):
            refused = http.get("/auth/key", headers=bearer(key_of(keys, kind)))
            assert refused.status_code == 401, (kind, refused.text)
            assert refused.json()["code"] == "unauthorized"


async def test_with_keys_off_every_request_may_do_everything(client):
    response = await client.get("/auth/key")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "authEnabled": False,
        "keyId": None,
        "appName": None,
        "userId": None,
        "readOnly": False,
        "writesAppState": True,
    }


def test_a_user_key_refused_app_state_writes_nothing(secured):
    """One user must not plant app state that every other user's agent reads."""
    base, keys, _ = secured
    marker = f"app:planted-{uuid.uuid4().hex}"
    with httpx.Client(base_url=base, timeout=10, headers=bearer(keys.alice)) as http:
        session = f"/apps/{APP}/users/{ALICE}/sessions/{fresh_session(http, keys.admin, ALICE)}"
        event = {"author": "u", "actions": {"stateDelta": {marker: 1, "mine": 1}}}
        new_id = uuid.uuid4().hex
        refused = [
            http.post(f"{session}/events", json=event),
            http.post(f"{session}/events:batch", json={"events": [{"author": "u"}, event]}),
            http.patch(session, json={"stateDelta": {marker: 1}}),
            http.post(
                f"/apps/{APP}/users/{ALICE}/sessions",
                json={"sessionId": new_id, "state": {marker: 1}, "events": [{"author": "u"}]},
            ),
        ]
        for response in refused:
            assert response.status_code == 403, response.text
            assert response.json()["code"] == "forbidden"
            assert "app state" in response.json()["detail"]
        stored = http.get(session).json()
        assert (stored["version"], stored["events"]) == (0, [])
        assert marker not in stored["state"] and "mine" not in stored["state"]
        assert http.get(f"/apps/{APP}/users/{ALICE}/sessions/{new_id}").status_code == 404
        assert marker.removeprefix("app:") not in http.get(f"/apps/{APP}/state").json()["state"]
        # The same key may still write its own session's and user's state in the same call.
        own = {"author": "u", "actions": {"stateDelta": {"mine": 1, "user:mine": 2}}}
        assert http.post(f"{session}/events", json=own).status_code == 201


def test_a_read_only_key_cannot_be_made_to_write_app_state(secured):
    _, _, database_url = secured
    with pytest.raises(subprocess.CalledProcessError) as refused:
        keys_command(
            database_url,
            "create",
            "--app",
            APP,
            "--user",
            ALICE,
            "--read-only",
            "--app-state",
            "write",
        )
    assert "--read-only" in refused.value.stderr


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
    public = {route.path for route in routes if not declared_needs(route.dependant)}
    # The probes (the embedding worker's too), and the explorer's and the docs' pages and
    # assets, which hold no data.
    assert public == {
        "/healthz",
        "/readyz",
        "/metrics",
        "/embeddings",
        "/",
        "/ui",
        "/ui/",
        "/ui/{asset}",
        "/docs",
        "/docs/{asset}",
    }
    assert all(isinstance(route, StrictRoute) for route in routes if route.path not in public)
    assert unguarded_routes(app) == []


async def test_an_app_with_a_route_that_declares_no_access_rule_refuses_to_start(settings):
    application = create_app(settings)
    careless = APIRouter()  # neither StrictRoute nor authorized(…) nor PUBLIC

    @careless.get("/apps/{app_name}/secrets")
    async def secrets(app_name: str) -> dict[str, str]:
        return {"secret": app_name}

    application.include_router(careless)
    with pytest.raises(RuntimeError, match=r"without an access rule.*/apps/\{app_name\}/secrets"):
        async with application.router.lifespan_context(application):
            pass


async def test_a_router_that_forgets_strict_route_still_checks_the_key(database_url):
    """The key check lives in the rule itself, not only in `StrictRoute`: it fails closed."""
    application = create_app(Settings(database_url=database_url, auth=True))
    careless = APIRouter()  # no route_class=StrictRoute

    @careless.get("/apps/{app_name}/users/{user_id}/notes", dependencies=[authorized(Need.USER)])
    async def notes(app_name: str, user_id: str) -> dict[str, str]:
        return {"note": f"{app_name}/{user_id}"}

    # Two rules on one route: each is judged, not only the first.
    @careless.get(
        "/apps/{app_name}/users/{user_id}/all-notes",
        dependencies=[authorized(Need.USER), authorized(Need.APP)],
    )
    async def all_notes(app_name: str, user_id: str) -> dict[str, str]:
        return {"notes": app_name}

    application.include_router(careless)
    key = keys_command(database_url, "create", "--app", APP, "--user", ALICE)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://s") as http:
            url = f"/apps/{APP}/users/{ALICE}/notes"
            assert (await http.get(url)).status_code == 401
            assert (await http.get(url, headers=bearer("sk_000_wrong"))).status_code == 401
            other = f"/apps/{APP}/users/{BOB}/notes"
            assert (await http.get(other, headers=bearer(key))).status_code == 403
            assert (await http.get(url, headers=bearer(key))).json() == {"note": f"{APP}/{ALICE}"}
            assert (await http.get(f"{url[:-6]}/all-notes", headers=bearer(key))).status_code == 403


def test_two_authorization_headers_are_refused_whichever_comes_first(secured):
    base, keys, _ = secured
    url = f"{base}/apps/{APP}/users/{BOB}/sessions"
    for pair in ((keys.alice, keys.app), (keys.app, keys.alice), (keys.app, keys.app)):
        headers = [("Authorization", f"Bearer {key}") for key in pair]
        response = httpx.get(url, headers=headers)
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "validation_error"
        assert "authorization" in response.json()["detail"]


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
    assert f"user {ALICE!r}, writes app state" in listing
    assert all(key.split("_", 2)[2] not in listing for key in (keys.app, keys.admin))


@pytest.mark.parametrize("key_kind", KEY_KINDS)
def test_search_finds_only_what_the_key_may_read(secured, key_kind):
    base, keys, _ = secured
    word = f"w{uuid.uuid4().hex}"  # this test's own, whatever other tests stored
    text = {"author": "u", "content": {"parts": [{"text": f"{word} refund"}]}}
    with httpx.Client(base_url=base, timeout=10) as http:
        for app_name, user in ((APP, ALICE), (APP, BOB), (OTHER_APP, ALICE)):
            created = http.post(
                f"/apps/{app_name}/users/{user}/sessions",
                json={"events": [text]},
                headers=bearer(keys.admin),
            )
            assert created.status_code == 201, created.text
        key = key_of(keys, key_kind)

        def found(**params: str) -> httpx.Response:
            return http.get(
                f"/apps/{APP}/search", params={"q": word, **params}, headers=bearer(key)
            )

        answer = found()
        if key_kind in ("none", "wrong", "revoked"):
            assert answer.status_code == 401
        elif key_kind == "other_app":
            assert answer.status_code == 403
        elif key_kind in ("alice", "alice_app_state"):
            assert {hit["userId"] for hit in answer.json()["hits"]} == {ALICE}
            assert len(found(userId=ALICE).json()["hits"]) == 1
            assert found(userId=BOB).status_code == 403
        else:
            assert sorted(hit["userId"] for hit in answer.json()["hits"]) == [ALICE, BOB]


@pytest.mark.parametrize("key_kind", KEY_KINDS)
def test_streams_open_only_for_keys_whose_scope_covers_them(secured, key_kind):
    base, keys, _ = secured
    key = key_of(keys, key_kind)
    with httpx.Client(base_url=base, timeout=10) as http:
        paths: list[tuple[str | None, str]] = [(None, f"/apps/{APP}/sessions:stream")]
        for user in (ALICE, BOB):
            session = fresh_session(http, keys.admin, user)
            paths.append((user, f"/apps/{APP}/users/{user}/sessions/{session}/events:stream"))
            paths.append((user, f"/apps/{APP}/users/{user}/sessions:stream"))
        for user, path in paths:
            with http.stream("GET", path, headers=bearer(key)) as response:
                status = response.status_code
            what = "app" if user is None else "user"
            refusal = expected(key_kind, user or ALICE, False, {what})
            if key_kind in ("alice", "alice_app_state") and what == "app":
                refusal = None  # the app's stream, narrowed to alice's sessions
            assert status == (refusal or 200), (path, status)
