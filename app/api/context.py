"""Context routes: the context view of a session, compaction, tool-call integrity, and queued
input."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, status
from fastapi.responses import Response

from app.api import render
from app.api.deps import (
    AppStateWritable,
    Context,
    ExpectedVersion,
    Key,
    Pending,
    ToolCalls,
    authorized,
)
from app.api.responses import etag, problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.limits import INT64_MAX, MAX_LIFETIME
from app.schemas import (
    ContextView,
    Event,
    EventIn,
    EventList,
    HealResult,
    PendingList,
    PendingPromote,
    QueuedEvent,
    SessionCompact,
    SessionHeal,
    ToolCallList,
    ToolCallStatus,
)
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


@router.get(
    "/context",
    response_model=ContextView,
    responses=problem_responses(404, 422, 503) | etag(200),
)
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
    responses=problem_responses(404, 409, 412, 413, 415, 422, 503) | etag(201),
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
    `customMetadata.sessionary.observationMask`. 422 when there is nothing to compact; 413
    when the summary makes the event larger than `SESSIONARY_MAX_EVENT_BYTES`.
    """
    event = await context.compact(key, body, expected_version)
    return respond(render.event(event), status.HTTP_201_CREATED, event["seq"])


TimeoutQuery = Annotated[
    float | None,
    Query(
        alias="timeoutSeconds",
        ge=0,
        le=MAX_LIFETIME,
        allow_inf_nan=False,
        description="A call unanswered for longer than this (seconds, 0 to a century) is "
        "orphaned. Default: `SESSIONARY_TOOL_CALL_TIMEOUT` (300).",
    ),
]
StatusQuery = Annotated[ToolCallStatus | None, Query(description="Only the calls in this state.")]


@router.get(
    "/toolCalls",
    response_model=ToolCallList,
    responses=problem_responses(404, 422, 503) | etag(200),
)
async def list_tool_calls(
    key: Key,
    tool_calls: ToolCalls,
    status: StatusQuery = None,
    timeout_seconds: TimeoutQuery = None,
) -> Response:
    """The function calls of the session's live events (rewound ones left out), in order:
    `answered`, `pending` (unanswered, and long-running or not yet past `timeoutSeconds`) or
    `orphaned` (a crashed tool or a killed worker: `:heal` answers them). The ETag is the
    version read."""
    found, version = await tool_calls.list(key, status, timeout_seconds)
    return respond(render.tool_calls(found), version=version)


@router.post(
    ":heal",
    response_model=HealResult,
    responses=problem_responses(404, 409, 412, 415, 422, 503) | etag(200),
)
async def heal_session(
    key: Key,
    tool_calls: ToolCalls,
    expected_version: ExpectedVersion,
    body: Annotated[SessionHeal | None, Body()] = None,
) -> Response:
    """Answer each orphaned call with an error `functionResponse` (`{"error": …}`), by the
    agent that made it, in its invocation: one event per calling event, in one transaction.
    Idempotent: a second heal finds nothing to answer (`healed: 0`, nothing appended)."""
    timeout = body.timeout_seconds if body is not None else None
    healed, version = await tool_calls.heal(key, timeout, expected_version)
    return respond(render.healed(healed, version), version=version)


@router.post(
    "/pending",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=QueuedEvent,
    responses=problem_responses(404, 409, 413, 415, 422, 503),
)
async def queue_event(
    key: Key, event: EventIn, pending: Pending, app_state_writable: AppStateWritable
) -> Response:
    """Queue an event (a user typing while a turn runs) apart from the log, its `id` filled in
    now and, without one, its `timestamp` when it is promoted (so that it sorts after the turn
    it waited for): 202 + the event as queued. The same event again is queued once; another
    under a queued id is a 409 `event_conflict`. The queue holds at most
    `SESSIONARY_MAX_EVENTS_PER_REQUEST` events (413). `pending:promote` appends it."""
    queued = await pending.enqueue(key, event, app_state_writable=app_state_writable)
    return respond(render.event(queued), status.HTTP_202_ACCEPTED)


@router.get("/pending", response_model=PendingList, responses=problem_responses(404, 422, 503))
async def list_pending(key: Key, pending: Pending) -> Response:
    """The queued events, in the order they came (no `seq` yet: they are not in the log)."""
    return respond(render.event_list(await pending.queued(key)))


@router.delete(
    "/pending",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404, 422, 503),
)
async def clear_pending(key: Key, pending: Pending) -> Response:
    """Empty the queue without appending it (the log is untouched)."""
    await pending.clear(key)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/pending:promote",
    status_code=status.HTTP_201_CREATED,
    response_model=EventList,
    responses={
        200: {"description": "Nothing was queued: nothing appended.", "model": EventList},
        **problem_responses(404, 409, 412, 413, 415, 422, 503),
        **etag(201),
    },
)
async def promote_pending(
    key: Key,
    pending: Pending,
    expected_version: ExpectedVersion,
    app_state_writable: AppStateWritable,
    body: Annotated[PendingPromote | None, Body()] = None,
) -> Response:
    """Append every queued event, in order, at consecutive seqs, and empty the queue, in one
    transaction: 201 + the events as stored (200 + `[]` when none was). One already appended
    to the log meanwhile (a retry) is not appended again; one in the log with other content
    is a 409 `event_conflict` (`DELETE …/pending` clears the queue). 409
    `tool_calls_pending` while a function call of the session is unanswered (the queued
    input would come between the call and its response), unless `force`."""
    force = body is not None and body.force
    stored = await pending.promote(
        key, force, expected_version, app_state_writable=app_state_writable
    )
    code = status.HTTP_201_CREATED if stored else status.HTTP_200_OK
    return respond(render.event_list(stored), code, stored[-1]["seq"] if stored else None)
