"""Full-text search over events: `sessionary_event_text`, the words of an event
(its text parts, and the names of its function calls and responses, in order; never JSON
keys or tool arguments; the first 100,000 characters, which keeps a `tsvector` far under its
1 MB limit), and `events.search`, its `tsvector` in the configured text-search
configuration, taken by every write of an event and GIN-indexed.

Events stored before this revision are indexed here, once, with `SESSIONARY_SEARCH_CONFIG`.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import TSVECTOR

from app.config import Settings

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION sessionary_event_text(event jsonb)
        RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT left(string_agg(coalesce(
                       CASE WHEN jsonb_typeof(part -> 'text') = 'string'
                            THEN part ->> 'text' END,
                       part -> 'functionCall' ->> 'name',
                       part -> 'functionResponse' ->> 'name'), ' '), 100000)
            FROM jsonb_array_elements(
                     CASE WHEN jsonb_typeof(event -> 'content' -> 'parts') = 'array'
                          THEN event -> 'content' -> 'parts' ELSE '[]' END) AS part
            WHERE jsonb_typeof(part) = 'object'
        $$
        """
    )
    op.add_column("events", sa.Column("search", TSVECTOR()))
    op.execute(
        sa.text(
            "UPDATE events SET search = "
            "to_tsvector(CAST(:config AS regconfig), sessionary_event_text(event))"
        ).bindparams(config=Settings().search_config)
    )
    op.create_index("ix_events_search", "events", ["search"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_events_search", table_name="events")
    op.drop_column("events", "search")
    op.execute("DROP FUNCTION sessionary_event_text(jsonb)")
