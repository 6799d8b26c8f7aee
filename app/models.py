"""The tables, with ADK's names: sessions, events, app_states, user_states."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    CheckConstraint,
    Double,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    func,
    or_,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, REAL, TIMESTAMP, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.elements import ColumnElement

from app.limits import (
    ARTIFACT_NAME_BYTES,
    DISPLAY_NAME_LENGTH,
    ID_LENGTH,
    MAX_VERSION,
    MIME_TYPE_LENGTH,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

Json = dict[str, Any]
Timestamp = TIMESTAMP(timezone=True)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _id() -> Mapped[str]:
    return mapped_column(String(ID_LENGTH), primary_key=True)


def _state() -> Mapped[Json]:
    return mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))


def _count() -> Mapped[int]:
    return mapped_column(BigInteger, nullable=False, server_default="0")


def _now() -> Mapped[datetime]:
    return mapped_column(Timestamp, nullable=False, server_default=func.now())


class StorageSession(Base):
    """A conversation. `version` counts its writes: each append takes the next seq from it, and
    each other write (a removal, a trim) takes one too, so a seq is never used twice."""

    __tablename__ = "sessions"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    id: Mapped[str] = _id()
    state: Mapped[Json] = _state()
    version: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    create_time: Mapped[datetime] = _now()
    # The timestamp of the last event, as in ADK (the create time while there is none).
    update_time: Mapped[datetime] = _now()
    # Its whole second, which the list indexes hold instead of the exact time: appends within
    # one second change no indexed column, so PostgreSQL can update the row in place (HOT)
    # rather than add an entry to every index for each event (migration 0007).
    update_second: Mapped[int] = mapped_column(BigInteger, nullable=False)
    # Lineage: a fork or a child names the session of the same user it came from, and for a
    # fork the seq it was taken at. Only a reference: its parent may be deleted before it.
    kind: Mapped[str] = mapped_column(String(8), nullable=False, server_default="root")
    parent_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    parent_seq: Mapped[int | None] = mapped_column(BigInteger)
    # A child made for one of its parent's function calls answers it when it is closed.
    function_call_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    status: Mapped[str] = mapped_column(String(8), nullable=False, server_default="open")
    outcome: Mapped[str | None] = mapped_column(String(16))
    # The session-scoped state as of `base_seq`, with the events after it what every earlier
    # state is rebuilt from: the create state at 0, moved forward by a trim or a reset.
    base_seq: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    base_state: Mapped[Json] = _state()
    # The session-scoped deltas of events removed since `base_seq` (`[{seq, stateDelta}]`, in
    # seq order): a removal takes an event, not its change to the state, so the state at every
    # seq stays what it was. Empty, the state is the base state with the kept events' deltas
    # applied in order, and a point-in-time read near the end undoes the recent changes.
    removed_deltas: Mapped[list[Json]] = mapped_column(
        JSONB, nullable=False, server_default=text("'[]'::jsonb")
    )
    # The sums of its events' `usageMetadata` token counts, kept by every write of events.
    prompt_tokens: Mapped[int] = _count()
    candidates_tokens: Mapped[int] = _count()
    total_tokens: Mapped[int] = _count()
    # What people call it and tag it with; the lists filter on both.
    display_name: Mapped[str | None] = mapped_column(String(DISPLAY_NAME_LENGTH))
    labels: Mapped[dict[str, str]] = _state()
    # Past it the session reads as absent (`live`), until the sweeper deletes it.
    expire_time: Mapped[datetime | None] = mapped_column(Timestamp)

    __table_args__ = (
        # Keyset pagination of list-by-user and list-by-app, both directions: rows come in
        # second order from the index, and are sorted by exact time within each second.
        Index(None, "app_name", "user_id", "update_second"),
        Index(None, "app_name", "update_second"),
        # A session's forks and children, in the order they were made.
        Index(
            "ix_sessions_children",
            "app_name",
            "user_id",
            "parent_id",
            "create_time",
            "id",
            postgresql_where=text("parent_id IS NOT NULL"),
        ),
        # One child per function call: its close appends the call's one response.
        Index(
            "uq_sessions_function_call",
            "app_name",
            "user_id",
            "parent_id",
            "function_call_id",
            unique=True,
            postgresql_where=text("function_call_id IS NOT NULL"),
        ),
        Index(
            "ix_sessions_labels",
            "labels",
            postgresql_using="gin",
            postgresql_ops={"labels": "jsonb_path_ops"},
        ),
        # A hash of the name (migration 0020): a btree entry holds at most 2,704 bytes, less
        # than a display name may take.
        Index(
            "ix_sessions_display_name",
            "app_name",
            text("md5(display_name)"),
            postgresql_where=text("display_name IS NOT NULL"),
        ),
        # The sweeper's: expired sessions, soonest first.
        Index(
            "ix_sessions_expire_time",
            "expire_time",
            postgresql_where=text("expire_time IS NOT NULL"),
        ),
        CheckConstraint("kind IN ('root', 'fork', 'child')", name="kind"),
        CheckConstraint("status IN ('open', 'closed')", name="status"),
        CheckConstraint("outcome IN ('completed', 'failed', 'canceled')", name="outcome"),
        # Every write that takes a version, whichever statement makes it (migration 0021).
        CheckConstraint(f"version <= {MAX_VERSION}", name="version_max"),
    )


# The name of that check, as a write past `MAX_VERSION` reports it (`app.db.translated`).
VERSION_CONSTRAINT = "ck_sessions_version_max"


# A session is live until its `expire_time`: past it, every read and write takes it for absent
# (a 404), whether or not the sweeper has deleted it yet. As SQL text for the statements
# written in SQL, and as an expression (`live`) for the others.
LIVE_SQL = "(expire_time IS NULL OR expire_time > now())"


def live() -> ColumnElement[bool]:
    return or_(StorageSession.expire_time.is_(None), StorageSession.expire_time > func.now())


# The events that change what a model is shown: rewinds, compactions, observation masks
# (`app.rules.context`). Indexed alone, so the context view reads them without the others.
MARKED = text(
    "(event -> 'actions') ?| ARRAY['compaction', 'rewindBeforeInvocationId'] "
    "OR (event -> 'customMetadata') ? 'sessionary'"
)


class StorageEvent(Base):
    """One event of a session's append-only log, stored verbatim as JSONB.

    No foreign key to its session (nor from `pending_events`): every write of an event holds
    its session's row lock or creates the session, and deleting a session deletes its events
    in the same transaction (`repositories.sessions.delete_logs`); the key's check cost each
    append a sixth of its PostgreSQL time (migration 0015)."""

    __tablename__ = "events"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    session_id: Mapped[str] = _id()
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    id: Mapped[str] = mapped_column(String(ID_LENGTH), nullable=False)
    invocation_id: Mapped[str | None] = mapped_column(String)
    author: Mapped[str | None] = mapped_column(String)
    # Epoch seconds exactly as ADK sends them, so timestamp filters compare like ADK's.
    timestamp: Mapped[float] = mapped_column(Double, nullable=False)
    # sha256 of the event as the client sent it: an identical retry is recognised by it.
    request_hash: Mapped[bytes] = mapped_column(LargeBinary(32), nullable=False)
    event: Mapped[Json] = mapped_column(JSONB, nullable=False)
    # What the context view reads instead of the event (`app.rules.context.facts`), taken when
    # it is stored: its token estimate, the ids of its function calls and of the calls its
    # responses answer. NULL for events stored before migration 0008.
    tokens: Mapped[int | None] = mapped_column(Integer)
    calls: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    responses: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    # Its `usageMetadata` token counts, NULL where it reports none (`rules.events.usage_of`).
    prompt_tokens: Mapped[int | None] = mapped_column(BigInteger)
    candidates_tokens: Mapped[int | None] = mapped_column(BigInteger)
    total_tokens: Mapped[int | None] = mapped_column(BigInteger)
    # Its words (`rules.search.event_text`) for full-text search, in the configuration
    # `SESSIONARY_SEARCH_CONFIG` had when it was written.
    search: Mapped[str | None] = mapped_column(TSVECTOR)

    __table_args__ = (
        UniqueConstraint("app_name", "user_id", "session_id", "id"),
        Index(None, "app_name", "user_id", "session_id", "timestamp"),
        # The app's events newest first: where search takes its candidates (migration 0016);
        # for search alone (0017): a statement about one session never mistakes it for a key.
        Index(None, "app_name", "timestamp", postgresql_where=text("search IS NOT NULL")),
        Index(
            "ix_events_marks", "app_name", "user_id", "session_id", "seq", postgresql_where=MARKED
        ),
        Index("ix_events_search", "search", postgresql_using="gin"),
    )


class StoragePendingEvent(Base):
    """An event queued while a turn runs (a user typing ahead), kept apart from the log until
    it is promoted into it, in `position` order."""

    __tablename__ = "pending_events"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    session_id: Mapped[str] = _id()
    position: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    id: Mapped[str] = mapped_column(String(ID_LENGTH), nullable=False)
    event: Mapped[Json] = mapped_column(JSONB, nullable=False)
    create_time: Mapped[datetime] = _now()

    __table_args__ = (UniqueConstraint("app_name", "user_id", "session_id", "id"),)


class StorageAppState(Base):
    """State shared by every user and session of an app (`app:` keys, stored unprefixed)."""

    __tablename__ = "app_states"

    app_name: Mapped[str] = _id()
    state: Mapped[Json] = _state()
    update_time: Mapped[datetime] = _now()


class StorageUserState(Base):
    """State shared by every session of one user of an app (`user:` keys, stored unprefixed)."""

    __tablename__ = "user_states"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    state: Mapped[Json] = _state()
    update_time: Mapped[datetime] = _now()


class StorageApiKey(Base):
    """An API key, stored as the sha256 of its secret: the key itself is shown once, at creation.

    `app_name` NULL is an admin key (every app); `user_id` NULL means every user of the app.
    `app_state_write` lets a key for one user write `app:` state too (app-wide keys always may).
    """

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret_hash: Mapped[bytes] = mapped_column(LargeBinary(32), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False, server_default="")
    app_name: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    user_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    read_only: Mapped[bool] = mapped_column(nullable=False, server_default=text("false"))
    app_state_write: Mapped[bool] = mapped_column(nullable=False, server_default=text("false"))
    create_time: Mapped[datetime] = _now()
    revoke_time: Mapped[datetime | None] = mapped_column(Timestamp)


# --- artifacts: what agents save, versioned by name, their bytes stored once per content ----
#
# A name lives in a session (`session_id`) or, for a `user:` name, in its user (`session_id`
# ''): ADK's two scopes. Each save is a version; a version points at its bytes by their sha256
# within the app and user (`artifact_blobs`), so the same bytes saved twice, or a fork's copy
# of its parent's versions, cost one copy. All four tables are distributed by `user_id` on
# Citus, with the user's sessions.

USER_SCOPE = ""  # the `session_id` of a `user:` name's rows


def _artifact_name() -> Mapped[str]:
    return mapped_column(String(ARTIFACT_NAME_BYTES), primary_key=True)


class StorageArtifact(Base):
    """An artifact's name in its scope, with the last version given out: the row a save locks
    to number the next one, so that concurrent saves take consecutive versions."""

    __tablename__ = "artifacts"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    session_id: Mapped[str] = _id()
    name: Mapped[str] = _artifact_name()
    last_version: Mapped[int] = mapped_column(BigInteger, nullable=False)


class StorageArtifactVersion(Base):
    """One saved version: ADK's `ArtifactVersion` and what its bytes are.

    `kind` is how ADK handed it over: `bytes` (a `Part`'s `inline_data`), `text` (a `Part`'s
    `text`, its bytes UTF-8) or `reference` (`file_data`: only `file_uri`, no bytes here).
    `saved_at` is the session's version when it was saved (NULL for a `user:` name): a read
    of the session as of seq N sees the versions saved before the write that took N.
    """

    __tablename__ = "artifact_versions"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    session_id: Mapped[str] = _id()
    name: Mapped[str] = _artifact_name()
    version: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    mime_type: Mapped[str | None] = mapped_column(String(MIME_TYPE_LENGTH))
    display_name: Mapped[str | None] = mapped_column(Text)
    file_uri: Mapped[str | None] = mapped_column(Text)
    content_hash: Mapped[bytes | None] = mapped_column(LargeBinary(32))
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    custom_metadata: Mapped[Json] = _state()
    create_time: Mapped[datetime] = _now()
    saved_at: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint("(kind = 'reference') = (content_hash IS NULL)", name="content"),
    )


class StorageArtifactBlob(Base):
    """Bytes stored once per sha256 within an app and user, with how many versions point at
    them (`refs`): the last version to go takes them with it, in its own transaction. `store`
    says where they are: `postgres` (in `artifact_chunks`) or `s3` (an object named by
    `blob_id`, in the configured object store)."""

    __tablename__ = "artifact_blobs"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    content_hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    blob_id: Mapped[Any] = mapped_column(UUID(as_uuid=False), nullable=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    chunk_size: Mapped[int] = mapped_column(Integer, nullable=False)
    refs: Mapped[int] = mapped_column(BigInteger, nullable=False)
    store: Mapped[str] = mapped_column(String(8), nullable=False, server_default="postgres")
    create_time: Mapped[datetime] = _now()

    # The sweeper's: which objects of the object store a blob points at.
    __table_args__ = (Index(None, "blob_id"),)


class StorageArtifactChunk(Base):
    """A blob's bytes in order, `chunk_size` bytes each but the last: written as the upload
    arrives, before its hash is known, so keyed by the upload's own id."""

    __tablename__ = "artifact_chunks"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    blob_id: Mapped[Any] = mapped_column(UUID(as_uuid=False), primary_key=True)
    n: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class _MemoryFields:
    """What each revision of a memory holds (a mixin: each table gets its own columns)."""

    text_: Mapped[str | None] = mapped_column("text", Text)
    content: Mapped[Json | None] = mapped_column(JSONB)
    author: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    metadata_: Mapped[Json] = mapped_column(
        "metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")
    )
    topics: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False, server_default="{}")
    expire_time: Mapped[datetime | None] = mapped_column(Timestamp)


class StorageMemory(_MemoryFields, Base):
    """A memory as it is now: a text of its own (`kind` text), or an event of a session added
    to memory (`kind` event: `session_id` and `seq` name it), which keeps no copy of the
    event's text, only the index of its words and its vectors. `user_id` '' is the app's."""

    __tablename__ = "memories"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    id: Mapped[str] = _id()
    kind: Mapped[str] = mapped_column(String(8), nullable=False)
    revision: Mapped[int] = mapped_column(BigInteger, nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    seq: Mapped[int | None] = mapped_column(BigInteger)
    event_ids: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False, server_default="{}")
    create_time: Mapped[datetime] = _now()
    update_time: Mapped[datetime] = _now()
    search: Mapped[str | None] = mapped_column(TSVECTOR)
    # The model the server embedded this revision with; NULL, the embedding worker's queue.
    embedded_model: Mapped[str | None] = mapped_column(String(256))

    __table_args__ = (
        Index("ix_memories_listing", "app_name", "user_id", "update_time", "id"),
        Index(
            "uq_memories_event",
            "app_name",
            "user_id",
            "session_id",
            "seq",
            unique=True,
            postgresql_where=text("seq IS NOT NULL"),
        ),
        Index(
            "ix_memories_unembedded",
            "update_time",
            postgresql_where=text("embedded_model IS NULL"),
        ),
        Index("ix_memories_search", "search", postgresql_using="gin"),
        Index("ix_memories_topics", "topics", postgresql_using="gin"),
        Index(
            "ix_memories_expire_time",
            "expire_time",
            postgresql_where=text("expire_time IS NOT NULL"),
        ),
        CheckConstraint("kind IN ('text', 'event')", name="kind"),
        CheckConstraint(
            "(kind = 'event') = (seq IS NOT NULL AND session_id IS NOT NULL)", name="event"
        ),
    )


class StorageMemoryRevision(_MemoryFields, Base):
    """Every revision of a memory, the current one included: what a rollback restores."""

    __tablename__ = "memory_revisions"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    memory_id: Mapped[str] = _id()
    revision: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    create_time: Mapped[datetime] = _now()


class StorageMemoryVector(Base):
    """A memory's embedding by one model, unit length. `real[]`, not pgvector's type: the
    table is the same on a server without pgvector, whose HNSW indexes (`app.vectors`) cast
    it."""

    __tablename__ = "memory_vectors"

    app_name: Mapped[str] = _id()
    user_id: Mapped[str] = _id()
    memory_id: Mapped[str] = _id()
    model: Mapped[str] = mapped_column(String(256), primary_key=True)
    embedding: Mapped[list[float]] = mapped_column(ARRAY(REAL), nullable=False)


class StorageAuditRecord(Base):
    """One destructive or administrative action: when, by which key (its id), what (ids,
    counts, never content), how it ended. Users are named by `user_ref`, a keyed hash."""

    __tablename__ = "audit_log"

    seq: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    time: Mapped[datetime] = mapped_column(Timestamp, nullable=False, server_default=func.now())
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    key_id: Mapped[str | None] = mapped_column(String(32))
    app_name: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    user_ref: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[Json] = mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    outcome: Mapped[str] = mapped_column(String(16), nullable=False, server_default="ok")

    __table_args__ = (
        Index("ix_audit_log_time", "time"),
        Index("ix_audit_log_app_name_time", "app_name", "time"),
        Index("ix_audit_log_user_ref_time", "user_ref", "time"),
    )


class StorageServerSecret(Base):
    """Secrets the server makes for itself once (the audit log's pseudonym key)."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class StorageErasure(Base):
    """An erase of one user of an app, or of the whole app: a job of bounded transactions.
    While it runs, its `user_id` fences the user's writes (refused), or for the app ('', as
    its `user_ref`) every write of the app; once done, only the pseudonym is left."""

    __tablename__ = "erasures"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    app_name: Mapped[str] = mapped_column(String(ID_LENGTH), nullable=False)
    user_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    user_ref: Mapped[str] = mapped_column(String(64), nullable=False)
    key_id: Mapped[str | None] = mapped_column(String(32))
    removed: Mapped[Json] = mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    deleted_keys: Mapped[list[str]] = mapped_column(
        ARRAY(String(32)), nullable=False, server_default=text("'{}'")
    )
    create_time: Mapped[datetime] = mapped_column(
        Timestamp, nullable=False, server_default=func.now()
    )
    update_time: Mapped[datetime] = mapped_column(
        Timestamp, nullable=False, server_default=func.now()
    )
    finish_time: Mapped[datetime | None] = mapped_column(Timestamp)
    scope: Mapped[str] = mapped_column(String(8), nullable=False, server_default="user")

    __table_args__ = (
        CheckConstraint(
            "scope = 'user' AND user_ref <> '' AND user_id <> '' "
            "OR scope = 'app' AND user_ref = '' AND coalesce(user_id, '') = ''",
            name="scope",
        ),
        Index(
            "uq_erasures_running",
            "app_name",
            "user_id",
            unique=True,
            postgresql_where=text("user_id IS NOT NULL"),
        ),
        Index("ix_erasures_user_ref", "app_name", "user_ref", "create_time"),
    )
