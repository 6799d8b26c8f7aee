"""What the context view reads of an event without reading the event: its token estimate and
the ids of its function calls and responses, taken when it is stored; and the marked events
(rewinds, compactions, observation masks) in an index of their own.

The view decides which events a model is shown from these columns alone, then reads only
those (`app.repositories.context`). Events stored before this revision have them NULL; the
view reads such an event whole and works them out. The partial index's predicate is
`models.MARKED`, which the view's query repeats word for word so that PostgreSQL uses it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MARKED = (
    "(event -> 'actions') ?| ARRAY['compaction', 'rewindBeforeInvocationId'] "
    "OR (event -> 'customMetadata') ? 'sessionary'"
)


def upgrade() -> None:
    op.add_column("events", sa.Column("tokens", sa.Integer()))
    op.add_column("events", sa.Column("calls", ARRAY(sa.Text())))
    op.add_column("events", sa.Column("responses", ARRAY(sa.Text())))
    op.create_index(
        "ix_events_marks",
        "events",
        ["app_name", "user_id", "session_id", "seq"],
        postgresql_where=sa.text(MARKED),
    )


def downgrade() -> None:
    op.drop_index("ix_events_marks", "events")
    op.drop_column("events", "responses")
    op.drop_column("events", "calls")
    op.drop_column("events", "tokens")
