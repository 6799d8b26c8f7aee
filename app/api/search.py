"""Search route: full-text search over the text of an app's events."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app.api import render
from app.api.deps import (
    AfterTimestamp,
    AppName,
    BeforeTimestamp,
    PageOf,
    Search,
    authorized,
    narrowed_user,
)
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.domain import SearchQuery
from app.limits import ID_LENGTH, ID_PATTERN
from app.schemas import SearchPage
from app.services.auth import Need

router = APIRouter(
    prefix="/apps/{app_name}",
    tags=["search"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)


def _id_filter(alias: str, description: str) -> object:
    return Query(
        alias=alias,
        min_length=1,
        max_length=ID_LENGTH,
        pattern=ID_PATTERN,
        description=description,
    )


@router.get(
    "/search",
    response_model=SearchPage,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.APP_NARROWED)],
)
async def search_events(
    request: Request,
    app_name: AppName,
    search: Search,
    page: PageOf,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=1000,
            description='Words to find, in web-search syntax: `refund order` (both), `"full '
            'refund"` (the phrase), `refund or return`, `refund -partial`. Matched against '
            "the text parts of events and the names of their function calls and responses, "
            "stemmed by the configured text-search configuration.",
        ),
    ],
    user_id: Annotated[str | None, _id_filter("userId", "Only this user's events.")] = None,
    session_id: Annotated[
        str | None, _id_filter("sessionId", "Only this session's events.")
    ] = None,
    author: Annotated[
        str | None, Query(min_length=1, max_length=ID_LENGTH, description="Only its events.")
    ] = None,
    after_timestamp: AfterTimestamp = None,
    before_timestamp: BeforeTimestamp = None,
) -> Response:
    """The app's events that match `q`, each with a snippet of its text: best first among
    the newest 500 matches (`SESSIONARY_SEARCH_CANDIDATES`), then best first among the next 500
    older ones, and so on. A page never mixes two of these windows: it may hold fewer hits
    than `pageSize` and still have a `nextPageToken`.

    An app-wide key searches every user; a key for one user searches that user's sessions
    only (asking for another `userId` is a 403). Expired sessions are never found.
    """
    query = SearchQuery(
        app_name,
        q,
        narrowed_user(request, user_id),
        session_id,
        author,
        after_timestamp,
        before_timestamp,
    )
    return respond(render.search_page(await search.search(query, page)))
