"""Erasures of a whole app: an erasure's `scope` says whether it erases one user or the app.

An app's erasure names no user: while it runs it holds the user id '' (which no user can have;
the app's own memories are kept under it) and its `user_ref` is ''. So `uq_erasures_running`
lets one erase run per app as per user, and a write meets its user's erase or its app's in
one probe of that index (`repositories.erasures`).

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# An app's erasure holds no user; a user's is never named ''.
SCOPE = (
    "scope = 'user' AND user_ref <> '' AND user_id <> '' "
    "OR scope = 'app' AND user_ref = '' AND coalesce(user_id, '') = ''"
)


def upgrade() -> None:
    op.add_column(
        "erasures", sa.Column("scope", sa.String(8), nullable=False, server_default="user")
    )
    op.create_check_constraint("scope", "erasures", SCOPE)


def downgrade() -> None:
    op.execute("DELETE FROM erasures WHERE scope = 'app'")
    op.drop_constraint("ck_erasures_scope", "erasures")
    op.drop_column("erasures", "scope")
