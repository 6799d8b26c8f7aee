"""Every dependency of the routes, declared once as an `Annotated` alias.

They are all `async def`, even those that never await: FastAPI runs a plain `def` dependency
in a thread pool, a hand-off that costs more than the dependency itself.
"""

import re
from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.domain import SessionKey
from app.errors import InvalidInput
from app.models import ID_LENGTH
from app.schemas import ID_DESCRIPTION, ID_PATTERN
from app.services.auth import AuthService, Need
from app.services.events import EventService
from app.services.sessions import SessionService
from app.services.state import StateService


def _path_id(description: str) -> object:
    return Path(
        min_length=1,
        max_length=ID_LENGTH,
        pattern=ID_PATTERN,
        description=f"{description} {ID_DESCRIPTION}",
    )


AppName = Annotated[str, _path_id("The agent application.")]
UserId = Annotated[str, _path_id("The end user within the app.")]
SessionId = Annotated[str, _path_id("The session.")]


def _service(name: str) -> Any:
    """The service the app made at start-up (stateless: each call opens its own connection)."""

    async def provide(request: Request) -> Any:
        return getattr(request.app.state, name)

    return Depends(provide)


async def session_key(app_name: AppName, user_id: UserId, session_id: SessionId) -> SessionKey:
    return SessionKey(app_name, user_id, session_id)


Key = Annotated[SessionKey, Depends(session_key)]

# A version as ETag sends it ("7"), or bare (7) as people type it in curl; never half-quoted.
_VERSION_TAG = re.compile(r'^\s*(?:"(\d{1,18})"|(\d{1,18}))\s*$')


async def expected_version(
    if_match: Annotated[
        str | None,
        Header(
            description='Only if the session is still at this version (its ETag, `"7"`); '
            "otherwise 412 `stale_session` and nothing is changed.",
        ),
    ] = None,
) -> int | None:
    if if_match is None or if_match.strip() == "*":  # `*`: any version of an existing session
        return None
    match = _VERSION_TAG.match(if_match)
    if match is None:
        raise InvalidInput(
            f'If-Match must be a session version as returned in ETag, like "7"; got {if_match!r}.',
            field="If-Match",
        )
    return int(match.group(1) or match.group(2))


ExpectedVersion = Annotated[int | None, Depends(expected_version)]


Sessions = Annotated[SessionService, _service("sessions")]
Events = Annotated[EventService, _service("events")]
States = Annotated[StateService, _service("states")]


bearer = HTTPBearer(
    auto_error=False,
    description="An API key made by `sessionary keys create`: `Authorization: Bearer sk_…`.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


class Authorized:
    """A route's access rule: the keys whose scope covers what it touches (`Need`).

    Declared as a dependency so that the OpenAPI spec shows the bearer scheme; `StrictRoute`
    enforces it before the request's query or body is read, so a caller without a valid key
    learns nothing from validation errors.
    """

    def __init__(self, need: Need) -> None:
        self.need = need

    async def __call__(self, credentials: Credentials) -> None:
        """Nothing left to check: `StrictRoute` did it before any dependency ran."""


def authorized(need: Need) -> Any:
    return Depends(Authorized(need))


async def authorize(request: Request, needs: Iterable[Need]) -> None:
    """401 without a valid key, 403 for a key whose scope misses what the route touches.

    What the path alone cannot tell, whether a body's state delta may hold `app:` keys, is
    left on the request for `AppStateWritable`.
    """
    if not request.app.state.settings.auth_enabled:
        request.state.app_state_writable = True
        return
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    auth = AuthService(request.app.state.engine, request.app.state.grant_cache)
    grant = await auth.authenticate(key.strip() if scheme.lower() == "bearer" else None)
    write = request.method not in ("GET", "HEAD")
    params = request.path_params
    for need in needs:
        grant.authorize(need, params["app_name"], params.get("user_id"), write)
    request.state.app_state_writable = grant.writes_app_state


async def app_state_writable(request: Request) -> bool:
    """Whether the caller's key may write `app:` state, as `authorize` found."""
    writable: bool = request.state.app_state_writable
    return writable


AppStateWritable = Annotated[bool, Depends(app_state_writable)]
