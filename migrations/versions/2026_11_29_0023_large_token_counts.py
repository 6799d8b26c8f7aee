"""Token counts past 2^31 - 1: counted now (up to 2^63 - 1), as `app.rules.events.usage_of`
reads them since this release. Events stored before it with such a count were counted 0, so
their sessions under-reported, and an export of one was refused by an import, which counts
them: those events are counted here, once, and their sessions' sums taken again (at most
2^63 - 1, the most a sum holds).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29
"""

from collections.abc import Sequence

from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTS = {
    "prompt_tokens": "promptTokenCount",
    "candidates_tokens": "candidatesTokenCount",
    "total_tokens": "totalTokenCount",
}
MAX = 2**63 - 1


def _number(field: str) -> str:
    return (
        f"(CASE WHEN jsonb_typeof(event #> '{{usageMetadata,{field}}}') = 'number' "
        f"THEN CAST(event #>> '{{usageMetadata,{field}}}' AS numeric) END)"
    )


def upgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    large = " OR ".join(
        f"({_number(field)} > 2147483647 AND {_number(field)} = trunc({_number(field)}) "
        f"AND {_number(field)} <= {MAX})"
        for field in COUNTS.values()
    )
    counted = ", ".join(
        f"{column} = CASE WHEN {_number(field)} = trunc({_number(field)}) AND "
        f"{_number(field)} BETWEEN 0 AND {MAX} THEN CAST({_number(field)} AS bigint) END"
        for column, field in COUNTS.items()
    )
    op.execute(
        f"UPDATE events SET {counted} WHERE jsonb_typeof(event -> 'usageMetadata') = 'object' "
        f"AND ({large})"
    )
    sums = ", ".join(f"{column} = used.{column}" for column in COUNTS)
    totals = ", ".join(
        f"CAST(least(coalesce(sum(CAST({column} AS numeric)), 0), {MAX}) AS bigint) AS {column}"
        for column in COUNTS
    )
    # The sessions holding such an event, their sums taken again (the event's JSON still says
    # which they are).
    op.execute(
        f"UPDATE sessions SET {sums} FROM (SELECT app_name, user_id, session_id, {totals} "
        "FROM events GROUP BY app_name, user_id, session_id "
        f"HAVING bool_or(jsonb_typeof(event -> 'usageMetadata') = 'object' AND ({large}))) "
        "AS used WHERE sessions.app_name = used.app_name AND sessions.user_id = used.user_id "
        "AND sessions.id = used.session_id"
    )


def downgrade() -> None:
    """Nothing to undo: the counts are what the events say."""
