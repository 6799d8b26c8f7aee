"""The raw request, before routing: the host and origin of a request, the body limit, the shape
of path ids, HEAD as GET."""

import re
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import render
from app.errors import CrossOriginRefused, HostNotAllowed, InvalidInput, SessionaryError


class BodyTooLarge(HTTPException):
    """An HTTPException, so FastAPI's body reading lets it through to the problem renderer."""

    def __init__(self, limit: int, setting: str) -> None:
        super().__init__(413, f"The request body exceeds {limit} bytes ({setting}).")


# An artifact's upload, the one body that may pass SESSIONARY_MAX_BODY_BYTES: streamed into
# storage, never held whole, up to a limit of its own.
_UPLOAD = re.compile(r"^/apps/[^/]+/users/[^/]+(/sessions/[^/]+)?/artifacts/.")
# A user's import, streamed into one transaction, never held whole: a limit of its own.
_USER_IMPORT = re.compile(r"^/apps/[^/]+/users/[^/]+:import$")


class BodyLimitMiddleware:
    def __init__(
        self, app: ASGIApp, max_bytes: int, max_upload_bytes: int, max_import_bytes: int
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes
        self.max_import_bytes = max_import_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting = self.max_bytes, "SESSIONARY_MAX_BODY_BYTES"
        if scope["method"] == "POST" and _UPLOAD.match(scope["path"]):
            limit, setting = self.max_upload_bytes, "SESSIONARY_MAX_ARTIFACT_BYTES"
        elif scope["method"] == "POST" and _USER_IMPORT.match(scope["path"]):
            limit, setting = self.max_import_bytes, "SESSIONARY_MAX_IMPORT_BYTES"
        declared = Headers(scope=scope).get("content-length", "")
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            if declared.isdigit() and int(declared) > limit:
                raise BodyTooLarge(limit, setting)  # refused before reading a byte
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit, setting)
            return message

        await self.app(scope, limited_receive, send)


# The paths that name ids: the API's, and ADK's web-server routes under `/adk`.
_ADK_APPS = b"/adk/apps/"


def _path_problem(raw_path: bytes) -> str | None:
    """Why an `/apps/…` (or `/adk/apps/…`) path cannot name valid ids, or None.

    Judged on the raw path: once decoded, `%2F` would split a segment in two and invalid
    UTF-8 would become U+FFFD, so different ids would collide or reach another route.
    """
    raw_path = raw_path.removeprefix(b"/adk") if raw_path.startswith(_ADK_APPS) else raw_path
    if not raw_path.startswith(b"/apps/"):
        return None
    for segment in raw_path.split(b"/")[2:]:
        if not segment:
            return "Path segments must not be empty, and paths have no trailing slash."
        if b"%2f" in segment.lower():
            return "Path segments must not contain '/' (%2F)."
        try:
            decoded = unquote_to_bytes(segment).decode("utf-8")
        except UnicodeDecodeError:
            return "Path segments must be valid UTF-8 (no lone surrogates)."
        if decoded in (".", ".."):
            return "Path segments must not be `.` or `..`, which URLs resolve away."
    return None


class PathGuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw_path = scope.get("raw_path") or scope["path"].encode()
            problem = _path_problem(raw_path)
            if problem is not None:
                response: Response
                if raw_path.startswith(_ADK_APPS):  # as ADK's server fails: FastAPI's shape
                    response = JSONResponse({"detail": problem}, 422)
                else:
                    response = render(Request(scope), InvalidInput(problem))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class HeadAsGetMiddleware:
    """HEAD on every GET route, as RFC 9110 asks (FastAPI routes answer only the methods they
    declare): the route runs as a GET, and the answer goes out without its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body"):
                    return
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        # A copy: the server still sees HEAD in its own scope, and so sends no body either.
        # `head_request` tells a response that never ends on its own (a stream) to stop.
        as_get = {**scope, "method": "GET", "head_request": True}
        try:
            await self.app(as_get, receive, without_body)
        finally:
            if "route" in as_get:  # for the access log and metrics, which see the HEAD
                scope["route"] = as_get["route"]


# Methods that change nothing: a page of another site may send them (it cannot read the answer
# without a CORS grant); any other needs one.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Probes, asked by orchestrators by address (the pod's IP), never by the service's name.
PROBES = frozenset({"/healthz", "/readyz", "/metrics"})


def _host_name(host: str) -> str:
    """`Host` without its port: `example.com`, `127.0.0.1`, `[::1]`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class HostAndOriginGuard:
    """What a local developer server checks: the request names this server (`Host` one of
    `allowed_hosts`, so that a rebound DNS name cannot read it), and a write from a browser
    page comes from its own origin or one CORS allows (`Origin`, else `Sec-Fetch-Site`): a
    page may send a form or a `text/plain` POST anywhere without asking. Keys on or off:
    with them off, nothing else stops it."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: list[str] | None, cors_origins: list[str]
    ) -> None:
        self.app = app
        self.hosts = (
            None
            if allowed_hosts is None or "*" in allowed_hosts
            else frozenset(_host_name(host) for host in allowed_hosts)
        )
        self.any_origin = "*" in cors_origins
        self.origins = frozenset(origin.lower() for origin in cors_origins)

    def _refusal(self, scope: Scope) -> SessionaryError | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if (
            self.hosts is not None
            and scope["path"] not in PROBES
            and _host_name(host) not in self.hosts
        ):
            return HostNotAllowed(host)
        if scope["method"] in SAFE_METHODS or self.any_origin:
            return None
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site")
        if origin is None:
            # No Origin: not a browser, or one that says where the request comes from here.
            return CrossOriginRefused(site) if site in ("cross-site", "same-site") else None
        if (
            site == "same-origin"
            or origin.lower() in self.origins
            or urlsplit(origin).netloc.lower() == host.lower()
        ):
            return None
        return CrossOriginRefused(origin)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await render(Request(scope), refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)
