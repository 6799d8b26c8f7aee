"""Memory routes: a user's memories (and an app's, facts every user shares) created, read,
revised, rolled back, deleted and listed; recalled by meaning and by words; a session's events
added to memory; and the embedding worker's status.

The same routes serve a user (`/apps/{app}/users/{user}/memories`) and the app
(`/apps/{app}/memories`): any key of the app reads the app's memories, and those that may
write app state write them.
"""

import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response, status

from app.api import render
from app.api.deps import (
    PUBLIC,
    AppName,
    PageOf,
    SessionId,
    UserId,
    authorized,
    expected_version,
    services,
)
from app.api.health import PUBLIC_OPERATION
from app.api.responses import problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import (
    MemoryDraft,
    MemoryOwner,
    MemoryQuery,
    RecallQuery,
    SessionKey,
    StoredMemory,
)
from app.limits import ID_LENGTH, ID_PATTERN
from app.schemas.memories import (
    EmbeddingsStatus,
    Memory,
    MemoryCreate,
    MemoryKind,
    MemoryPage,
    MemoryRevisionPage,
    MemoryRollback,
    MemoryUpdate,
    RecallRequest,
    RecallResult,
    Remember,
    RememberResult,
)
from app.services.auth import Need
from app.services.memories import MemoryService

USER_PATH = "/apps/{app_name}/users/{user_id}"
APP_PATH = "/apps/{app_name}"

MemoryId = Annotated[
    str,
    Path(min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN, description="The memory."),
]
MemoryIfMatch = Annotated[
    str | None,
    Header(
        alias="if-match",
        description="Only if the memory is still at this revision: its `ETag` as read, "
        'quoted (`"3"`); otherwise 412 `stale_memory` and nothing is changed.',
        json_schema_extra={"pattern": r'^(\*|"[0-9]+")$', "examples": ['"3"']},
    ),
]
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {**problem_responses(404)[404], "description": "No such memory (`memory_not_found`)."}
}
EXISTS: dict[int | str, dict[str, Any]] = {
    409: {
        **problem_responses(409)[409],
        "description": "A memory with this id exists already (`memory_already_exists`).",
    }
}
STALE: dict[int | str, dict[str, Any]] = {
    412: {
        **problem_responses(412)[412],
        "description": "If-Match named another revision (`stale_memory`); nothing was written. "
        "`currentRevision` is the memory's revision now.",
    }
}
REVISION_ETAG = {
    "ETag": {
        "description": 'The memory\'s revision, quoted (`"3"`): send it back as `If-Match` '
        "to change it only if nothing changed it since.",
        "schema": {"type": "string", "pattern": '^"[0-9]+"$'},
    }
}


async def _memories(request: Request) -> MemoryService:
    return services(request).memories


Memories = Annotated[MemoryService, Depends(_memories)]


async def _user_owner(app_name: AppName, user_id: UserId) -> MemoryOwner:
    return MemoryOwner(app_name, user_id)


async def _app_owner(app_name: AppName) -> MemoryOwner:
    return MemoryOwner(app_name, None)


def _filter(description: str, alias: str | None = None) -> Any:
    return Query(alias=alias, min_length=1, max_length=ID_LENGTH, description=description)


def _answer(memory: StoredMemory, code: int = 200) -> Response:
    return respond(render.dumps(render.memory(memory)), code, version=memory.revision)


def _expiry(expire_time: float | None, ttl: float | None) -> float | None:
    return time.time() + ttl if ttl is not None else expire_time


def _router(
    prefix: str, owner_of: Callable[..., Any], suffix: str, read: Need, write: Need, whose: str
) -> APIRouter:
    """The memory routes under `prefix`, each named `<verb>_<suffix>` in the spec (or its
    plural, `memory` → `memories`)."""
    plural = suffix.removesuffix("memory") + "memories"
    router = APIRouter(
        prefix=prefix,
        tags=["memory"],
        route_class=StrictRoute,
        responses=problem_responses(401, 403),
    )
    Owner = Annotated[MemoryOwner, Depends(owner_of)]
    reads, writes = [authorized(read)], [authorized(write)]

    @router.post(
        "/memories",
        name=f"create_{suffix}",
        status_code=status.HTTP_201_CREATED,
        response_model=Memory,
        responses=problem_responses(413, 422, 503) | EXISTS | {201: {"headers": REVISION_ETAG}},
        dependencies=writes,
        description=f"Remember something, {whose}: a text or ADK `Content`, with metadata, "
        "topics and an expiry. Embedded by the server in the background; recalled by words "
        "at once.",
    )
    async def create_memory(owner: Owner, memories: Memories, body: MemoryCreate) -> Response:
        draft = MemoryDraft(
            body.text if body.content is None else render.content_text(body.content),
            body.content,
            body.author,
            body.metadata,
            body.topics,
            _expiry(body.expire_time, body.ttl),
        )
        source: tuple[str | None, list[str]] = (None, [])
        if body.source is not None:
            source = (body.source.session_id, body.source.event_ids)
        vector = None if body.embedding is None else (body.embedding.model, body.embedding.vector)
        created = await memories.create(owner, body.id, draft, source, vector)
        return _answer(created, status.HTTP_201_CREATED)

    @router.get(
        "/memories",
        name=f"list_{plural}",
        response_model=MemoryPage,
        responses=problem_responses(422, 503),
        dependencies=reads,
        description=f"The memories {whose}, newest change first.",
    )
    async def list_memories(
        owner: Owner,
        memories: Memories,
        page: PageOf,
        topic: Annotated[str | None, _filter("Only memories with this topic.")] = None,
        session_id: Annotated[
            str | None, _filter("Only memories learnt in this session.", "sessionId")
        ] = None,
        kind: Annotated[MemoryKind | None, _filter("Only memories of this kind.")] = None,
    ) -> Response:
        listed = await memories.listed(owner, MemoryQuery(topic, session_id, kind), page)
        return respond(render.memory_page(listed))

    @router.post(
        "/memories:recall",
        name=f"recall_{plural}",
        response_model=RecallResult,
        responses=problem_responses(422, 503),
        dependencies=[authorized(read, reads=True)],
        description=f"The memories {whose} that best answer a question: by meaning (the "
        "server embeds `query`, or the client sends `embedding`) and by words, fused into one "
        "ranking (reciprocal rank fusion), best first. Without pgvector or with the model "
        "down, by words alone, and `note` says so.",
    )
    async def recall_memories(owner: Owner, memories: Memories, body: RecallRequest) -> Response:
        query = RecallQuery(
            text=body.query,
            vector=None if body.embedding is None else body.embedding.vector,
            model=None if body.embedding is None else body.embedding.model,
            limit=body.limit,
            min_score=body.min_score,
            min_similarity=body.min_similarity,
            topics=body.topics,
            after=body.after_timestamp,
            before=body.before_timestamp,
            with_app=body.include_app,
            mode=body.mode,
        )
        return respond(render.recall(await memories.recall(owner, query)))

    @router.get(
        "/memories/{memory_id:memory}",
        name=f"get_{suffix}",
        response_model=Memory,
        responses=problem_responses(422, 503) | NOT_FOUND | {200: {"headers": REVISION_ETAG}},
        dependencies=reads,
    )
    async def get_memory(owner: Owner, memories: Memories, memory_id: MemoryId) -> Response:
        """A memory as it is now."""
        return _answer(await memories.read(owner, memory_id))

    @router.patch(
        "/memories/{memory_id:memory}",
        name=f"update_{suffix}",
        response_model=Memory,
        responses=problem_responses(413, 422, 503)
        | STALE
        | NOT_FOUND
        | {200: {"headers": REVISION_ETAG}},
        dependencies=writes,
    )
    async def update_memory(
        owner: Owner,
        memories: Memories,
        memory_id: MemoryId,
        body: MemoryUpdate,
        if_match: MemoryIfMatch = None,
    ) -> Response:
        """Change a memory: the fields sent, the others kept. Each change is a new revision
        (listed, and restored by `:rollback`); a new text is embedded again."""
        changes: dict[str, Any] = {}
        given = body.model_fields_set
        if body.content is not None:
            changes["content"] = body.content
            changes["text"] = render.content_text(body.content)
        elif body.text is not None:
            changes["text"], changes["content"] = body.text, None
        if "author" in given:
            changes["author"] = body.author
        if "metadata" in given:
            changes["metadata"] = body.metadata or {}
        if "topics" in given:
            changes["topics"] = body.topics or []
        if given & {"expire_time", "ttl"}:
            changes["expire_time"] = _expiry(body.expire_time, body.ttl)
        vector = None if body.embedding is None else (body.embedding.model, body.embedding.vector)
        updated = await memories.update(
            owner, memory_id, changes, expected_version(if_match, "memory revision"), vector
        )
        return _answer(updated)

    @router.delete(
        "/memories/{memory_id:memory}",
        name=f"delete_{suffix}",
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        responses=problem_responses(422, 503) | STALE | NOT_FOUND,
        dependencies=writes,
    )
    async def delete_memory(
        owner: Owner, memories: Memories, memory_id: MemoryId, if_match: MemoryIfMatch = None
    ) -> Response:
        """Forget a memory: it, its revisions and its vectors."""
        await memories.delete(owner, memory_id, expected_version(if_match, "memory revision"))
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    @router.get(
        "/memories/{memory_id:memory}/revisions",
        name=f"list_{suffix}_revisions",
        response_model=MemoryRevisionPage,
        responses=problem_responses(422, 503) | NOT_FOUND,
        dependencies=reads,
    )
    async def list_memory_revisions(
        owner: Owner, memories: Memories, memory_id: MemoryId, page: PageOf
    ) -> Response:
        """Every revision of a memory, newest first (the current one first of all)."""
        listed = await memories.revisions(owner, memory_id, page)
        return respond(render.memory_revision_page(listed))

    @router.post(
        "/memories/{memory_id:memory}:rollback",
        name=f"roll_back_{suffix}",
        response_model=Memory,
        responses=problem_responses(422, 503)
        | STALE
        | NOT_FOUND
        | {200: {"headers": REVISION_ETAG}},
        dependencies=writes,
    )
    async def roll_back_memory(
        owner: Owner,
        memories: Memories,
        memory_id: MemoryId,
        body: MemoryRollback,
        if_match: MemoryIfMatch = None,
    ) -> Response:
        """Restore an earlier revision, as a new revision (nothing is lost)."""
        restored = await memories.roll_back(
            owner, memory_id, body.revision, expected_version(if_match, "memory revision")
        )
        return _answer(restored)

    return router


router = APIRouter()
router.include_router(
    _router(USER_PATH, _user_owner, "memory", Need.USER, Need.USER, "of the user")
)
router.include_router(
    _router(
        APP_PATH,
        _app_owner,
        "app_memory",
        Need.APP_SHARED,
        Need.APP_STATE,
        "of the app (every user's agents recall them)",
    )
)

session_router = APIRouter(
    prefix=SESSION_PATH,
    tags=["memory"],
    route_class=StrictRoute,
    responses=problem_responses(401, 403),
)


@session_router.post(
    ":remember",
    response_model=RememberResult,
    responses=problem_responses(404, 422, 503),
    dependencies=[authorized(Need.USER)],
)
async def remember_session(
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    memories: Memories,
    body: Remember | None = None,
) -> Response:
    """Add a session's events to its user's memory (ADK's `add_session_to_memory` and
    `add_events_to_memory`): each becomes a memory of kind `event` that keeps no copy of the
    event's text, and is forgotten with the session. Without `eventIds`, every event with
    text that `SESSIONARY_MEMORY_FROM` takes (by default, what the user said); again later,
    only what is new."""
    key = SessionKey(app_name, user_id, session_id)
    added = await memories.remember(key, None if body is None else body.event_ids)
    return respond(render.dumps({"remembered": added}))


router.include_router(session_router)

status_router = APIRouter(tags=["memory"], dependencies=[PUBLIC])


@status_router.get("/embeddings", response_model=EmbeddingsStatus, openapi_extra=PUBLIC_OPERATION)
async def embeddings_status(memories: Memories) -> Response:
    """How memories are recalled now (by meaning and words, or by words alone, and why), the
    model that embeds them, and how many wait to be embedded (a backfill's progress)."""
    return respond(render.dumps(await memories.embeddings_status()))
