"""Queued input: events a user sent while a turn was running, kept apart from the log until
they are promoted into it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pending_events",
        sa.Column("app_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("position", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("event", JSONB(), nullable=False),
        sa.Column(
            "create_time", TIMESTAMP(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.ForeignKeyConstraint(
            ["app_name", "user_id", "session_id"],
            ["sessions.app_name", "sessions.user_id", "sessions.id"],
            name="fk_pending_events_app_name_user_id_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "app_name", "user_id", "session_id", "position", name="pk_pending_events"
        ),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "id",
            name="uq_pending_events_app_name_user_id_session_id_id",
        ),
    )


def downgrade() -> None:
    op.drop_table("pending_events")
