"""The app's time index holds only the events that have search words (`WHERE search IS NOT
NULL`), the only ones search can find: only a statement that implies the predicate can use it,
and search's do.

A statement about one session (a read, a fork's copy) could take the index when PostgreSQL's
statistics knew nothing of the app yet (a new app looks as if it had no events, so any index
on `app_name` seemed as good as the session's key): on an app of 300,000 events, a fork's copy
filtered every one of them (250 ms instead of a few).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_events_app_name_timestamp"


def upgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_index(INDEX, table_name="events")
    op.create_index(
        INDEX, "events", ["app_name", "timestamp"], postgresql_where=sa.text("search IS NOT NULL")
    )


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_index(INDEX, table_name="events")
    op.create_index(INDEX, "events", ["app_name", "timestamp"])
