"""What the API key of a request may do: its scope, so that a client (the explorer) offers
only what the key may do."""

from fastapi import APIRouter, Request, Response

from app.api import render
from app.api.deps import authorized, key_grant
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.schemas import KeyScope
from app.services.auth import Need

router = APIRouter(
    tags=["keys"],
    route_class=StrictRoute,
    responses=problem_responses(401, 422, 503),
)


@router.get("/auth/key", response_model=KeyScope, dependencies=[authorized(Need.KEY)])
async def get_key_scope(request: Request) -> Response:
    """The scope of the API key this request carries: the app and user it reaches (null:
    every one), whether it is read-only and whether it may write `app:` state. Any valid key
    may ask; no key, or a wrong or revoked one, is a 401 as everywhere. With keys off, every
    request may do everything, and the answer says so (`authEnabled: false`)."""
    if not request.app.state.settings.auth_enabled:
        return respond(render.key_scope(auth_enabled=False))
    grant = key_grant(request)
    assert grant is not None  # `authorized(Need.KEY)` found it, or refused the request
    return respond(
        render.key_scope(
            True,
            grant.key_id,
            grant.app_name,
            grant.user_id,
            grant.read_only,
            grant.writes_app_state,
        )
    )
