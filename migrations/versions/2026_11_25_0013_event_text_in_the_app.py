"""An event's words for search are taken by the application (`app.rules.search.event_text`),
and `sessionary_event_text` now agrees with it to the letter: a function's name counts only
when it is a string, as its text does.

Run inside every append, the SQL function (not inlinable: it aggregates) cost PostgreSQL
~120 µs of CPU per single append (~790 -> ~670 µs, median, one connection). It stays for
search's snippets, which are made from the stored event. Events indexed before this
revision with a name that is not a string keep that name among their words.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVENT_TEXT = """
    CREATE OR REPLACE FUNCTION sessionary_event_text(event jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT left(string_agg(coalesce({text}, {call}, {response}), ' '), 100000)
        FROM jsonb_array_elements(
                 CASE WHEN jsonb_typeof(event -> 'content' -> 'parts') = 'array'
                      THEN event -> 'content' -> 'parts' ELSE '[]' END) AS part
        WHERE jsonb_typeof(part) = 'object'
    $$
"""


def _string(path: str) -> str:
    return f"CASE WHEN jsonb_typeof(part {path}) = 'string' THEN part {path} #>> '{{}}' END"


def upgrade() -> None:
    op.execute(
        EVENT_TEXT.format(
            text=_string("-> 'text'"),
            call=_string("-> 'functionCall' -> 'name'"),
            response=_string("-> 'functionResponse' -> 'name'"),
        )
    )


def downgrade() -> None:
    op.execute(
        EVENT_TEXT.format(
            text=_string("-> 'text'"),
            call="part -> 'functionCall' ->> 'name'",
            response="part -> 'functionResponse' ->> 'name'",
        )
    )
