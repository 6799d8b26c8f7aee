"""Every dependency of the routes, declared once as an `Annotated` alias.

They are all `async def`, even those that never await: FastAPI runs a plain `def` dependency
in a thread pool, a hand-off that costs more than the dependency itself.

The hot routes (an append, a session read) take plain parameters instead (the path ids, the
`IfMatch` header) and call the plain functions below: FastAPI resolves each dependency anew on
every request, which for the five such a route would use is a good part of an append's CPU
(bench/README.md).
`StrictRoute` then binds such a route's parameters itself, past FastAPI's dependency solver.
"""

import re
from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.domain import POSITION_PATTERN, EventQuery, Order, PageRequest, SessionKey, position_value
from app.errors import Forbidden, InvalidInput
from app.limits import ID_LENGTH, ID_PATTERN, INT64_MAX, MAX_TIMESTAMP, MIN_TIMESTAMP
from app.schemas import ID_DESCRIPTION
from app.services.audit import ACTING_KEY
from app.services.auth import Grant, Need
from app.services.context import ContextService
from app.services.events import EventService
from app.services.history import HistoryService
from app.services.lineage import LineageService
from app.services.pending import PendingService
from app.services.registry import Services
from app.services.search import SearchService
from app.services.sessions import SessionService
from app.services.shared_state import SharedStateService
from app.services.tool_calls import ToolCallService
from app.services.usage import UsageService


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
EventId = Annotated[str, _path_id("The event.")]


def services(request: Request) -> Services:
    """The services the app made at start-up (`app.main`)."""
    made: Services = request.app.state.services
    return made


async def _sessions(request: Request) -> SessionService:
    return sessions_of(request)


async def _events(request: Request) -> EventService:
    return events_of(request)


async def _lineage(request: Request) -> LineageService:
    return services(request).lineage


async def _history(request: Request) -> HistoryService:
    return services(request).history


async def _context(request: Request) -> ContextService:
    return services(request).context


async def _tool_calls(request: Request) -> ToolCallService:
    return services(request).tool_calls


async def _pending(request: Request) -> PendingService:
    return services(request).pending


async def _usage(request: Request) -> UsageService:
    return services(request).usage


async def _search(request: Request) -> SearchService:
    return services(request).search


async def _shared_state(request: Request) -> SharedStateService:
    return services(request).shared_state


def events_of(request: Request) -> EventService:
    return services(request).events


def sessions_of(request: Request) -> SessionService:
    return services(request).sessions


async def session_key(app_name: AppName, user_id: UserId, session_id: SessionId) -> SessionKey:
    return SessionKey(app_name, user_id, session_id)


Key = Annotated[SessionKey, Depends(session_key)]


async def page_request(
    page_size: Annotated[
        int, Query(alias="pageSize", ge=1, le=1000, description="How many per page (1 to 1000).")
    ] = 100,
    page_token: Annotated[
        str | None, Query(alias="pageToken", description="`nextPageToken` of the previous page.")
    ] = None,
) -> PageRequest:
    return PageRequest(page_size, page_token)


PageOf = Annotated[PageRequest, Depends(page_request)]


# Epoch seconds, compared with events' own timestamps.
def _epoch_seconds(alias: str, description: str) -> Any:
    return Query(
        alias=alias,
        ge=MIN_TIMESTAMP,
        le=MAX_TIMESTAMP,
        allow_inf_nan=False,
        description=f"{description} (epoch seconds, years 1 to 9999).",
    )


AfterTimestamp = Annotated[
    float | None, _epoch_seconds("afterTimestamp", "Only events with timestamp ≥ this")
]
BeforeTimestamp = Annotated[
    float | None, _epoch_seconds("beforeTimestamp", "Only events with timestamp < this")
]


async def event_query(
    after_seq: Annotated[
        int | None,
        Query(alias="afterSeq", ge=0, le=INT64_MAX, description="Only events with seq > this."),
    ] = None,
    after_timestamp: AfterTimestamp = None,
    before_timestamp: BeforeTimestamp = None,
    order: Annotated[Order, Query(description="`asc`: by seq; `desc`: newest first.")] = Order.ASC,
) -> EventQuery:
    """The event filters, each a query parameter of the same name in camelCase."""
    return EventQuery(after_seq, after_timestamp, before_timestamp, order)


EventFilters = Annotated[EventQuery, Depends(event_query)]

# A version as ETag sends it ("7"), or bare (7) as people type it in curl; never half-quoted.
_VERSION_TAG = re.compile(r'^\s*(?:"(\d{1,18})"|(\d{1,18}))\s*$')


# A plain parameter, not a dependency: the session read keeps its fast handler (`routing`).
MinVersion = Annotated[
    int | None,
    Query(
        alias="minVersion",
        ge=0,
        le=INT64_MAX,
        description="With a read replica (DATABASE_READ_URL): read from it only if it holds "
        "at least this version of the session, the version of your last write; else from "
        "the primary. Without it, the replica may answer with an older version (or a 404 "
        "for a session it has not received yet). No effect without a replica.",
    ),
]

# As plain: checked against POSITION_PATTERN, and read as a number by `min_position`.
MinPosition = Annotated[
    str | None,
    Query(
        alias="minPosition",
        pattern=POSITION_PATTERN,
        description="With a read replica (DATABASE_READ_URL): read from it only if it has "
        "replayed the primary's write-ahead log up to this position, the `Sessionary-"
        "Position` a delete of a session or an erase of a user answered with (`0/16B3748`); "
        "else from the primary. It reads your deletes, which leave no version for "
        "`minVersion` to ask for: the replica no longer shows what they removed. With "
        "`minVersion`, both must hold. No effect without a replica.",
        examples=["0/16B3748"],
    ),
]


def min_position(text: str | None) -> int | None:
    """The WAL position `minPosition` names, as a number (PostgreSQL's `pg_lsn`)."""
    return None if text is None else position_value(text)


IfMatch = Annotated[
    str | None,
    Header(
        description="Only if the session is still at this version: its `ETag` as read, quoted "
        '(`"7"`), or `*` for any version of the existing session; otherwise 412 '
        "`stale_session` and nothing is changed.",
        json_schema_extra={"pattern": r'^(\*|"[0-9]+")$', "examples": ['"7"', "*"]},
    ),
]


def expected_version(if_match: str | None, what: str = "session version") -> int | None:
    """The version (a session's, or `what`) `If-Match` names; None when absent or `*`."""
    if if_match is None or if_match.strip() == "*":  # `*`: any version of an existing session
        return None
    match = _VERSION_TAG.match(if_match)
    if match is None:
        raise InvalidInput(
            f'If-Match must be a {what} as returned in ETag, like "7"; got {if_match!r}.',
            field="If-Match",
        )
    return int(match.group(1) or match.group(2))


async def _expected_version(if_match: IfMatch = None) -> int | None:
    return expected_version(if_match)


ExpectedVersion = Annotated[int | None, Depends(_expected_version)]


Sessions = Annotated[SessionService, Depends(_sessions)]
Events = Annotated[EventService, Depends(_events)]
SharedStates = Annotated[SharedStateService, Depends(_shared_state)]
Lineage = Annotated[LineageService, Depends(_lineage)]
History = Annotated[HistoryService, Depends(_history)]
Context = Annotated[ContextService, Depends(_context)]
ToolCalls = Annotated[ToolCallService, Depends(_tool_calls)]
Pending = Annotated[PendingService, Depends(_pending)]
UsageOf = Annotated[UsageService, Depends(_usage)]
Search = Annotated[SearchService, Depends(_search)]


bearer = HTTPBearer(
    auto_error=False,
    description="An API key made by `sessionary keys create`: `Authorization: Bearer sk_…`.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


class Authorized:
    """A route's access rule: the keys whose scope covers what it touches (`Need`).

    Declared as a dependency so that the OpenAPI spec shows the bearer scheme. `StrictRoute`
    enforces it before the request's query or body is read, so a caller without a valid key
    learns nothing from validation errors; on a route that is not a `StrictRoute` the
    dependency enforces it itself, later but never less.
    """

    def __init__(self, need: Need, *, reads: bool = False) -> None:
        self.need = need
        self.reads = reads  # only reads, whatever the method: read-only keys may call it

    async def __call__(self, request: Request, credentials: Credentials) -> None:
        if self.need not in getattr(request.state, "judged_needs", ()):
            await authorize(request, (self.need,), reads=self.reads)


def authorized(need: Need, *, reads: bool = False) -> Any:
    """The route's access rule; `reads`, for a POST that changes nothing (a recall)."""
    return Depends(Authorized(need, reads=reads))


class Public:
    """The access rule of a route anyone may call (the probes): declared, never implied, so
    that a route that declares nothing is an error at start-up (`app.main`)."""

    async def __call__(self) -> None:
        """Nothing to check."""


PUBLIC = Depends(Public())


async def authorize(request: Request, needs: Iterable[Need], *, reads: bool = False) -> None:
    """401 without a valid key, 403 for a key whose scope misses what the route touches.

    Leaves on the request which needs it judged (so that `Authorized` does not judge them
    again) and the key's grant (`key_grant`), for what the path alone cannot tell: whether a
    body's state delta may hold `app:` keys, which app and user a listing is narrowed to.
    """
    request.state.judged_needs = {*getattr(request.state, "judged_needs", ()), *needs}
    if not request.app.state.settings.auth_enabled:
        return
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    grant = await services(request).auth.authenticate(
        key.strip() if scheme.lower() == "bearer" else None
    )
    write = not reads and request.method not in ("GET", "HEAD")
    params = request.path_params
    for need in needs:
        grant.authorize(need, params.get("app_name"), params.get("user_id"), write)
    request.state.grant = grant
    ACTING_KEY.set(grant.key_id)


def key_grant(request: Request) -> Grant | None:
    """The grant of the request's key, as `authorize` found it; None with keys off."""
    grant: Grant | None = getattr(request.state, "grant", None)
    return grant


def narrowed_app(request: Request) -> str | None:
    """The one app a `Need.APPS` listing shows to a key of one app; None: every app."""
    grant = key_grant(request)
    return None if grant is None else grant.app_name


def narrowed_user(request: Request, user_id: str | None) -> str | None:
    """The user a `Need.APP_NARROWED` route reads: `user_id` as asked (None: every user), or
    for a key of one user, that user (403 if another is asked for)."""
    grant = key_grant(request)
    key_user_id = None if grant is None else grant.user_id
    if key_user_id is None or user_id in (None, key_user_id):
        return key_user_id or user_id
    raise Forbidden(f"This API key is for user {key_user_id!r} only.")


def app_state_writable(request: Request) -> bool:
    """Whether the caller's key may write `app:` state: any may with keys off; else as the
    grant `authorize` left says (a route that did not authorize has none: an error)."""
    if not request.app.state.settings.auth_enabled:
        return True
    grant: Grant = request.state.grant
    return grant.writes_app_state


async def _app_state_writable(request: Request) -> bool:
    return app_state_writable(request)


AppStateWritable = Annotated[bool, Depends(_app_state_writable)]
