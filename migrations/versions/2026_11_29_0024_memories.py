"""Memories: what an app or a user's agents should recall, by meaning and by words.

`memories` holds each memory as it is now: a text of its own (`kind` text), or an event of a
session that was added to memory (`kind` event), which keeps no copy of the event's text, only
its words' index (`search`) and its vectors, and is deleted with the session. App-wide
memories have `user_id` '' (no user id is empty). Each change of a memory is a revision,
kept whole in `memory_revisions`.

`memory_vectors` holds a memory's embeddings, one per model, as `real[]`: the table is the
same with or without pgvector, which adds the HNSW indexes (`app.vectors`, run by every
`sessionary migrate`). `memories.embedded_model` is the model the server last embedded the
memory's current revision with; NULL, the embedding worker's queue.

On Citus, `sessionary migrate` distributes the three tables by `user_id`, co-located with the
sessions (`app.sharding`): one user's recall reads one shard, and the app's memories another.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL, TIMESTAMP, TSVECTOR

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(128)
TIME = TIMESTAMP(timezone=True)


def _key(memory_id: str = "id") -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("app_name", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column(memory_id, ID, nullable=False),
    ]


def _fields() -> list[sa.Column]:  # type: ignore[type-arg]
    """What each revision of a memory holds."""
    return [
        sa.Column("text", sa.Text()),
        sa.Column("content", JSONB()),
        sa.Column("author", sa.String(128)),
        sa.Column("metadata", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("topics", ARRAY(sa.Text()), nullable=False, server_default="{}"),
        sa.Column("expire_time", TIME),
    ]


def upgrade() -> None:
    op.create_table(
        "memories",
        *_key(),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        *_fields(),
        sa.Column("session_id", ID),
        sa.Column("seq", sa.BigInteger()),
        sa.Column("event_ids", ARRAY(sa.Text()), nullable=False, server_default="{}"),
        sa.Column("create_time", TIME, nullable=False, server_default=sa.func.now()),
        sa.Column("update_time", TIME, nullable=False, server_default=sa.func.now()),
        sa.Column("search", TSVECTOR()),
        sa.Column("embedded_model", sa.String(256)),
        sa.CheckConstraint("kind IN ('text', 'event')", name="ck_memories_kind"),
        sa.CheckConstraint(
            "(kind = 'event') = (seq IS NOT NULL AND session_id IS NOT NULL)",
            name="ck_memories_event",
        ),
        sa.PrimaryKeyConstraint("app_name", "user_id", "id", name="pk_memories"),
    )
    # Listing, newest change first; remembering an event once; the worker's queue; recall by
    # words and by topic; the sweeper's expired memories.
    op.create_index(
        "ix_memories_listing",
        "memories",
        ["app_name", "user_id", "update_time", "id"],
    )
    op.create_index(
        "uq_memories_event",
        "memories",
        ["app_name", "user_id", "session_id", "seq"],
        unique=True,
        postgresql_where=sa.text("seq IS NOT NULL"),
    )
    op.create_index(
        "ix_memories_unembedded",
        "memories",
        ["update_time"],
        postgresql_where=sa.text("embedded_model IS NULL"),
    )
    op.create_index("ix_memories_search", "memories", ["search"], postgresql_using="gin")
    op.create_index("ix_memories_topics", "memories", ["topics"], postgresql_using="gin")
    op.create_index(
        "ix_memories_expire_time",
        "memories",
        ["expire_time"],
        postgresql_where=sa.text("expire_time IS NOT NULL"),
    )
    op.create_table(
        "memory_revisions",
        *_key("memory_id"),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        *_fields(),
        sa.Column("create_time", TIME, nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "memory_id", "revision", name="pk_memory_revisions"
        ),
    )
    op.create_table(
        "memory_vectors",
        *_key("memory_id"),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("embedding", ARRAY(REAL()), nullable=False),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "memory_id", "model", name="pk_memory_vectors"
        ),
    )


def downgrade() -> None:
    for table in ("memory_vectors", "memory_revisions", "memories"):
        op.drop_table(table)
