"""Shared state routes: the app's and each user's, addressed directly (keys without prefix)."""

from fastapi import APIRouter, Response

from app.api import render
from app.api.deps import AppName, SharedStates, UserId, authorized
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.schemas import ScopeState, StateUpdate
from app.services.auth import Need

router = APIRouter(
    prefix="/apps/{app_name}",
    tags=["state"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)


@router.get(
    "/state",
    response_model=ScopeState,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.APP_SHARED)],
)
async def get_app_state(app_name: AppName, shared: SharedStates) -> Response:
    """The app's shared state (what sessions see as `app:` keys); `{}` for an unknown app."""
    return respond(render.scope_state(await shared.get_app(app_name)))


@router.patch(
    "/state",
    response_model=ScopeState,
    responses=problem_responses(413, 415, 422, 503),
    dependencies=[authorized(Need.APP_STATE)],
)
async def update_app_state(app_name: AppName, body: StateUpdate, shared: SharedStates) -> Response:
    """Merge keys into the app's shared state (top-level merge; null is stored).

    Every user's sessions show it, so a key for one user may write it only when it was made
    with `sessionary keys create … --app-state write`; otherwise 403.
    """
    return respond(render.scope_state(await shared.update_app(app_name, body.state_delta)))


@router.get(
    "/users/{user_id}/state",
    response_model=ScopeState,
    responses=problem_responses(422, 503),
    dependencies=[authorized(Need.USER)],
)
async def get_user_state(app_name: AppName, user_id: UserId, shared: SharedStates) -> Response:
    """The user's shared state (what sessions see as `user:` keys); `{}` for an unknown user."""
    return respond(render.scope_state(await shared.get_user(app_name, user_id)))


@router.patch(
    "/users/{user_id}/state",
    response_model=ScopeState,
    responses=problem_responses(413, 415, 422, 503),
    dependencies=[authorized(Need.USER)],
)
async def update_user_state(
    app_name: AppName, user_id: UserId, body: StateUpdate, shared: SharedStates
) -> Response:
    """Merge keys into the user's shared state (top-level merge; null is stored)."""
    return respond(
        render.scope_state(await shared.update_user(app_name, user_id, body.state_delta))
    )
