"""The audit log, for operators: what was erased, deleted, imported, which keys were made and
revoked, what the sweeper took; by whom (a key's id), never with content."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from app.api import render
from app.api.deps import AfterTimestamp, BeforeTimestamp, PageOf, authorized, services
from app.api.responses import problem_responses, respond
from app.api.routing import StrictRoute
from app.errors import InvalidInput
from app.limits import ID_LENGTH, ID_PATTERN
from app.schemas.audit import AuditPage
from app.services.auth import Need

router = APIRouter(
    tags=["audit"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
    dependencies=[authorized(Need.OPERATOR)],
)


def _id_filter(alias: str, description: str) -> object:
    return Query(
        alias=alias, min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN, description=description
    )


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


@router.get("/audit", response_model=AuditPage, responses=problem_responses(422, 503))
async def list_audit_records(
    request: Request,
    page: PageOf,
    app: Annotated[str | None, _id_filter("app", "Only records of this app.")] = None,
    user_id: Annotated[
        str | None,
        _id_filter(
            "userId",
            "Only records of this user of `app` (matched by the pseudonym of the id, so a "
            "user erased since is still found).",
        ),
    ] = None,
    action: Annotated[
        str | None,
        Query(min_length=1, max_length=32, description="Only this action (`session.delete`)."),
    ] = None,
    after_timestamp: AfterTimestamp = None,
    before_timestamp: BeforeTimestamp = None,
) -> Response:
    """Audit records, newest first: erasures, session deletes, imports, API keys created and
    revoked, retention sweeps. Each says when, which key (its id; null with keys off, or for
    the command line and the sweeper), what (ids and counts, never content) and the outcome.
    Users and sessions are named by keyed hashes; an admin key only."""
    if user_id is not None and app is None:
        raise InvalidInput(
            "userId needs app: a user id means something within an app.", field="app"
        )
    found = await services(request).audit.records(
        app,
        user_id,
        action,
        _moment(after_timestamp),
        _moment(before_timestamp),
        page,
    )
    return respond(render.audit_page(found))
