"""Responses built from service results that are already wire-ready JSON."""

from typing import Any

from fastapi.responses import JSONResponse, Response

from app.services.sessions import SessionDocument

PROBLEM_JSON = "application/problem+json"
PROBLEM_SCHEMA_REF = "#/components/schemas/Problem"


def _etag(version: int | None) -> dict[str, str] | None:
    return None if version is None else {"ETag": f'"{version}"'}


def json_response(content: Any, status_code: int = 200, version: int | None = None) -> JSONResponse:
    """Services return validated, camelCase JSON; sending it as is skips a second validation."""
    return JSONResponse(content, status_code=status_code, headers=_etag(version))


def rendered_response(body: bytes, status_code: int = 200, version: int | None = None) -> Response:
    """A JSON body the service has already rendered."""
    return Response(
        body, status_code=status_code, media_type="application/json", headers=_etag(version)
    )


def session_response(session: SessionDocument, status_code: int = 200) -> Response:
    """A session, with its version as ETag."""
    return rendered_response(session.body, status_code, session.version)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem+json errors a route can answer with."""
    return {
        status: {
            "description": DESCRIPTIONS[status],
            "content": {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            },
        }
        for status in statuses
    }


DESCRIPTIONS = {
    401: "No valid API key (`unauthorized`): send `Authorization: Bearer sk_…`.",
    403: "The API key's scope (app, user, read-only) does not cover this (`forbidden`).",
    404: "The session does not exist (`session_not_found`).",
    409: "Conflict: `session_already_exists` or `event_conflict`.",
    412: "If-Match named another version (`stale_session`); nothing was written.",
    413: "Too large (`payload_too_large`): body, event, batch or resulting state.",
    415: "The body is not JSON (`unsupported_media_type`).",
    422: "Invalid input (`validation_error`).",
    503: "The database cannot be reached (`database_unavailable`).",
}
