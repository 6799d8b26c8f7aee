"""The HTTP floor: the least web service that does what Sessionary's hot routes do.

A bare ASGI app (no framework, no validation, no key check, no log, no metrics) served by
uvicorn with as many workers as Sessionary, each on a socket of its own (`app.workers`). An
append runs Sessionary's own append statement with the event as Sessionary would store it; a
session read runs Sessionary's own read statement and splices its rows into the body the same
way. What Sessionary costs above this is what its framework, checks and observability cost.

    python -m bench.http_floor --port 8001 --workers 2      # DATABASE_URL: a migrated database
"""

import argparse
import hashlib
import json
import os
import time
import uuid
from typing import Any

import asyncpg

from app import workers
from app.config import Settings
from app.repositories.events import APPEND
from app.repositories.sessions import READS
from app.rules.context import estimate_tokens, facts
from app.rules.events import usage_of
from app.rules.scopes import split_delta
from app.rules.search import event_text

Scope = dict[str, Any]
CREATE = (
    "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time, update_second) "
    "VALUES ($1, $2, $3, '{}', now(), now(), floor(extract(epoch FROM now())))"
)
MAX_STATE = Settings.model_fields["max_state_bytes"].default  # as Sessionary checks it
SEARCH_CONFIG = Settings.model_fields["search_config"].default  # as Sessionary indexes events


def append_arguments(
    app_name: str, user_id: str, session_id: str, body: bytes
) -> tuple[dict[str, Any], list[Any]]:
    """What Sessionary stores for an event: id and timestamp filled in, the request's hash,
    the delta split by scope, the facts the context view reads, its token usage; the event
    and the arguments of its one append statement (`APPEND`)."""
    event = json.loads(body)
    event.setdefault("id", str(uuid.uuid4()))
    event.setdefault("timestamp", time.time())
    delta = split_delta(event.get("actions", {}).get("stateDelta", {}))
    told, used = facts(event, estimate_tokens), usage_of(event)
    stored = {
        "event": event,
        "hash": hashlib.sha256(body).hexdigest(),
        "tokens": told.tokens,
        "calls": told.calls,
        "responses": told.responses,
        "prompt": used.prompt,
        "candidates": used.candidates,
        "total": used.total,
        "text": event_text(event),
    }
    arguments = APPEND.arguments(
        {
            "app_name": app_name,
            "user_id": user_id,
            "session_id": session_id,
            "count": 1,
            "expected_version": None,
            "last_timestamp": event["timestamp"],
            "session_delta": json.dumps(delta.session),
            "app_delta": json.dumps(delta.app),
            "user_delta": json.dumps(delta.user),
            "events": json.dumps([stored]),
            "max_state": MAX_STATE,
            "search_config": SEARCH_CONFIG,
            "prompt_tokens": used.prompt or 0,
            "candidates_tokens": used.candidates or 0,
            "total_tokens": used.total or 0,
        }
    )
    return event, arguments


class HttpFloor:
    """Routes by path shape: `…/sessions` (create), `…/sessions/{id}` (read), `…/events`."""

    def __init__(self) -> None:
        self.pool: asyncpg.Pool | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        parts = scope["path"].split("/")
        method = scope["method"]
        if scope["path"] == "/readyz" or scope["path"] == "/healthz":
            await self.answer(send, 200, b"{}")
        elif method == "POST" and len(parts) == 6 and parts[5] == "sessions":
            await self.create(send, parts[2], parts[4], await self.body(receive))
        elif method == "POST" and len(parts) == 8 and parts[7] == "events":
            await self.append(send, parts[2], parts[4], parts[6], await self.body(receive))
        elif method == "GET" and len(parts) == 7:
            query = scope["query_string"]  # numRecentEvents=N is the only one sent here
            recent = int(query.partition(b"=")[2]) if query else None
            await self.read(send, parts[2], parts[4], parts[6], recent)
        else:
            await self.answer(send, 404, b"{}")

    async def lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                size = int(os.environ.get("SESSIONARY_DB_POOL_SIZE", "20"))
                self.pool = await asyncpg.create_pool(
                    os.environ["DATABASE_URL"], min_size=1, max_size=size
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.pool is not None:
                    await self.pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @staticmethod
    async def body(receive: Any) -> bytes:
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                return b"".join(chunks)

    @staticmethod
    async def answer(send: Any, status: int, body: bytes) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def create(self, send: Any, app_name: str, user_id: str, body: bytes) -> None:
        assert self.pool is not None
        await self.pool.execute(CREATE, app_name, user_id, json.loads(body)["sessionId"])
        await self.answer(send, 201, body)

    async def append(
        self, send: Any, app_name: str, user_id: str, session_id: str, body: bytes
    ) -> None:
        assert self.pool is not None
        event, arguments = append_arguments(app_name, user_id, session_id, body)
        base_seq = await self.pool.fetchval(APPEND.sql, *arguments)
        await self.answer(send, 201, json.dumps({**event, "seq": base_seq + 1}).encode())

    async def read(
        self, send: Any, app_name: str, user_id: str, session_id: str, recent: int | None
    ) -> None:
        assert self.pool is not None
        statement = READS[recent is not None, False]
        arguments = statement.arguments(
            {
                "app_name": app_name,
                "user_id": user_id,
                "session_id": session_id,
                "limit": recent,
                "after_timestamp": None,
                "until_seq": None,
            }
        )
        rows = await self.pool.fetch(statement.sql, *arguments)
        head = {"id": session_id, "appName": app_name, "userId": user_id, "state": {}}
        events = b",".join(row["event"] for row in rows[1:])
        await self.answer(
            send, 200, json.dumps(head).encode()[:-1] + b',"events":[' + events + b"]}"
        )


app = HttpFloor()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.http_floor", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    options = {
        "app": "bench.http_floor:app",
        "host": args.host,
        "port": args.port,
        "log_level": "warning",
        "access_log": False,
    }
    workers.supervise(options, args.workers)


if __name__ == "__main__":
    main()
