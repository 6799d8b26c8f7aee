"""The fast path past FastAPI's parameter binding: a plain route's parameters bound here,
without FastAPI's per-request dependency solving.

This is the one module that uses FastAPI's private names: `fastapi._compat` (`ModelField`,
`field_annotation_is_scalar`), `fastapi.dependencies.utils.request_body_to_args`,
`APIRoute._embed_body_fields`, and the fields of `fastapi.dependencies.models.Dependant` and
`fastapi.params.Param` that FastAPI's own binder reads. pyproject.toml holds FastAPI below its
next minor version, and tests/test_fast_paths.py checks each name and shape used here: an
upgrade that changes one fails there, naming it. What the bypass saves is measured in
bench/README.md ("How it got here").
"""

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, get_type_hints

from fastapi import Request, Response
from fastapi._compat import ModelField, field_annotation_is_scalar
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.params import Param as FastAPIParam
from fastapi.params import ParamTypes
from fastapi.routing import APIRoute
from pydantic_core import PydanticUndefined

from app.api.deps import Authorized, Public

Handler = Callable[[Request], Awaitable[Response]]


def query_names(dependant: Dependant, *, repeatable: bool = False) -> frozenset[str]:
    """Every query parameter a route reads, its dependencies' included; with `repeatable`,
    only those FastAPI binds from every value given, as a list (`label=a:1&label=b:2`)."""
    names = {
        field.alias
        for field in dependant.query_params
        if not repeatable or not field_annotation_is_scalar(field.field_info.annotation)
    }
    for dependency in dependant.dependencies:
        names |= query_names(dependency, repeatable=repeatable)
    return frozenset(names)


def _is_access_rule(dependant: Dependant) -> bool:
    return isinstance(dependant.call, Authorized | Public)


def _answers_response(endpoint: Callable[..., Any]) -> bool:
    answer = get_type_hints(endpoint).get("return")
    return isinstance(answer, type) and issubclass(answer, Response)


def plain_handler(route: APIRoute) -> Handler | None:
    """A handler that binds the route's parameters itself, for a route that takes only plain
    ones (path, query and header values, one JSON body, the `Request`), has no dependencies
    but its access rules, which `StrictRoute` has judged already, and answers a `Response`.

    FastAPI's own handler solves the dependency tree anew for each request (the access rule,
    its bearer scheme, a response object, caches, exit stacks), a large share of an append's
    CPU, which this skips. Each parameter is validated by its own FastAPI field, so the errors
    are the same; the declaration, and so the OpenAPI description, is untouched. None for any
    other route, which keeps FastAPI's handler.
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
    one validation. FastAPI's binder works out each field's shape again on every request,
    which this does once, when the route is built."""
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
