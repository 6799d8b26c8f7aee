"""`sessionary mcp --transport http`: the MCP server's streamable HTTP app under uvicorn,
announced once it listens, and quiet when a client ends its session with a message in flight.

The MCP SDK (2.3) answers a notification `202 Accepted` before it hands the notification to
the client's session. When the client ends that session meanwhile (its `DELETE` racing the
notification, as a client that initializes and leaves at once does), the hand-off fails:
the SDK logs `ClosedResourceError` with a traceback, then answers the same request again
with a 500, which uvicorn refuses with a second traceback. The client already has its answer
and the session is gone, so nothing is lost: both are kept off the terminal here
(`answered_once`, `ENDED_SESSIONS`), and nothing else is.
"""

import logging
import socket
import sys

import anyio
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Where the SDK logs the failed hand-off (its module's logger).
SDK_LOGGER = "mcp.server.streamable_http"


class EndedSessions(logging.Filter):
    """Drops the SDK's report of a message it could not hand to a session already ended."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, anyio.ClosedResourceError)


ENDED_SESSIONS = EndedSessions()


def answered_once(app: ASGIApp) -> ASGIApp:
    """`app`, whose messages after a request's complete answer are dropped, with the
    `ClosedResourceError` of an ended session that comes after that answer."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        answered = False

        async def send_until_answered(message: Message) -> None:
            nonlocal answered
            if answered:
                return
            answered = message["type"] == "http.response.body" and not message.get(
                "more_body", False
            )
            await send(message)

        try:
            await app(scope, receive, send_until_answered)
        except anyio.ClosedResourceError:
            if not answered:
                raise

    return guarded


class AnnouncedServer(uvicorn.Server):
    """Uvicorn's server, printing `announcement` once it listens: by then it has taken
    Ctrl-C over (a shutdown that waits for requests in flight), so whoever waits for the line
    may send it at once."""

    def __init__(self, config: uvicorn.Config, announcement: str) -> None:
        super().__init__(config)
        self.announcement = announcement

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.announcement, file=sys.stderr, flush=True)


def serve(app: ASGIApp, host: str, port: int, announcement: str) -> None:
    """Serve the MCP server's streamable HTTP app until Ctrl-C (or SIGTERM)."""
    logging.getLogger(SDK_LOGGER).addFilter(ENDED_SESSIONS)
    config = uvicorn.Config(answered_once(app), host=host, port=port, log_level="warning")
    AnnouncedServer(config, announcement).run()
