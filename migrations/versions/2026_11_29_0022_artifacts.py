"""Artifacts, ADK's third service: names per session (or per user), their versions, and the
bytes the versions point at, stored once per sha256 within an app and user, in chunks.

A blob's bytes are in `artifact_chunks` (`store` postgres) or, with an object store configured,
one object named by its id (`store` s3).

The chunks' bytes are stored out of line without compression (`STORAGE EXTERNAL`): artifacts
are mostly compressed already (images, PDFs, archives), so trying costs CPU for nothing, and
uncompressed they can be read a slice at a time.

On Citus, `sessionary migrate` distributes the four tables by `user_id`, co-located with the
sessions (`app.sharding`).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP, UUID

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(128)
NAME = sa.String(1024)


def _scope() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("app_name", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
    ]


def _now() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "create_time", TIMESTAMP(timezone=True), nullable=False, server_default=sa.func.now()
    )


def upgrade() -> None:
    op.create_table(
        "artifacts",
        *_scope(),
        sa.Column("session_id", ID, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("last_version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "name", name="pk_artifacts"),
    )
    op.create_table(
        "artifact_versions",
        *_scope(),
        sa.Column("session_id", ID, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("mime_type", sa.String(255)),
        sa.Column("display_name", sa.Text()),
        sa.Column("file_uri", sa.Text()),
        sa.Column("content_hash", sa.LargeBinary(32)),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column(
            "custom_metadata", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")
        ),
        _now(),
        sa.Column("saved_at", sa.BigInteger()),
        sa.CheckConstraint(
            "(kind = 'reference') = (content_hash IS NULL)",
            name="ck_artifact_versions_content",
        ),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "session_id", "name", "version", name="pk_artifact_versions"
        ),
    )
    op.create_table(
        "artifact_blobs",
        *_scope(),
        sa.Column("content_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("blob_id", UUID(as_uuid=False), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("chunk_size", sa.Integer(), nullable=False),
        sa.Column("refs", sa.BigInteger(), nullable=False),
        sa.Column("store", sa.String(8), nullable=False, server_default="postgres"),
        _now(),
        sa.PrimaryKeyConstraint("app_name", "user_id", "content_hash", name="pk_artifact_blobs"),
    )
    # The sweeper's: which objects of the object store a blob points at.
    op.create_index("ix_artifact_blobs_blob_id", "artifact_blobs", ["blob_id"])
    op.create_table(
        "artifact_chunks",
        *_scope(),
        sa.Column("blob_id", UUID(as_uuid=False), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("app_name", "user_id", "blob_id", "n", name="pk_artifact_chunks"),
    )
    op.execute("ALTER TABLE artifact_chunks ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    for table in ("artifact_chunks", "artifact_blobs", "artifact_versions", "artifacts"):
        op.drop_table(table)
