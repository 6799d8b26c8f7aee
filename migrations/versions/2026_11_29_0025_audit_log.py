"""The audit log: who did what destructive or administrative thing, when, and how it ended,
never with content. Users (and their sessions) are named by a keyed hash, a pseudonym under a
server secret kept in `server_secrets` (or set by the operator), so that once a user is
erased their id is in no table, yet the log still answers for it.

On Citus both are reference tables: small, written rarely, read on the coordinator.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("seq", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("time", TIMESTAMP(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("key_id", sa.String(32)),
        sa.Column("app_name", sa.String(128)),
        sa.Column("user_ref", sa.String(64)),
        sa.Column("detail", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("outcome", sa.String(16), nullable=False, server_default="ok"),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_time", "audit_log", ["time"])
    op.create_index("ix_audit_log_app_name_time", "audit_log", ["app_name", "time"])
    op.create_index("ix_audit_log_user_ref_time", "audit_log", ["user_ref", "time"])
    op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_server_secrets"),
    )


def downgrade() -> None:
    op.drop_table("server_secrets")
    op.drop_table("audit_log")
