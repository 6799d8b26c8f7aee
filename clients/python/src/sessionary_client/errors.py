"""The client's error tree: every problem+json answer becomes the exception named by its `code`.

    SessionaryError                          anything this package raises on purpose
    ├── APIConnectionError                   no answer: refused, reset, DNS (after the retries)
    │   └── APITimeoutError                  no answer in time
    └── APIError                             the server answered with an error status
        ├── UnauthorizedError                401 unauthorized: no key, or not a valid one
        ├── ForbiddenError                   403 forbidden: outside the key's scope
        ├── NotFoundError                    404
        │   └── SessionNotFoundError         404 session_not_found
        ├── ConflictError                    409
        │   ├── SessionAlreadyExistsError    409 session_already_exists
        │   ├── SessionClosedError           409 session_closed
        │   ├── EventConflictError           409 event_conflict
        │   ├── ToolPairViolationError       409 tool_pair_violation
        │   └── ToolCallsPendingError        409 tool_calls_pending (has `call_ids`)
        ├── StaleSessionError                412 stale_session (has `current_version`)
        ├── PayloadTooLargeError             413 payload_too_large
        ├── InvalidRequestError              422 validation_error (has `errors`)
        └── ServiceUnavailableError          503 database_unavailable, schema_behind

A connection error keeps httpx's as its `__cause__`.
"""

from typing import Any

import httpx


class SessionaryError(Exception):
    """Base of every error this package raises on purpose."""


class APIConnectionError(SessionaryError):
    """The request got no answer (after the client's retries): the server is down or
    unreachable, or the connection broke. `__cause__` is httpx's error; `request_id` the
    `X-Request-ID` it was sent with, if any (the server's logs name it)."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        self.request_id = request_id
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    """The server did not answer within the client's timeout."""


def connection_error(error: httpx.TransportError, sent: httpx.Headers) -> APIConnectionError:
    """The error of a request sent with the headers `sent` that got no answer."""
    kind = APITimeoutError if isinstance(error, httpx.TimeoutException) else APIConnectionError
    return kind(f"{type(error).__name__}: {error}", sent.get("x-request-id"))


class APIError(SessionaryError):
    """An error answer. `problem` is the RFC 9457 body (synthesised when the body was not one);
    `headers` the answer's; `request_id` its `X-Request-ID`, the id the server logged it under."""

    def __init__(
        self, status_code: int, problem: dict[str, Any], headers: httpx.Headers | None = None
    ) -> None:
        self.status_code = status_code
        self.problem = problem
        self.headers = headers if headers is not None else httpx.Headers()
        self.request_id: str | None = self.headers.get("x-request-id")
        self.code: str = str(problem.get("code", "http_error"))
        self.detail: str = str(problem.get("detail", ""))
        super().__init__(f"{status_code} {self.code}: {self.detail}")


class UnauthorizedError(APIError):
    """No API key was sent, or it is unknown or revoked (`api_key=` or SESSIONARY_API_KEY)."""


class ForbiddenError(APIError):
    """The key is valid, but this app, user or write is outside its scope."""


class NotFoundError(APIError):
    pass


class SessionNotFoundError(NotFoundError):
    pass


class ConflictError(APIError):
    pass


class SessionAlreadyExistsError(ConflictError):
    pass


class SessionClosedError(ConflictError):
    """The session is closed: it can be read, forked or deleted, not written."""


class ToolPairViolationError(ConflictError):
    """The change would leave a function call without its response, or a response without
    its call."""


class ToolCallsPendingError(ConflictError):
    """Queued input was not promoted: function calls are unanswered (`call_ids`). Answer or
    heal them, or promote with `force=True`."""

    @property
    def call_ids(self) -> list[str]:
        return list(self.problem.get("callIds") or [])


class EventConflictError(ConflictError):
    """The event id is already stored with other content: a new event needs a new id."""


class StaleSessionError(APIError):
    """If-Match named an older version; nothing was written. Reload the session and retry."""

    @property
    def current_version(self) -> int | None:
        version = self.problem.get("currentVersion")
        return version if isinstance(version, int) else None


class PayloadTooLargeError(APIError):
    pass


class InvalidRequestError(APIError):
    @property
    def errors(self) -> list[dict[str, Any]]:
        errors = self.problem.get("errors")
        return errors if isinstance(errors, list) else []


class ServiceUnavailableError(APIError):
    pass


_BY_CODE: dict[str, type[APIError]] = {
    "session_not_found": SessionNotFoundError,
    "session_already_exists": SessionAlreadyExistsError,
    "session_closed": SessionClosedError,
    "event_conflict": EventConflictError,
    "tool_pair_violation": ToolPairViolationError,
    "tool_calls_pending": ToolCallsPendingError,
    "stale_session": StaleSessionError,
    "payload_too_large": PayloadTooLargeError,
    "validation_error": InvalidRequestError,
}
# For codes this client does not know yet (newer servers) and for non-problem bodies.
_BY_STATUS: dict[int, type[APIError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    412: StaleSessionError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    503: ServiceUnavailableError,
}


def error_for(response: httpx.Response) -> APIError:
    """The typed exception for an error response."""
    problem: dict[str, Any]
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        problem = body
    else:
        # A proxy's or load balancer's page, not the service's: keep what we can for debugging.
        problem = {"status": response.status_code, "detail": response.text[:500]}
    code = problem.get("code")
    kind = _BY_CODE.get(code) if isinstance(code, str) else None
    error = kind or _BY_STATUS.get(response.status_code, APIError)
    return error(response.status_code, problem, response.headers)
