"""The hot routes bind their parameters themselves (`app.api.routing`), and appends skip
FastAPI's dispatch (`app.api.lane`): each request, good or bad, must get the answer FastAPI's
own dispatch and handler give."""

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from app.api import routing
from app.api.lane import AppendLane
from app.config import Settings
from app.main import create_app
from app.services.events import EventService
from tests.helpers import create_session, session_url

PLAIN_ROUTES = {"append_event", "append_events", "get_session"}
EVENTS = session_url("s1") + "/events"
JSON = {"content-type": "application/json"}

# (method, url, body, headers): bad input of every kind the plain handler binds, and good.
REQUESTS = [
    ("POST", EVENTS, b'{"author": "user", "invocationId": "i1"}', JSON),
    ("POST", EVENTS, b"", JSON),
    ("POST", EVENTS, b'{"author": "user",', JSON),
    ("POST", EVENTS, b'{"author": "user", "author": "model"}', JSON),
    ("POST", EVENTS, b'{"author": 5, "timestamp": "soon"}', JSON),
    ("POST", EVENTS, b'{"author": "user", "colour": "red"}', JSON),
    ("POST", EVENTS, b"[1, 2]", JSON),
    ("POST", EVENTS, b'{"author": "user"}', {**JSON, "if-match": "seven"}),
    ("POST", EVENTS, b'{"author": "user"}', {**JSON, "if-match": '"99"'}),
    ("POST", EVENTS, b'{"author": "user"}', {**JSON, "if-match": '"1"'}),
    ("POST", EVENTS, b'{"author": "user"}', {**JSON, "if-match": ""}),
    ("POST", EVENTS, b'{"author": "user"}', {**JSON, "if-match": "*"}),
    ("POST", EVENTS + "?colour=red", b'{"author": "user"}', JSON),
    ("POST", EVENTS, b'{"author": "user"}', {"content-type": "text/plain"}),
    ("POST", EVENTS, b'{"author": "user", "pad": "' + b"x" * 2_000_000 + b'"}', JSON),
    ("POST", EVENTS, b'{"author": "user"}', [*JSON.items(), ("if-match", '"0"')] * 2),
    ("POST", EVENTS + ":batch", b'{"events": [{"author": "user"}]}', JSON),
    ("POST", EVENTS + ":batch", b'{"events": [{"author": 5}], "more": 1}', JSON),
    ("POST", EVENTS + ":batch", b'{"events": {"author": "user"}}', JSON),
    ("POST", EVENTS + ":batch", b"null", JSON),
    ("POST", EVENTS + ":batch", b'{"events": []}', {**JSON, "if-match": "seven"}),
    ("POST", EVENTS + ":batch", b'{"events": [{"author": "user"}]}', {**JSON, "if-match": '"1"'}),
    ("POST", EVENTS + ":batch?colour=red", b'{"events": []}', JSON),
    ("PUT", EVENTS, b'{"author": "user"}', JSON),
    ("POST", session_url("s" * 200) + "/events", b'{"author": "user"}', JSON),
    ("POST", session_url("nobody") + "/events", b'{"author": "user"}', JSON),
    ("GET", session_url("s1") + "?numRecentEvents=-1", b"", {}),
    ("GET", session_url("s1") + "?numRecentEvents=many&afterTimestamp=nan", b"", {}),
    ("GET", session_url("s1") + "?numRecentEvents=&afterTimestamp=1e999", b"", {}),
    ("GET", session_url("s1") + "?numRecentEvents=1&afterTimestamp=0", b"", {}),
    ("GET", session_url("s1"), b"", {"if-match": '"0"'}),
    ("GET", session_url("s1"), b"", {}),
    ("GET", session_url("s" * 200), b"", {}),
]


@pytest.fixture
async def fastapi_bound(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    """The same app with FastAPI's own dispatch and handler on every route."""
    monkeypatch.setattr(routing, "_plain_handler", lambda route: None)
    application = create_app(settings)
    application.user_middleware = [
        middleware for middleware in application.user_middleware if middleware.cls != AppendLane
    ]
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
            yield http


def test_the_hot_routes_take_the_plain_handler(app: FastAPI) -> None:
    plain = {
        context.original_route.name
        for context in iter_route_contexts(app.router.routes)
        if isinstance(context.original_route, APIRoute)
        and routing._plain_handler(context.original_route) is not None
    }
    assert plain >= PLAIN_ROUTES
    assert "list_events" not in plain  # a route with dependencies keeps FastAPI's handler


async def test_appends_skip_the_router_and_nothing_else_does(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    application = create_app(settings)
    routed: list[str] = []
    async with application.router.lifespan_context(application):
        router_app = application.router.middleware_stack

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            routed.append(f"{scope['method']} {scope['path'].rsplit('/', 1)[-1]}")
            await router_app(scope, receive, send)

        monkeypatch.setattr(application.router, "middleware_stack", counted)
        transport = httpx.ASGITransport(application)
        async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
            await create_session(http, sessionId="s1")
            event = {"author": "user"}
            assert (await http.post(EVENTS, json=event)).status_code == 201
            assert (await http.post(EVENTS + ":batch", json={"events": [event]})).status_code == 201
            assert (await http.get(EVENTS)).status_code == 200
            assert (await http.delete(session_url("s1"))).status_code == 204
    assert routed == ["POST sessions", "GET events", "DELETE s1"]


@pytest.mark.parametrize(
    "error", [RuntimeError("secret internals"), asyncpg.UniqueViolationError("secret row")]
)
async def test_an_append_that_fails_unexpectedly_is_a_500_with_one_request_id(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> None:
        raise error

    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
        await create_session(http, sessionId="s1")
        monkeypatch.setattr(EventService, "append", broken)
        response = await http.post(
            EVENTS, json={"author": "user"}, headers={"X-Request-ID": "trace-500"}
        )
    assert response.status_code == 500
    assert response.headers.get_list("x-request-id") == ["trace-500"]
    assert response.json()["code"] == "internal_error"
    assert "secret" not in response.text


def comparable(response: httpx.Response) -> tuple:
    body = response.json()
    for volatile in ("id", "timestamp", "createTime", "lastUpdateTime", "events"):
        body.pop(volatile, None)
    headers = {name: response.headers.get(name) for name in ("content-type", "etag")}
    return response.status_code, headers, body


async def test_each_request_gets_fastapis_answer(
    client: httpx.AsyncClient, fastapi_bound: httpx.AsyncClient
) -> None:
    await create_session(client, sessionId="s1")
    for method, url, body, headers in REQUESTS:
        answers = []
        for http in (client, fastapi_bound):
            # Each side starts from a session at version 0, so both take the same path.
            await http.delete(session_url("s1"))
            await create_session(http, sessionId="s1")
            response = await http.request(method, url, content=body, headers=headers)
            answers.append(comparable(response))
        assert answers[0] == answers[1], (method, url, body, headers)
