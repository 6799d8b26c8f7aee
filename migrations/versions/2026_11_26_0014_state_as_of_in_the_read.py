"""Point-in-time reads, forks and rewinds rebuild a session's earlier state within their own
statement (`app.repositories.sessions.state_as_of`), so `sessionary_state_as_of` goes.

A SQL function reading `events` cannot be planned by Citus (its parameters would have to reach
a distributed query), and inside the statement the whole read runs on the session's shard.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op
from alembic.script import ScriptDirectory

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("DROP FUNCTION sessionary_state_as_of(text, text, text, jsonb, bigint, bigint)")


def downgrade() -> None:
    scripts = ScriptDirectory.from_config(op.get_context().config)
    lineage = scripts.get_revision("0006")
    assert lineage is not None
    op.execute(lineage.module.STATE_AS_OF)
