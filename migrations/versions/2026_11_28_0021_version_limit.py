"""No session's version past 2^53 - 1: a check on `sessions.version`, so that every write that
takes a version (an append, a batch, a state change, a rewind, a trim, a removal, a close, …)
is refused, whole, rather than answer a seq that a JSON reader reading numbers as doubles
(JavaScript's) cannot tell from the next one. Appends are one statement each and stay so: the
check costs them no round trip, and it holds on every node of a Citus cluster, where the
statement runs on the user's shard (`sessionary_append` included). The service answers a write
it refuses with a 409 `version_exhausted`.

Added without a check of the rows already there, then validated (which holds no lock that
writes wait for), unless a session is past the limit already (an import at the limit, written
to before this release): then the check stays unvalidated, and such a session refuses its
next write.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONSTRAINT = "ck_sessions_version_max"
MAX_VERSION = 2**53 - 1  # app.limits.MAX_VERSION, as this migration made it


def upgrade() -> None:
    bind = op.get_bind()
    one_shard_at_a_time(bind)
    op.execute(
        f"ALTER TABLE sessions ADD CONSTRAINT {CONSTRAINT} CHECK (version <= {MAX_VERSION}) "
        "NOT VALID"
    )
    past = sa.text(f"SELECT EXISTS (SELECT 1 FROM sessions WHERE version > {MAX_VERSION})")
    if not bind.scalar(past):
        op.execute(f"ALTER TABLE sessions VALIDATE CONSTRAINT {CONSTRAINT}")


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.execute(f"ALTER TABLE sessions DROP CONSTRAINT {CONSTRAINT}")
