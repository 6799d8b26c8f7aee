"""History surgery routes: rewind (ADK's, append-only), trim, reset, and removing or rewriting
one event."""

from typing import Annotated

from fastapi import APIRouter, Body, status
from fastapi.responses import Response

from app.api import render
from app.api.deps import EventId, ExpectedVersion, History, Key, authorized
from app.api.responses import etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.schemas import (
    Event,
    EventRewrite,
    EventsRemoved,
    SessionReset,
    SessionRewind,
    SessionTrim,
    Trimmed,
)
from app.services.auth import Need

router = APIRouter(
    prefix=SESSION_PATH,
    tags=["history"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)


@router.post(
    ":rewind",
    status_code=status.HTTP_201_CREATED,
    response_model=Event,
    responses=problem_responses(404, 409, 412, 415, 422, 503) | etag(201),
)
async def rewind_session(
    key: Key, body: SessionRewind, history: History, expected_version: ExpectedVersion
) -> Response:
    """Undo an invocation and everything after it, as ADK's `Runner.rewind_async` does:
    append an event by `user` with `actions.rewindBeforeInvocationId` and the `stateDelta`
    that takes the session's own state back to what it was before the invocation's first
    event (keys added since become null; `app:` and `user:` state is shared and stays).

    Nothing is removed: readers that apply rewinds (ADK's runner, the context view) drop the
    rewound events. 422 if no event of the session has that invocation.
    """
    event = await history.rewind(key, body.before_invocation_id, expected_version)
    return respond(render.event(event), status.HTTP_201_CREATED, event["seq"])


@router.post(
    ":trim",
    response_model=Trimmed,
    responses=problem_responses(404, 409, 412, 415, 422, 503) | etag(200),
)
async def trim_session(
    key: Key, body: SessionTrim, history: History, expected_version: ExpectedVersion
) -> Response:
    """For operators: remove all but the newest `keepLast` events, and any of those that
    answers a function call of a removed one. Seqs are never reused; the session state is
    kept, and a point-in-time read before the first kept event is then a 422.
    """
    removed, kept, version = await history.trim(key, body.keep_last, expected_version)
    return respond(render.trimmed(removed, kept, version), version=version)


@router.post(
    ":reset",
    response_model=Trimmed,
    responses=problem_responses(404, 409, 412, 415, 422, 503) | etag(200),
)
async def reset_session(
    key: Key,
    history: History,
    expected_version: ExpectedVersion,
    body: Annotated[SessionReset | None, Body()] = None,
) -> Response:
    """For operators: remove every event and the session's own state (`app:` and `user:`
    state is shared and stays). Seqs are never reused. It takes no options: no body, or
    `{}`; anything else is a 422 and removes nothing."""
    removed, kept, version = await history.reset(key, expected_version)
    return respond(render.trimmed(removed, kept, version), version=version)


@router.delete(
    "/events/{event_id}",
    response_model=EventsRemoved,
    responses=problem_responses(404, 409, 412, 422, 503) | etag(200),
)
async def remove_event(
    key: Key, event_id: EventId, history: History, expected_version: ExpectedVersion
) -> Response:
    """Remove an event, and with it every event that answers one of its function calls (and
    so on), in one transaction. 409 `tool_pair_violation` for an event that answers a call
    whose event would stay: remove the call's event instead. 404 `event_not_found`.
    """
    removed, version = await history.remove_event(key, event_id, expected_version)
    return respond(render.events_removed(removed, version), version=version)


@router.patch(
    "/events/{event_id}",
    response_model=Event,
    responses=problem_responses(404, 409, 412, 413, 415, 422, 503) | etag(200),
)
async def rewrite_event(
    key: Key,
    event_id: EventId,
    body: EventRewrite,
    history: History,
    expected_version: ExpectedVersion,
) -> Response:
    """Replace an event's `content` (a redaction, say); its `seq` and everything else stay.
    A function call the new content no longer makes takes the events answering it with it;
    dropping a response whose call stays, or adding one to no call, is a 409
    `tool_pair_violation`.
    """
    event, version = await history.rewrite_event(key, event_id, body.content, expected_version)
    return respond(render.event(event), version=version)
