"""Export and import routes: a session as NDJSON (or one JSON document), out and back in."""

import re
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, status
from fastapi.responses import Response, StreamingResponse

from app import strict_json
from app.api import render
from app.api.deps import AppName, AppStateWritable, Key, UserId, authorized, services
from app.api.responses import ETAG, etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import ExportItem, SessionHeader, SessionKey
from app.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType
from app.rules import portability as format
from app.schemas import Session, SessionExport, UserImport
from app.services.auth import Need
from app.services.portability import BATCH, read_record

NDJSON = "application/x-ndjson"
JSON = "application/json"
router = APIRouter(
    tags=["portability"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)
LINES = (
    "NDJSON (`application/x-ndjson`), one JSON object per line: first the header, a "
    "`SessionExport` (the session as a read shows it, without events, with `eventCount`, "
    "`baseSeq` and `baseState`), then `eventCount` events as stored (`Event`, with `seq`), in "
    "seq order, then `artifactLines` lines of the session's artifacts (`ExportedArtifact`: "
    "each version, after the pieces of its content, base64, where no earlier version holds the "
    "same); or, as `application/json`, the same as one `ExportedSession`, "
    "`{header, events, artifacts}`, for clients that read no NDJSON."
)
COMPONENTS = "#/components/schemas/"
# JSON first: openapi-generator asks for (and sends) the first media type with `json` in its
# name, which `application/x-ndjson` has too.
FORMS = {
    JSON: {"schema": {"$ref": COMPONENTS + "ExportedSession"}},
    NDJSON: {
        "schema": {"$ref": COMPONENTS + "SessionNdjson"},
        # Each line's schema, as OpenAPI 3.2's `itemSchema` gives it: the first line the
        # header, then events, then artifact lines.
        "x-itemSchema": {
            "oneOf": [
                {"$ref": COMPONENTS + "SessionExport"},
                {"$ref": COMPONENTS + "Event"},
                {"$ref": COMPONENTS + "ExportedArtifact"},
            ]
        },
    },
}


USER_PATH = "/apps/{app_name}/users/{user_id:user}"
USER_LINES = (
    "NDJSON (`application/x-ndjson`), one JSON object per line: the user's state "
    "(`UserStateExport`), then each session as `…/sessions/{id}:export` gives it (a "
    "`SessionExport` header, its events, its artifact lines), then the user's `user:` "
    "artifacts (a `UserArtifactsExport` line, then as many artifact lines as it says), then "
    "each memory (`MemoryExport`) with its revisions and vectors. Each part only where there "
    "is one: a user with nothing stored exports nothing."
)
USER_FORMS = {
    NDJSON: {
        "schema": {"$ref": COMPONENTS + "UserNdjson"},
        "x-itemSchema": {
            "oneOf": [
                {"$ref": COMPONENTS + name}
                for name in (
                    "UserStateExport",
                    "SessionExport",
                    "Event",
                    "ExportedArtifact",
                    "UserArtifactsExport",
                    "MemoryExport",
                )
            ]
        },
    }
}


def wants_json(accept: str) -> bool:
    """Whether `Accept` prefers `application/json` to NDJSON: a higher quality, or the same
    quality named exactly where NDJSON is matched by a wildcard only. NDJSON otherwise (and
    without `Accept`), as it always was."""
    best: dict[str, tuple[float, int]] = {JSON: (0.0, -1), NDJSON: (0.0, -1)}
    for item in accept.split(","):
        media_range, *parameters = (part.strip() for part in item.split(";"))
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        media_range = media_range.lower()
        for media_type in best:
            if media_range == media_type:
                specificity = 2
            elif media_range in ("application/*", "*/*"):
                specificity = 0
            else:
                continue
            if specificity > best[media_type][1]:
                best[media_type] = (quality, specificity)
    return best[JSON][0] > 0 and best[JSON] > best[NDJSON]


@router.get(
    SESSION_PATH + ":export",
    response_class=StreamingResponse,
    responses={
        200: {"description": LINES, "headers": ETAG, "content": FORMS},
        **problem_responses(404, 422, 503),
    },
)
async def export_session(request: Request, key: Key) -> Response:
    """The session from one snapshot, streamed: what `…/sessions:import` takes back, here or
    on another Sessionary. NDJSON, unless `Accept` prefers `application/json`: then one JSON
    document, `{header, events, artifacts}`, streamed as well. Its `user:` and `app:` state
    travel as the header's state shows them; its own artifacts travel whole (every version,
    its bytes once per content), its user's `user:` artifacts and pending events do not."""
    items = services(request).portability.export(key)
    header = await anext(items)  # a 404 is answered before the stream starts
    assert isinstance(header, SessionHeader)
    headers = {"ETag": f'"{header.session.version}"', "Vary": "Accept"}
    if wants_json(request.headers.get("accept", "")):
        return StreamingResponse(_document(header, items), media_type=JSON, headers=headers)
    return StreamingResponse(_lines(header, items), media_type=NDJSON, headers=headers)


async def _lines(first: ExportItem, rest: AsyncIterator[ExportItem]) -> AsyncIterator[bytes]:
    yield render.export_line(first)
    async for item in rest:
        yield render.export_line(item)


@router.get(
    USER_PATH + ":export",
    response_class=StreamingResponse,
    responses={
        200: {"description": USER_LINES, "content": USER_FORMS},
        **problem_responses(422, 503),
    },
)
async def export_user(request: Request, app_name: AppName, user_id: UserId) -> Response:
    """Everything stored of a user of an app, streamed from one snapshot: what
    `…/users/{user}:import` takes back, here or on another Sessionary, where every read
    (points in time, revisions and recall included) gives what it gives here. The app's own
    state and memories are not the user's: they stay out. The audit log records the export."""
    items = services(request).portability.export_user(app_name, user_id)
    return StreamingResponse((render.export_line(item) async for item in items), media_type=NDJSON)


@router.post(
    USER_PATH + ":import",
    response_model=UserImport,
    responses=problem_responses(403, 409, 413, 415, 422, 503)
    | {
        409: {
            **problem_responses(409)[409],
            "description": "Something stored under an id of the export differs from it "
            "(`session_already_exists`, `memory_already_exists`, `conflict` for the user's "
            "`user:` artifacts), or the user is being erased (`user_erasing`): nothing of the "
            "export was stored.",
        }
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": USER_LINES + " As `…/users/{user}:export` sends it.",
            "content": USER_FORMS,
        }
    },
)
async def import_user(
    request: Request, app_name: AppName, user_id: UserId, app_state_writable: AppStateWritable
) -> Response:
    """Store a user's export under this app and user (its lines' own app and user may name
    others: this path decides): every session with its events and artifacts, the user's
    state (merged: its keys win), `user:` artifacts and memories with their revisions and
    vectors, as they were. All or nothing, in one transaction, streamed (never held whole):
    up to `SESSIONARY_MAX_IMPORT_BYTES`.

    200 with what was created and what was there already the same: the same export again
    creates nothing. Anything stored under the same id and different is a 409
    (`session_already_exists`, `memory_already_exists`, `conflict` for `user:` artifacts),
    an expired session or memory a 422, as is a line of the app's (its state, its memories)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != NDJSON:
        raise UnsupportedMediaType(
            f"Send a user's export as NDJSON, with Content-Type: {NDJSON}, as "
            "`…/users/{user}:export` gives it."
        )
    done = await services(request).portability.import_user(
        app_name,
        user_id,
        format.numbered_stream(request.stream()),
        app_state_writable=app_state_writable,
    )
    return respond(render.user_import(done), status.HTTP_200_OK)


async def _document(header: ExportItem, items: AsyncIterator[ExportItem]) -> AsyncIterator[bytes]:
    """`{"header": …, "events": [...], "artifacts": [...]}`: the lines of the NDJSON form,
    joined."""
    yield b'{"header":' + render.export_line(header)[:-1] + b',"events":['
    separator, field = b"", b"events"
    async for item in items:
        if field == b"events" and not isinstance(item, bytes):
            yield b'],"artifacts":['
            separator, field = b"", b"artifacts"
        yield separator + render.export_line(item)[:-1]
        separator = b","
    yield b"]}" if field == b"artifacts" else b'],"artifacts":[]}'


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
            "content": FORMS,
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
    409 `session_already_exists`. An expired session (`expireTime` past) is a 422.

    NDJSON (`Content-Type: application/x-ndjson`) or one JSON document (`Content-Type:
    application/json`, `{header, events}`), with the same checks and limits; either is read
    whole, so the request body limit (`SESSIONARY_MAX_BODY_BYTES`) bounds both. In the JSON
    form, an error names the record (`header`, `events[0]`, …) where NDJSON's names the line."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in (NDJSON, JSON):
        raise UnsupportedMediaType(
            f"Send the export as NDJSON, with Content-Type: {NDJSON}, or as one JSON document "
            f"({{header, events}}), with Content-Type: {JSON}."
        )
    max_depth = request.app.state.settings.max_json_depth
    body = await request.body()
    given_events = None  # in the JSON form, how many events it holds: which record is which
    try:
        if media_type == JSON:
            header, events, artifacts, given_events = _document_records(body, max_depth)
        else:
            header, events, artifacts = _line_records(body, max_depth)
        imported = await services(request).portability.import_session(
            header,
            events,
            artifacts,
            key=SessionKey(app_name, user_id, header.id),
            app_state_writable=app_state_writable,
        )
    except (InvalidInput, PayloadTooLarge) as error:
        if given_events is not None:
            _name_the_record(error, given_events)
        raise
    code = status.HTTP_201_CREATED if imported.created else status.HTTP_200_OK
    return respond(render.session(imported.session), code, imported.session.session.version)


Records = tuple[SessionExport, AsyncIterator[list[tuple[int, Any]]], AsyncIterator[tuple[int, Any]]]


def _line_records(body: bytes, max_depth: int) -> Records:
    """The header, the events (in batches, each with its line number) and the artifact lines
    (the lines after `eventCount` events) of NDJSON."""
    lines = list(format.numbered([body]))
    if not lines:
        raise InvalidInput("The body holds no header line.")
    header = read_record(format.decode(lines[0][1], lines[0][0], max_depth), lines[0][0])
    if not isinstance(header, SessionExport):
        raise InvalidInput("Line 1 is not a session's header.", field="line 1")
    after = 1 + header.event_count

    async def events() -> AsyncIterator[list[tuple[int, Any]]]:
        for start in range(1, min(after, len(lines)), BATCH):
            yield [
                (number, format.decode(text, number, max_depth))
                for number, text in lines[start : min(start + BATCH, after)]
            ]

    return header, events(), _decoded(lines[after:], max_depth)


async def _decoded(
    lines: list[tuple[int, bytes]], max_depth: int
) -> AsyncIterator[tuple[int, Any]]:
    for number, text in lines:
        yield number, format.decode(text, number, max_depth)


def _document_records(body: bytes, max_depth: int) -> tuple[*Records, int]:
    """The header, the events and the artifact lines of an `ExportedSession`, each numbered as
    its line in the NDJSON form (the header 1, the first event 2), and held to the same
    checks: each record as deep as a line may be, integers past 64 bits as PostgreSQL renders
    a large number; and how many events it holds."""
    try:
        document = strict_json.loads(body, max_depth=max_depth + 2, wide_integers=True)
    except ValueError as error:
        hint = ""
        if len(list(format.numbered([body]))) > 1:
            hint = f"; for an export as NDJSON, send Content-Type: {NDJSON}"
        raise InvalidInput(
            f"The body is not one JSON document: {error}{hint}.", field="body"
        ) from None
    if not isinstance(document, dict) or not (
        {"header", "events"} <= set(document) <= {"header", "events", "artifacts"}
    ):
        raise InvalidInput(
            "The body is an object of `header`, `events` and `artifacts` (which may be left "
            "out), as `…:export` sends it with Accept: application/json.",
            field="body",
        )
    records, artifacts = document["events"], document.get("artifacts", [])
    for field, value in (("events", records), ("artifacts", artifacts)):
        if not isinstance(value, list):
            raise InvalidInput(f"`{field}` is not an array.", field=field)
    first_artifact = len(records) + 2
    numbered = (
        (1, document["header"]),
        *enumerate(records, start=2),
        *enumerate(artifacts, start=first_artifact),
    )
    try:
        for place, record in numbered:
            if _depth(record) > max_depth:
                raise InvalidInput(
                    f"Line {place} is nested deeper than {max_depth} levels.",
                    field=f"line {place}",
                )
        header = read_record(document["header"], 1)
    except InvalidInput as error:
        _name_the_record(error, len(records))
        raise
    if not isinstance(header, SessionExport):
        raise InvalidInput("The header is not a session's header.", field="header")

    async def events() -> AsyncIterator[list[tuple[int, Any]]]:
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            yield [(start + offset + 2, record) for offset, record in enumerate(chunk)]

    async def artifact_lines() -> AsyncIterator[tuple[int, Any]]:
        for place, record in enumerate(artifacts, start=first_artifact):
            yield place, record

    return header, events(), artifact_lines(), len(records)


def _depth(value: Any) -> int:
    """How deep a JSON value nests (a scalar 0, `{}` 1), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        )
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


# How the import's errors name a line (`app.rules.portability`, `app.services.portability`),
# in `detail` and in `field`; not JSON's own "line 1 column 2".
_LINE = re.compile(r"\bLine (\d+)\b")
_FIELD = re.compile(r"^line (\d+)$")


def _name_the_record(error: InvalidInput | PayloadTooLarge, events: int) -> None:
    """An import's errors name the NDJSON line at fault: in the JSON form, the record (of a
    document of `events` events, numbered as the lines would be)."""

    def place(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number == 1:
            return "`header`"
        if number < events + 2:
            return f"`events[{number - 2}]`"
        return f"`artifacts[{number - events - 2}]`"

    error.detail = _LINE.sub(place, error.detail)
    field = error.extra.get("field")
    if isinstance(field, str):
        error.extra["field"] = _FIELD.sub(place, field).strip("`")
