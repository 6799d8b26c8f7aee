"""Usage routes: an app's token usage, by user and time."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from app.api import render
from app.api.deps import AfterTimestamp, AppName, BeforeTimestamp, UsageOf, authorized
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.limits import ID_LENGTH, ID_PATTERN
from app.schemas import AppUsage
from app.services.auth import Need

router = APIRouter(
    prefix="/apps/{app_name}",
    tags=["context"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)


@router.get(
    "/usage",
    response_model=AppUsage,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.APP)],
)
async def get_app_usage(
    app_name: AppName,
    usage: UsageOf,
    user_id: Annotated[
        str | None,
        Query(
            alias="userId",
            min_length=1,
            max_length=ID_LENGTH,
            pattern=ID_PATTERN,
            description="Only this user's events.",
        ),
    ] = None,
    after_timestamp: AfterTimestamp = None,
    before_timestamp: BeforeTimestamp = None,
) -> Response:
    """The token counts of the app's events' `usageMetadata` (prompt, candidates, total),
    summed by user and in all, over the events in the time range (epoch seconds; by the
    events' own timestamps), of one user with `userId`. Only events that report usage count;
    removed events are not counted. Users without any are left out."""
    found = await usage.by_user(app_name, user_id, after_timestamp, before_timestamp)
    return respond(render.app_usage(found))
