"""Opaque page tokens: a base64url JSON of where the last page ended, bound to its query."""

import base64
import binascii
import json
import re
from typing import Any

from app.errors import InvalidInput
from app.models import ID_LENGTH
from app.schemas import ID_PATTERN, INT64_MAX

_ID = re.compile(ID_PATTERN)


def _valid(value: Any, kind: type) -> bool:
    """Tokens come back from clients: check each value as strictly as the API checks ids."""
    if type(value) is not kind:
        return False
    if isinstance(value, int):
        return -INT64_MAX <= value <= INT64_MAX
    return isinstance(value, str) and len(value) <= ID_LENGTH and _ID.match(value) is not None


def encode(query: str, position: list[Any]) -> str:
    raw = json.dumps({"q": query, "p": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, query: str, shape: tuple[type, ...]) -> list[Any]:
    """The position inside a token made by `encode` for the same query, else a 422."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        content = json.loads(raw)
    except (binascii.Error, ValueError):
        content = None
    if not isinstance(content, dict) or content.get("q") != query:
        raise InvalidInput(
            "pageToken is not a token this listing returned; pass nextPageToken back unchanged "
            "with the same filters and order.",
            field="pageToken",
        )
    position = content.get("p")
    if not (
        isinstance(position, list)
        and len(position) == len(shape)
        and all(_valid(value, kind) for value, kind in zip(position, shape, strict=True))
    ):
        raise InvalidInput("pageToken is malformed.", field="pageToken")
    return position
