"""Search snippets as the API answers them: HTML-escaped text with each match in `<mark>`.

ts_headline marks matches with two private-use characters, taken out of the text first, so
the text is escaped whole (an event's text is anyone's input) before the marks become tags.
"""

import html

MARK_START, MARK_END = "\ue000", "\ue001"


def as_html(snippet: str) -> str:
    return (
        html.escape(snippet, quote=False).replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")
    )
