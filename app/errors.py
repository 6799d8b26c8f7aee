"""The one error tree of the service; each class knows its HTTP status and stable `code`.

    SessionaryError                      (500 internal_error)
    ├── BadRequest                       (400 bad_request)
    ├── CorsPreflightRefused             (400 cors_preflight_refused)
    ├── HostNotAllowed                   (400 host_not_allowed)
    ├── Unauthorized                     (401 unauthorized)
    ├── Forbidden                        (403 forbidden)
    │   └── AppStateForbidden            (403 forbidden)
    ├── CrossOriginRefused               (403 cross_origin_refused)
    ├── NotFound                         (404 not_found)
    │   ├── SessionNotFound              (404 session_not_found)
    │   ├── EventNotFound                (404 event_not_found)
    │   └── ArtifactNotFound             (404 artifact_not_found)
    ├── Conflict                         (409 conflict)
    │   ├── SessionAlreadyExists         (409 session_already_exists)
    │   ├── SessionClosed                (409 session_closed)
    │   ├── EventConflict                (409 event_conflict)
    │   ├── ToolPairViolation            (409 tool_pair_violation)
    │   ├── ToolCallsPending             (409 tool_calls_pending)
    │   └── VersionExhausted             (409 version_exhausted)
    ├── StaleSession                     (412 stale_session)
    ├── PayloadTooLarge                  (413 payload_too_large)
    │   └── StateTooLarge                (413 payload_too_large)
    ├── UnsupportedMediaType             (415 unsupported_media_type)
    ├── RangeNotSatisfiable              (416 range_not_satisfiable)
    ├── InvalidInput                     (422 validation_error)
    ├── HeadersTooLarge                  (431 headers_too_large)
    ├── DatabaseUnavailable              (503 database_unavailable)
    ├── SchemaBehind                     (503 schema_behind)
    ├── SearchBusy                       (503 search_busy)
    ├── SearchTimeout                    (503 search_timeout)
    └── TooManyStreams                   (503 too_many_streams)

Services raise these; `problem_body` is their RFC 9457 problem+json document, which
`app.api.problems` answers with, and so do the CORS layer and the HTTP connection
(`app.protocol`) for what they refuse before any route runs.
"""

from typing import Any, ClassVar

# The media type of `problem_body`'s document.
PROBLEM_JSON = "application/problem+json"


def problem_body(
    status: int, code: str, title: str, detail: str, instance: str | None, **extra: Any
) -> dict[str, Any]:
    """The RFC 9457 document; `instance` is the path, when the request got as far as one."""
    body = {
        "type": f"urn:sessionary:problem:{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }
    if instance is not None:
        body["instance"] = instance
    return body


class SessionaryError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal server error"
    headers: ClassVar[dict[str, str]] = {}  # sent with the problem (`response_headers`)

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def response_headers(self) -> dict[str, str]:
        """The headers its answer carries besides the problem."""
        return self.headers

    def problem_body(self, instance: str | None = None) -> dict[str, Any]:
        """This error's RFC 9457 document (`problem_body`)."""
        return problem_body(self.status, self.code, self.title, self.detail, instance, **self.extra)


class BadRequest(SessionaryError):
    status = 400
    code = "bad_request"
    title = "Bad request"


class CorsPreflightRefused(SessionaryError):
    status = 400
    code = "cors_preflight_refused"
    title = "Cross-origin request not allowed"


class HostNotAllowed(SessionaryError):
    status = 400
    code = "host_not_allowed"
    title = "Host not allowed"

    def __init__(self, host: str) -> None:
        super().__init__(
            f"This server does not answer for the host {host!r}; it answers for the hosts of "
            "SESSIONARY_ALLOWED_HOSTS. Use one of them, or add this one there."
        )


class CrossOriginRefused(SessionaryError):
    status = 403
    code = "cross_origin_refused"
    title = "Cross-origin write refused"

    def __init__(self, origin: str) -> None:
        super().__init__(
            f"A page on another origin ({origin}) may not write here: add its origin to "
            "SESSIONARY_CORS_ORIGINS to allow it. Nothing was written."
        )


class Unauthorized(SessionaryError):
    status = 401
    code = "unauthorized"
    title = "Unauthorized"
    headers: ClassVar[dict[str, str]] = {"WWW-Authenticate": "Bearer"}


class Forbidden(SessionaryError):
    status = 403
    code = "forbidden"
    title = "Outside this API key's scope"


class AppStateForbidden(Forbidden):
    def __init__(self) -> None:
        super().__init__(
            "This API key is for one user: it may not write app state (`app:` keys), which "
            "every user of the app sees. Nothing was written. Use an app-wide key, or a user "
            "key made with `sessionary keys create --app-state write`."
        )


class NotFound(SessionaryError):
    status = 404
    code = "not_found"
    title = "Not found"


class SessionNotFound(NotFound):
    code = "session_not_found"
    title = "Session not found"

    def __init__(self, app_name: str, user_id: str, session_id: str) -> None:
        super().__init__(
            f"Session {session_id!r} of user {user_id!r} in app {app_name!r} does not exist."
        )


class EventNotFound(NotFound):
    code = "event_not_found"
    title = "Event not found"

    def __init__(self, session_id: str, event_id: str) -> None:
        super().__init__(f"Session {session_id!r} holds no event with id {event_id!r}.")


class ArtifactNotFound(NotFound):
    code = "artifact_not_found"
    title = "Artifact not found"

    def __init__(self, name: str, version: int | None = None, why: str = "") -> None:
        subject = f"Artifact {name!r}" if version is None else f"Version {version} of {name!r}"
        super().__init__(f"{subject} does not exist here{why}.")


class MemoryNotFound(NotFound):
    code = "memory_not_found"
    title = "Memory not found"

    def __init__(self, memory_id: str, revision: int | None = None) -> None:
        subject = (
            f"Memory {memory_id!r}"
            if revision is None
            else (f"Revision {revision} of memory {memory_id!r}")
        )
        super().__init__(f"{subject} does not exist here (or has expired).")


class ErasureNotFound(NotFound):
    code = "erasure_not_found"
    title = "Erasure not found"

    def __init__(self, app_name: str, user_id: str | None = None) -> None:
        erased = f"App {app_name!r}" if user_id is None else f"User {user_id!r} of app {app_name!r}"
        super().__init__(f"{erased} has not been erased.")


class Conflict(SessionaryError):
    status = 409
    code = "conflict"
    title = "Conflict"


class SessionAlreadyExists(Conflict):
    code = "session_already_exists"
    title = "Session already exists"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"A session with id {session_id!r} already exists for this user.")


class UserBeingErased(Conflict):
    code = "user_erasing"
    title = "User being erased"

    def __init__(self, app_name: str, user_id: str) -> None:
        super().__init__(
            f"User {user_id!r} of app {app_name!r} is being erased: nothing of theirs is written "
            "until the erase is done (GET its status at "
            f"/apps/{app_name}/users/{user_id}/erasure)."
        )


class AppBeingErased(Conflict):
    code = "app_erasing"
    title = "App being erased"

    def __init__(self, app_name: str) -> None:
        super().__init__(
            f"App {app_name!r} is being erased: its writes are refused until the erase is "
            f"done (GET its status at /apps/{app_name}/erasure)."
        )


class SessionClosed(Conflict):
    code = "session_closed"
    title = "Session closed"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session {session_id!r} is closed; it can be read, forked or deleted.")


class ToolPairViolation(Conflict):
    code = "tool_pair_violation"
    title = "A function call would lose its response"


class ToolCallsPending(Conflict):
    code = "tool_calls_pending"
    title = "Function calls are waiting for their responses"

    def __init__(self, call_ids: list[str]) -> None:
        super().__init__(
            f"{len(call_ids)} function call(s) are unanswered ({', '.join(call_ids[:5])}): "
            "queued input would come between a call and its response. Answer them (or heal "
            "them), or promote with force.",
            callIds=call_ids,
        )


class VersionExhausted(Conflict):
    code = "version_exhausted"
    title = "Session has no versions left"

    def __init__(self, max_version: int) -> None:
        super().__init__(
            f"This write would take the session's version past {max_version} (2^53 - 1), the "
            "largest seq every JSON reader holds exactly; nothing was written. The session can "
            "still be read, exported, forked or deleted: go on in a new session."
        )


class EventConflict(Conflict):
    code = "event_conflict"
    title = "Event id already used"

    def __init__(self, event_id: str) -> None:
        super().__init__(
            f"Event {event_id!r} is already stored in this session with different content; "
            "a retry must resend the same event, a new event needs a new id."
        )


class StaleSession(SessionaryError):
    status = 412
    code = "stale_session"
    title = "Session changed since it was read"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"If-Match expected version {expected} but the session is at version {actual}; "
            "reload the session and retry.",
            currentVersion=actual,
        )


class MemoryAlreadyExists(Conflict):
    code = "memory_already_exists"
    title = "Memory already exists"

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"Memory {memory_id!r} already exists; update it (PATCH), or create one with "
            "another id."
        )


class StaleMemory(SessionaryError):
    status = 412
    code = "stale_memory"
    title = "Memory changed since it was read"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"If-Match expected revision {expected} but the memory is at revision {actual}; "
            "read it again and retry.",
            currentRevision=actual,
        )


class PayloadTooLarge(SessionaryError):
    status = 413
    code = "payload_too_large"
    title = "Payload too large"


class StateTooLarge(PayloadTooLarge):
    def __init__(self, scope: str, size: int | None, limit: int) -> None:
        grown = f"would grow to {size} bytes" if size is not None else "would grow too large"
        super().__init__(
            f"The {scope} state {grown}; the limit per scope is {limit} bytes "
            "(SESSIONARY_MAX_STATE_BYTES). Nothing was written."
        )


class UnsupportedMediaType(SessionaryError):
    status = 415
    code = "unsupported_media_type"
    title = "Unsupported media type"


class RangeNotSatisfiable(SessionaryError):
    status = 416
    code = "range_not_satisfiable"
    title = "Range not satisfiable"

    def __init__(self, size: int) -> None:
        super().__init__(f"The Range selects no byte of the content, which is {size} bytes long.")
        self.size = size

    def response_headers(self) -> dict[str, str]:
        return {"Content-Range": f"bytes */{self.size}"}


class InvalidInput(SessionaryError):
    status = 422
    code = "validation_error"
    title = "Invalid input"


class HeadersTooLarge(SessionaryError):
    status = 431
    code = "headers_too_large"
    title = "Request header fields too large"


class DatabaseUnavailable(SessionaryError):
    status = 503
    code = "database_unavailable"
    title = "Database unavailable"
    headers: ClassVar[dict[str, str]] = {"Retry-After": "1"}


class TooManyStreams(SessionaryError):
    status = 503
    code = "too_many_streams"
    title = "Too many open streams"
    headers: ClassVar[dict[str, str]] = {"Retry-After": "5"}

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This worker serves {limit} streams already (SESSIONARY_MAX_STREAMS); retry later "
            "or on another replica."
        )


class SearchBusy(SessionaryError):
    status = 503
    code = "search_busy"
    title = "Too many searches at once"
    headers: ClassVar[dict[str, str]] = {"Retry-After": "1"}

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This worker runs {limit} searches already (SESSIONARY_SEARCH_CONCURRENCY), the "
            "most it runs at once so that searches never slow down appends; retry shortly."
        )


class SearchTimeout(SessionaryError):
    status = 503
    code = "search_timeout"
    title = "Search took too long"

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"The search was stopped after {seconds:g} s (SESSIONARY_SEARCH_TIMEOUT): narrow "
            "it with userId, sessionId, author, afterTimestamp or beforeTimestamp, or search "
            "for rarer words."
        )


class SchemaBehind(SessionaryError):
    status = 503
    code = "schema_behind"
    title = "Database schema is not at this version's migration head"

    def __init__(self, current: str | None, head: str | None, newer: bool = False) -> None:
        """`newer`: `current` is no revision of this code's, but a later release's, which
        migrating cannot undo."""
        if newer:
            detail = (
                f"The database schema is at revision {current}, newer than this release of "
                f"Sessionary (which knows revisions up to {head}): upgrade Sessionary."
            )
        else:
            at = f"at revision {current}" if current else "not created yet"
            detail = (
                f"The database schema is {at}; this code needs revision {head}: "
                "run `sessionary migrate`."
            )
        super().__init__(detail)


# What HTTP itself refuses before any route runs (no route, no such method, a body that
# Starlette cannot take), by status; any other status is `http_error`.
HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def _codes(kind: type[SessionaryError]) -> set[str]:
    return {kind.code}.union(*(_codes(sub) for sub in kind.__subclasses__()))


# Every `code` a problem can carry: the spec lists them (`Problem.code`).
PROBLEM_CODES = tuple(sorted(_codes(SessionaryError) | set(HTTP_CODES.values()) | {"http_error"}))
