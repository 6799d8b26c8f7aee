"""Responses around bodies `app.api.render` built, and the spec entries of the problems."""

from typing import Any

from fastapi.responses import Response

from app.domain import POSITION_PATTERN, position_text
from app.errors import PROBLEM_JSON


def _etag(version: int | None) -> dict[str, str] | None:
    return None if version is None else {"ETag": f'"{version}"'}


def respond(body: bytes, status_code: int = 200, version: int | None = None) -> Response:
    """A rendered JSON body, sent as is (FastAPI's response model would validate it again);
    `version`, when given, becomes the ETag."""
    return Response(
        body, status_code=status_code, media_type="application/json", headers=_etag(version)
    )


ETAG = {
    "ETag": {
        "description": 'The session\'s version after this request, quoted (`"7"`): send it '
        "back as `If-Match` to write only if nothing was written since.",
        "schema": {"type": "string", "pattern": '^"[0-9]+"$'},
    }
}


def etag(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries saying that these answers carry the session's version as `ETag`."""
    return {status: {"headers": ETAG} for status in statuses}


# The primary's write-ahead log position after a write that leaves no version to read back.
POSITION_HEADER = "Sessionary-Position"
POSITION = {
    POSITION_HEADER: {
        "description": "The primary's write-ahead log position once the delete committed (an "
        "erase deletes the user's sessions before it answers, a 202 too), as PostgreSQL "
        "prints it (`0/16B3748`): send it as `minPosition` on the session reads that follow, "
        "and a read replica serves them only once it has replayed that far. Without a "
        "replica, nothing to do.",
        "schema": {"type": "string", "pattern": POSITION_PATTERN},
    }
}


def position(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries saying that these answers carry the primary's WAL position."""
    return {status: {"headers": POSITION} for status in statuses}


def at_position(response: Response, wal_position: int) -> Response:
    """`response`, with the primary's WAL position after the write as `Sessionary-Position`."""
    response.headers[POSITION_HEADER] = position_text(wal_position)
    return response


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem+json errors a route can answer with."""
    return {
        status: {
            "description": DESCRIPTIONS[status],
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


DESCRIPTIONS = {
    401: "No valid API key (`unauthorized`): send `Authorization: Bearer sk_…`.",
    403: "The API key's scope (app, user, read-only) does not cover this (`forbidden`).",
    404: "The session does not exist (`session_not_found`).",
    409: "Conflict: `session_already_exists`, `event_conflict`, `session_closed` (the session "
    "is closed to writes), `tool_pair_violation`, `tool_calls_pending` or `version_exhausted` "
    "(the write would take the session's version past 2^53 - 1).",
    412: "If-Match named another version (`stale_session`); nothing was written. "
    "`currentVersion` is the session's version now.",
    413: "Too large (`payload_too_large`): body, event, batch or resulting state.",
    415: "The body is not JSON (`unsupported_media_type`).",
    416: "The `Range` selects no byte of the content (`range_not_satisfiable`); "
    "`Content-Range` says its length.",
    431: "The request line or a header is too long (`headers_too_large`).",
    422: "Invalid input (`validation_error`).",
    503: "Retry after `Retry-After`: the database cannot be reached (`database_unavailable`), "
    "or its schema is behind this server's (`schema_behind`: run `sessionary migrate`), or, on "
    "a stream, the worker has `SESSIONARY_MAX_STREAMS` open already (`too_many_streams`), or, "
    "on a search, the worker runs `SESSIONARY_SEARCH_CONCURRENCY` searches already "
    "(`search_busy`) or the search ran past `SESSIONARY_SEARCH_TIMEOUT` (`search_timeout`: "
    "narrow it).",
}
