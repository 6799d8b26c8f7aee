"""Opaque page tokens: a base64url JSON of where the last page ended, bound to its listing.

A token carries a digest of the listing that made it (which session or user, which filters,
which order), so it cannot be replayed against another one.
"""

import base64
import binascii
import hashlib
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


MAX_TOKEN_LENGTH = 2048  # a real token is a few hundred characters


def listing(*parts: Any) -> str:
    """What a token is bound to: the parts that name a listing, unambiguously."""
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def encode(listing: str, position: list[Any]) -> str:
    raw = json.dumps({"q": listing, "p": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, listing: str, shape: tuple[type, ...]) -> list[Any]:
    """The position inside a token made by `encode` for the same listing, else a 422."""
    content = None
    if len(token) <= MAX_TOKEN_LENGTH:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            content = json.loads(raw)
        except (binascii.Error, ValueError, RecursionError):
            pass
    if not isinstance(content, dict) or content.get("q") != listing:
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
