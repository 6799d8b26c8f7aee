"""Export and import routes: a session as NDJSON, out and back in."""

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, status
from fastapi.responses import Response, StreamingResponse

from app.api import render
from app.api.deps import AppName, AppStateWritable, Key, UserId, authorized, services
from app.api.responses import ETAG, etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import ExportItem, SessionHeader, SessionKey
from app.errors import InvalidInput, UnsupportedMediaType
from app.rules import portability as format
from app.schemas import Session, SessionExport
from app.services.auth import Need
from app.services.portability import BATCH, read_record

NDJSON = "application/x-ndjson"
router = APIRouter(
    tags=["portability"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)
LINES = (
    "NDJSON, one JSON object per line: first the header, a `SessionExport` (the session as a "
    "read shows it, without events, with `eventCount`, `baseSeq` and `baseState`), then "
    "`eventCount` events as stored (`Event`, with `seq`), in seq order."
)
# The schema of one line (NDJSON has no schema of the whole).
EXPORT_LINE = {
    "anyOf": [
        {"$ref": "#/components/schemas/SessionExport"},
        {"$ref": "#/components/schemas/Event"},
    ],
    "description": "One line: the header first, then the events.",
}


@router.get(
    SESSION_PATH + ":export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": LINES,
            "headers": ETAG,
            "content": {NDJSON: {"schema": EXPORT_LINE}},
        },
        **problem_responses(404, 422, 503),
    },
)
async def export_session(request: Request, key: Key) -> Response:
    """The session as NDJSON, from one snapshot, streamed: what `…/sessions:import` takes
    back, here or on another Sessionary. Its `user:` and `app:` state travel as the header's
    state shows them; pending events do not travel."""
    items = services(request).portability.export(key)
    header = await anext(items)  # a 404 is answered before the stream starts
    assert isinstance(header, SessionHeader)
    return StreamingResponse(
        _lines(header, items), media_type=NDJSON, headers={"ETag": f'"{header.session.version}"'}
    )


async def _lines(first: ExportItem, rest: AsyncIterator[ExportItem]) -> AsyncIterator[bytes]:
    yield render.export_line(first)
    async for item in rest:
        yield render.export_line(item)


@router.post(
    "/apps/{app_name}/users/{user_id}/sessions:import",
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    responses={
        200: {
            "model": Session,
            "description": "The same session was stored already.",
            "headers": ETAG,
        },
        **problem_responses(403, 409, 413, 415, 422, 503),
        **etag(201),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": LINES + " As `…:export` sends it.",
            "content": {NDJSON: {"schema": EXPORT_LINE}},
        }
    },
)
async def import_session(
    request: Request, app_name: AppName, user_id: UserId, app_state_writable: AppStateWritable
) -> Response:
    """Store an exported session under this app and user (its header's `appName` and
    `userId` may name others: this path decides), with its id, seqs, version, times, lineage,
    labels and expiry as they were; `app:` and `user:` keys of its state are merged into the
    shared state, as a create does. All or nothing, in one transaction.

    201 with the session (without its events, which may be many: read it to get them). The
    same export again is 200 and writes nothing; a different session under a taken id is a
    409 `session_already_exists`. An expired session (`expireTime` past) is a 422."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != NDJSON:
        raise UnsupportedMediaType(f"Send the export as NDJSON, with Content-Type: {NDJSON}.")
    max_depth = request.app.state.settings.max_json_depth
    lines = list(format.numbered([await request.body()]))
    if not lines:
        raise InvalidInput("The body holds no header line.")
    header = read_record(format.decode(lines[0][1], lines[0][0], max_depth), lines[0][0])
    if not isinstance(header, SessionExport):
        raise InvalidInput("Line 1 is not a session's header.", field="line 1")

    async def events() -> AsyncIterator[list[tuple[int, Any]]]:
        for start in range(1, len(lines), BATCH):
            yield [
                (number, format.decode(text, number, max_depth))
                for number, text in lines[start : start + BATCH]
            ]

    imported = await services(request).portability.import_session(
        header,
        events(),
        key=SessionKey(app_name, user_id, header.id),
        app_state_writable=app_state_writable,
    )
    code = status.HTTP_201_CREATED if imported.created else status.HTTP_200_OK
    return respond(render.session(imported.session), code, imported.session.session.version)
