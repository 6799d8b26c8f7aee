"""Memories: a user's (or an app's) things to recall, each change a revision, recalled by
meaning and by words fused into one ranking.

Fusion is reciprocal rank fusion (k = 60): each half ranks its candidates, and a memory scores
the sum of 1 / (60 + its rank) in each half that found it. Ranks, not scores, because the two
scores (cosine similarity, PostgreSQL's `ts_rank_cd`) are on scales nothing relates; RRF needs
no weights tuned per model or corpus, and a memory both halves rank high comes first. The
score the API answers is that sum over its best possible value, in (0, 1]: 1 is first in
every half that ran.
"""

import asyncio
import logging
import time
import uuid
from collections import deque
from dataclasses import replace
from typing import Any

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import (
    MemoryDraft,
    MemoryOwner,
    MemoryQuery,
    MemoryRevision,
    Page,
    PageRequest,
    Recall,
    Recalled,
    RecallQuery,
    SessionKey,
    StoredMemory,
)
from app.embeddings import Embedder, EmbeddingsUnavailable
from app.errors import (
    DatabaseUnavailable,
    InvalidInput,
    MemoryAlreadyExists,
    MemoryNotFound,
    StaleMemory,
)
from app.repositories import memories as memory_rows
from app.repositories.erasures import refuse_while_erasing, refuse_while_erasing_app
from app.services.pacing import pace
from app.services.preconditions import require_session

logger = logging.getLogger(__name__)

RRF_K = 60
# Seconds a recall waits for the model to embed its query before it recalls by words alone.
QUERY_EMBEDDING_TIMEOUT = 5.0
# Candidates each half ranks, per memory asked for.
CANDIDATES_PER_RESULT, MIN_CANDIDATES = 4, 40


class RecallStatus:
    """Whether recall can use meaning, and why not: no pgvector, no embedder, or an embedder
    that failed lately (its error, until it answers again)."""

    def __init__(self, vectors: str | None, embedder: Embedder | None) -> None:
        self.vectors = vectors
        self.embedder = embedder
        self.failure: str | None = None

    def why_words_only(self, client_vector: bool) -> str | None:
        if self.vectors is None:
            return "pgvector is not installed on the database: recalled by words alone."
        if client_vector:
            return None
        if self.embedder is None:
            return (
                "No embeddings are configured (SESSIONARY_EMBEDDINGS=none) and no vector "
                "was sent: recalled by words alone."
            )
        if self.failure is not None:
            return f"The embedding model is unavailable ({self.failure}): recalled by words alone."
        return None


class MemoryService:
    def __init__(self, pool: DriverPool, settings: Settings, status: RecallStatus) -> None:
        self.pool = pool
        self.settings = settings
        self.status = status
        self.worker = None if status.embedder is None else EmbeddingWorker(pool, settings, status)

    async def embeddings_status(self) -> dict[str, Any]:
        """An `EmbeddingsStatus`."""
        pending = 0
        if self.model is not None:
            async with self.pool.connection() as connection:
                pending = await memory_rows.pending(connection, self.model)
        note = self.status.why_words_only(client_vector=False)
        return {
            "recall": "words" if note else "meaning+words",
            "note": note,
            "pgvector": self.status.vectors,
            "provider": self.settings.embeddings,
            "model": self.model,
            "pending": pending,
            "rate": None if self.worker is None else self.worker.rate(),
        }

    @property
    def model(self) -> str | None:
        """The model the server embeds with, whose vectors it recalls by."""
        return None if self.status.embedder is None else self.status.embedder.model

    async def create(
        self,
        owner: MemoryOwner,
        memory_id: str | None,
        draft: MemoryDraft,
        source: tuple[str | None, list[str]],
        vector: tuple[str, list[float]] | None,
    ) -> StoredMemory:
        """A new memory at revision 1; with `vector`, the client's embedding of it by a model
        of its own (the server embeds it too, with its model, in the background)."""
        memory_id = memory_id or uuid.uuid4().hex
        async with self.pool.transaction() as connection:
            await _refuse_while_erasing(connection, owner)
            created = await memory_rows.insert(
                connection, owner, memory_id, draft, source, self.settings.search_config
            )
            if not created:
                raise MemoryAlreadyExists(memory_id)
            if vector is not None:
                await memory_rows.put_vector(connection, owner, memory_id, *vector)
            stored = await memory_rows.read(connection, owner, memory_id, self.model, written=True)
        assert stored is not None  # just written, in this transaction
        return stored

    async def read(self, owner: MemoryOwner, memory_id: str) -> StoredMemory:
        async with self.pool.connection() as connection:
            found = await memory_rows.read(connection, owner, memory_id, self.model)
        if found is None:
            raise MemoryNotFound(memory_id)
        return found

    async def update(
        self,
        owner: MemoryOwner,
        memory_id: str,
        changes: dict[str, Any],
        if_match: int | None,
        vector: tuple[str, list[float]] | None = None,
    ) -> StoredMemory:
        """Its next revision: the current one with `changes` (MemoryDraft's fields) made."""
        async with self.pool.transaction() as connection:
            await _refuse_while_erasing(connection, owner)
            current = await self._held(connection, owner, memory_id, if_match)
            draft = replace(_draft_of(current), **changes)
            if current.kind == "event" and ("text" in changes or "content" in changes):
                raise InvalidInput(
                    "A memory of an event takes its text and content from the event; change "
                    "its metadata, topics or expiry, or edit the event itself.",
                    field="text" if "text" in changes else "content",
                )
            text_changed = draft.text != current.text and current.kind == "text"
            await memory_rows.revise(
                connection,
                owner,
                memory_id,
                draft,
                text_changed=text_changed,
                config=self.settings.search_config,
            )
            if vector is not None:
                await memory_rows.put_vector(connection, owner, memory_id, *vector)
            stored = await memory_rows.read(connection, owner, memory_id, self.model, written=True)
        assert stored is not None
        return stored

    async def roll_back(
        self, owner: MemoryOwner, memory_id: str, revision: int, if_match: int | None
    ) -> StoredMemory:
        """Its next revision: a copy of revision `revision`."""
        async with self.pool.transaction() as connection:
            await _refuse_while_erasing(connection, owner)
            current = await self._held(connection, owner, memory_id, if_match)
            past = await memory_rows.revision(connection, owner, memory_id, revision)
            if past is None:
                raise MemoryNotFound(memory_id, revision)
            text_changed = past.draft.text != current.text and current.kind == "text"
            await memory_rows.revise(
                connection,
                owner,
                memory_id,
                past.draft,
                text_changed=text_changed,
                config=self.settings.search_config,
            )
            stored = await memory_rows.read(connection, owner, memory_id, self.model, written=True)
        assert stored is not None
        return stored

    async def delete(self, owner: MemoryOwner, memory_id: str, if_match: int | None) -> None:
        async with self.pool.transaction() as connection:
            await self._held(connection, owner, memory_id, if_match)
            await memory_rows.delete(connection, owner, memory_id)

    async def _held(
        self, connection: Any, owner: MemoryOwner, memory_id: str, if_match: int | None
    ) -> StoredMemory:
        """The memory, its row locked, at the revision If-Match names."""
        held = await memory_rows.hold(connection, owner, memory_id)
        current = await memory_rows.read(connection, owner, memory_id, self.model)
        if held is None or current is None:
            raise MemoryNotFound(memory_id)
        if if_match is not None and held[1] != if_match:
            raise StaleMemory(if_match, held[1])
        return current

    async def listed(
        self, owner: MemoryOwner, query: MemoryQuery, page: PageRequest
    ) -> Page[StoredMemory]:
        listing = paging.listing("memories", owner, query)
        after = None
        if page.token:
            micros, memory_id = paging.decode(page.token, listing, (int, str))
            after = (paging.EPOCH + micros * paging.MICROSECOND, memory_id)
        async with self.pool.connection() as connection:
            rows = await memory_rows.list_page(
                connection, owner, query, after=after, limit=page.size + 1, model=self.model
            )
        shown, token = paging.cut(
            rows,
            page.size,
            listing,
            lambda memory: [
                (memory.update_time - paging.EPOCH) // paging.MICROSECOND,
                memory.id,
            ],
        )
        return Page(shown, token)

    async def revisions(
        self, owner: MemoryOwner, memory_id: str, page: PageRequest
    ) -> Page[MemoryRevision]:
        listing = paging.listing("memory-revisions", owner, memory_id)
        below = None
        if page.token:
            (below,) = paging.decode(page.token, listing, (int,))
        async with self.pool.connection() as connection:
            if await memory_rows.read(connection, owner, memory_id, self.model) is None:
                raise MemoryNotFound(memory_id)
            rows = await memory_rows.revisions(
                connection, owner, memory_id, below=below, limit=page.size + 1
            )
        shown, token = paging.cut(rows, page.size, listing, lambda found: [found.revision])
        return Page(shown, token)

    async def remember(self, key: SessionKey, event_ids: list[str] | None) -> int:
        """Add the session's events to its user's memory (those of `event_ids`, else every
        one that has words and is by whom `SESSIONARY_MEMORY_FROM` says), each once; how many
        were new. Ids that are no events of the session are refused, nothing added."""
        authors = ["user"] if self.settings.memory_from == "user" and event_ids is None else None
        async with self.pool.transaction() as connection:
            await refuse_while_erasing(connection, key.app_name, key.user_id)
            await require_session(connection, key)
            if event_ids:
                missing = set(event_ids) - await memory_rows.found_events(
                    connection, key, event_ids
                )
                if missing:
                    raise InvalidInput(
                        f"Session {key.session_id!r} holds no event with the ids "
                        f"{sorted(missing)!r}.",
                        field="eventIds",
                    )
            return await memory_rows.remember_events(
                connection, key, event_ids=event_ids, authors=authors
            )

    async def recall(self, owner: MemoryOwner, query: RecallQuery) -> Recall:
        """The memories best matching the query, by meaning and by words as `query.mode`
        asks and the server can: fused (see the module), best first."""
        users = [owner.stored_user]
        if query.with_app and owner.user_id is not None:
            users.append("")
        candidates = max(MIN_CANDIDATES, query.limit * CANDIDATES_PER_RESULT)
        note: str | None = None
        vector, model = query.vector, query.model
        if query.mode != "words":
            note = self.status.why_words_only(client_vector=vector is not None)
            if note is None and vector is None and query.text is not None:
                vector, model, note = await self._embed_query(query.text)
        by_meaning = note is None and vector is not None and model is not None
        words = query.text if query.text and query.mode != "meaning" else None
        halves: list[list[tuple[str, str, float]]] = []
        similarity: dict[tuple[str, str], float] = {}
        word_score: dict[tuple[str, str], float] = {}
        async with self.pool.transaction(isolation="repeatable_read", readonly=True) as connection:
            if by_meaning:
                assert vector is not None and model is not None
                nearest = [
                    found
                    for found in await memory_rows.by_meaning(
                        connection, owner.app_name, users, vector, model, query, candidates
                    )
                    if found[2] >= query.min_similarity
                ]
                halves.append(nearest)
                similarity = {(user, memory_id): score for user, memory_id, score in nearest}
            if words is not None:
                matched = await memory_rows.by_words(
                    connection,
                    owner.app_name,
                    users,
                    words,
                    query,
                    self.settings.search_config,
                    candidates,
                    beside_meaning=by_meaning,
                )
                halves.append(matched)
                word_score = {(user, memory_id): score for user, memory_id, score in matched}
            fused = _fuse(halves)
            chosen = [key for key, score in fused if score >= query.min_score][: query.limit]
            found = await memory_rows.read_many(connection, owner.app_name, chosen, self.model)
        scores = dict(fused)
        recalled = [
            Recalled(found[key], scores[key], similarity.get(key), word_score.get(key))
            for key in chosen
            if key in found
        ]
        by = "+".join(
            name for name, used in (("meaning", by_meaning), ("words", words is not None)) if used
        )
        return Recall(recalled, by or "words", note)

    async def _embed_query(self, text: str) -> tuple[list[float] | None, str | None, str | None]:
        """The query's vector by the server's model, or why there is none."""
        embedder = self.status.embedder
        assert embedder is not None
        try:
            async with asyncio.timeout(QUERY_EMBEDDING_TIMEOUT):
                vector = await embedder.embed_query(text)
        except (EmbeddingsUnavailable, TimeoutError) as error:
            self.status.failure = str(error) or "no answer in time"
            return None, None, self.status.why_words_only(client_vector=False)
        self.status.failure = None
        return vector, embedder.model, None


async def _refuse_while_erasing(connection: asyncpg.Connection, owner: MemoryOwner) -> None:
    """A user's memories are not written while the user or the app is erased, an app's own
    while the app is."""
    if owner.user_id is None:
        await refuse_while_erasing_app(connection, owner.app_name)
    else:
        await refuse_while_erasing(connection, owner.app_name, owner.user_id)


def _fuse(halves: list[list[tuple[str, str, float]]]) -> list[tuple[tuple[str, str], float]]:
    """Reciprocal rank fusion of the halves' rankings, best first, scores over their best."""
    if not halves:
        return []
    sums: dict[tuple[str, str], float] = {}
    for ranking in halves:
        for rank, (user, memory_id, _) in enumerate(ranking, start=1):
            sums[(user, memory_id)] = sums.get((user, memory_id), 0.0) + 1 / (RRF_K + rank)
    best = len(halves) / (RRF_K + 1)
    return sorted(
        ((key, total / best) for key, total in sums.items()), key=lambda item: (-item[1], item[0])
    )


def _draft_of(memory: StoredMemory) -> MemoryDraft:
    expire = None if memory.expire_time is None else memory.expire_time.timestamp()
    if memory.kind == "event":  # the event's own, never copied into a revision
        return MemoryDraft(None, None, None, memory.metadata, memory.topics, expire)
    return MemoryDraft(
        memory.text, memory.content, memory.author, memory.metadata, memory.topics, expire
    )


class EmbeddingWorker:
    """Embeds memories off the request path: what is queued (new, or changed since embedded),
    then, once after each start, a pass over those embedded by another model (a change of
    model re-embeds everything, in the background, while recall compares like with like).

    One worker embeds at a time per database, whichever process it runs in: it holds an
    advisory lock, in a transaction on a connection of its own, for as long as it finds work
    (as the sweeper does); the others look again later. The model is called outside any
    transaction of the pool's: a slow endpoint holds no row and no pooled connection."""

    LOCK = 0x5E55_0E5B  # the advisory lock's key, any constant of this service's
    IDLE = 1.0  # seconds between looks at an empty queue
    RATE_WINDOW = 60.0  # seconds the rate is measured over

    def __init__(self, pool: DriverPool, settings: Settings, status: RecallStatus) -> None:
        assert status.embedder is not None
        self.pool = pool
        self.settings = settings
        self.status = status
        self.embedder = status.embedder
        # The backfill's position (app, user, id): None once it is done.
        self.backfill: tuple[str, str, str] | None = ("", "", "")
        self.done: deque[tuple[float, int]] = deque()

    def rate(self) -> float | None:
        """Memories embedded per second lately, by this process."""
        now = time.monotonic()
        while self.done and self.done[0][0] < now - self.RATE_WINDOW:
            self.done.popleft()
        if not self.done:
            return None
        span = max(now - self.done[0][0], 1.0)
        return sum(count for _, count in self.done) / span

    async def run_forever(self) -> None:
        pause = self.IDLE
        while True:
            try:
                await self.drain()
            except EmbeddingsUnavailable as error:
                self.status.failure = str(error)
                logger.warning("Embedding memories paused: %s", error)
                pause = min(max(pause * 2, error.retry_after or 0), 60.0)
            except DatabaseUnavailable:
                pause = self.IDLE
            except Exception:  # a bug: logged, and the worker goes on after a pause
                logger.exception("Embedding memories failed")
                pause = 60.0
            else:
                pause = self.IDLE
            await asyncio.sleep(pause)

    async def drain(self) -> None:
        """Embed batch after batch while there is work and no other worker is at it."""
        if not await self._has_work():
            return
        lock = await self.pool.connector.connect()
        try:
            async with lock.transaction():
                if not await lock.fetchval("SELECT pg_try_advisory_xact_lock($1)", self.LOCK):
                    return
                while True:
                    began = time.monotonic()
                    if not await self.step():
                        break
                    worked = time.monotonic() - began
                    await pace(self.pool, worked, self.settings.embeddings_pace)
        finally:
            await lock.close()

    async def _has_work(self) -> bool:
        if self.backfill is not None:
            return True
        async with self.pool.connection() as connection:
            return bool(await memory_rows.any_unembedded(connection))

    async def step(self) -> bool:
        """Embed one batch; False when there was nothing to do."""
        model, batch = self.embedder.model, self.settings.embeddings_batch
        async with self.pool.connection() as connection:
            rows = await memory_rows.unembedded(connection, model, after=None, limit=batch)
            if not rows and self.backfill is not None:
                rows = await memory_rows.unembedded(
                    connection, model, after=self.backfill, limit=batch
                )
                self.backfill = rows[-1][:3] if rows else None
        if not rows:
            return False
        texts = [row[4] for row in rows if row[4]]
        vectors = iter(await self.embedder.embed(texts) if texts else [])
        done = [(*row[:4], next(vectors) if row[4] else None) for row in rows]
        async with self.pool.transaction() as connection:
            await memory_rows.embedded(connection, model, done)
        self.status.failure = None
        self.done.append((time.monotonic(), len(rows)))
        return True
