"""Session routes, on the paths of ADK's own API server."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response, status

from app.api.deps import (
    AppName,
    AppStateWritable,
    ExpectedVersion,
    Key,
    Sessions,
    UserId,
    authorized,
)
from app.api.responses import json_response, problem_responses, session_response
from app.api.routing import StrictRoute
from app.schemas import INT64_MAX, Order, Session, SessionCreate, SessionPage, StateDelta
from app.services.auth import Need

router = APIRouter(
    prefix="/apps/{app_name}",
    tags=["sessions"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)
USER = [authorized(Need.USER)]

PageSize = Annotated[
    int, Query(alias="pageSize", ge=1, le=1000, description="Sessions per page (1 to 1000).")
]
PageToken = Annotated[
    str | None, Query(alias="pageToken", description="`nextPageToken` of the previous page.")
]
ListOrder = Annotated[
    Order,
    Query(description="`asc`: least recently updated first (ADK's order); `desc`: newest first."),
]


@router.post(
    "/users/{user_id}/sessions",
    dependencies=USER,
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    responses=problem_responses(409, 413, 415, 422, 503),
)
async def create_session(
    app_name: AppName,
    user_id: UserId,
    sessions: Sessions,
    app_state_writable: AppStateWritable,
    body: Annotated[SessionCreate | None, Body()] = None,
) -> Response:
    """Create a session, optionally with an id, initial state and first events."""
    session = await sessions.create(
        app_name, user_id, body or SessionCreate(), app_state_writable=app_state_writable
    )
    return session_response(session, status.HTTP_201_CREATED)


@router.get(
    "/users/{user_id}/sessions/{session_id}",
    dependencies=USER,
    response_model=Session,
    responses=problem_responses(404, 422, 503),
)
async def get_session(
    key: Key,
    sessions: Sessions,
    num_recent_events: Annotated[
        int | None,
        Query(
            alias="numRecentEvents",
            ge=0,
            le=INT64_MAX,
            description="Return only the last N events (0: none).",
        ),
    ] = None,
    after_timestamp: Annotated[
        float | None,
        Query(
            alias="afterTimestamp",
            allow_inf_nan=False,
            description="Return only events with timestamp ≥ this (epoch seconds).",
        ),
    ] = None,
) -> Response:
    """A session with its merged state and events in append order.

    With both filters, the N most recent of the events at or after the timestamp.
    The `ETag` header carries the session version for `If-Match`.
    """
    session = await sessions.get(
        key, num_recent_events=num_recent_events, after_timestamp=after_timestamp
    )
    return session_response(session)


@router.get(
    "/users/{user_id}/sessions",
    dependencies=USER,
    response_model=SessionPage,
    responses=problem_responses(422, 503),
)
async def list_sessions(
    app_name: AppName,
    user_id: UserId,
    sessions: Sessions,
    page_size: PageSize = 100,
    page_token: PageToken = None,
    order: ListOrder = Order.ASC,
) -> Response:
    """A user's sessions with merged state and without events."""
    page = await sessions.list(
        app_name, user_id, order=order, page_size=page_size, page_token=page_token
    )
    return json_response(page)


@router.get(
    "/sessions",
    response_model=SessionPage,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.APP)],
)
async def list_app_sessions(
    app_name: AppName,
    sessions: Sessions,
    page_size: PageSize = 100,
    page_token: PageToken = None,
    order: ListOrder = Order.ASC,
) -> Response:
    """The sessions of every user of an app, with merged state and without events."""
    page = await sessions.list(
        app_name, None, order=order, page_size=page_size, page_token=page_token
    )
    return json_response(page)


@router.delete(
    "/users/{user_id}/sessions/{session_id}",
    dependencies=USER,
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 412, 422, 503),
)
async def delete_session(
    key: Key, sessions: Sessions, expected_version: ExpectedVersion
) -> Response:
    """Delete a session and all its events. App and user state stay."""
    await sessions.delete(key, expected_version)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.patch(
    "/users/{user_id}/sessions/{session_id}",
    dependencies=USER,
    response_model=Session,
    responses=problem_responses(404, 412, 413, 415, 422, 503),
)
async def update_session_state(
    key: Key,
    body: StateDelta,
    sessions: Sessions,
    expected_version: ExpectedVersion,
    app_state_writable: AppStateWritable,
) -> Response:
    """Apply a state delta by recording it as an event authored by `user`, as ADK's server does."""
    session = await sessions.update_state(
        key, body.state_delta, expected_version, app_state_writable=app_state_writable
    )
    return session_response(session)
