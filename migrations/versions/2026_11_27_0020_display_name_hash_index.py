"""The display-name index holds a hash of each name, not the name: a btree entry holds at most
2,704 bytes, and a display name of 1,024 characters may take up to 4,096 bytes of UTF-8, so
storing a long multi-byte name failed inside PostgreSQL (a 500 on `PATCH`, a misleading 413 on
create and import). The list filter `displayName=` compares the hash, which the index finds,
then the name itself, so it stays an index lookup and exact.

Downgrading recreates the index on the names themselves, which fails while a stored name is
over that size.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.sharding import one_shard_at_a_time

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_sessions_display_name"
NAMED = sa.text("display_name IS NOT NULL")


def upgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_index(INDEX, table_name="sessions")
    op.create_index(
        INDEX, "sessions", ["app_name", sa.text("md5(display_name)")], postgresql_where=NAMED
    )


def downgrade() -> None:
    one_shard_at_a_time(op.get_bind())
    op.drop_index(INDEX, table_name="sessions")
    op.create_index(INDEX, "sessions", ["app_name", "display_name"], postgresql_where=NAMED)
