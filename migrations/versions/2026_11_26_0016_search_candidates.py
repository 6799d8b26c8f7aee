"""An index of each app's events by time, `ix_events_app_name_timestamp`: search takes the
newest matches of an app from it (`SESSIONARY_SEARCH_CANDIDATES` at a time) and ranks only
those, so a search for words found in most events reads a few thousand rows, not all of them.

It costs an append one more index entry, within the noise of `python -m bench.append_costs`.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_events_app_name_timestamp", "events", ["app_name", "timestamp"])


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_index("ix_events_app_name_timestamp", table_name="events")
