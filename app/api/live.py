"""Live stream routes: server-sent events of a session's changes, and of the sessions of a
user or an app."""

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.api.deps import AppName, Key, UserId, authorized, narrowed_user, services
from app.api.responses import problem_responses
from app.api.routing import SESSION_PATH, StrictRoute
from app.errors import InvalidInput
from app.limits import INT64_MAX
from app.services.auth import Need
from app.services.live import Subscription

logger = logging.getLogger("sessionary.live")

router = APIRouter(
    tags=["live"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)


class EventStreamResponse(Response):
    """`text/event-stream` of a subscription's frames, until it ends (the response is then
    complete), the client goes away, or the client falls behind and is dropped (the sending
    is cancelled and the connection closed under it)."""

    media_type = "text/event-stream"

    def __init__(self, subscription: Subscription) -> None:
        super().__init__(
            status_code=200,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            media_type=self.media_type,
        )
        # No length: a stream has none (Starlette set 0 for the empty body).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tasks: list[asyncio.Future[None]] = []
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            if scope.get("head_request"):  # the headers are the whole answer
                await send({"type": "http.response.body", "body": b""})
                return
            sender = asyncio.ensure_future(self._send_frames(send))
            self.subscription.stream.sender = sender
            tasks = [sender, asyncio.ensure_future(_disconnected(receive))]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, OSError):
                    pass  # dropped, or the client went away
                except Exception:  # the answer has begun: a problem+json cannot follow
                    logger.exception("a stream failed while sending; its client may resume")
            await self.subscription.close()

    async def _send_frames(self, send: Send) -> None:
        async for data in self.subscription.frames:
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events, one per change, and a `: heartbeat` comment "
        "after `SESSIONARY_STREAM_HEARTBEAT` seconds of quiet. The answer never ends: a "
        "client generated from this description, which reads an answer whole before it "
        "returns, waits forever here. Read it line by line as it comes (docs/api.md, "
        "Streaming, shows how with curl, Python, TypeScript and Go).",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    **problem_responses(422, 503),
}


@router.get(
    SESSION_PATH + "/events:stream",
    response_class=EventStreamResponse,
    status_code=200,
    responses={**STREAM_RESPONSES, **problem_responses(404)},
    dependencies=[authorized(Need.USER)],
)
async def stream_events(
    request: Request,
    key: Key,
    after_seq: Annotated[
        int | None,
        Query(
            alias="afterSeq",
            ge=0,
            le=INT64_MAX,
            description="Send what came after this seq first, read back from the log (0: the "
            "whole session), then go on live. Without it (and without `Last-Event-ID`), only "
            "what happens from now.",
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        Header(
            description="The `id` of the last event received, sent by a reconnecting "
            "`EventSource`: resume after it, with nothing lost and nothing repeated. Wins "
            "over `afterSeq`."
        ),
    ] = None,
) -> Response:
    """A session's changes as server-sent events, each with `id:` the version its write
    took (for an appended event, its seq):

    - `appended`: an event as stored, `data` the event.
    - `updated`: an event rewritten: `{version, event, removedEventIds}`.
    - `removed`: `{version, removedEventIds}`; `trimmed`, `reset`: `{version, removedEvents,
      keptEvents}`.
    - `resync`: `{version}`, on a resume when writes other than appends (a removal, a
      rewrite, a trim) came after the position resumed from: read the session again.
    - `child`: one of its forks or children was created, closed or deleted:
      `{sessionId, change, …}` (no `id`).
    - `closed`: `{version, outcome}`, and `deleted`: `{}`; each ends the stream.
    """
    after = after_seq
    if last_event_id is not None:
        if not last_event_id.strip().isdecimal() or int(last_event_id) > INT64_MAX:
            raise InvalidInput(
                f"Last-Event-ID must be the id of an event of this stream; got {last_event_id!r}.",
                field="Last-Event-ID",
            )
        after = int(last_event_id)
    subscription = await services(request).live.session_stream(key, after)
    return EventStreamResponse(subscription)


@router.get(
    "/apps/{app_name}/users/{user_id}/sessions:stream",
    response_class=EventStreamResponse,
    status_code=200,
    responses=STREAM_RESPONSES,
    dependencies=[authorized(Need.USER)],
)
async def stream_user_sessions(request: Request, app_name: AppName, user_id: UserId) -> Response:
    """A user's sessions as they change, from now: `created` (`{userId, sessionId, version,
    kind, parentId}`), `updated` (`{userId, sessionId, version}`, for every write),
    `closed` (`…, outcome`) and `deleted`."""
    return EventStreamResponse(services(request).live.lifecycle_stream(app_name, user_id))


@router.get(
    "/apps/{app_name}/sessions:stream",
    response_class=EventStreamResponse,
    status_code=200,
    responses=STREAM_RESPONSES,
    dependencies=[authorized(Need.APP_NARROWED)],
)
async def stream_app_sessions(request: Request, app_name: AppName) -> Response:
    """Every user's sessions of the app as they change, from now, as the user stream has
    them; with a key for one user, that user's only."""
    user_id = narrowed_user(request, None)
    return EventStreamResponse(services(request).live.lifecycle_stream(app_name, user_id))
