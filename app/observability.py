"""What operators see: one JSON log line per request, with its request id, and Prometheus metrics.

Metrics work across uvicorn workers through prometheus-client's multiprocess mode:
`sessionary serve` points PROMETHEUS_MULTIPROC_DIR at a fresh folder before workers start.
"""

import asyncio
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db import DriverPool

access_log = logging.getLogger("sessionary.access")

REQUESTS = Counter(
    "sessionary_http_requests_total",
    "HTTP requests answered, by route template and status.",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "sessionary_http_request_duration_seconds",
    "Time from request to the end of the response, by route template.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
EVENTS_APPENDED = Counter(
    "sessionary_events_appended_total", "Events stored (not retries, not partial events)."
)
APPENDS_GROUPED = Counter(
    "sessionary_appends_grouped_total",
    "Appends written in one statement with others that reached the same worker together "
    "(group commit: `SESSIONARY_APPEND_LANES`).",
)
SESSION_READS = Counter(
    "sessionary_session_reads_total",
    "Reads of a session (`GET …/sessions/{id}`, its events' pages) with DATABASE_READ_URL "
    "set, by who answered: `replica`, or `primary` when the replica lacked the version asked "
    "for (`minVersion`), had not replayed the position asked for (`minPosition`), or could "
    "not be reached.",
    ["served_by"],
)
SESSIONS_SWEPT = Counter(
    "sessionary_sessions_swept_total", "Expired sessions deleted by the sweeper."
)
STREAMS_OPEN = Gauge(
    "sessionary_streams_open", "Live streams open, over all workers.", multiprocess_mode="livesum"
)
STREAMS_DROPPED = Counter(
    "sessionary_streams_dropped_total",
    "Live streams dropped because their client fell `SESSIONARY_STREAM_BUFFER` frames behind.",
)
POOL_OPEN = Gauge(
    "sessionary_db_pool_connections_open",
    "Database connections open in the workers' pools, over all workers, sampled twice a second.",
    multiprocess_mode="livesum",
)
POOL_IN_USE = Gauge(
    "sessionary_db_pool_connections_in_use",
    "Database connections checked out by requests, over all workers, sampled twice a second.",
    multiprocess_mode="livesum",
)

# Every answer carries it, as most are JSON: a browser must not read one as another type.
NOSNIFF = (b"x-content-type-options", b"nosniff")
# The status counted and logged for a request whose client left before it was answered
# (nginx's): the answer, if any, went nowhere.
CLIENT_LEFT = 499

# A client's id is kept when it is 1 to 256 printable ASCII characters, which takes in the ids
# of proxies and tracers (`Root=1-5759e988;Parent=53995c3f`); anything else is replaced.
_REQUEST_ID = re.compile(r"[\x20-\x7e]{1,256}")  # matched against the whole value


def metrics_text() -> tuple[bytes, str]:
    # Whether values live in shared files is fixed when prometheus_client is imported. With one
    # worker, `sessionary serve` imports it before it sets PROMETHEUS_MULTIPROC_DIR and serves
    # from that same process, so the values are in memory although the variable is set.
    if values.ValueClass is not values.MutexValue:
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


@asynccontextmanager
async def pool_gauges(
    pools: Callable[[], Iterable[DriverPool]], every: float = 0.5
) -> AsyncIterator[None]:
    """Keeps this worker's pool gauges current while the app runs, over all its `pools()`
    (the pool, and on Citus the pools to the workers, which change as the cluster does).

    Sampled rather than counted at each checkout and checkin: in multiprocess mode every gauge
    change is a write to a shared file, two per request.
    """

    async def sample() -> None:
        while True:
            sampled = list(pools())
            in_use = sum(pool.in_use_count() for pool in sampled)
            POOL_OPEN.set(in_use + sum(pool.idle_count() for pool in sampled))
            POOL_IN_USE.set(in_use)
            await asyncio.sleep(every)

    sampler = asyncio.create_task(sample())
    try:
        yield
    finally:
        sampler.cancel()


class RequestObserver:
    """Pure ASGI middleware: request id in and out, one access log line, request metrics.

    A client that leaves before its answer is an ordinary event, not an error: the request is
    counted and logged as 499, and what reading its body raised (`ClientDisconnect`) ends here.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        # For the 500 handler, whose answer is sent outside this middleware.
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        answered = left = False
        started = time.perf_counter()

        async def watched_receive() -> Message:
            nonlocal left
            message = await receive()
            if message["type"] == "http.disconnect" and not answered:
                left = True
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, answered
            if message["type"] == "http.response.start":
                status = message["status"]
                answered = True
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                    NOSNIFF,
                ]
            await send(message)

        try:
            await self.app(scope, watched_receive, send_with_id)
        except ClientDisconnect:  # what reading the body of a request whose client left raises
            left = True
        finally:
            if left:
                status = CLIENT_LEFT
            duration = time.perf_counter() - started
            # The template as the spec writes it: `{session_id}`, not its convertor's name.
            route = getattr(scope.get("route"), "path_format", "unmatched")
            method = scope["method"]
            REQUESTS.labels(method, route, str(status)).inc()
            LATENCY.labels(method, route).observe(duration)
            if access_log.isEnabledFor(logging.INFO):
                write_access_line(
                    {
                        "method": method,
                        "route": route,
                        "path": scope["path"],
                        "status": status,
                        "duration_ms": round(duration * 1000, 3),
                        "request_id": request_id,
                    }
                )


def write_access_line(fields: dict[str, Any]) -> None:
    """The request's line, as `JSONFormatter` would write it, straight to stderr.

    Not through `logging`: its record, caller lookup, formatter and handler lock cost every
    request a good part of an append's CPU (bench/README.md). The `sessionary.access` logger's
    level still decides whether lines are written.
    """
    entry = {
        "time": _iso_time(time.time()),
        "level": "info",
        "logger": access_log.name,
        "message": f"{fields['method']} {fields['route']} {fields['status']}",
        **fields,
    }
    # Every value is a str, int or float: uvicorn decodes undecodable path bytes as U+FFFD.
    sys.stderr.write(orjson.dumps(entry).decode() + "\n")  # line-buffered: one write per line


def _iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and any `extra` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((k, v) for k, v in vars(record).items() if k not in _RECORD_FIELDS)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


# Set on an error that the 500 handler has logged, with the request's id.
_LOGGED = "_sessionary_logged"


def mark_logged(error: BaseException) -> None:
    setattr(error, _LOGGED, True)


class LoggedOnce(logging.Filter):
    """Leaves out uvicorn's report of an error already logged: Starlette hands each 500's
    error on to the server after the handler has logged it, and uvicorn logs it again
    ("Exception in ASGI application"), without the request's id."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not getattr(error, _LOGGED, False)


def log_config(level: str = "INFO") -> dict[str, Any]:
    """For uvicorn: every logger (ours and uvicorn's) writes JSON lines to stderr."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JSONFormatter}},
        "filters": {"logged_once": {"()": LoggedOnce}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True, "filters": ["logged_once"]},
            "uvicorn.access": {"handlers": [], "propagate": False},
            # Its INFO lines come with every /readyz (it reads the schema revision).
            "alembic": {"level": "WARNING"},
        },
    }
