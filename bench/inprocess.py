"""The request path's own CPU: appends (one event, and batches of two as the OpenAI Agents
session sends a turn's items) and probes sent to the ASGI app in this process, no HTTP client
and no server, timed by process CPU (PostgreSQL's work is another process's).

    DATABASE_URL=postgresql://… python -m bench.inprocess [--rounds 7] [--requests 1500]

For A/B work on the request path: run it from two checkouts (`git archive REV | tar -x -C
/tmp/x`, then `PYTHONPATH=/tmp/x`) alternately, and compare medians; each figure moves by
10-20% from one minute to the next on a shared host.
"""

import argparse
import asyncio
import logging
import os
import statistics
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

from app.config import Settings
from app.main import create_app

EVENT = (
    b'{"author":"user","content":{"parts":[{"text":"hello world"}]},'
    b'"actions":{"stateDelta":{"k":1}}}'
)
BATCH = b'{"events":[' + EVENT + b"," + EVENT + b"]}"


def scope(method: str, path: str, body: bytes) -> dict[str, Any]:
    headers = [(b"host", b"bench"), (b"content-type", b"application/json")]
    if body:
        headers.append((b"content-length", str(len(body)).encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "state": {},
    }


async def measure(rounds: int, requests: int) -> dict[str, list[float]]:
    settings = Settings(database_url=os.environ["DATABASE_URL"], auth=False)
    app = create_app(settings)
    logging.getLogger("sessionary.access").setLevel(logging.WARNING)  # no line per request

    async def call(method: str, path: str, body: bytes = b"") -> int:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        status = 0

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await app(scope(method, path, body), receive, send)
        return status

    figures: dict[str, list[float]] = {"append": [], "batch of 2": [], "healthz": []}
    async with app.router.lifespan_context(app):
        session = f"/apps/inprocess-{uuid.uuid4().hex[:8]}/users/u/sessions/s"
        assert await call("POST", session.rsplit("/", 1)[0], b'{"sessionId":"s"}') == 201
        for _ in range(rounds):
            for name, method, path, body, expected in (
                ("append", "POST", f"{session}/events", EVENT, 201),
                ("batch of 2", "POST", f"{session}/events:batch", BATCH, 201),
                ("healthz", "GET", "/healthz", b"", 200),
            ):
                started = time.process_time()
                for _ in range(requests):
                    assert await call(method, path, body) == expected
                figures[name].append((time.process_time() - started) / requests * 1e6)
        assert await call("DELETE", session) == 204
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1500)
    options = parser.parse_args()
    figures = asyncio.run(measure(options.rounds, options.requests))
    for name, values in figures.items():
        spread = ", ".join(f"{value:.0f}" for value in values)
        print(f"{name}: {statistics.median(values):.0f} µs of CPU per request ({spread})")


if __name__ == "__main__":
    main()
