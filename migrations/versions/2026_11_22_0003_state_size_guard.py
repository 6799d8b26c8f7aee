"""A guard that refuses oversized state inside the statement that writes it.

An append is one statement with no transaction around it, so a state that grows past
SESSIONARY_MAX_STATE_BYTES must abort that statement itself: the guard raises SQLSTATE 54000
(program_limit_exceeded), which undoes everything the statement wrote. Size is measured as
PostgreSQL stores the value (`pg_column_size` of the jsonb), which costs nothing per byte.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION sessionary_checked_state(state jsonb, scope text, max_bytes integer)
        RETURNS jsonb LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        BEGIN
            IF pg_column_size(state) > max_bytes THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'program_limit_exceeded',
                    MESSAGE = 'state_too_large',
                    DETAIL = format('%s %s', scope, pg_column_size(state));
            END IF;
            RETURN state;
        END
        $$
        """
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION sessionary_checked_state(jsonb, text, integer)")
