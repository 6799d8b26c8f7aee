"""Paging: opaque page tokens bound to their listing, and the keyset positions they carry.

A token is a base64url JSON of where the last page ended (a keyset position, never an offset,
so a far page costs what the first does) and a digest of the listing that made it: which
session or user, which filters, which order. It cannot be replayed against another listing,
and a new filter is bound by being a field of the listing's query.
"""

import base64
import binascii
import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from app.errors import InvalidInput
from app.limits import ID_LENGTH, ID_PATTERN, INT64_MAX

Row = TypeVar("Row")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)

_ID = re.compile(ID_PATTERN)


class Name:
    """The kind of a position's string that is not an id but a longer name (an artifact's),
    which its listing checks again."""

    MAX_LENGTH = 1024


def _valid(value: Any, kind: type) -> bool:
    """Tokens come back from clients: check each value as strictly as the API checks ids."""
    if kind is Name:
        return isinstance(value, str) and len(value) <= Name.MAX_LENGTH
    if kind is float and type(value) is int:  # JSON writes a whole float as an int
        value = float(value)
    if type(value) is not kind:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        return -INT64_MAX <= value <= INT64_MAX
    return isinstance(value, str) and len(value) <= ID_LENGTH and _ID.match(value) is not None


# A real token is a few hundred characters; one that ends at a long artifact name, up to a
# few thousand.
MAX_TOKEN_LENGTH = 4096


def listing(kind: str, *parts: Any) -> str:
    """What a token is bound to: the parts that name a listing (dataclasses such as a
    `SessionKey` or an `EventQuery` field by field), unambiguously."""
    named = [
        dataclasses.asdict(part)
        if dataclasses.is_dataclass(part) and not isinstance(part, type)
        else part
        for part in parts
    ]
    return hashlib.sha256(json.dumps([kind, *named]).encode()).hexdigest()[:32]


def encode(listing: str, position: list[Any]) -> str:
    raw = json.dumps(
        {"q": listing, "p": position}, separators=(",", ":"), ensure_ascii=False
    ).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, listing: str, *shapes: tuple[type, ...]) -> list[Any]:
    """The position inside a token made by `encode` for the same listing, of one of `shapes`
    (told apart by their lengths), else a 422."""
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
    if not isinstance(position, list) or not any(
        len(position) == len(shape)
        and all(_valid(value, kind) for value, kind in zip(position, shape, strict=True))
        for shape in shapes
    ):
        raise InvalidInput("pageToken is malformed.", field="pageToken")
    return position


def cut(
    rows: list[Row], size: int, listing: str, position: Callable[[Row], list[Any]]
) -> tuple[list[Row], str | None]:
    """A page of `size` rows out of `size + 1` fetched, and the token of the next page: there
    is one exactly when the extra row came back."""
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    return rows, encode(listing, position(rows[-1]))


def time_cursor(position: tuple[Any, ...]) -> list[Any]:
    """A keyset position that starts with a timestamp, the timestamp as exact integer
    microseconds (a float would round, and rows would be skipped or repeated)."""
    moment, *rest = position
    return [(moment - EPOCH) // MICROSECOND, *rest]


def time_position(cursor: list[Any]) -> tuple[Any, ...]:
    microseconds, *rest = cursor
    try:
        return (EPOCH + microseconds * MICROSECOND, *rest)
    except OverflowError:
        raise InvalidInput("pageToken is malformed.", field="pageToken") from None
