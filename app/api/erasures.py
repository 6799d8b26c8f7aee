"""Erasing a user: everything of theirs, as a job whose status can be read.

`DELETE /apps/{app}/users/{user}` is for the app's app-wide keys and admin keys; a key made
for the user erases that user only where `SESSIONARY_USER_SELF_ERASE` allows it.
"""

from typing import Any

from fastapi import APIRouter, Request, Response, status

from app.api import render
from app.api.deps import AppName, UserId, authorized, key_grant, services
from app.api.responses import POSITION, at_position, position, problem_responses, respond
from app.api.routing import StrictRoute
from app.errors import Forbidden
from app.schemas.erasures import Erasure
from app.services.auth import Need

USER_PATH = "/apps/{app_name}/users/{user_id}"

router = APIRouter(
    tags=["erasure"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
    dependencies=[authorized(Need.USER)],
)


@router.delete(
    USER_PATH,
    response_model=Erasure,
    responses=problem_responses(422, 503)
    | position(200)
    | {
        202: {
            "model": Erasure,
            "description": "The erase runs on: its status is at the `Location` given.",
            "headers": POSITION,
        }
    },
)
async def erase_user(request: Request, app_name: AppName, user_id: UserId) -> Response:
    """Erase everything of a user of an app: every session (forks, children, closed ones)
    with its events, pending input, tool-call records and usage; the user's state,
    memories and their vectors, artifacts and their bytes; the keys made for the user. Live
    streams of the user's sessions get a final `deleted` frame.

    From the start, the user's writes are refused (409 `user_erasing`): an append racing the
    erase lands before it and is erased, or is refused. The rest is deleted in short
    transactions. Answers 200 with what was removed, by kind, once done; 202 if it is not done
    within `SESSIONARY_ERASE_WAIT` seconds (it runs on; read its status at `…/erasure`).
    Again, it erases what has been written since (nothing, usually). The audit log records
    it, naming the user by pseudonym: after it, the user's id is in no table."""
    grant = key_grant(request)
    if grant is not None and grant.user_id is not None:
        if not request.app.state.settings.user_self_erase:
            raise Forbidden(
                "A key made for one user does not erase users here; an app-wide key does "
                "(SESSIONARY_USER_SELF_ERASE lets a user's key erase its user)."
            )
    wait = request.app.state.settings.erase_wait
    found = await services(request).erasures.erase_user(app_name, user_id, wait=wait)
    # After the fence's commit, which deleted the user's sessions: a read with it as
    # `minPosition` finds none of them on a replica that lags, even while the erase runs on.
    wal_position = await services(request).reads.position()
    if not found.erasure.running:
        return at_position(respond(render.erasure(found)), wal_position)
    response = respond(render.erasure(found), status.HTTP_202_ACCEPTED)
    response.headers["Location"] = f"/apps/{app_name}/users/{user_id}/erasure"
    return at_position(response, wal_position)


NOT_ERASED: dict[int | str, dict[str, Any]] = {
    404: {**problem_responses(404)[404], "description": "Never erased (`erasure_not_found`)."}
}


@router.get(
    f"{USER_PATH}/erasure",
    response_model=Erasure,
    responses=problem_responses(422, 503) | NOT_ERASED,
)
async def get_erasure(request: Request, app_name: AppName, user_id: UserId) -> Response:
    """The user's latest erase: running (with its progress so far) or done (with what it
    removed). 404 `erasure_not_found` if the user was never erased."""
    return respond(render.erasure(await services(request).erasures.status(app_name, user_id)))
