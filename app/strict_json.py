"""A JSON parser that refuses ambiguous or unstorable input instead of guessing.

Python's `json` accepts duplicate keys (last one wins), `NaN`/`Infinity`, numbers PostgreSQL
JSONB cannot hold, `\\u0000` and lone surrogates. Each of those would either silently change the
client's data or fail later inside PostgreSQL, so they are rejected here, at the door.
"""

import json
import math
from typing import Any

import orjson

from app.limits import INT64_MAX, INT64_MIN


class StrictJSONError(json.JSONDecodeError):
    """A decode error, so FastAPI reports it as a 422 like any malformed JSON."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "", 0)
        self.msg = message

    def __str__(self) -> str:
        return self.msg


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [key for key, _ in pairs]
        duplicate = next(key for key in obj if keys.count(key) > 1)
        raise StrictJSONError(f"duplicate key {duplicate!r} in one object")
    return obj


def _constant(name: str) -> float:
    raise StrictJSONError(f"{name} is not a JSON number")


def _wide_int(literal: str) -> int:
    """An integer as PostgreSQL renders a stored number without a fraction: any within the
    double range (a float such as `1e20`, stored, reads back as `100000000000000000000`)."""
    if len(literal.lstrip("-")) > 309 or math.isinf(float(literal)):
        raise StrictJSONError(f"number {literal[:40]} is outside the double-precision range")
    return int(literal)


def _int(literal: str) -> int:
    if len(literal.lstrip("-")) > 19:  # before int(): Python refuses very long literals itself
        raise StrictJSONError(f"integer {literal[:40]} is outside the signed 64-bit range")
    value = int(literal)
    if not INT64_MIN <= value <= INT64_MAX:
        raise StrictJSONError(f"integer {literal[:40]} is outside the signed 64-bit range")
    return value


def _float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise StrictJSONError(f"number {literal[:40]} is outside the double-precision range")
    return value


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise StrictJSONError("strings and keys must not contain \\u0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StrictJSONError("strings and keys must not contain lone surrogates") from None


def _check_tree(value: Any, max_depth: int, check_strings: bool) -> None:
    """Walk without recursion: a hostile document must not exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise StrictJSONError(f"JSON is nested deeper than {max_depth} levels")
            for key, child in node.items():
                if check_strings:
                    _check_string(key)
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                raise StrictJSONError(f"JSON is nested deeper than {max_depth} levels")
            stack.extend((child, depth + 1) for child in node)
        elif check_strings and isinstance(node, str):
            _check_string(node)


def check_depth(value: Any, *, max_depth: int) -> None:
    """The nesting `loads` allows, for a value built otherwise (an event the server composes
    around a client's value, or one read from another store)."""
    _check_tree(value, max_depth, check_strings=False)


def loads(body: bytes, *, max_depth: int, wide_integers: bool = False) -> Any:
    """Parse strictly; with `wide_integers`, integers past 64 bits within the double range are
    taken too (for what PostgreSQL rendered: an import's lines)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise StrictJSONError("request body is not valid UTF-8") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_int=_wide_int if wide_integers else _int,
            parse_float=_float,
        )
    except RecursionError:
        raise StrictJSONError(f"JSON is nested deeper than {max_depth} levels") from None
    # Only `\u` escapes can produce NUL or surrogates: valid UTF-8 text cannot carry them raw.
    _check_tree(value, max_depth, check_strings="\\u" in text)
    return value


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON: orjson, at a fifth of the stdlib's cost, and the stdlib for what
    orjson refuses: integers beyond 64 bits, which this parser never lets in but JSONB hands
    back for large floats (8.8e142 is stored as a numeric and read back as an integer)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:
        text = json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False)
        return text.encode()
