"""`events` and `pending_events` lose their foreign keys to `sessions`: the service deletes a
session's events itself, in the transaction that deletes the session
(`app.repositories.sessions.delete_logs`).

The key's check on each insert cost an append a sixth of its PostgreSQL time
(`python -m bench.append_costs`), and guarded nothing the service does not: every insert of
an event holds its session's row lock (the append's UPDATE, or `hold` for the others) or
goes into a session its own transaction creates (a fork, a child, an import), so a session
cannot be deleted under it.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = ["app_name", "user_id", "session_id"]
TABLES = ("events", "pending_events")


def upgrade() -> None:
    for table in TABLES:
        op.drop_constraint(f"fk_{table}_app_name_user_id_session_id_sessions", table)


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    for table in TABLES:
        op.execute(
            f"DELETE FROM {table} WHERE NOT EXISTS (SELECT FROM sessions WHERE "
            f"sessions.app_name = {table}.app_name AND sessions.user_id = {table}.user_id "
            f"AND sessions.id = {table}.session_id)"
        )
        op.create_foreign_key(
            f"fk_{table}_app_name_user_id_session_id_sessions",
            table,
            "sessions",
            KEY,
            ["app_name", "user_id", "id"],
            ondelete="CASCADE",
        )
