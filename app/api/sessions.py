"""Session routes, on the paths of ADK's own API server."""

import re
from typing import Annotated, NamedTuple

from fastapi import APIRouter, Body, Depends, Query, Request, Response, status

from app.api import render
from app.api.deps import (
    AfterTimestamp,
    AppName,
    AppStateWritable,
    ExpectedVersion,
    Key,
    MinPosition,
    MinVersion,
    PageOf,
    SessionId,
    Sessions,
    UserId,
    authorized,
    min_position,
    sessions_of,
)
from app.api.responses import at_position, etag, position, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import Order, SessionKey, SessionQuery
from app.errors import InvalidInput
from app.limits import DISPLAY_NAME_LENGTH, INT64_MAX, LABEL_KEY_PATTERN
from app.schemas import Session, SessionCreate, SessionPage, SessionUpdate
from app.services.auth import Need

router = APIRouter(
    prefix="/apps/{app_name}",
    tags=["sessions"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)
USER = [authorized(Need.USER)]


async def list_order(
    order: Annotated[
        Order,
        Query(
            description="`asc`: least recently updated first (ADK's order); `desc`: newest first."
        ),
    ] = Order.ASC,
) -> Order:
    return order


ListOrder = Annotated[Order, Depends(list_order)]


class Filters(NamedTuple):
    labels: tuple[tuple[str, str], ...]
    display_name: str | None


def _label(text: str) -> tuple[str, str]:
    key, colon, value = text.partition(":")
    if not colon or not re.match(LABEL_KEY_PATTERN, key):
        raise InvalidInput(
            f"label {text!r} is not `key:value` (a key of 1 to 63 characters, without `:`).",
            field="label",
        )
    return key, value


async def list_filters(
    label: Annotated[
        list[str] | None,
        Query(
            description="`key:value`: only sessions with this label. Repeat it for several; "
            "a session must have all of them."
        ),
    ] = None,
    display_name: Annotated[
        str | None,
        Query(
            alias="displayName",
            min_length=1,
            max_length=DISPLAY_NAME_LENGTH,
            description="Only sessions with exactly this display name.",
        ),
    ] = None,
) -> Filters:
    labels = dict(_label(text) for text in label or ())
    if len(labels) < len(label or ()):
        raise InvalidInput("A label key is given twice; a session has one value per key.")
    return Filters(tuple(sorted(labels.items())), display_name)


ListFilters = Annotated[Filters, Depends(list_filters)]


@router.post(
    "/users/{user_id}/sessions",
    dependencies=USER,
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    responses=problem_responses(409, 413, 415, 422, 503) | etag(201),
)
async def create_session(
    app_name: AppName,
    user_id: UserId,
    sessions: Sessions,
    app_state_writable: AppStateWritable,
    body: Annotated[SessionCreate | None, Body()] = None,
) -> Response:
    """Create a session, optionally with an id, initial state and first events."""
    read = await sessions.create(
        app_name, user_id, body or SessionCreate(), app_state_writable=app_state_writable
    )
    return respond(render.session(read), status.HTTP_201_CREATED, read.session.version)


@router.get(
    SESSION_PATH.removeprefix("/apps/{app_name}"),
    dependencies=USER,
    response_model=Session,
    responses=problem_responses(404, 422, 503) | etag(200),
)
async def get_session(
    request: Request,
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    num_recent_events: Annotated[
        int | None,
        Query(
            alias="numRecentEvents",
            ge=0,
            le=INT64_MAX,
            description="Return only the last N events (0: none).",
        ),
    ] = None,
    after_timestamp: AfterTimestamp = None,
    until_seq: Annotated[
        int | None,
        Query(
            alias="untilSeq",
            ge=0,
            le=INT64_MAX,
            description="The session as it was at this seq: its events up to it, its session "
            "state then (`app:` and `user:` keys, shared, as they are now). 422 past the end.",
        ),
    ] = None,
    min_version: MinVersion = None,
    min_position_text: MinPosition = None,
) -> Response:
    """A session with its merged state and events in append order.

    With several filters, the N most recent of the events at or after the timestamp, up to
    `untilSeq`. The `ETag` header carries the session's current version for `If-Match`, and
    so do `version` and `lastUpdateTime`, whatever `untilSeq` asks.
    """
    read = await sessions_of(request).get(
        SessionKey(app_name, user_id, session_id),
        num_recent_events=num_recent_events,
        after_timestamp=after_timestamp,
        until_seq=until_seq,
        min_version=min_version,
        min_position=min_position(min_position_text),
    )
    return respond(render.session(read), version=read.session.version)


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
    page: PageOf,
    order: ListOrder,
    filters: ListFilters,
) -> Response:
    """A user's sessions with merged state and without events."""
    listed = await sessions.list(SessionQuery(app_name, user_id, order, *filters), page)
    return respond(render.session_page(listed))


@router.get(
    "/sessions",
    response_model=SessionPage,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.APP)],
)
async def list_app_sessions(
    app_name: AppName,
    sessions: Sessions,
    page: PageOf,
    order: ListOrder,
    filters: ListFilters,
) -> Response:
    """The sessions of every user of an app, with merged state and without events."""
    listed = await sessions.list(SessionQuery(app_name, None, order, *filters), page)
    return respond(render.session_page(listed))


@router.delete(
    SESSION_PATH.removeprefix("/apps/{app_name}"),
    dependencies=USER,
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 412, 422, 503) | position(204),
)
async def delete_session(
    key: Key, sessions: Sessions, expected_version: ExpectedVersion
) -> Response:
    """Delete a session and all its events. App and user state stay.

    `Sessionary-Position` says where the primary's write-ahead log stood once the delete
    committed: a read with it as `minPosition` no longer finds the session on a read replica
    that lags."""
    wal_position = await sessions.delete(key, expected_version)
    return at_position(Response(status_code=status.HTTP_204_NO_CONTENT), wal_position)


@router.patch(
    SESSION_PATH.removeprefix("/apps/{app_name}"),
    dependencies=USER,
    response_model=Session,
    responses=problem_responses(404, 409, 412, 413, 415, 422, 503) | etag(200),
)
async def update_session_state(
    key: Key,
    body: SessionUpdate,
    sessions: Sessions,
    expected_version: ExpectedVersion,
    app_state_writable: AppStateWritable,
) -> Response:
    """Apply a state delta, by recording it as an event authored by `user` as ADK's server
    does, and change the display name, labels or expiry: all in one write, which takes one
    version. A closed session refuses a state delta (409) but may still be renamed, labelled
    or given an expiry."""
    read = await sessions.update(key, body, expected_version, app_state_writable=app_state_writable)
    return respond(render.session(read), version=read.session.version)
