"""`sessions.removed_deltas`: the session-scoped state changes of events removed from a
session's history, by seq, so that the state at every seq stays what it was (a removal takes
an event, not its place in the state's history). It replaces `replayable`: a session's state
is now always its base state with every delta of its history applied in order, removed ones
included, and a point-in-time read near the end may undo the recent changes wherever no
delta was removed.

A session stored before with `replayable` false (an event removed after its base, or
imported) showed one state at its version and another, without the removed deltas, at every
earlier seq. Both are kept as they were: the difference between its state and its replayed
deltas becomes a removed delta at its version. The downgrade keeps the state; the removed
deltas themselves go.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from app.sharding import one_shard_at_a_time

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A session's own keys where its state differs from its base state with its kept events'
# deltas replayed; per session, naming its user, so that on Citus it runs on one shard.
DIFFERENCE = sa.text(
    """
WITH replayed AS (
    SELECT s.state, s.base_state || coalesce((
        SELECT jsonb_object_agg(d.key, d.value ORDER BY e.seq)
        FROM events e,
             jsonb_each(CASE WHEN jsonb_typeof(e.event -> 'actions' -> 'stateDelta') = 'object'
                             THEN e.event -> 'actions' -> 'stateDelta' ELSE '{}' END) d
        WHERE e.app_name = s.app_name AND e.user_id = :user_id AND e.session_id = s.id
          AND e.seq > s.base_seq
          AND d.key NOT LIKE 'app:%' AND d.key NOT LIKE 'user:%' AND d.key NOT LIKE 'temp:%'
    ), '{}') AS fold
    FROM sessions s
    WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id
)
SELECT coalesce(jsonb_object_agg(own.key, own.value), '{}')
FROM replayed, jsonb_each(replayed.state) own
WHERE replayed.fold -> own.key IS DISTINCT FROM own.value
"""
)


def upgrade() -> None:
    bind = op.get_bind()
    one_shard_at_a_time(bind)
    op.add_column(
        "sessions",
        sa.Column("removed_deltas", JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
    )
    legacy = bind.execute(
        sa.text("SELECT app_name, user_id, id, version FROM sessions WHERE NOT replayable")
    ).all()
    for app_name, user_id, session_id, version in legacy:
        key = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        difference = bind.scalar(DIFFERENCE, key)
        if difference:
            bind.execute(
                sa.text(
                    "UPDATE sessions SET removed_deltas = jsonb_build_array(jsonb_build_object("
                    "'seq', CAST(:version AS bigint), 'stateDelta', CAST(:delta AS jsonb)))"
                    " WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id"
                ).bindparams(sa.bindparam("delta", type_=JSONB)),
                {**key, "version": version, "delta": difference},
            )
    op.drop_column("sessions", "replayable")


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.add_column(
        "sessions",
        sa.Column("replayable", sa.Boolean(), nullable=False, server_default=sa.text("true")),
    )
    op.execute("UPDATE sessions SET replayable = false WHERE removed_deltas <> '[]'")
    op.drop_column("sessions", "removed_deltas")
