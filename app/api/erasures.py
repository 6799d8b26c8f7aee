"""Erasing a user, or a whole app: everything of theirs, as a job whose status can be read.

`DELETE /apps/{app}/users/{user}` is for the app's app-wide keys and admin keys; a key made
for the user erases that user only where `SESSIONARY_USER_SELF_ERASE` allows it.
`DELETE /apps/{app}` is for admin keys only: the app's own keys are among what it deletes.
"""

from typing import Any

from fastapi import APIRouter, Request, Response, status

from app.api import render
from app.api.deps import AppName, UserId, authorized, key_grant, services
from app.api.responses import POSITION, at_position, position, problem_responses, respond
from app.api.routing import StrictRoute
from app.errors import Forbidden
from app.repositories.erasures import ErasureScope
from app.schemas.erasures import AppErasure, Erasure
from app.services.auth import Need

APP_PATH = "/apps/{app_name}"
USER_PATH = "/apps/{app_name}/users/{user_id:user}"

router = APIRouter(tags=["erasure"], route_class=StrictRoute, responses=problem_responses(401, 403))


async def _erase(request: Request, scope: ErasureScope, status_path: str) -> Response:
    """200 with the erasure once done within `SESSIONARY_ERASE_WAIT`; else 202 with it
    running, and where its status is. With the primary's WAL position (`minPosition`) once
    no session of the scope is left: a user's fence deletes them all, an app's batches do."""
    wait = request.app.state.settings.erase_wait
    found = await services(request).erasures.erase(scope, wait=wait)
    if not found.erasure.running:
        response = respond(render.erasure(found))
    else:
        response = respond(render.erasure(found), status.HTTP_202_ACCEPTED)
        response.headers["Location"] = status_path
    if not found.erasure.running or scope.user_id is not None:
        return at_position(response, await services(request).reads.position())
    return response


def _running(model: type[Any], headers: dict[str, Any] | None = None) -> dict[int | str, Any]:
    running = {"model": model, "description": "The erase runs on: its status is at `Location`."}
    return {202: running | ({"headers": headers} if headers else {})}


NOT_ERASED: dict[int | str, dict[str, Any]] = {
    404: {**problem_responses(404)[404], "description": "Never erased (`erasure_not_found`)."}
}


@router.delete(
    USER_PATH,
    response_model=Erasure,
    responses=problem_responses(422, 503) | position(200) | _running(Erasure, POSITION),
    dependencies=[authorized(Need.USER)],
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
    scope = ErasureScope(app_name, user_id)
    return await _erase(request, scope, f"/apps/{app_name}/users/{user_id}/erasure")


@router.get(
    f"{USER_PATH}/erasure",
    response_model=Erasure,
    responses=problem_responses(422, 503) | NOT_ERASED,
    dependencies=[authorized(Need.USER)],
)
async def get_erasure(request: Request, app_name: AppName, user_id: UserId) -> Response:
    """The user's latest erase: running (with its progress so far) or done (with what it
    removed). 404 `erasure_not_found` if the user was never erased."""
    found = await services(request).erasures.status(ErasureScope(app_name, user_id))
    return respond(render.erasure(found))


@router.delete(
    APP_PATH,
    response_model=AppErasure,
    responses=problem_responses(422, 503) | position(200) | _running(AppErasure),
    dependencies=[authorized(Need.OPERATOR)],
)
async def erase_app(request: Request, app_name: AppName) -> Response:
    """Erase everything of an app: what erasing a user erases, for every user of the app,
    and the app's state, its own memories and every key made for the app or its users.
    Live streams of its sessions get a final `deleted` frame. Admin keys only.

    From the start, writes that make something of the app (a session, state, a memory, an
    artifact, a key) are refused (409 `app_erasing`); sessions are deleted in batches, and an
    append to one not yet deleted lands and is erased with it. Answers 200 with what was
    removed, by kind, once done; 202 if it is not done within `SESSIONARY_ERASE_WAIT`
    seconds (it runs on; read its status at `…/erasure`). Again, it erases what has been
    written since. The audit log records it (`app.erase`): after it, no id of the app's
    users is in any table."""
    return await _erase(request, ErasureScope(app_name), f"/apps/{app_name}/erasure")


@router.get(
    f"{APP_PATH}/erasure",
    response_model=AppErasure,
    responses=problem_responses(422, 503) | NOT_ERASED,
    dependencies=[authorized(Need.OPERATOR)],
)
async def get_app_erasure(request: Request, app_name: AppName) -> Response:
    """The app's latest erase: running (with its progress so far) or done (with what it
    removed). 404 `erasure_not_found` if the app was never erased. Admin keys only."""
    return respond(render.erasure(await services(request).erasures.status(ErasureScope(app_name))))
