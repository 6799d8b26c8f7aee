"""Appends as HOT updates: the list indexes hold the whole second of `update_time`, not the
time itself.

Every append sets `update_time` to its event's timestamp; with it in both list indexes, each
append added an entry to each index and PostgreSQL could never update the row in place (a
heap-only tuple), so a busy session's row left a trail of dead versions and index entries that
only vacuum removes. Holding `update_second` instead, appends within the same second change no
indexed column: with room on the page (fillfactor 80), the update is HOT. Listings keep their
exact order: the index gives the seconds in order, and each second's rows are sorted by
`update_time` (an incremental sort of a few rows).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("update_second", sa.BigInteger()))
    op.execute("UPDATE sessions SET update_second = floor(extract(epoch FROM update_time))")
    op.alter_column("sessions", "update_second", nullable=False)
    op.drop_index("ix_sessions_app_name_user_id_update_time_id", "sessions")
    op.drop_index("ix_sessions_app_name_update_time_user_id_id", "sessions")
    op.create_index(
        "ix_sessions_app_name_user_id_update_second",
        "sessions",
        ["app_name", "user_id", "update_second"],
    )
    op.create_index("ix_sessions_app_name_update_second", "sessions", ["app_name", "update_second"])
    op.execute("ALTER TABLE sessions SET (fillfactor = 80)")


def downgrade() -> None:
    op.execute("ALTER TABLE sessions RESET (fillfactor)")
    op.drop_index("ix_sessions_app_name_update_second", "sessions")
    op.drop_index("ix_sessions_app_name_user_id_update_second", "sessions")
    op.create_index(
        "ix_sessions_app_name_update_time_user_id_id",
        "sessions",
        ["app_name", "update_time", "user_id", "id"],
    )
    op.create_index(
        "ix_sessions_app_name_user_id_update_time_id",
        "sessions",
        ["app_name", "user_id", "update_time", "id"],
    )
    op.drop_column("sessions", "update_second")
