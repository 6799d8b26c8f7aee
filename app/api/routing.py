"""The door every API request passes before its route runs: key first, then strict input.

FastAPI would otherwise parse and validate the query and body before any dependency, so a
caller without a key would be told what is wrong with its input; and it would ignore unknown
query parameters, accept bodies that are not JSON, and let Python's JSON parser guess at
duplicate keys or NaN.
"""

import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, NamedTuple, get_type_hints
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi._compat import ModelField, field_annotation_is_scalar
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.params import Param as FastAPIParam
from fastapi.params import ParamTypes
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined
from starlette.convertors import Convertor, register_url_convertor

from app import strict_json
from app.api.deps import Authorized, Public, authorize
from app.errors import InvalidInput, UnsupportedMediaType
from app.limits import SESSION_VERBS
from app.services.auth import Need


class SessionIdConvertor(Convertor[str]):
    """A session id in a path never ends in a verb of the session paths (`x:fork`): a verb
    suffix is matched before an id (DESIGN §6), so `POST …/sessions/x:fork` forks `x`, and
    `GET` there is a 405 that allows only `POST` rather than a read of a session `x:fork`."""

    regex = "[^/]+" + "".join(f"(?<!:{verb})" for verb in SESSION_VERBS)

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("session", SessionIdConvertor())
# The path of one session, for the routes' paths: `{session_id}` with its convertor.
SESSION_PATH = "/apps/{app_name}/users/{user_id}/sessions/{session_id:session}"


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            max_depth = self.app.state.settings.max_json_depth
            self._json = strict_json.loads(await self.body(), max_depth=max_depth)
        return self._json


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return length != "0" if length is not None else "transfer-encoding" in request.headers


def _is_json(content_type: str) -> bool:
    media_type = content_type.split(";")[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


def declared_needs(dependant: Dependant) -> tuple[Need, ...]:
    """The access rules a route declares, its router's and its dependencies' included."""
    own = (dependant.call.need,) if isinstance(dependant.call, Authorized) else ()
    return own + tuple(need for sub in dependant.dependencies for need in declared_needs(sub))


def declares_public(dependant: Dependant) -> bool:
    return isinstance(dependant.call, Public) or any(
        declares_public(sub) for sub in dependant.dependencies
    )


def unguarded_routes(app: FastAPI) -> list[str]:
    """Routes that declare no access rule, neither `authorized(…)` nor `PUBLIC`.

    FastAPI's own documentation routes are public by nature; anything else must say who may
    call it, so that forgetting to is an error at start-up rather than an open door.
    """
    docs = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}
    unguarded = []
    for context in iter_route_contexts(app.router.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            if not (declared_needs(route.dependant) or declares_public(route.dependant)):
                unguarded.append(f"{sorted(route.methods or ())} {route.path}")
        elif getattr(route, "path", None) not in docs:
            unguarded.append(f"{route!r}")
    return unguarded


def _query_names(dependant: Dependant, *, repeatable: bool = False) -> frozenset[str]:
    """Every query parameter a route reads, its dependencies' included; with `repeatable`,
    only those that take a list (`label=a:1&label=b:2`)."""
    names = {
        field.alias
        for field in dependant.query_params
        if not repeatable or not field_annotation_is_scalar(field.field_info.annotation)
    }
    for dependency in dependant.dependencies:
        names |= _query_names(dependency, repeatable=repeatable)
    return frozenset(names)


# Headers that decide what a request does; sent twice, which one counts would be a guess.
SINGLE_VALUED_HEADERS = frozenset({b"authorization", b"if-match", b"content-type"})


def _repeated_headers(request: Request) -> list[str]:
    seen: set[bytes] = set()
    repeated = []
    for name, _ in request.scope["headers"]:
        if name in SINGLE_VALUED_HEADERS:
            if name in seen:
                repeated.append(name.decode())
            seen.add(name)
    return repeated


def _sent_twice(name: str) -> InvalidInput:
    return InvalidInput(f"The header {name!r} is given more than once; send it once.", field=name)


def _check_query(request: Request, known: frozenset[str], repeatable: frozenset[str]) -> None:
    """Query names are camelCase like the JSON; snake_case ones are read as their camelCase
    selves, as in bodies. A name the route does not know is refused, and so is a name given
    twice that takes one value: as with duplicate JSON keys, the last one does not silently
    win."""
    items = request.query_params.multi_items()
    unknown = sorted(
        {name for name, _ in items if name not in known and to_camel(name) not in known}
    )
    if unknown:
        accepted = ", ".join(sorted(known)) or "none"
        raise InvalidInput(
            f"Unknown query parameter {unknown[0]!r}; this endpoint takes: {accepted}.",
            field=unknown[0],
        )
    names = [name if name in known else to_camel(name) for name, _ in items]
    repeated = next(
        (name for name in names if name not in repeatable and names.count(name) > 1), None
    )
    if repeated is not None:
        raise InvalidInput(f"Query parameter {repeated!r} is given more than once.", field=repeated)
    if names != [name for name, _ in items]:
        renamed = list(zip(names, (value for _, value in items), strict=True))
        request.scope["query_string"] = urlencode(renamed).encode()


Handler = Callable[[Request], Awaitable[Response]]


def _is_access_rule(dependant: Dependant) -> bool:
    return isinstance(dependant.call, Authorized | Public)


def _answers_response(endpoint: Callable[..., Any]) -> bool:
    answer = get_type_hints(endpoint).get("return")
    return isinstance(answer, type) and issubclass(answer, Response)


def _plain_handler(route: APIRoute) -> Handler | None:
    """A handler that binds the route's parameters itself, for a route that takes only plain
    ones (path, query and header values, one JSON body, the `Request`), has no dependencies
    but its access rules, which `StrictRoute` has judged already, and answers a `Response`.

    FastAPI's own handler solves the dependency tree anew for each request (the access rule,
    its bearer scheme, a response object, caches, exit stacks): ~150 µs of an append, which
    this skips. Each parameter is validated by its own FastAPI field, so the errors are the
    same; the declaration, and so the OpenAPI description, is untouched. None for any other
    route, which keeps FastAPI's handler.
    """
    dependant = route.dependant
    if (
        not all(_is_access_rule(sub) for sub in dependant.dependencies)
        or dependant.cookie_params
        or len(dependant.body_params) > 1
        or not inspect.iscoroutinefunction(dependant.call)
        or not _answers_response(dependant.call)
        or any(
            name is not None
            for name in (
                dependant.response_param_name,
                dependant.background_tasks_param_name,
                dependant.http_connection_param_name,
                dependant.websocket_param_name,
                dependant.security_scopes_param_name,
            )
        )
    ):
        return None
    params = _scalar_params(dependant)
    if params is None:
        return None
    endpoint = dependant.call
    assert endpoint is not None

    async def handle(request: Request) -> Response:
        values: dict[str, Any] = {}
        errors: list[Any] = []
        for param in params:
            value = getattr(request, param.source).get(param.name)
            if value is None:  # only an optional one can be absent: a path always has its own
                values[param.field.name] = param.field.default
                continue
            bound, failed = param.field.validate(value, values, loc=param.loc)
            values[param.field.name] = bound
            errors += failed
        body: Any = PydanticUndefined
        if dependant.body_params:
            if await request.body():
                try:
                    body = await request.json()
                except json.JSONDecodeError as error:
                    raise _invalid_json(error) from error
            bound, failed = await request_body_to_args(
                dependant.body_params, body, route._embed_body_fields
            )
            values.update(bound)
            errors += failed
        if errors:
            raise RequestValidationError(errors, body=body)
        if dependant.request_param_name is not None:
            values[dependant.request_param_name] = request
        response: Response = await endpoint(**values)
        return response

    return handle


# Where the request holds each location's values.
_SOURCES = {"path": "path_params", "query": "query_params", "header": "headers"}


class _Param(NamedTuple):
    field: ModelField
    source: str  # the request's attribute that holds it: path_params, query_params, headers
    name: str  # as the request names it
    loc: tuple[str, str]  # as validation errors name it


def _scalar_params(dependant: Dependant) -> list[_Param] | None:
    """The route's path, query and header parameters, if each is one plain value, and those
    not in the path optional, with an immutable default: each is then bound by one lookup and
    one validation. FastAPI's binder works out each field's shape again on every request:
    ~130 µs of an append."""
    params = []
    for field in (*dependant.path_params, *dependant.query_params, *dependant.header_params):
        info = field.field_info
        if (
            not isinstance(info, FastAPIParam)
            or not field_annotation_is_scalar(info.annotation)
            or info.validation_alias not in (None, field.alias)
            or info.validate_default
            or not (
                info.in_ is ParamTypes.path
                if info.is_required()
                else isinstance(field.default, str | int | float | None)
            )
        ):
            return None
        location = info.in_.value
        params.append(_Param(field, _SOURCES[location], field.alias, (location, field.alias)))
    return params


def _invalid_json(error: json.JSONDecodeError) -> RequestValidationError:
    """As FastAPI reports a body it cannot parse."""
    return RequestValidationError(
        [
            {
                "type": "json_invalid",
                "loc": ("body", error.pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": error.msg},
            }
        ],
        body=error.doc,
    )


class StrictRoute(APIRoute):
    """Checks, in this order: the API key against the route's `Authorized` rules (401/403);
    headers that must come once but came twice (422, a repeated `Authorization` even before
    the key); query parameters it does not know (422: a typo like `numRecentEvent=5` must not
    return every event); a body where the route takes none (422); a body that is not JSON
    (415); JSON that `app.strict_json` refuses (422)."""

    # Whether the route's parameters are bound by `_plain_handler`, set with its handler.
    binds_plainly = False

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        plain = _plain_handler(self)
        self.binds_plainly = plain is not None
        handler = plain or super().get_route_handler()
        needs = declared_needs(self.dependant)
        # A body the route would ignore is a mistake (options it does not have): refused.
        takes_body = self.body_field is not None or "requestBody" in (self.openapi_extra or {})
        known_query = _query_names(self.dependant)
        repeatable_query = _query_names(self.dependant, repeatable=True)

        async def strict_handler(request: Request) -> Response:
            repeated = _repeated_headers(request)
            if "authorization" in repeated:
                raise _sent_twice("authorization")
            if needs:
                await authorize(request, needs)
            if repeated:
                raise _sent_twice(repeated[0])
            if request.scope["query_string"]:
                _check_query(request, known_query, repeatable_query)
            request = StrictJSONRequest(request.scope, request.receive)
            if _has_body(request):
                if not takes_body:
                    raise InvalidInput(
                        f"{request.method} {self.path_format} takes no request body; send none.",
                        field="body",
                    )
                if self.body_field is not None and not _is_json(
                    request.headers.get("content-type", "")
                ):
                    raise UnsupportedMediaType(
                        "Send the body as JSON, with the header Content-Type: application/json."
                    )
            return await handler(request)

        return strict_handler
