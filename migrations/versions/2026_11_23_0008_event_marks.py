"""The events the context view plans with: rewinds, compactions and observation masks.

A partial index holds only them, so the view finds a session's few marked events without
reading the others (`app.repositories.context`). Its predicate is `models.MARKED`, which the
view's query repeats word for word so that PostgreSQL uses the index.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MARKED = (
    "(event -> 'actions') ?| ARRAY['compaction', 'rewindBeforeInvocationId'] "
    "OR (event -> 'customMetadata') ? 'sessionary'"
)


def upgrade() -> None:
    op.create_index(
        "ix_events_marks",
        "events",
        ["app_name", "user_id", "session_id", "seq"],
        postgresql_where=sa.text(MARKED),
    )


def downgrade() -> None:
    op.drop_index("ix_events_marks", "events")
