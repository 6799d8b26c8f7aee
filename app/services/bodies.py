"""Response bodies assembled around JSON that PostgreSQL rendered from the stored JSONB.

A read never decodes an event: the events' UTF-8 JSON is spliced between the parts Python
renders itself. A body is built by one join, one copy: a second copy of a large body costs
more than the join itself, in fresh pages.
"""

import json
from typing import Any


def dumps(value: dict[str, Any]) -> bytes:
    """As Starlette's JSONResponse renders."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def with_array(
    before: dict[str, Any], field: str, items: list[bytes], after: dict[str, Any]
) -> bytes:
    """The JSON object of `before`'s keys, then `field` as the array of `items` (each already
    JSON), then `after`'s keys."""
    head = (dumps(before)[:-1] + b"," if before else b"{") + dumps({field: []})[1:-3] + b"["
    tail = b"]" + (b"," + dumps(after)[1:] if after else b"}")
    if not items:
        return head + tail
    parts = [b","] * (2 * len(items) + 1)  # head, item, ",", item, …, item, tail
    parts[1::2] = items
    parts[0], parts[-1] = head, tail
    return b"".join(parts)
