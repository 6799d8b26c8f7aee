"""Labels, display names and retention on sessions: `labels` (a string map the
lists filter on by containment, GIN-indexed), `display_name` (indexed per app for the list's
exact filter), `expire_time` (a session past it reads as absent at once; the sweeper finds
the expired ones through a partial index and deletes them).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("display_name", sa.String(1024)))
    op.add_column(
        "sessions",
        sa.Column("labels", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
    )
    op.add_column("sessions", sa.Column("expire_time", TIMESTAMP(timezone=True)))
    op.create_index(
        "ix_sessions_labels",
        "sessions",
        ["labels"],
        postgresql_using="gin",
        postgresql_ops={"labels": "jsonb_path_ops"},
    )
    op.create_index(
        "ix_sessions_display_name",
        "sessions",
        ["app_name", "display_name"],
        postgresql_where=sa.text("display_name IS NOT NULL"),
    )
    op.create_index(
        "ix_sessions_expire_time",
        "sessions",
        ["expire_time"],
        postgresql_where=sa.text("expire_time IS NOT NULL"),
    )


def downgrade() -> None:
    for index in ("ix_sessions_expire_time", "ix_sessions_display_name", "ix_sessions_labels"):
        op.drop_index(index, table_name="sessions")
    for column in ("expire_time", "labels", "display_name"):
        op.drop_column("sessions", column)
