"""Lineage and history surgery: forks and child sessions, their status, and the base state
that point-in-time reads rebuild earlier states from.

Sessions made before this revision have no record of their create state apart from the
current one, so their history starts where they stand now: `base_seq` is their version, and
a point-in-time read before it is refused rather than guessed.

`sessionary_state_as_of` rebuilds a session's own state as of a seq: its base state, then each
later event's `stateDelta` up to that seq, in order, without the `app:`, `user:` and `temp:`
keys (shared state has no history). Point-in-time reads, forks and rewinds all use it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Dropped by 0014 (reads rebuild the state within their own statement), which puts it back
# from here when downgraded.
STATE_AS_OF = """
        CREATE FUNCTION sessionary_state_as_of(
            app_name text, user_id text, session_id text,
            base_state jsonb, base_seq bigint, until_seq bigint
        ) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
            SELECT base_state || COALESCE(
                (SELECT jsonb_object_agg(delta.key, delta.value ORDER BY e.seq)
                 FROM events e
                 CROSS JOIN LATERAL jsonb_each(
                     CASE WHEN jsonb_typeof(e.event -> 'actions' -> 'stateDelta') = 'object'
                          THEN e.event -> 'actions' -> 'stateDelta' ELSE '{}' END
                 ) AS delta
                 WHERE e.app_name = $1 AND e.user_id = $2 AND e.session_id = $3
                   AND e.seq > base_seq AND e.seq <= until_seq
                   AND delta.key NOT LIKE 'app:%'
                   AND delta.key NOT LIKE 'user:%'
                   AND delta.key NOT LIKE 'temp:%'),
                '{}'::jsonb)
        $$
"""


def upgrade() -> None:
    for column in (
        sa.Column("kind", sa.String(8), server_default="root", nullable=False),
        sa.Column("parent_id", sa.String(128)),
        sa.Column("parent_seq", sa.BigInteger()),
        sa.Column("function_call_id", sa.String(128)),
        sa.Column("status", sa.String(8), server_default="open", nullable=False),
        sa.Column("outcome", sa.String(16)),
        sa.Column("base_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column(
            "base_state",
            postgresql.JSONB(),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
    ):
        op.add_column("sessions", column)
    op.execute("UPDATE sessions SET base_seq = version, base_state = state")
    op.create_check_constraint("kind", "sessions", "kind IN ('root', 'fork', 'child')")
    op.create_check_constraint("status", "sessions", "status IN ('open', 'closed')")
    op.create_check_constraint(
        "outcome", "sessions", "outcome IN ('completed', 'failed', 'canceled')"
    )
    op.create_index(
        "ix_sessions_children",
        "sessions",
        ["app_name", "user_id", "parent_id", "create_time", "id"],
        postgresql_where=sa.text("parent_id IS NOT NULL"),
    )
    op.execute(STATE_AS_OF)
    op.create_index(
        "uq_sessions_function_call",
        "sessions",
        ["app_name", "user_id", "parent_id", "function_call_id"],
        unique=True,
        postgresql_where=sa.text("function_call_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION sessionary_state_as_of(text, text, text, jsonb, bigint, bigint)")
    op.drop_index("uq_sessions_function_call", "sessions")
    op.drop_index("ix_sessions_children", "sessions")
    for constraint in ("outcome", "status", "kind"):
        op.drop_constraint(f"ck_sessions_{constraint}", "sessions")
    for column in (
        "base_state",
        "base_seq",
        "outcome",
        "status",
        "function_call_id",
        "parent_seq",
        "parent_id",
        "kind",
    ):
        op.drop_column("sessions", column)
