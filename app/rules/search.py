"""What search indexes of an event, and its snippets as the API answers them.

ts_headline marks matches with two private-use characters, taken out of the text first, so
the text is escaped whole (an event's text is anyone's input) before the marks become tags.
"""

import html
from typing import Any

from app.rules.context import content_parts

MARK_START, MARK_END = "\ue000", "\ue001"
# The characters of an event's words that are indexed: its start, for a huge text.
TEXT_LIMIT = 100_000
_NAMED = ("functionCall", "functionResponse")


def event_text(event: dict[str, Any]) -> str | None:
    """An event's words for search: each part's text, or else the name of the function it
    calls or answers, joined by spaces; None when it has none.

    The same as PostgreSQL's `sessionary_event_text` (migration 0013), which search's
    snippets use. Computed here for every event stored, that function is not run by the
    append, which takes PostgreSQL's CPU per append down (bench/README.md).
    """
    words = []
    for part in content_parts(event):
        text = part.get("text")
        if isinstance(text, str):
            words.append(text)
            continue
        for kind in _NAMED:
            item = part.get(kind)
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str):
                words.append(name)
                break
    return " ".join(words)[:TEXT_LIMIT] if words else None


def as_html(snippet: str) -> str:
    return (
        html.escape(snippet, quote=False).replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")
    )
