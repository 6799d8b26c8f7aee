"""Core tables: sessions, events, app_states, user_states.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(128)
TIMESTAMPTZ = sa.TIMESTAMP(timezone=True)


def _state() -> sa.Column[dict[str, object]]:
    return sa.Column("state", JSONB, server_default=sa.text("'{}'::jsonb"), nullable=False)


def _time(name: str) -> sa.Column[object]:
    return sa.Column(name, TIMESTAMPTZ, server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("app_name", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("id", ID, nullable=False),
        _state(),
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        _time("create_time"),
        _time("update_time"),
        sa.PrimaryKeyConstraint("app_name", "user_id", "id", name="pk_sessions"),
    )
    op.create_index(
        "ix_sessions_app_name_user_id_update_time_id",
        "sessions",
        ["app_name", "user_id", "update_time", "id"],
    )
    op.create_index(
        "ix_sessions_app_name_update_time_user_id_id",
        "sessions",
        ["app_name", "update_time", "user_id", "id"],
    )
    op.create_table(
        "events",
        sa.Column("app_name", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("session_id", ID, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("id", ID, nullable=False),
        sa.Column("invocation_id", sa.String(), nullable=True),
        sa.Column("author", sa.String(), nullable=True),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("request_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("event", JSONB, nullable=False),
        sa.ForeignKeyConstraint(
            ["app_name", "user_id", "session_id"],
            ["sessions.app_name", "sessions.user_id", "sessions.id"],
            name="fk_events_app_name_user_id_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_events"),
        sa.UniqueConstraint(
            "app_name",
            "user_id",
            "session_id",
            "id",
            name="uq_events_app_name_user_id_session_id_id",
        ),
    )
    op.create_index(
        "ix_events_app_name_user_id_session_id_timestamp",
        "events",
        ["app_name", "user_id", "session_id", "timestamp"],
    )
    op.create_table(
        "app_states",
        sa.Column("app_name", ID, nullable=False),
        _state(),
        _time("update_time"),
        sa.PrimaryKeyConstraint("app_name", name="pk_app_states"),
    )
    op.create_table(
        "user_states",
        sa.Column("app_name", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        _state(),
        _time("update_time"),
        sa.PrimaryKeyConstraint("app_name", "user_id", name="pk_user_states"),
    )


def downgrade() -> None:
    op.drop_table("user_states")
    op.drop_table("app_states")
    op.drop_index("ix_events_app_name_user_id_session_id_timestamp", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_sessions_app_name_update_time_user_id_id", table_name="sessions")
    op.drop_index("ix_sessions_app_name_user_id_update_time_id", table_name="sessions")
    op.drop_table("sessions")
