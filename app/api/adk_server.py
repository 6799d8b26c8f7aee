"""The session endpoints of ADK's own API server (`adk api_server`, `adk web`), under `/adk`.

A client written for ADK's server (its web UI, assistant-ui's ADK adapter, ADK's own
`AdkWebServerClient`) works unchanged against `http://host:8000/adk`: the same paths, bodies
and answers as `google.adk.cli.api_server` (create answers 200 with the id in the body or the
path, a listing is a bare array, delete is 200 `null` even when nothing was there) and its
errors as FastAPI's `{"detail": …}`. Underneath it is the same store as the native API: same
sessions, same key scopes, same transactions. Input stays strict (an unknown field is a 422
where ADK ignores it), and ADK's `options` are refused as ADK refuses them for every session
service that takes none.

Not in the OpenAPI description, which describes Sessionary's own API: ADK documents these.
"""

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.api import render
from app.api.deps import AppName, AppStateWritable, Key, Sessions, UserId, authorized
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import Order, PageRequest, SessionQuery, StoredSession
from app.errors import (
    BadRequest,
    Conflict,
    SessionAlreadyExists,
    SessionaryError,
    SessionNotFound,
)
from app.schemas import ControlBody, EventIn, NewSessionId, SessionCreate, SessionUpdate, State
from app.services.auth import Need

PREFIX = "/adk"
SESSIONS = PREFIX + "/apps/{app_name}/users/{user_id}/sessions"
SESSION = PREFIX + SESSION_PATH

# Sessions ADK's evaluations make, which its server leaves out of a listing.
EVAL_SESSION_PREFIXES = ("adk-eval-session-", "___eval___session___")
# Function calls ADK makes itself (credentials, confirmations, input): a restored event may
# not claim to be one.
ADK_FUNCTION_NAMES = frozenset(
    {"adk_request_credential", "adk_request_confirmation", "adk_request_input"}
)


class AdkRoute(StrictRoute):
    """A route that fails as ADK's server does: `{"detail": "…"}` with the same status, and a
    validation error as FastAPI's default `{"detail": [{type, loc, msg, input}]}`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def adk_handler(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except RequestValidationError as error:
                return await request_validation_exception_handler(request, error)
            except SessionaryError as error:
                detail = "Session not found" if error.code == "session_not_found" else error.detail
                return JSONResponse({"detail": detail}, error.status, error.response_headers())
            return response

        return adk_handler


router = APIRouter(
    route_class=AdkRoute,
    dependencies=[authorized(Need.USER)],
    include_in_schema=False,
)


class AdkSessionCreate(ControlBody):
    """ADK's `CreateSessionRequest`."""

    session_id: NewSessionId | None = None
    state: State | None = None
    events: list[EventIn] | None = None
    options: dict[str, Any] | None = None


class AdkSessionUpdate(ControlBody):
    """ADK's `UpdateSessionRequest`."""

    state_delta: State


def _answer(body: bytes) -> Response:
    return Response(body, media_type="application/json")


def _restorable(events: list[EventIn]) -> None:
    """ADK's server refuses first events that claim what only ADK writes: actions, long-running
    tool ids, its own function calls (`_validate_session_initialization_events`)."""
    for index, event in enumerate(events):
        extra = event.model_extra or {}
        actions = event.actions.model_dump(exclude_none=True) if event.actions else {}
        content = extra.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        names = {
            call.get("name")
            for part in (parts if isinstance(parts, list) else ())
            if isinstance(part, dict)
            for call in (part.get("functionCall"), part.get("functionResponse"))
            if isinstance(call, dict)
        }
        if extra.get("longRunningToolIds"):
            refused = "long-running tool IDs"
        elif any(value not in ({}, []) for value in actions.values()):
            refused = "event actions"
        elif names & ADK_FUNCTION_NAMES:
            refused = "ADK protocol function calls"
        else:
            continue
        raise BadRequest(f"Session initialization event {index} cannot include {refused}.")


async def _create(
    sessions: Sessions,
    app_name: str,
    user_id: str,
    body: SessionCreate,
    app_state_writable: bool,
) -> Response:
    try:
        read = await sessions.create(app_name, user_id, body, app_state_writable=app_state_writable)
    except SessionAlreadyExists:
        raise Conflict(f"Session already exists: {body.session_id}") from None
    return _answer(render.adk_session(read))


@router.get(SESSIONS)
async def adk_list_sessions(app_name: AppName, user_id: UserId, sessions: Sessions) -> Response:
    """Every session of the user, in one array, as ADK lists them."""
    query = SessionQuery(app_name, user_id, Order.ASC)
    found: list[StoredSession] = []
    page = PageRequest(size=1000)
    while True:
        listed = await sessions.list(query, page)
        found += listed.items
        if listed.next_page_token is None:
            break
        page = PageRequest(size=1000, token=listed.next_page_token)
    shown = [item for item in found if not item.key.session_id.startswith(EVAL_SESSION_PREFIXES)]
    return _answer(render.adk_session_list(shown))


@router.post(SESSIONS)
async def adk_create_session(
    app_name: AppName,
    user_id: UserId,
    sessions: Sessions,
    app_state_writable: AppStateWritable,
    body: Annotated[AdkSessionCreate | None, Body()] = None,
) -> Response:
    body = body or AdkSessionCreate()
    if body.options:
        raise BadRequest("Session options are not supported by the configured session service.")
    _restorable(body.events or [])
    create = SessionCreate(session_id=body.session_id, state=body.state, events=body.events)
    return await _create(sessions, app_name, user_id, create, app_state_writable)


@router.post(SESSION)
async def adk_create_session_with_id(
    key: Key,
    sessions: Sessions,
    app_state_writable: AppStateWritable,
    state: Annotated[State | None, Body()] = None,
) -> Response:
    """ADK's older create, deprecated there: the id in the path, the body the initial state."""
    create = SessionCreate(session_id=key.session_id, state=state)
    return await _create(sessions, key.app_name, key.user_id, create, app_state_writable)


@router.get(SESSION)
async def adk_get_session(key: Key, sessions: Sessions) -> Response:
    read = await sessions.get(key, num_recent_events=None, after_timestamp=None)
    return _answer(render.adk_session(read))


@router.delete(SESSION)
async def adk_delete_session(key: Key, sessions: Sessions) -> Response:
    """200 `null`, whether or not the session was there, as ADK's server answers."""
    try:
        await sessions.delete(key, None)
    except SessionNotFound:
        pass
    return _answer(b"null")


@router.patch(SESSION)
async def adk_update_session(
    key: Key,
    body: AdkSessionUpdate,
    sessions: Sessions,
    app_state_writable: AppStateWritable,
) -> Response:
    """The delta recorded as an event authored by `user`; the session with every event."""
    update = SessionUpdate(state_delta=body.state_delta)
    read = await sessions.update(key, update, None, app_state_writable=app_state_writable)
    return _answer(render.adk_session(read))
