"""Erasures: a user's erase, run as a job of bounded transactions. A running erase holds the
user's id, which fences their writes; a finished one keeps only the pseudonym (as the audit
log does), so that after it the id is in no table.

On Citus a reference table: read by every fenced write, on the coordinator.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    now = sa.func.now()
    op.create_table(
        "erasures",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128)),
        sa.Column("user_ref", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(32)),
        sa.Column("removed", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column(
            "deleted_keys", sa.ARRAY(sa.String(32)), nullable=False, server_default=sa.text("'{}'")
        ),
        sa.Column("create_time", TIMESTAMP(timezone=True), nullable=False, server_default=now),
        sa.Column("update_time", TIMESTAMP(timezone=True), nullable=False, server_default=now),
        sa.Column("finish_time", TIMESTAMP(timezone=True)),
        sa.PrimaryKeyConstraint("id", name="pk_erasures"),
    )
    op.create_index(
        "uq_erasures_running",
        "erasures",
        ["app_name", "user_id"],
        unique=True,
        postgresql_where=sa.text("user_id IS NOT NULL"),
    )
    op.create_index("ix_erasures_user_ref", "erasures", ["app_name", "user_ref", "create_time"])


def downgrade() -> None:
    op.drop_table("erasures")
