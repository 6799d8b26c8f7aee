"""Context routes: the context view of a session, and compaction."""

from typing import Annotated

from fastapi import APIRouter, Query, status
from fastapi.responses import Response

from app.api import render
from app.api.deps import Context, ExpectedVersion, Key, authorized
from app.api.responses import problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.rules.limits import INT64_MAX
from app.schemas import ContextView, Event, SessionCompact
from app.services.auth import Need

router = APIRouter(
    prefix=SESSION_PATH,
    tags=["context"],
    route_class=StrictRoute,
    dependencies=[authorized(Need.USER)],
    responses=problem_responses(401, 403),
)

TokenBudget = Annotated[
    int | None,
    Query(
        alias="tokenBudget",
        ge=1,
        le=INT64_MAX,
        description="The most tokens (as the server estimates them) the events may hold; "
        "absent: every live event.",
    ),
]


@router.get("/context", response_model=ContextView, responses=problem_responses(404, 422, 503))
async def get_context(key: Key, context: Context, token_budget: TokenBudget = None) -> Response:
    """What a model should see next, built as ADK's own context assembly builds it: the live
    events (those rewinds leave, as ADK's `_apply_rewinds`), each standing compaction's
    summary in place of the events of its range (ordered by timestamp, as ADK does once a
    compaction is there), a function call compaction hid brought back before a response it
    keeps, responses to no earlier call dropped, then the newest events that fit
    `tokenBudget`, cut where no call is separated from its responses.

    Tokens are estimated as UTF-8 bytes over 4 of text, function calls and function
    responses (replaceable: `SESSIONARY_TOKEN_ESTIMATOR`). The ETag is the version read.
    """
    view, version = await context.view(key, token_budget)
    return respond(render.context_view(view), version=version)


@router.post(
    ":compact",
    status_code=status.HTTP_201_CREATED,
    response_model=Event,
    responses=problem_responses(404, 409, 412, 415, 422, 503),
)
async def compact_session(
    key: Key, body: SessionCompact, context: Context, expected_version: ExpectedVersion
) -> Response:
    """Append one compaction event over the live events older than the newest `keepLast`
    (the cut moves back so that no kept event answers a compacted call). Nothing is removed;
    the context view applies it.

    `summary` and `truncate` append ADK's own compaction (`actions.compaction`, which ADK's
    runner applies too), whose range starts at the oldest live event, so that it replaces
    earlier summaries: send a summary of the whole range (the context view shows the
    previous one). `observationMask` is Sessionary's (ADK has none), kept in
    `customMetadata.sessionary.observationMask`. 422 when there is nothing to compact.
    """
    event = await context.compact(key, body, expected_version)
    return respond(render.event(event), status.HTTP_201_CREATED, event["seq"])
