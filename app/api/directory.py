"""What there is to browse: the apps, and an app's users (the explorer's first two levels)."""

from fastapi import APIRouter, Request, Response

from app.api import render
from app.api.deps import AppName, PageOf, Sessions, authorized, narrowed_app, narrowed_user
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.schemas import AppPage, UserPage
from app.services.auth import Need

router = APIRouter(
    tags=["sessions"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403, 422, 503),
)


@router.get("/apps", response_model=AppPage, dependencies=[authorized(Need.APPS)])
async def list_apps(request: Request, sessions: Sessions, page: PageOf) -> Response:
    """The apps that have live sessions, by name, with how many and when one last changed. A
    key of one app sees that app alone, a key of one user its own sessions alone."""
    listed = await sessions.tally(
        None, page, only=narrowed_app(request), user_id=narrowed_user(request, None)
    )
    return respond(render.tally_page(listed, "apps", "appName"))


@router.get(
    "/apps/{app_name}/users",
    response_model=UserPage,
    dependencies=[authorized(Need.APP_NARROWED)],
)
async def list_users(
    request: Request, app_name: AppName, sessions: Sessions, page: PageOf
) -> Response:
    """The app's users that have live sessions, by id, with how many and when one last
    changed. A key of one user sees that user alone."""
    listed = await sessions.tally(app_name, page, only=narrowed_user(request, None))
    return respond(render.tally_page(listed, "users", "userId"))
