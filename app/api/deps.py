"""Every dependency of the routes, declared once as an `Annotated` alias."""

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
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


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_db(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.sessionmaker() as db:
        yield db


AppSettings = Annotated[Settings, Depends(get_settings)]
Db = Annotated[AsyncSession, Depends(get_db)]


def session_key(app_name: AppName, user_id: UserId, session_id: SessionId) -> SessionKey:
    return SessionKey(app_name, user_id, session_id)


Key = Annotated[SessionKey, Depends(session_key)]

_VERSION_TAG = re.compile(r'^\s*"?(\d{1,18})"?\s*$')


def expected_version(
    if_match: Annotated[
        str | None,
        Header(
            description='Append only if the session is still at this version (its ETag, `"7"`); '
            "otherwise 412 `stale_session` and nothing is written.",
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
    return int(match.group(1))


ExpectedVersion = Annotated[int | None, Depends(expected_version)]


def get_session_service(db: Db, settings: AppSettings) -> SessionService:
    return SessionService(db, settings)


def get_event_service(db: Db, settings: AppSettings) -> EventService:
    return EventService(db, settings)


def get_state_service(db: Db, settings: AppSettings) -> StateService:
    return StateService(db, settings)


Sessions = Annotated[SessionService, Depends(get_session_service)]
Events = Annotated[EventService, Depends(get_event_service)]
States = Annotated[StateService, Depends(get_state_service)]


bearer = HTTPBearer(
    auto_error=False,
    description="An API key made by `sessionary keys create`: `Authorization: Bearer sk_…`.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


def get_auth_service(db: Db, request: Request) -> AuthService:
    return AuthService(db, request.app.state.grant_cache)


def authorized(need: Need) -> Any:
    """A route dependency that admits only keys whose scope covers what the route touches."""

    async def check(
        request: Request,
        credentials: Credentials,
        auth: Annotated[AuthService, Depends(get_auth_service)],
    ) -> None:
        if not request.app.state.settings.auth_enabled:
            return
        grant = await auth.authenticate(credentials.credentials if credentials else None)
        write = request.method not in ("GET", "HEAD")
        params = request.path_params
        grant.authorize(need, params["app_name"], params.get("user_id"), write)

    return Depends(check)
