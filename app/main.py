"""The application factory: wires settings, the database and the routers together."""

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from app import db, sharding, vectors
from app.api import (
    adk_artifacts,
    adk_server,
    artifacts,
    audit,
    context,
    directory,
    docs,
    erasures,
    events,
    explorer,
    health,
    history,
    keys,
    lineage,
    live,
    memories,
    portability,
    search,
    sessions,
    shared_state,
    spec,
    usage,
)
from app.api.cors import ProblemCORSMiddleware
from app.api.guards import (
    BodyLimitMiddleware,
    HeadAsGetMiddleware,
    HostAndOriginGuard,
    PathGuardMiddleware,
)
from app.api.lane import AppendLane
from app.api.problems import install_error_handlers
from app.api.responses import problem_responses
from app.api.routing import unguarded_routes
from app.config import Settings, get_settings
from app.embeddings import WordLlamaEmbedder, embedder_from
from app.observability import RequestObserver, pool_gauges
from app.services.health import check_ready
from app.services.memories import RecallStatus
from app.services.registry import Services

logger = logging.getLogger("sessionary")

DESCRIPTION = """\
A session store for AI agents. Sessions are ordered logs of events plus key-value state,
with the data model and semantics of Google ADK's session service: `app:` and `user:` state
keys are shared across an app's and a user's sessions, `temp:` keys are never stored.

Errors are `application/problem+json` with a stable `code`.
"""

# Relative: the docs served by a server (`/docs`) send their requests to that server.
SERVERS = [{"url": "/", "description": "The server that serves this description."}]
LICENSE = {"name": "Apache-2.0", "identifier": "Apache-2.0"}

# What a browser page may send, and read of an answer, across origins (CORS).
CORS_REQUEST_HEADERS = [
    "Authorization",
    "Content-Type",
    "If-Match",
    "Last-Event-ID",
    "X-Request-ID",
    # An artifact's upload and its partial and conditional downloads.
    "Artifact-Metadata",
    "Range",
    "If-Range",
    "If-None-Match",
]
CORS_EXPOSED_HEADERS = [
    "ETag",
    "X-Request-ID",
    "Retry-After",
    "WWW-Authenticate",
    "Artifact-Version",
    "Content-Range",
    "Content-Disposition",
    # Where the primary's WAL stood after a delete or an erase (`minPosition`).
    "Sessionary-Position",
]

# The order the docs show them in; the routes are matched in another (see create_app).
TAGS = [
    {"name": "sessions", "description": "Create, read, list, delete; state deltas."},
    {"name": "events", "description": "Append events, one or a batch; page through them."},
    {"name": "lineage", "description": "Forks, child sessions for sub-agents, and closing."},
    {"name": "history", "description": "Rewind (ADK's), trim, reset, remove or rewrite events."},
    {
        "name": "context",
        "description": "What a model should see next: the context view, compaction, tool "
        "calls pending, orphaned or answered, queued input, and token usage.",
    },
    {
        "name": "live",
        "description": "Server-sent events: a session's changes as they are "
        "committed, and the sessions of a user or an app as they change.",
    },
    {"name": "search", "description": "Full-text search over the text of an app's events."},
    {
        "name": "portability",
        "description": "A session as NDJSON, exported and imported: between servers, into "
        "backups, out of other stores.",
    },
    {
        "name": "artifacts",
        "description": "What agents save (files, images, reports): ADK's artifacts, versioned "
        "by name within a session (or, for `user:` names, a user), streamed in and out, the "
        "same bytes stored once.",
    },
    {
        "name": "memory",
        "description": "What agents should recall: memories of a user (or an app) and events "
        "of sessions added to memory, revised, expiring, recalled by meaning and by words.",
    },
    {"name": "state", "description": "App and user state, shared by their sessions."},
    {"name": "keys", "description": "What the API key of a request may do."},
    {
        "name": "erasure",
        "description": "Erasing everything of a user on request, as a job whose progress can "
        "be read.",
    },
    {
        "name": "audit",
        "description": "What was erased, deleted, imported and swept, and which keys were "
        "made and revoked: by whom, never with content (admin keys).",
    },
    {"name": "operations", "description": "Health, readiness and metrics probes."},
]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    unguarded = unguarded_routes(app)
    if unguarded:
        raise RuntimeError(f"Routes without an access rule (authorized(…) or PUBLIC): {unguarded}")
    settings: Settings = app.state.settings
    if settings.database_url is None:
        raise RuntimeError("DATABASE_URL is not set; `sessionary serve` starts an embedded one.")
    connector = db.connector(str(settings.database_url), settings)
    async with AsyncExitStack() as stack:
        await check_ready(connector, settings.db_connect_timeout)
        pool = await db.DriverPool.open(connector, size=settings.db_pool_size)
        stack.push_async_callback(pool.close)
        replica = None
        if settings.database_read_url is not None:
            # Opened empty: a replica down at start-up hands its reads to the primary.
            replica_connector = db.connector(str(settings.database_read_url), settings)
            replica = await db.DriverPool.open(
                replica_connector, size=settings.db_pool_size, min_size=0
            )
            stack.push_async_callback(replica.close)
        if not settings.auth_enabled:
            logger.warning(
                "AUTH IS OFF: anyone who can reach this port can read and write every session. "
                "Set SESSIONARY_AUTH=true and create keys with `sessionary keys create`."
            )
        app.state.pool = pool
        async with pool.connection() as connection:
            sharded = await sharding.on_citus(connection)
            routed = sharded and await sharding.routes_appends(connection)
        if sharded and not routed:
            logger.warning(
                "Appends on this Citus cluster are planned by its coordinator: run "
                "`sessionary migrate` to have each handed whole to its user's worker."
            )
        workers = None
        if routed and settings.citus_direct_appends and not connector.transaction_pooling:
            workers = sharding.WorkerPools(pool, settings.db_pool_size)
            stack.push_async_callback(workers.close)
            await workers.refresh()
            follower = asyncio.create_task(workers.follow())
            stack.callback(follower.cancel)
        on_workers = workers.pools.values() if workers is not None else ()
        await stack.enter_async_context(pool_gauges(lambda: [pool, *on_workers]))
        async with pool.connection() as connection:
            recall = RecallStatus(
                await connection.fetchval(vectors.VERSION), embedder_from(settings)
            )
        if isinstance(recall.embedder, WordLlamaEmbedder) and not recall.embedder.installed():
            recall.failure = (
                "the wordllama package is not installed (pip install 'sessionary[embeddings]')"
            )
        if recall.embedder is not None:
            stack.push_async_callback(recall.embedder.close)
        services = Services.create(
            pool, settings, replica, sharded=sharded, routed=routed, workers=workers, recall=recall
        )
        app.state.services = services
        stack.push_async_callback(services.artifacts.contents.close)
        await services.live.start()
        stack.push_async_callback(services.live.close)
        sweeper = asyncio.create_task(services.retention.sweep_forever())
        stack.callback(sweeper.cancel)
        eraser = asyncio.create_task(services.erasures.resume_forever())
        stack.callback(eraser.cancel)
        if services.memories.worker is not None and recall.vectors is not None:
            embedding = asyncio.create_task(services.memories.worker.run_forever())
            stack.callback(embedding.cancel)
        # What is alive now (modules, the app, its routes) lives as long as the process.
        # Frozen, it is no longer walked by every full collection, whose pauses under load were
        # the appends' p99 (bench/README.md).
        gc.freeze()
        yield


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="Sessionary",
        version=version("sessionary"),
        description=DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
        # `/docs` is app.api.docs, which serves Swagger UI's assets itself; no ReDoc.
        docs_url=None,
        redoc_url=None,
        openapi_tags=TAGS,
        # Operation ids are the route functions' names: `create_session`, `append_event`, …
        generate_unique_id_function=lambda route: route.name,
        # Off unless asked for: otherwise each request asks OpenTelemetry for its providers.
        telemetry={
            "tracing": settings.opentelemetry,
            "metrics": settings.opentelemetry,
            "logs": settings.opentelemetry,
            "operation_spans": settings.opentelemetry,
        },
    )
    app.state.settings = settings
    app.add_middleware(
        AppendLane, api=app, route_names=("append_event", "append_events")
    )  # innermost
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        max_upload_bytes=settings.max_artifact_bytes,
        max_import_bytes=settings.max_import_bytes,
    )
    app.add_middleware(PathGuardMiddleware)
    app.add_middleware(HeadAsGetMiddleware)
    if settings.cors_origins:
        # Outside the guards, so that a preflight (OPTIONS) is answered here, and inside the
        # observer, so that it is logged and counted like any request.
        app.add_middleware(
            ProblemCORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "HEAD", "POST", "PATCH", "DELETE"],
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_EXPOSED_HEADERS,
            max_age=600,
        )
    # Outside CORS, so that a request for another host is refused before a preflight is
    # answered; a preflight itself changes nothing, and goes on to CORS.
    app.add_middleware(
        HostAndOriginGuard,
        allowed_hosts=settings.allowed_hosts,
        cors_origins=settings.cors_origins,
    )
    app.add_middleware(RequestObserver)  # added last, so outermost: it sees every answer
    install_error_handlers(app)
    # Events first: a request is matched against the routes in order, each test costing some
    # CPU, and appends are the hottest route (bench/README.md measures the difference).
    for module in (
        events,
        sessions,
        lineage,
        history,
        context,
        usage,
        search,
        portability,
        artifacts,
        memories,
        live,
        shared_state,
        directory,
        keys,
        audit,
        erasures,
        health,
        explorer,
        docs,
        adk_server,
        adk_artifacts,
    ):
        app.include_router(module.router)
    app.include_router(memories.status_router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                tags=app.openapi_tags,
                servers=SERVERS,
                license_info=LICENSE,
            )
            # Any request may be refused before routing for a request line or header too long.
            too_long = problem_responses(431)
            for operations in schema["paths"].values():
                for operation in operations.values():
                    operation["responses"].update(too_long)
            # What generators read wrong, fixed; the schemas no route's JSON names, added.
            app.openapi_schema = spec.finish(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
