"""Event routes: append one event, page through the log, count it."""

from fastapi import APIRouter, Request, Response, status

from app.api import render
from app.api.deps import (
    AppName,
    EventFilters,
    Events,
    IfMatch,
    Key,
    MinPosition,
    MinVersion,
    PageOf,
    SessionId,
    UserId,
    app_state_writable,
    authorized,
    events_of,
    expected_version,
    min_position,
)
from app.api.responses import ETAG, etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import SessionKey
from app.schemas import (
    AppendedEvent,
    AppendedEventList,
    Event,
    EventBatch,
    EventCount,
    EventIn,
    EventList,
    EventPage,
    PartialEvent,
    PartialEventList,
)
from app.services.auth import Need
from app.services.events import Appended

router = APIRouter(
    prefix=SESSION_PATH + "/events",
    tags=["events"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=Event,
    responses={
        200: {
            "model": AppendedEvent,
            "description": "This event id was already stored with the same "
            "content (a retry): the stored event, nothing written. (Described as "
            "`AppendedEvent`, which a 202's partial event is too, for the generators that "
            "read every success with the first one's schema.)",
            "headers": ETAG,
        },
        202: {"model": PartialEvent, "description": "A `partial` event: echoed, not stored."},
        **problem_responses(404, 409, 412, 413, 415, 422, 503),
        **etag(201),
    },
)
async def append_event(
    request: Request,
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    event: EventIn,
    if_match: IfMatch = None,
) -> Response:
    """Append one event; the server assigns its `seq` (and `id`, `timestamp` when absent).

    `actions.stateDelta` is applied atomically with the append. Resending an event with the
    same `id` is safe: it is stored once. `app:` keys in the delta need a key that may write
    app state (403 otherwise, and nothing is written).
    """
    stored, appended = await events_of(request).append(
        SessionKey(app_name, user_id, session_id),
        event,
        expected_version(if_match),
        app_state_writable=app_state_writable(request),
    )
    if appended is Appended.PARTIAL:
        return respond(render.event(stored), status.HTTP_202_ACCEPTED)
    # A retry gets the original answer, ETag included: the version that append made.
    code = status.HTTP_201_CREATED if appended is Appended.CREATED else status.HTTP_200_OK
    return respond(render.event(stored), code, version=stored["seq"])


@router.post(
    ":batch",
    status_code=status.HTTP_201_CREATED,
    response_model=EventList,
    responses={
        200: {
            "model": AppendedEventList,
            "description": "Every event of the batch was already stored "
            "with the same content (a retry): the stored events, nothing written. (Described "
            "as `AppendedEventList`, which a 202's partial events are too, for the generators "
            "that read every success with the first one's schema.)",
            "headers": ETAG,
        },
        202: {
            "model": PartialEventList,
            "description": "Every event of the batch is `partial`: echoed, none stored.",
        },
        **problem_responses(404, 409, 412, 413, 415, 422, 503),
        **etag(201),
    },
)
async def append_events(
    request: Request,
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    batch: EventBatch,
    if_match: IfMatch = None,
) -> Response:
    """Append several events in one transaction, at consecutive seqs: all or nothing.

    `If-Match` applies to the batch. The most events per request is a setting
    (SESSIONARY_MAX_EVENTS_PER_REQUEST, 1000 by default); above it, 413.
    """
    stored, appended = await events_of(request).append_batch(
        SessionKey(app_name, user_id, session_id),
        batch.events,
        expected_version(if_match),
        app_state_writable=app_state_writable(request),
    )
    if appended is Appended.PARTIAL:
        return respond(render.event_list(stored), status.HTTP_202_ACCEPTED)
    code = status.HTTP_201_CREATED if appended is Appended.CREATED else status.HTTP_200_OK
    return respond(render.event_list(stored), code, stored[-1]["seq"])


@router.get("", response_model=EventPage, responses=problem_responses(404, 422, 503))
async def list_events(
    key: Key,
    events: Events,
    page: PageOf,
    query: EventFilters,
    min_version: MinVersion = None,
    min_position_text: MinPosition = None,
) -> Response:
    """Page through a session's events by `seq`."""
    listed = await events.page(key, query, page, min_version, min_position(min_position_text))
    return respond(render.event_page(listed))


@router.get(
    ":count",
    response_model=EventCount,
    responses=problem_responses(404, 422, 503) | etag(200),
)
async def count_events(key: Key, events: Events) -> Response:
    """How many events the session holds, and the seqs of its oldest and newest, as of one
    version (the ETag). Seqs can skip (a close, a removal or a trim takes a version too), so
    neither the version nor the newest seq counts the events. Read from the index of the
    events' seqs, not their JSON."""
    found, version = await events.span(key)
    return respond(render.event_count(found), version=version)
