"""The fast paths lean on internals of what they bypass: `app/api/fastapi_binding.py` on
FastAPI's binder, `app/api/lane.py` on FastAPI's and Starlette's dispatch, `app/protocol.py` on
uvicorn's HTTP protocol (and `app/api/cors.py` on Starlette's preflight refusal). pyproject.toml
holds FastAPI, Starlette and uvicorn below their next minor versions; before a bound is raised,
these check each name and behaviour relied on, in process and without a database, and a failure
names the module, what it relies on and the version that changed it.

A name gone from a framework altogether stops the suite earlier, at import, with a traceback
into the module that imports it, whose docstring says what it relies on.
"""

import asyncio
import importlib
import inspect
import json
from collections.abc import Iterator
from importlib.metadata import version
from typing import Annotated, Any

import httpx
import pytest
import uvicorn
from fastapi import APIRouter, FastAPI, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticUndefined
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match
from uvicorn.server import ServerState

from app.api import routing
from app.api.deps import PUBLIC
from app.api.lane import AppendLane
from app.api.problems import install_error_handlers
from app.api.routing import StrictRoute
from app.config import Settings
from app.main import create_app
from app.protocol import capped_protocol

BINDING = "app/api/fastapi_binding.py"
ROUTING = "app/api/routing.py"
LANE = "app/api/lane.py"
PROTOCOL = "app/protocol.py"
CORS = "app/api/cors.py"


def changed(module: str, reliance: str, *packages: str) -> str:
    rely = "rely" if " and " in module else "relies"
    versions = " or ".join(f"{package} {version(package)}" for package in packages)
    return (
        f"{module} {rely} on {reliance}; {versions} changed it: re-check the fast path or drop it"
    )


def framework_name(module: str, dotted: str, package: str) -> Any:
    """A framework's own name (`fastapi._compat.ModelField`), looked up now: a failure names
    the module that relies on it."""
    where, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(where), name)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"{changed(module, dotted, package)} ({error})")


def parameters(function: Any) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


# A route of every kind of plain parameter the binding takes, on a router like the app's.


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    size: int = 0


async def put_item(
    request: Request,
    item_id: int,
    item: Item,
    q: Annotated[str | None, Query(max_length=5)] = None,
    x_trace: Annotated[str | None, Header()] = None,
) -> Response:
    if q == "boom":
        raise RuntimeError("an unexpected failure")
    return JSONResponse(
        {
            "id": item_id,
            "item": item.model_dump(),
            "q": q,
            "trace": x_trace,
            "path": request.url.path,
        }
    )


async def list_items(tag: Annotated[list[str] | None, Query()] = None) -> Response:
    return JSONResponse({"tags": tag})


def sample_app(*, lane: bool) -> FastAPI:
    router = APIRouter(prefix="/shelves/{shelf}", route_class=StrictRoute, dependencies=[PUBLIC])
    router.post("/items/{item_id}", name="put_item")(put_item)
    router.get("/items", name="list_items")(list_items)
    app = FastAPI()
    app.state.settings = Settings()
    app.include_router(router)
    install_error_handlers(app)
    if lane:
        app.add_middleware(AppendLane, api=app, route_names=("put_item",))
    return app


def route_of(app: FastAPI, name: str) -> APIRoute:
    [route] = [
        context.original_route
        for context in iter_route_contexts(app.router.routes)
        if getattr(context.original_route, "name", None) == name
    ]
    assert isinstance(route, APIRoute)
    return route


@pytest.fixture(scope="module")
def put_route() -> APIRoute:
    return route_of(sample_app(lane=False), "put_item")


# app/api/fastapi_binding.py: FastAPI's binder, bypassed.


def test_model_field_binds_one_value_as_fastapi_does(put_route: APIRoute) -> None:
    model_field = framework_name(BINDING, "fastapi._compat.ModelField", "fastapi")
    [field] = [f for f in put_route.dependant.path_params if f.name == "item_id"]
    reliance = "fastapi._compat.ModelField (field_info, name, alias, default, validate(value, "
    reliance += "values, *, loc) -> (value, errors))"
    assert isinstance(field, model_field), changed(BINDING, reliance, "fastapi")
    assert all(hasattr(field, name) for name in ("field_info", "name", "alias", "default")), (
        changed(BINDING, reliance, "fastapi")
    )
    signature = inspect.signature(model_field.validate)
    assert parameters(model_field.validate)[:3] == ["value", "values", "loc"], changed(
        BINDING, reliance, "fastapi"
    )
    assert signature.parameters["loc"].kind is inspect.Parameter.KEYWORD_ONLY, changed(
        BINDING, reliance, "fastapi"
    )
    assert field.validate("7", {}, loc=("path", "item_id")) == (7, []), changed(
        BINDING, reliance, "fastapi"
    )
    bound, errors = field.validate("seven", {}, loc=("path", "item_id"))
    assert bound is None, changed(BINDING, reliance, "fastapi")
    assert [(error["type"], error["loc"]) for error in errors] == [
        ("int_parsing", ("path", "item_id"))
    ], changed(BINDING, reliance, "fastapi")


def test_field_annotation_is_scalar_tells_one_value_from_many() -> None:
    is_scalar = framework_name(BINDING, "fastapi._compat.field_annotation_is_scalar", "fastapi")
    reliance = "fastapi._compat.field_annotation_is_scalar(annotation) (a list is not scalar)"
    answers = {int: True, str | None: True, list[str]: False, list[str] | None: False, Item: False}
    got = {annotation: is_scalar(annotation) for annotation in answers}
    assert got == answers, changed(BINDING, reliance, "fastapi")


async def test_request_body_to_args_binds_the_body(put_route: APIRoute) -> None:
    to_args = framework_name(BINDING, "fastapi.dependencies.utils.request_body_to_args", "fastapi")
    reliance = (
        "fastapi.dependencies.utils.request_body_to_args(body_fields, received_body, "
        "embed_body_fields), awaited, -> (values, errors)"
    )
    assert inspect.iscoroutinefunction(to_args), changed(BINDING, reliance, "fastapi")
    assert parameters(to_args) == ["body_fields", "received_body", "embed_body_fields"], changed(
        BINDING, reliance, "fastapi"
    )
    embed = getattr(put_route, "_embed_body_fields", None)
    assert embed is False, changed(BINDING, "APIRoute._embed_body_fields (a bool)", "fastapi")
    fields = put_route.dependant.body_params
    assert await to_args(fields, {"name": "n"}, embed) == ({"item": Item(name="n")}, []), changed(
        BINDING, reliance, "fastapi"
    )
    _, errors = await to_args(fields, PydanticUndefined, embed)
    assert [(error["type"], error["loc"]) for error in errors] == [("missing", ("body",))], changed(
        BINDING, reliance + " (an absent body: PydanticUndefined)", "fastapi"
    )


def test_a_routes_dependant_has_what_the_binding_reads(put_route: APIRoute) -> None:
    dependant_class = framework_name(BINDING, "fastapi.dependencies.models.Dependant", "fastapi")
    assert isinstance(put_route.dependant, dependant_class), changed(
        BINDING, "APIRoute.dependant, a fastapi.dependencies.models.Dependant", "fastapi"
    )
    read = {
        BINDING: (
            "path_params",
            "query_params",
            "header_params",
            "cookie_params",
            "body_params",
            "dependencies",
            "call",
            "request_param_name",
            "response_param_name",
            "background_tasks_param_name",
            "http_connection_param_name",
            "websocket_param_name",
            "security_scopes_param_name",
        ),
        ROUTING: ("call", "dependencies"),
    }
    for module, names in read.items():
        missing = [name for name in names if not hasattr(put_route.dependant, name)]
        assert not missing, changed(module, f"Dependant.{', Dependant.'.join(missing)}", "fastapi")
    dependant = put_route.dependant
    assert (dependant.call, dependant.request_param_name) == (put_item, "request"), changed(
        BINDING, "Dependant.call, Dependant.request_param_name", "fastapi"
    )
    assert [field.name for field in dependant.body_params] == ["item"], changed(
        BINDING, "Dependant.body_params", "fastapi"
    )


def test_each_plain_parameter_is_a_param_of_its_location(put_route: APIRoute) -> None:
    param = framework_name(BINDING, "fastapi.params.Param", "fastapi")
    param_types = framework_name(BINDING, "fastapi.params.ParamTypes", "fastapi")
    reliance = (
        "fastapi.params.Param (in_, validation_alias, validate_default, is_required()) and "
        "ParamTypes path, query, header"
    )
    locations = {kind.name: kind.value for kind in param_types}
    assert {"path": "path", "query": "query", "header": "header"}.items() <= locations.items(), (
        changed(BINDING, reliance, "fastapi")
    )
    dependant = put_route.dependant
    for kind, fields, alias in (
        ("path", dependant.path_params, "item_id"),
        ("query", dependant.query_params, "q"),
        ("header", dependant.header_params, "x-trace"),
    ):
        [field] = [f for f in fields if f.alias == alias]
        info = field.field_info
        assert isinstance(info, param), changed(BINDING, reliance, "fastapi")
        assert info.in_ is getattr(param_types, kind), changed(BINDING, reliance, "fastapi")
        assert info.validation_alias in (None, alias), changed(BINDING, reliance, "fastapi")
        assert info.validate_default in (None, False), changed(BINDING, reliance, "fastapi")
        assert info.is_required() is (kind == "path"), changed(BINDING, reliance, "fastapi")


def test_the_binding_takes_the_hot_routes_and_the_sample() -> None:
    routes = [
        context.original_route
        for context in iter_route_contexts(create_app(Settings()).router.routes)
    ]
    plain = {
        route.name for route in routes if isinstance(route, StrictRoute) and route.binds_plainly
    }
    reliance = "the declaration FastAPI makes of a plain route (Dependant, ModelField, Param)"
    assert {"append_event", "get_session"} <= plain, changed(BINDING, reliance, "fastapi")
    sample = sample_app(lane=False)
    assert isinstance(put := route_of(sample, "put_item"), StrictRoute)
    assert put.binds_plainly, changed(BINDING, reliance, "fastapi")
    list_route = route_of(sample, "list_items")
    assert routing.query_names(list_route.dependant, repeatable=True) == {"tag"}, changed(
        BINDING, "fastapi._compat.field_annotation_is_scalar on a list query", "fastapi"
    )


# app/api/lane.py: FastAPI's dispatch, bypassed.


def test_route_contexts_give_the_routes_as_declared() -> None:
    app = sample_app(lane=False)
    names = {
        getattr(context.original_route, "name", None)
        for context in iter_route_contexts(app.router.routes)
    }
    assert {"put_item", "list_items"} <= names, changed(
        LANE, "fastapi.routing.iter_route_contexts(...).original_route", "fastapi"
    )


def test_a_route_match_sets_what_routing_sets(put_route: APIRoute) -> None:
    reliance = (
        "APIRoute.matches(scope) -> (Match.FULL, a child scope with route, endpoint, "
        "path_params), Match.PARTIAL for another method"
    )
    scope = {"type": "http", "method": "POST", "path": "/shelves/s/items/7", "root_path": ""}
    match, child = put_route.matches(scope)
    assert match is Match.FULL, changed(LANE, reliance, "fastapi")
    assert child.get("route") is put_route, changed(LANE, reliance, "fastapi")
    assert child.get("endpoint") is put_item, changed(LANE, reliance, "fastapi")
    assert child.get("path_params") == {"shelf": "s", "item_id": "7"}, changed(
        LANE, reliance, "fastapi"
    )
    match, _ = put_route.matches({**scope, "method": "GET"})
    assert match is Match.PARTIAL, changed(LANE, reliance, "fastapi")


def middleware_chain(app: Any) -> Iterator[Any]:
    while app is not None:
        yield app
        app = getattr(app, "app", None)


def test_starlette_splits_the_error_handlers_as_the_lane_does() -> None:
    app = sample_app(lane=True)
    stack = app.build_middleware_stack()
    reliance = (
        "starlette.applications.Starlette.build_middleware_stack giving the handler of 500 and "
        "Exception to ServerErrorMiddleware, outermost, and the others to ExceptionMiddleware, "
        "innermost"
    )
    assert isinstance(stack, ServerErrorMiddleware), changed(LANE, reliance, "starlette")
    assert stack.handler is app.exception_handlers[Exception], changed(LANE, reliance, "starlette")
    chain = list(middleware_chain(stack))
    lanes = [i for i, layer in enumerate(chain) if isinstance(layer, AppendLane)]
    inner = [i for i, layer in enumerate(chain) if isinstance(layer, ExceptionMiddleware)]
    assert len(lanes) == len(inner) == 1 and lanes[0] < inner[0], changed(
        LANE, reliance, "starlette"
    )
    handlers = getattr(chain[inner[0]], "_exception_handlers", {})
    assert Exception not in handlers, changed(LANE, reliance, "starlette")
    lane = chain[lanes[0]]
    assert handlers.items() >= lane.error_handlers.items(), changed(LANE, reliance, "starlette")


# (method, url, body, headers): good and bad input of every kind the sample binds.
JSON = {"content-type": "application/json"}
ITEM = "/shelves/s/items/7"
REQUESTS = [
    ("POST", ITEM + "?q=abc", b'{"name": "n"}', {**JSON, "x-trace": "t"}),
    ("POST", "/shelves/s/items/seven", b'{"name": "n"}', JSON),
    ("POST", ITEM + "?q=toolong", b'{"name": "n"}', JSON),
    ("POST", ITEM + "?colour=red", b'{"name": "n"}', JSON),
    ("POST", ITEM, b"", JSON),
    ("POST", ITEM, b'{"name":', JSON),
    ("POST", ITEM, b'{"name": 5, "size": "big"}', JSON),
    ("POST", ITEM, b'{"name": "n", "colour": "red"}', JSON),
    ("POST", ITEM, b"[1, 2]", JSON),
    ("POST", ITEM, b'{"name": "n"}', {"content-type": "text/plain"}),
    ("POST", ITEM + "?q=boom", b'{"name": "n"}', JSON),
    ("GET", ITEM, b"", {}),
    ("GET", "/shelves/s/items?tag=a&tag=b", b"", {}),
]


async def answers(app: FastAPI) -> list[tuple[int, str | None, Any]]:
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    got = []
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for method, url, body, headers in REQUESTS:
            answer = await http.request(method, url, content=body, headers=headers)
            got.append((answer.status_code, answer.headers.get("content-type"), answer.json()))
    return got


async def test_the_fast_paths_answer_as_fastapi_does(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = sample_app(lane=True)
    fast_answers = await answers(fast)  # the lane and the router built at the first request
    routed: list[str] = []
    router_app = fast.router.middleware_stack

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        routed.append(f"{scope['method']} {scope['path']}")
        await router_app(scope, receive, send)

    monkeypatch.setattr(routing, "_plain_handler", lambda route: None)
    fastapis = await answers(sample_app(lane=False))
    for request, mine, theirs in zip(REQUESTS, fast_answers, fastapis, strict=True):
        assert mine == theirs, changed(
            f"{BINDING} and {LANE}",
            f"FastAPI's own binding and dispatch answering {request[:2]} as they do",
            "fastapi",
            "starlette",
        )
    monkeypatch.setattr(fast.router, "middleware_stack", counted)
    assert await answers(fast) == fast_answers
    assert routed == ["GET /shelves/s/items/7", "GET /shelves/s/items"], changed(
        LANE, "its route's own handler, found by APIRoute.matches", "fastapi"
    )


# app/protocol.py: uvicorn's HTTP/1.1 protocol, subclassed.


def test_uvicorns_protocol_has_what_the_caps_override() -> None:
    protocol = framework_name(
        PROTOCOL, "uvicorn.protocols.http.httptools_impl.HttpToolsProtocol", "uvicorn"
    )
    callbacks = (
        "data_received",
        "on_message_begin",
        "on_url",
        "on_header",
        "on_headers_complete",
        "send_400_response",
    )
    missing = [name for name in callbacks if not callable(getattr(protocol, name, None))]
    assert not missing, changed(PROTOCOL, f"HttpToolsProtocol.{missing}", "uvicorn")
    expected = {
        "on_url": ["url"],
        "on_header": ["name", "value"],
        "send_400_response": ["msg"],
        "data_received": ["data"],
    }
    for name, names in expected.items():
        assert parameters(getattr(protocol, name)) == names, changed(
            PROTOCOL, f"HttpToolsProtocol.{name}({', '.join(names)})", "uvicorn"
        )
    assert parameters(protocol.__init__)[:3] == ["config", "server_state", "app_state"], changed(
        PROTOCOL, "HttpToolsProtocol(config, server_state, app_state, ...)", "uvicorn"
    )
    status_line = framework_name(
        PROTOCOL, "uvicorn.protocols.http.httptools_impl.STATUS_LINE", "uvicorn"
    )
    assert status_line.get(431) == b"HTTP/1.1 431 Request Header Fields Too Large\r\n", changed(
        PROTOCOL, "httptools_impl.STATUS_LINE, each status's line as bytes", "uvicorn"
    )


class Transport:
    """What uvicorn's protocol asks of a connection, for a connection with no socket."""

    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )

    def write(self, data: bytes) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("no request reaches the app")


TOO_LARGE = (431, "headers_too_large")


@pytest.mark.parametrize(
    ("reads", "refusal"),
    [
        ([b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 200 + b"\r\n\r\n"], TOO_LARGE),
        ([b"GET /" + b"q" * 200 + b" HTTP/1.1\r\n"], TOO_LARGE),
        ([b"GET / HTTP/1.1\r\nHost: x\r\nX-Flood: ", b"a" * 2000], TOO_LARGE),
        ([b"GET /heal thz HTTP/1.1\r\nHost: x\r\n\r\n"], (400, "bad_request")),
    ],
    ids=["a header over the line cap", "a request line over it", "a head over the cap", "bad"],
)
def test_uvicorn_hands_a_refusal_to_the_protocol(
    reads: list[bytes], refusal: tuple[int, str]
) -> None:
    reliance = (
        "HttpToolsProtocol calling send_400_response when a parser callback raises (httptools: "
        "HttpParserCallbackError), on_message_begin before the head, on_url with self.url, "
        "on_header per header"
    )
    loop = asyncio.new_event_loop()
    try:
        protocol_class = capped_protocol(max_line_bytes=100, max_head_bytes=1000)
        config = uvicorn.Config(
            never_called, http=protocol_class, log_config=None, access_log=False
        )
        protocol = protocol_class(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        transport = Transport()
        protocol.connection_made(transport)
        for data in reads:
            protocol.data_received(data)
    finally:
        loop.close()
    status, code = refusal
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert transport.closed and head.startswith(b"HTTP/1.1 %d " % status), changed(
        PROTOCOL, reliance, "uvicorn", "httptools"
    )
    assert b"content-type: application/problem+json" in head.split(b"\r\n"), changed(
        PROTOCOL, reliance, "uvicorn", "httptools"
    )
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (status, code), changed(
        PROTOCOL, reliance, "uvicorn", "httptools"
    )


# app/api/cors.py: Starlette's preflight refusal, reworded.


def test_starlettes_preflight_refusal_names_what_it_refused() -> None:
    cors = CORSMiddleware(
        never_called, allow_origins=["https://a.example"], allow_methods=["GET"], allow_headers=[]
    )
    refusal = cors.preflight_response(
        Headers(
            {
                "origin": "https://b.example",
                "access-control-request-method": "PUT",
                "access-control-request-headers": "x-other",
            }
        )
    )
    reliance = "CORSMiddleware.preflight_response's text 'Disallowed CORS origin, method, headers'"
    assert refusal.status_code == 400, changed(CORS, reliance, "starlette")
    assert bytes(refusal.body) == b"Disallowed CORS origin, method, headers", changed(
        CORS, reliance, "starlette"
    )
