"""Token usage: each event's `usageMetadata` counts (prompt, candidates, total) stored beside it,
and their sums kept on its session, so that every Session carries its usage and an app's
usage is summed by user and time without decoding an event.

Events stored before this revision are counted from their `usageMetadata` here, once.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTS = {
    "prompt_tokens": "promptTokenCount",
    "candidates_tokens": "candidatesTokenCount",
    "total_tokens": "totalTokenCount",
}


def upgrade() -> None:
    for column in COUNTS:
        op.add_column("events", sa.Column(column, sa.BigInteger()))
        op.add_column(
            "sessions",
            sa.Column(column, sa.BigInteger(), nullable=False, server_default="0"),
        )
    # A count is a whole number from 0 to 2^31 - 1, as `app.rules.events.usage_of` reads it.
    counted = ", ".join(
        f"{column} = (SELECT CAST(n AS bigint) FROM (SELECT CASE WHEN "
        f"jsonb_typeof(event #> '{{usageMetadata,{field}}}') = 'number' THEN "
        f"CAST(event #>> '{{usageMetadata,{field}}}' AS numeric) END AS n) AS count "
        f"WHERE n = trunc(n) AND n BETWEEN 0 AND 2147483647)"
        for column, field in COUNTS.items()
    )
    op.execute(
        f"UPDATE events SET {counted} WHERE jsonb_typeof(event -> 'usageMetadata') = 'object'"
    )
    sums = ", ".join(f"{column} = used.{column}" for column in COUNTS)
    totals = ", ".join(f"coalesce(sum({column}), 0) AS {column}" for column in COUNTS)
    op.execute(
        f"UPDATE sessions SET {sums} FROM (SELECT app_name, user_id, session_id, {totals} "
        "FROM events WHERE total_tokens IS NOT NULL OR prompt_tokens IS NOT NULL "
        "OR candidates_tokens IS NOT NULL GROUP BY app_name, user_id, session_id) AS used "
        "WHERE sessions.app_name = used.app_name AND sessions.user_id = used.user_id "
        "AND sessions.id = used.session_id"
    )


def downgrade() -> None:
    for column in COUNTS:
        op.drop_column("sessions", column)
        op.drop_column("events", column)
