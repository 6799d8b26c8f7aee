"""The client's error tree: every problem+json answer becomes the exception named by its `code`.

    SessionaryError                          anything this package raises on purpose
    ├── APIConnectionError                   no answer: refused, reset, DNS (after the retries)
    │   └── APITimeoutError                  no answer in time
    ├── ArtifactIsReferenceError             a download of content stored elsewhere (303)
    └── APIError                             the server answered with an error status
        ├── BadRequestError                  400 bad_request
        │   ├── CORSPreflightRefusedError    400 cors_preflight_refused
        │   └── HostNotAllowedError          400 host_not_allowed
        ├── UnauthorizedError                401 unauthorized: no key, or not a valid one
        ├── ForbiddenError                   403 forbidden: outside the key's scope
        │   └── CrossOriginRefusedError      403 cross_origin_refused
        ├── NotFoundError                    404 not_found
        │   ├── SessionNotFoundError         404 session_not_found
        │   ├── EventNotFoundError           404 event_not_found
        │   ├── ArtifactNotFoundError        404 artifact_not_found
        │   ├── MemoryNotFoundError          404 memory_not_found
        │   └── ErasureNotFoundError         404 erasure_not_found
        ├── MethodNotAllowedError            405 method_not_allowed
        ├── ConflictError                    409 conflict
        │   ├── SessionAlreadyExistsError    409 session_already_exists
        │   ├── SessionClosedError           409 session_closed
        │   ├── EventConflictError           409 event_conflict
        │   ├── ToolPairViolationError       409 tool_pair_violation
        │   ├── ToolCallsPendingError        409 tool_calls_pending (has `call_ids`)
        │   ├── VersionExhaustedError        409 version_exhausted
        │   ├── MemoryAlreadyExistsError     409 memory_already_exists
        │   ├── UserErasingError             409 user_erasing
        │   └── AppErasingError              409 app_erasing
        ├── PreconditionFailedError          412: If-Match named another version
        │   ├── StaleSessionError            412 stale_session (has `current_version`)
        │   └── StaleMemoryError             412 stale_memory (has `current_revision`)
        ├── PayloadTooLargeError             413 payload_too_large
        ├── UnsupportedMediaTypeError        415 unsupported_media_type
        ├── RangeNotSatisfiableError         416 range_not_satisfiable (has `size`)
        ├── InvalidRequestError              422 validation_error (has `errors`)
        ├── HeadersTooLargeError             431 headers_too_large
        ├── InternalError                    500 internal_error
        ├── ServiceUnavailableError          503
        │   ├── DatabaseUnavailableError     503 database_unavailable
        │   ├── SchemaBehindError            503 schema_behind
        │   ├── SearchBusyError              503 search_busy
        │   ├── SearchTimeoutError           503 search_timeout
        │   └── TooManyStreamsError          503 too_many_streams
        └── HTTPError                        http_error, of any other status

Which class each code raises is the generated table `_spec.ERROR_CLASSES` (clients/generate.py);
a code's class is a child of its status's, so an `except` for the status catches it too. A
connection error keeps httpx's as its `__cause__`.
"""

from typing import Any

import httpx

from sessionary_client._spec import ERROR_CLASSES


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


class ArtifactIsReferenceError(SessionaryError):
    """A download of an artifact version saved as a reference (ADK's `fileData`): the server
    holds no bytes of it, only where they are, `uri` (its answer's `Location`). It is not
    followed: the URI is not the server's, and the client's key must not be sent there."""

    def __init__(self, uri: str, version: int) -> None:
        self.uri, self.version = uri, version
        super().__init__(f"version {version} is a reference to {uri}")


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


class BadRequestError(APIError):
    """The request is not valid HTTP, or not what the service reads."""


class CORSPreflightRefusedError(BadRequestError):
    """A browser asked to send a cross-origin request that SESSIONARY_CORS_ORIGINS does not
    allow."""


class HostNotAllowedError(BadRequestError):
    """The server does not answer for this Host (SESSIONARY_ALLOWED_HOSTS)."""


class UnauthorizedError(APIError):
    """No API key was sent, or it is unknown or revoked (`api_key=` or SESSIONARY_API_KEY)."""


class ForbiddenError(APIError):
    """The key is valid, but this app, user or write is outside its scope."""


class CrossOriginRefusedError(ForbiddenError):
    """A page on an origin SESSIONARY_CORS_ORIGINS does not allow may not write."""


class NotFoundError(APIError):
    pass


class SessionNotFoundError(NotFoundError):
    pass


class EventNotFoundError(NotFoundError):
    """The session holds no event with that id."""


class ArtifactNotFoundError(NotFoundError):
    """No such artifact name, or no such version of it; a version ADK's rewind marked
    removed downloads as this too."""


class MemoryNotFoundError(NotFoundError):
    """No such memory (or it expired), or no such revision of it."""


class ErasureNotFoundError(NotFoundError):
    """The user (or the app) was never erased: no erase of theirs to show."""


class MethodNotAllowedError(APIError):
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


class VersionExhaustedError(ConflictError):
    """The write would take the session's version past 2^53 - 1; go on in a new session."""


class MemoryAlreadyExistsError(ConflictError):
    """A memory with that id exists: update it, or create one with another id."""


class UserErasingError(ConflictError):
    """The user is being erased: nothing of theirs is written until the erase is done
    (`get_erasure` shows its progress); a write after it starts the user afresh."""


class AppErasingError(ConflictError):
    """The app is being erased: nothing of it is made until the erase is done
    (`get_app_erasure` shows its progress); a write after it starts the app afresh."""


class PreconditionFailedError(APIError):
    """If-Match named another version of what the request would change; nothing was written."""


class StaleSessionError(PreconditionFailedError):
    """If-Match named an older version; nothing was written. Reload the session and retry."""

    @property
    def current_version(self) -> int | None:
        version = self.problem.get("currentVersion")
        return version if isinstance(version, int) else None


class StaleMemoryError(PreconditionFailedError):
    """If-Match named another revision of the memory; nothing was changed. Read it again
    and retry."""

    @property
    def current_revision(self) -> int | None:
        revision = self.problem.get("currentRevision")
        return revision if isinstance(revision, int) else None


class PayloadTooLargeError(APIError):
    pass


class UnsupportedMediaTypeError(APIError):
    """The body is not JSON."""


class RangeNotSatisfiableError(APIError):
    """The download's range selects no byte of the content, which is `size` bytes long."""

    @property
    def size(self) -> int | None:
        _, _, size = self.headers.get("content-range", "").rpartition("/")
        return int(size) if size.isdecimal() else None


class InvalidRequestError(APIError):
    @property
    def errors(self) -> list[dict[str, Any]]:
        errors = self.problem.get("errors")
        return errors if isinstance(errors, list) else []


class HeadersTooLargeError(APIError):
    pass


class InternalError(APIError):
    """A fault of the server's; its logs have it under the `request_id`."""


class ServiceUnavailableError(APIError):
    pass


class DatabaseUnavailableError(ServiceUnavailableError):
    pass


class SchemaBehindError(ServiceUnavailableError):
    """The database's schema is not the server's: run `sessionary migrate`."""


class SearchBusyError(ServiceUnavailableError):
    pass


class SearchTimeoutError(ServiceUnavailableError):
    """The search ran past the server's time limit: narrow it rather than retry it."""


class TooManyStreamsError(ServiceUnavailableError):
    pass


class HTTPError(APIError):
    """Refused by HTTP itself, with a status no other code names."""


# Each code's class, by the name the generated table gives it. One not written yet is left
# out: its status's class stands in, as for a newer server's code, and
# tests/test_spec_coverage.py names it.
_BY_CODE: dict[str, type[APIError]] = {
    code: globals()[name] for code, name in ERROR_CLASSES.items() if name in globals()
}
# For codes this client does not know yet (newer servers) and for non-problem bodies.
_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    412: PreconditionFailedError,
    413: PayloadTooLargeError,
    416: RangeNotSatisfiableError,
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
    if kind is None or kind is HTTPError:
        # `http_error` names no cause: the status's class, where there is one, says more.
        kind = _BY_STATUS.get(response.status_code, kind or APIError)
    return kind(response.status_code, problem, response.headers)
