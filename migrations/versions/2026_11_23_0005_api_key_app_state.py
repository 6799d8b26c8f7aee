"""A user's API key may write `app:` state only when it was made to (keys create --app-state write).

App state shows in every session of every user of the app, so a key for one user that could
write it could plant what every other user's agent reads. Existing user keys lose that write.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("app_state_write", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("api_keys", "app_state_write")
