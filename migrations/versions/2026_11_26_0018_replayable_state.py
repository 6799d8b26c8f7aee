"""`sessions.replayable`: whether a session's state is exactly its base state with its kept
events' deltas applied in order. Where it is, a point-in-time read near the end undoes the
changes of the events after the seq asked for instead of replaying every delta from the base
(S8 of `make bench`: 100 events, not 10,000).

Sessions already stored get false (which events were removed from their history is not
known); new ones true.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.add_column(
        "sessions",
        sa.Column("replayable", sa.Boolean(), nullable=False, server_default=sa.text("false")),
    )
    op.alter_column("sessions", "replayable", server_default=sa.text("true"))


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_column("sessions", "replayable")
