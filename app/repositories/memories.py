"""SQL for memories: a memory and its revisions, remembered events, vectors, and the two
halves of a recall (by words, by meaning), each taking its best candidates in one statement.

A remembered event's memory row keeps the index of the event's words and its vectors, never
its text: reads join the event, and a memory whose event or session is gone (or expired)
reads as absent until the session's delete takes it.
"""

import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import asyncpg
import orjson

from app.domain import (
    MemoryDraft,
    MemoryOwner,
    MemoryQuery,
    MemoryRevision,
    RecallQuery,
    SessionKey,
    StoredMemory,
)
from app.models import LIVE_SQL
from app.rules.search import event_text
from app.vectors import INDEXED_DIMENSIONS, as_vector

# Where a memory is, by the columns every statement names.
_KEY = "m.app_name = $1 AND m.user_id = $2 AND m.id = $3"
_UNEXPIRED = "(m.expire_time IS NULL OR m.expire_time > now())"
# A remembered event reads only while its session is live.
_SESSION_LIVE = LIVE_SQL.replace("expire_time", "s.expire_time")
_EVENT_LIVE = (
    "(m.kind = 'text' OR EXISTS (SELECT 1 FROM sessions s WHERE s.app_name = m.app_name "
    f"AND s.user_id = m.user_id AND s.id = m.session_id AND {_SESSION_LIVE}))"
)
_COLUMNS = (
    "m.id, nullif(m.user_id, '') AS owner, m.kind, m.revision, m.text, m.content, m.author, "
    "m.metadata, m.topics, m.expire_time, m.session_id, m.event_ids, m.seq, m.create_time, "
    "m.update_time, m.embedded_model, e.event"
)
_WITH_EVENT = (
    "memories m LEFT JOIN events e ON m.kind = 'event' AND e.app_name = m.app_name "
    "AND e.user_id = m.user_id AND e.session_id = m.session_id AND e.seq = m.seq"
)
_DRAFT_COLUMNS = "text, content, author, metadata, topics, expire_time"


def _memory(row: asyncpg.Record, model: str | None) -> StoredMemory | None:
    """The memory of a row of `_COLUMNS`; None for a remembered event that is gone."""
    text, content, author, timestamp = row["text"], row["content"], row["author"], None
    if row["kind"] == "event":
        event = row["event"]
        if event is None:
            return None
        text, content = event_text(event), event.get("content")
        author, timestamp = event.get("author"), event.get("timestamp")
    return StoredMemory(
        id=row["id"],
        user_id=row["owner"],
        kind=row["kind"],
        revision=row["revision"],
        text=text,
        content=content,
        author=author,
        metadata=row["metadata"],
        topics=list(row["topics"]),
        expire_time=row["expire_time"],
        session_id=row["session_id"],
        event_ids=list(row["event_ids"]),
        seq=row["seq"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        timestamp=timestamp,
        embedded=model is not None and row["embedded_model"] == model,
    )


def _draft_values(draft: MemoryDraft) -> tuple[Any, ...]:
    """A draft's values for `$4` to `$9` (its expiry as epoch seconds, for `to_timestamp`)."""
    content = None if draft.content is None else orjson.dumps(draft.content).decode()
    metadata = orjson.dumps(draft.metadata).decode()
    return (draft.text, content, draft.author, metadata, draft.topics, draft.expire_time)


async def insert(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory_id: str,
    draft: MemoryDraft,
    source: tuple[str | None, list[str]],
    config: str,
) -> bool:
    """A new memory of its own text at revision 1; False when the id is taken."""
    session_id, event_ids = source
    inserted = await connection.fetchval(
        f"""INSERT INTO memories (app_name, user_id, id, kind, revision, {_DRAFT_COLUMNS},
                session_id, event_ids, search)
            VALUES ($1, $2, $3, 'text', 1, $4, $5, $6, $7, $8, to_timestamp($9), $10, $11,
                to_tsvector('{config}'::regconfig, $4))
            ON CONFLICT DO NOTHING RETURNING true""",
        owner.app_name,
        owner.stored_user,
        memory_id,
        *_draft_values(draft),
        session_id,
        event_ids,
    )
    if not inserted:
        return False
    await _keep_revision(connection, owner, memory_id)
    return True


async def _keep_revision(
    connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str
) -> None:
    """Copy the memory's current revision into its history."""
    await connection.execute(
        f"""INSERT INTO memory_revisions (app_name, user_id, memory_id, revision, {_DRAFT_COLUMNS})
            SELECT app_name, user_id, id, revision, {_DRAFT_COLUMNS} FROM memories m
            WHERE {_KEY}""",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )


async def read(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory_id: str,
    model: str | None,
    *,
    written: bool = False,
) -> StoredMemory | None:
    """The memory as a read shows it; `written`, as the write that just made it answers it
    (even one whose expiry has passed since: a `ttl` shorter than the request)."""
    unexpired = "true" if written else _UNEXPIRED
    row = await connection.fetchrow(
        f"SELECT {_COLUMNS} FROM {_WITH_EVENT} WHERE {_KEY} AND {unexpired} AND {_EVENT_LIVE}",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )
    return None if row is None else _memory(row, model)


async def read_many(
    connection: asyncpg.Connection, app_name: str, keys: list[tuple[str, str]], model: str | None
) -> dict[tuple[str, str], StoredMemory]:
    """Memories by (stored user id, id), those still there."""
    # By their users and ids, then the pairs asked for: a recall names one or two users.
    rows = await connection.fetch(
        f"""SELECT {_COLUMNS}, m.user_id AS stored_user FROM {_WITH_EVENT}
            WHERE m.app_name = $1 AND m.user_id = ANY($2) AND m.id = ANY($3)
              AND {_UNEXPIRED} AND {_EVENT_LIVE}""",
        app_name,
        sorted({user for user, _ in keys}),
        sorted({memory_id for _, memory_id in keys}),
    )
    asked = set(keys)
    found = {}
    for row in rows:
        key = (row["stored_user"], row["id"])
        if key in asked and (memory := _memory(row, model)) is not None:
            found[key] = memory
    return found


async def hold(
    connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str
) -> tuple[str, int] | None:
    """The memory's kind and revision, its row locked for a write; None when absent."""
    row = await connection.fetchrow(
        f"SELECT m.kind, m.revision FROM memories m WHERE {_KEY} AND {_UNEXPIRED} FOR UPDATE",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )
    return None if row is None else (row["kind"], row["revision"])


async def revise(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory_id: str,
    draft: MemoryDraft,
    *,
    text_changed: bool,
    config: str,
) -> None:
    """Write the held memory's next revision. A new text is indexed again and loses its
    vectors (recalled by words until the worker embeds it again)."""
    await connection.execute(
        f"""UPDATE memories m SET revision = revision + 1, text = $4, content = $5, author = $6,
                metadata = $7, topics = $8, expire_time = to_timestamp($9), update_time = now(),
                search = CASE WHEN kind = 'text' THEN to_tsvector('{config}'::regconfig, $4)
                    ELSE search END,
                embedded_model = CASE WHEN $10 THEN NULL ELSE embedded_model END
            WHERE {_KEY}""",
        owner.app_name,
        owner.stored_user,
        memory_id,
        *_draft_values(draft),
        text_changed,
    )
    if text_changed:
        await delete_vectors(connection, owner, memory_id)
    await _keep_revision(connection, owner, memory_id)


async def revisions(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory_id: str,
    *,
    below: int | None,
    limit: int,
) -> list[MemoryRevision]:
    """Its revisions newest first, from just below `below`."""
    rows = await connection.fetch(
        f"""SELECT revision, {_DRAFT_COLUMNS}, create_time FROM memory_revisions
            WHERE app_name = $1 AND user_id = $2 AND memory_id = $3 AND revision < $4
            ORDER BY revision DESC LIMIT $5""",
        owner.app_name,
        owner.stored_user,
        memory_id,
        below if below is not None else 2**63 - 1,
        limit,
    )
    return [_revision(row) for row in rows]


async def revision(
    connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str, number: int
) -> MemoryRevision | None:
    row = await connection.fetchrow(
        f"""SELECT revision, {_DRAFT_COLUMNS}, create_time FROM memory_revisions
            WHERE app_name = $1 AND user_id = $2 AND memory_id = $3 AND revision = $4""",
        owner.app_name,
        owner.stored_user,
        memory_id,
        number,
    )
    return None if row is None else _revision(row)


def _revision(row: asyncpg.Record) -> MemoryRevision:
    expire = row["expire_time"]
    draft = MemoryDraft(
        row["text"],
        row["content"],
        row["author"],
        row["metadata"],
        list(row["topics"]),
        None if expire is None else expire.timestamp(),
    )
    return MemoryRevision(row["revision"], draft, row["create_time"])


async def delete(connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str) -> bool:
    deleted = await connection.fetchval(
        f"DELETE FROM memories m WHERE {_KEY} RETURNING true",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )
    if deleted:
        await _forget_rest(connection, owner.app_name, owner.stored_user, [memory_id])
    return bool(deleted)


async def _forget_rest(
    connection: asyncpg.Connection, app_name: str, user_id: str, memory_ids: list[str]
) -> None:
    """Delete the revisions and vectors of memories this transaction deleted."""
    for table in ("memory_revisions", "memory_vectors"):
        await connection.execute(
            f"DELETE FROM {table} WHERE app_name = $1 AND user_id = $2 AND memory_id = ANY($3)",
            app_name,
            user_id,
            memory_ids,
        )


async def delete_vectors(
    connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str
) -> None:
    await connection.execute(
        "DELETE FROM memory_vectors WHERE app_name = $1 AND user_id = $2 AND memory_id = $3",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )


async def list_page(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    query: MemoryQuery,
    *,
    after: tuple[datetime, str] | None,
    limit: int,
    model: str | None,
) -> list[StoredMemory]:
    """The owner's memories, newest change first, from just past `after`."""
    rows = await connection.fetch(
        f"""SELECT {_COLUMNS} FROM {_WITH_EVENT}
            WHERE m.app_name = $1 AND m.user_id = $2 AND {_UNEXPIRED} AND {_EVENT_LIVE}
              AND ($3::text IS NULL OR m.topics @> ARRAY[$3::text])
              AND ($4::text IS NULL OR m.session_id = $4)
              AND ($5::text IS NULL OR m.kind = $5)
              AND ($6::timestamptz IS NULL OR (m.update_time, m.id) < ($6, $7))
            ORDER BY m.update_time DESC, m.id DESC LIMIT $8""",
        owner.app_name,
        owner.stored_user,
        query.topic,
        query.session_id,
        query.kind,
        None if after is None else after[0],
        None if after is None else after[1],
        limit,
    )
    return [memory for row in rows if (memory := _memory(row, model)) is not None]


async def remember_events(
    connection: asyncpg.Connection,
    key: SessionKey,
    *,
    event_ids: list[str] | None,
    authors: list[str] | None,
) -> int:
    """Add to memory the session's events that have words (those of `event_ids`, else all;
    by one of `authors`, else by anyone), once each: how many were new."""
    added = await connection.fetchval(
        """WITH added AS (
                INSERT INTO memories (app_name, user_id, id, kind, revision, session_id, seq,
                    event_ids, search)
                SELECT e.app_name, e.user_id, gen_random_uuid()::text, 'event', 1,
                    e.session_id, e.seq, ARRAY[e.id], e.search
                FROM events e
                WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                  AND e.search IS NOT NULL
                  AND ($4::text[] IS NULL OR e.id = ANY($4))
                  AND ($5::text[] IS NULL OR e.author = ANY($5))
                ORDER BY e.seq
                ON CONFLICT DO NOTHING RETURNING app_name, user_id, id, revision
            ), kept AS (
                INSERT INTO memory_revisions (app_name, user_id, memory_id, revision)
                SELECT app_name, user_id, id, revision FROM added
            )
            SELECT count(*) FROM added""",
        key.app_name,
        key.user_id,
        key.session_id,
        event_ids,
        authors,
    )
    return int(added)


async def found_events(
    connection: asyncpg.Connection, key: SessionKey, event_ids: list[str]
) -> set[str]:
    """Which of these ids are events of the session."""
    rows = await connection.fetch(
        "SELECT id FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 "
        "AND id = ANY($4)",
        key.app_name,
        key.user_id,
        key.session_id,
        event_ids,
    )
    return {row["id"] for row in rows}


async def delete_session_memories(connection: asyncpg.Connection, key: SessionKey) -> None:
    """Forget the events of a session this transaction deletes: their memories, revisions and
    vectors (memories of their own text that name the session as their source stay)."""
    await forget_events(connection, key, None)


async def put_vector(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory_id: str,
    model: str,
    vector: list[float],
) -> None:
    await connection.execute(
        """INSERT INTO memory_vectors (app_name, user_id, memory_id, model, embedding)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (app_name, user_id, memory_id, model)
           DO UPDATE SET embedding = excluded.embedding""",
        owner.app_name,
        owner.stored_user,
        memory_id,
        model,
        vector,
    )


def _recall_filters(first: int) -> str:
    """The filters a recall applies to `m` in both halves, from parameter `first` on: topics
    (any of), the time of its last change."""
    topics, after, before = (f"${first + n}" for n in range(3))
    return (
        f"{_UNEXPIRED} AND {_EVENT_LIVE}"
        f" AND (cardinality({topics}::text[]) = 0 OR m.topics && {topics}::text[])"
        f" AND ({after}::float8 IS NULL OR m.update_time >= to_timestamp({after}::float8))"
        f" AND ({before}::float8 IS NULL OR m.update_time < to_timestamp({before}::float8))"
    )


def _filter_values(query: RecallQuery) -> tuple[Any, ...]:
    return (query.topics, query.after, query.before)


# The longest query of words: beyond it, the first words.
WORDS_LIMIT = 1000


def any_word(text: str) -> str | None:
    """The query's words in web-search syntax for any of them (`a or b`): a question shares
    few words with what answers it, and ranking favours memories sharing more."""
    words = dict.fromkeys(word.lower() for word in re.findall(r"\w+", text))
    words.pop("or", None)  # the syntax's own word
    said = ""
    for word in words:
        joined = f"{said} or {word}" if said else word
        if len(joined) > WORDS_LIMIT:
            break
        said = joined
    return said or None


async def by_words(
    connection: asyncpg.Connection,
    app_name: str,
    users: list[str],
    text: str,
    query: RecallQuery,
    config: str,
    limit: int,
    *,
    beside_meaning: bool,
) -> list[tuple[str, str, float]]:
    """The best `limit` memories by the words of `text`, best first: (stored user id, id,
    score in [0, 1)). Alone, those sharing any word. Beside meaning, those holding every word,
    and those no model has embedded yet (which meaning cannot find) sharing any: ranking every
    memory that shares one common word is what a user of many memories cannot afford."""
    matches = "m.search @@ q"
    every: tuple[str, ...] = ()
    if beside_meaning:
        matches = (
            "(m.search @@ plainto_tsquery($8::regconfig, $9)"
            " OR (m.embedded_model IS NULL AND m.search @@ q))"
        )
        every = (text[:WORDS_LIMIT],)
    rows = await connection.fetch(
        f"""SELECT m.user_id, m.id, ts_rank_cd(m.search, q, 32) AS score
            FROM memories m, websearch_to_tsquery($8::regconfig, $3) q
            WHERE m.app_name = $1 AND m.user_id = ANY($2) AND {matches}
              AND {_recall_filters(4)}
            ORDER BY score DESC, m.user_id, m.id LIMIT $7""",
        app_name,
        users,
        any_word(text),
        *_filter_values(query),
        limit,
        config,
        *every,
    )
    return [(row["user_id"], row["id"], float(row["score"])) for row in rows]


async def by_meaning(
    connection: asyncpg.Connection,
    app_name: str,
    users: list[str],
    vector: list[float],
    model: str,
    query: RecallQuery,
    limit: int,
) -> list[tuple[str, str, float]]:
    """The `limit` memories nearest to `vector` among those embedded by `model`, nearest
    first: (stored user id, id, cosine similarity). Through the HNSW index of the vector's
    size where there is one (iterative: filtered rows do not cut the answer short)."""
    dimensions = len(vector)
    distance = f"{as_vector('v.embedding', dimensions)} <=> $3::real[]::vector({dimensions})"
    if dimensions in INDEXED_DIMENSIONS:
        # Past the rows the filters drop, on until `limit` pass; on Citus, on the workers too
        # (a placeholder setting elsewhere, without effect).
        # Planned for this query each time: a prepared statement's generic plan, which the
        # driver's cache reaches by its sixth run, skips the index (bench/README.md: S19).
        await connection.execute(
            "SET LOCAL citus.propagate_set_commands = 'local'; "
            "SET LOCAL plan_cache_mode = force_custom_plan; "
            "SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 100"
        )
    rows = await connection.fetch(
        f"""SELECT user_id, memory_id, 1 - distance AS similarity FROM (
                SELECT v.user_id, v.memory_id, {distance} AS distance
                FROM memory_vectors v JOIN memories m ON m.app_name = v.app_name
                    AND m.user_id = v.user_id AND m.id = v.memory_id
                WHERE v.app_name = $1 AND v.user_id = ANY($2) AND v.model = $4
                  AND cardinality(v.embedding) = {dimensions} AND {_recall_filters(5)}
                ORDER BY distance LIMIT $8
            ) nearest ORDER BY distance""",
        app_name,
        users,
        vector,
        model,
        *_filter_values(query),
        limit,
    )
    return [(row["user_id"], row["memory_id"], float(row["similarity"])) for row in rows]


async def unembedded(
    connection: asyncpg.Connection, model: str, *, after: tuple[str, str, str] | None, limit: int
) -> list[tuple[str, str, str, int, str | None]]:
    """Memories to embed with `model`, with their text: those queued (`embedded_model` NULL),
    or with `after` (a backfill's position), those past it embedded by another model.
    (app, stored user, id, revision, text)."""
    values: tuple[str, ...] = ()
    if after is None:
        where, order = "m.embedded_model IS NULL", "m.update_time"
    else:
        where = "(m.app_name, m.user_id, m.id) > ($2, $3, $4) AND m.embedded_model <> $5"
        order, values = "m.app_name, m.user_id, m.id", (*after, model)
    rows = await connection.fetch(
        f"""SELECT m.app_name, m.user_id, m.id, m.revision, m.text, e.event
            FROM {_WITH_EVENT} WHERE {where} ORDER BY {order} LIMIT $1""",
        limit,
        *values,
    )
    return [
        (
            row["app_name"],
            row["user_id"],
            row["id"],
            row["revision"],
            row["text"] if row["event"] is None else event_text(row["event"]),
        )
        for row in rows
    ]


async def any_unembedded(connection: asyncpg.Connection) -> bool:
    """Whether the worker's queue holds anything."""
    return bool(
        await connection.fetchval(
            # Not `EXISTS (SELECT FROM …)`: Citus cannot plan an empty target list.
            "SELECT true FROM memories WHERE embedded_model IS NULL LIMIT 1"
        )
    )


async def embedded(
    connection: asyncpg.Connection,
    model: str,
    done: list[tuple[str, str, str, int, list[float] | None]],
) -> None:
    """Record the vectors of what `unembedded` gave, each only if its memory is still at the
    revision that was embedded (a change since queued it again); a None vector (no text)
    marks it done without one."""
    vectors = []
    for app_name, user_id, memory_id, revision, vector in done:
        # One memory's at a time: on Citus each goes to its own shard alone.
        current = await connection.fetchval(
            """UPDATE memories SET embedded_model = $1
               WHERE app_name = $2 AND user_id = $3 AND id = $4 AND revision = $5
               RETURNING true""",
            model,
            app_name,
            user_id,
            memory_id,
            revision,
        )
        if current and vector is not None:
            vectors.append((app_name, user_id, memory_id, model, vector))
    if vectors:
        await connection.executemany(
            """INSERT INTO memory_vectors (app_name, user_id, memory_id, model, embedding)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (app_name, user_id, memory_id, model)
               DO UPDATE SET embedding = excluded.embedding""",
            vectors,
        )


async def pending(connection: asyncpg.Connection, model: str) -> int:
    """Memories not yet embedded with `model`."""
    return int(
        await connection.fetchval(
            "SELECT count(*) FROM memories WHERE embedded_model IS DISTINCT FROM $1", model
        )
    )


async def forget_events(
    connection: asyncpg.Connection, key: SessionKey, seqs: list[int] | None
) -> None:
    """Forget the session's events at `seqs` (all of them with None), which this transaction
    removes."""
    rows = await connection.fetch(
        """DELETE FROM memories WHERE app_name = $1 AND user_id = $2 AND session_id = $3
             AND kind = 'event' AND ($4::bigint[] IS NULL OR seq = ANY($4)) RETURNING id""",
        key.app_name,
        key.user_id,
        key.session_id,
        seqs,
    )
    if rows:
        await _forget_rest(connection, key.app_name, key.user_id, [row["id"] for row in rows])


async def reindex_event(connection: asyncpg.Connection, key: SessionKey, seq: int) -> None:
    """The event at `seq` was rewritten: its memory (if it has one) takes its new words, and
    a new revision, which the worker embeds again (a vector of the old text never lands)."""
    memory_id = await connection.fetchval(
        """UPDATE memories m SET search = e.search, revision = m.revision + 1,
                update_time = now(), embedded_model = NULL
           FROM events e
           WHERE m.app_name = $1 AND m.user_id = $2 AND m.session_id = $3 AND m.seq = $4
             AND e.app_name = m.app_name AND e.user_id = m.user_id
             AND e.session_id = m.session_id AND e.seq = m.seq
           RETURNING m.id""",
        key.app_name,
        key.user_id,
        key.session_id,
        seq,
    )
    if memory_id is not None:
        owner = MemoryOwner(key.app_name, key.user_id)
        await delete_vectors(connection, owner, memory_id)
        await _keep_revision(connection, owner, memory_id)


async def delete_expired(connection: asyncpg.Connection, limit: int) -> int:
    """Delete up to `limit` expired memories with their revisions and vectors; how many."""
    rows = await connection.fetch(
        """DELETE FROM memories WHERE (app_name, user_id, id) IN (
                SELECT app_name, user_id, id FROM memories WHERE expire_time <= now()
                ORDER BY expire_time LIMIT $1
            ) AND expire_time <= now()
            RETURNING app_name, user_id, id""",
        limit,
    )
    for row in rows:  # one memory's at a time: on Citus each stays on its shard
        await _forget_rest(connection, row["app_name"], row["user_id"], [row["id"]])
    return len(rows)


# A memory as its export's line gives it (`schemas.MemoryExport`), rendered by PostgreSQL: its
# times as epoch seconds to the microsecond, with its revisions and vectors. `$1` and `$2`
# name the owner, so that on Citus the whole statement reads one shard.
_EXPORT_LINE = """jsonb_build_object(
    'format', 'sessionary.memory.v1', 'appName', m.app_name, 'userId', nullif(m.user_id, ''),
    'id', m.id, 'kind', m.kind, 'revision', m.revision, 'text', m.text,
    'content', m.content, 'author', m.author, 'metadata', m.metadata,
    'topics', to_jsonb(m.topics), 'expireTime', extract(epoch FROM m.expire_time),
    'sessionId', m.session_id, 'seq', m.seq, 'eventIds', to_jsonb(m.event_ids),
    'createTime', extract(epoch FROM m.create_time),
    'updateTime', extract(epoch FROM m.update_time), 'embeddedModel', m.embedded_model,
    'revisions', (SELECT jsonb_agg(jsonb_build_object(
            'revision', r.revision, 'text', r.text, 'content', r.content, 'author', r.author,
            'metadata', r.metadata, 'topics', to_jsonb(r.topics),
            'expireTime', extract(epoch FROM r.expire_time),
            'createTime', extract(epoch FROM r.create_time)) ORDER BY r.revision)
        FROM memory_revisions r
        WHERE r.app_name = $1 AND r.user_id = $2 AND r.memory_id = m.id),
    'vectors', coalesce((SELECT jsonb_agg(jsonb_build_object(
            'model', v.model, 'vector', to_jsonb(v.embedding)) ORDER BY v.model)
        FROM memory_vectors v
        WHERE v.app_name = $1 AND v.user_id = $2 AND v.memory_id = m.id), '[]'::jsonb)
    )::text"""


async def owners(
    connection: asyncpg.Connection, app_name: str | None, user_id: str | None
) -> list[tuple[str, str]]:
    """The (app, stored user) pairs with memories within an export's reach (every app, or
    every user, where None), in order."""
    rows = await connection.fetch(
        """SELECT DISTINCT app_name, user_id FROM memories
           WHERE ($1::text IS NULL OR app_name = $1) AND ($2::text IS NULL OR user_id = $2)
           ORDER BY app_name, user_id""",
        app_name,
        user_id,
    )
    return [(row["app_name"], row["user_id"]) for row in rows]


async def export_lines(
    connection: asyncpg.Connection, owner: MemoryOwner, page: int
) -> AsyncIterator[bytes]:
    """The owner's memories as they read (unexpired, their event there), each its export's
    line, oldest first, `page` at a time (in the caller's snapshot: one transaction). Joined
    to the event's session rather than `_EVENT_LIVE`'s subquery, which beside the line's own
    Citus cannot plan."""
    after: tuple[datetime, str] | None = None
    while True:
        rows = await connection.fetch(
            f"""SELECT convert_to({_EXPORT_LINE}, 'UTF8') AS line, m.create_time, m.id
                FROM {_WITH_EVENT} LEFT JOIN sessions s ON m.kind = 'event'
                    AND s.app_name = m.app_name AND s.user_id = m.user_id AND s.id = m.session_id
                WHERE m.app_name = $1 AND m.user_id = $2 AND {_UNEXPIRED}
                  AND (m.kind = 'text' OR (e.event IS NOT NULL AND {_SESSION_LIVE}))
                  AND ($3::timestamptz IS NULL OR (m.create_time, m.id) > ($3, $4))
                ORDER BY m.create_time, m.id LIMIT $5""",
            owner.app_name,
            owner.stored_user,
            None if after is None else after[0],
            None if after is None else after[1],
            page,
        )
        for row in rows:
            yield row["line"]
        if len(rows) < page:
            return
        after = rows[-1]["create_time"], rows[-1]["id"]


async def export_line(
    connection: asyncpg.Connection, owner: MemoryOwner, memory_id: str
) -> bytes | None:
    """The memory's export line, whatever its state: what an import compares with."""
    line: bytes | None = await connection.fetchval(
        f"SELECT convert_to({_EXPORT_LINE}, 'UTF8') FROM memories m WHERE {_KEY}",
        owner.app_name,
        owner.stored_user,
        memory_id,
    )
    return line


async def import_memory(
    connection: asyncpg.Connection,
    owner: MemoryOwner,
    memory: dict[str, Any],
    revisions: list[tuple[int, MemoryDraft, datetime]],
    vectors: list[tuple[str, list[float]]],
    config: str,
) -> bool:
    """Store a memory as an export gave it, with its revisions and vectors: its words
    indexed again (a remembered event's are its event's, which must be stored). False when
    its id is taken (nothing written), or its event is not there."""
    values = (
        owner.app_name,
        owner.stored_user,
        memory["id"],
        memory["revision"],
        *_draft_values(memory["draft"]),
        memory["event_ids"],
        memory["create_time"],
        memory["update_time"],
        memory["embedded_model"],
    )
    columns = f"""app_name, user_id, id, kind, revision, {_DRAFT_COLUMNS}, event_ids,
        create_time, update_time, embedded_model, session_id, seq, search"""
    draft = "$4, $5, $6, $7, $8, $9, to_timestamp($10), $11, $12, $13, $14"
    if memory["kind"] == "text":
        statement = f"""INSERT INTO memories ({columns})
            VALUES ($1, $2, $3, 'text', {draft}, $15, NULL,
                to_tsvector('{config}'::regconfig, $5))
            ON CONFLICT DO NOTHING RETURNING true"""
        values += (memory["session_id"],)
    else:  # from its event's row, on the event's shard (Citus takes no subquery in VALUES)
        statement = f"""INSERT INTO memories ({columns})
            SELECT e.app_name, e.user_id, $3, 'event', {draft}, e.session_id, e.seq, e.search
            FROM events e
            WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $15 AND e.seq = $16
            ON CONFLICT DO NOTHING RETURNING true"""
        values += (memory["session_id"], memory["seq"])
    if not await connection.fetchval(statement, *values):
        return False
    await connection.executemany(
        f"""INSERT INTO memory_revisions (app_name, user_id, memory_id, revision,
                {_DRAFT_COLUMNS}, create_time)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, to_timestamp($10), $11)""",
        [
            (owner.app_name, owner.stored_user, memory["id"], number, *_draft_values(draft), at)
            for number, draft, at in revisions
        ],
    )
    await connection.executemany(
        """INSERT INTO memory_vectors (app_name, user_id, memory_id, model, embedding)
           VALUES ($1, $2, $3, $4, $5)""",
        [
            (owner.app_name, owner.stored_user, memory["id"], model, vector)
            for model, vector in vectors
        ],
    )
    return True
