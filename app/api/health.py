"""Operations: `/healthz` (the process answers), `/readyz` (it can serve), `/metrics`."""

from typing import Any

from fastapi import APIRouter, Request, Response

from app.api.deps import PUBLIC, services
from app.api.responses import problem_responses
from app.observability import metrics_text
from app.schemas import Health, Readiness
from app.services.health import check_ready

router = APIRouter(tags=["operations"], dependencies=[PUBLIC])
# The spec says so too: the probes need no key, even when keys are on.
PUBLIC_OPERATION: dict[str, Any] = {"security": []}


@router.get("/healthz", response_model=Health, openapi_extra=PUBLIC_OPERATION)
async def healthz() -> Health:
    """The process is up. Touches nothing else, so it stays cheap under any load."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    responses=problem_responses(503),
    openapi_extra=PUBLIC_OPERATION,
)
async def readyz(request: Request) -> Readiness:
    """The database answers within `SESSIONARY_READY_TIMEOUT` and its schema is at this code's
    migration head; else 503. Says too how memories are recalled now."""
    ready = await check_ready(
        request.app.state.pool.connector, request.app.state.settings.ready_timeout
    )
    words_only = services(request).memories.status.why_words_only(client_vector=False)
    return Readiness.model_validate({**ready, "recall": "words" if words_only else "meaning+words"})


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "Prometheus text format.",
        }
    },
    openapi_extra=PUBLIC_OPERATION,
)
async def metrics() -> Response:
    """Prometheus metrics of every worker: requests and latency by route template and status,
    database pool use, events appended."""
    body, content_type = metrics_text()
    return Response(body, media_type=content_type)
