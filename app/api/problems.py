"""Errors as RFC 9457 problem+json: one renderer for every failure."""

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException

from app.errors import (
    HTTP_CODES,
    PROBLEM_JSON,
    InvalidInput,
    SessionaryError,
    problem_body,
)
from app.observability import NOSNIFF, mark_logged

logger = logging.getLogger("sessionary")


def problem(
    request: Request, status: int, code: str, title: str, detail: str, **extra: Any
) -> JSONResponse:
    body = problem_body(status, code, title, detail, request.url.path, **extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def render(request: Request, error: SessionaryError) -> JSONResponse:
    response = problem(request, error.status, error.code, error.title, error.detail, **error.extra)
    response.headers.update(error.response_headers())
    return response


async def _domain_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, SessionaryError)
    return render(request, error)


async def _validation_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    errors = []
    for item in error.errors():
        message = item["msg"]
        if item["type"] == "json_invalid" and "error" in item.get("ctx", {}):
            message = f"Invalid JSON: {item['ctx']['error']}"
        errors.append({"loc": list(item["loc"]), "msg": message, "type": item["type"]})
    detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
    return render(request, InvalidInput(detail or "Invalid request.", errors=errors))


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    code = HTTP_CODES.get(error.status_code, "http_error")
    title = code.replace("_", " ").capitalize()
    response = problem(request, error.status_code, code, title, str(error.detail or title))
    response.headers.update(error.headers or {})
    if error.status_code == 405:
        response.headers["Allow"] = ", ".join(_allowed_methods(request))
    return response


def _allowed_methods(request: Request) -> list[str]:
    """Every method of every route on this path, included routers' too (Starlette names only
    the first route's), and HEAD wherever GET is (`HeadAsGetMiddleware`)."""
    path = request.scope["path"]
    methods = {
        method
        for route in iter_route_contexts(request.app.router.routes)
        if route.path_regex.match(path)
        for method in route.methods or ()
    }
    return sorted(methods | {"HEAD"} if "GET" in methods else methods)


def _internal_error(request: Request, error: Exception) -> JSONResponse:
    """Logged with the request's id; the answer says nothing of what failed."""
    logger.error(
        "unhandled error on %s %s",
        request.method,
        request.url.path,
        exc_info=error,
        extra={"request_id": getattr(request.state, "request_id", None)},
    )
    mark_logged(error)
    return problem(
        request,
        500,
        "internal_error",
        "Internal server error",
        "An unexpected error occurred; it has been logged with this request's id.",
    )


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    """Starlette's last resort, which answers outside every middleware: the request id and
    nosniff are added here, as `RequestObserver` adds them to every other answer. Starlette then
    hands the error on to the server, which closes the connection: the answer says so, or the
    client would send its next request into a closed connection."""
    response = _internal_error(request, error)
    response.headers["Connection"] = "close"
    response.raw_headers.append(NOSNIFF)
    request_id = getattr(request.state, "request_id", None)
    if request_id is not None:
        response.headers["X-Request-ID"] = request_id
    return response


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(SessionaryError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
