"""Lineage routes: fork a session, make and close child sessions, walk ancestors and children."""

from typing import Annotated

from fastapi import APIRouter, Body, status
from fastapi.responses import Response

from app.api import render
from app.api.deps import (
    AppStateWritable,
    ExpectedVersion,
    Key,
    Lineage,
    PageOf,
    authorized,
)
from app.api.responses import etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.schemas import ChildCreate, Session, SessionClose, SessionFork, SessionList, SessionPage
from app.services.auth import Need

router = APIRouter(
    prefix=SESSION_PATH,
    tags=["lineage"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)


@router.post(
    ":fork",
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    responses=problem_responses(404, 409, 415, 422, 503) | etag(201),
)
async def fork_session(
    key: Key, lineage: Lineage, body: Annotated[SessionFork | None, Body()] = None
) -> Response:
    """A new session of the same user with this session's events up to a point (same ids and
    seqs) and its session state as of then; `app:` and `user:` state stay shared.

    At `atSeq`, before the first event of `beforeInvocationId`, or (with neither) at the end;
    a point past the end is a 422. The parent is not changed, its version neither; the fork is
    independent of it from then on. 409 `session_already_exists` if `sessionId` is taken.

    Answers the new session without its events (`events` is empty: a fork may hold thousands,
    and sending them again would cost as much as copying them); read it to get them.
    """
    read = await lineage.fork(key, body or SessionFork())
    return respond(render.session(read), status.HTTP_201_CREATED, read.session.version)


@router.post(
    "/children",
    status_code=status.HTTP_201_CREATED,
    response_model=Session,
    responses=problem_responses(404, 409, 413, 415, 422, 503) | etag(201),
)
async def create_child_session(
    key: Key,
    lineage: Lineage,
    app_state_writable: AppStateWritable,
    body: Annotated[ChildCreate | None, Body()] = None,
) -> Response:
    """A child session for a sub-agent, linked to this one (its `parent`).

    With `functionCallId`, the child works on that call of the parent (it must be there and
    not answered yet, and have no other child): closing the child answers it. 409
    `session_closed` if this session is closed. Answered, like a fork, without its events.
    """
    read = await lineage.create_child(
        key, body or ChildCreate(), app_state_writable=app_state_writable
    )
    return respond(render.session(read), status.HTTP_201_CREATED, read.session.version)


@router.post(
    ":close",
    response_model=Session,
    responses=problem_responses(404, 409, 412, 415, 422, 503) | etag(200),
)
async def close_session(
    key: Key, lineage: Lineage, body: SessionClose, expected_version: ExpectedVersion
) -> Response:
    """Close the session with an `outcome`: from then on it refuses writes (409
    `session_closed`) but can be read, forked and deleted.

    A child made for one of its parent's function calls answers it: in the same transaction,
    the parent gets the call's `functionResponse`, by the agent that made the call, with
    `{outcome, result}` as its response. Of concurrent closes exactly one succeeds; the others
    get 409 `session_closed`.
    """
    read = await lineage.close(key, body, expected_version)
    return respond(render.session(read), version=read.session.version)


@router.get("/lineage", response_model=SessionList, responses=problem_responses(404, 422, 503))
async def get_lineage(key: Key, lineage: Lineage) -> Response:
    """This session's ancestors, root first, without events: its parent, the parent's parent,
    …; empty for a root session. The chain stops at an ancestor that has been deleted."""
    return respond(render.session_list(await lineage.ancestors(key)))


@router.get("/children", response_model=SessionPage, responses=problem_responses(404, 422, 503))
async def list_children(key: Key, lineage: Lineage, page: PageOf) -> Response:
    """This session's forks and child sessions, in the order they were made, without events;
    each with its `kind`, `status` and `outcome`."""
    return respond(render.session_page(await lineage.children(key, page)))
