"""The strict JSON door, without a database."""

import pytest

from app.strict_json import StrictJSONError, dumps, loads


def test_ordinary_json_parses_unchanged() -> None:
    body = b'{"a": [1, 2.5, null, true, "\\u00e9"], "b": {"c": -9223372036854775808}}'
    assert loads(body, max_depth=64) == {
        "a": [1, 2.5, None, True, "é"],
        "b": {"c": -(2**63)},
    }


def test_nesting_at_the_limit_passes_and_one_deeper_fails() -> None:
    assert loads(b"[" * 64 + b"]" * 64, max_depth=64)
    with pytest.raises(StrictJSONError, match="deeper"):
        loads(b"[" * 65 + b"]" * 65, max_depth=64)


def test_pathological_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(StrictJSONError):
        loads(b"[" * 100_000 + b"]" * 100_000, max_depth=64)


def test_an_escaped_backslash_before_u0000_is_plain_text() -> None:
    assert loads(b'{"a": "\\\\u0000"}', max_depth=64) == {"a": "\\u0000"}


def test_dumps_is_compact_utf8_and_takes_integers_beyond_64_bits() -> None:
    assert dumps({"b": "é", "a": [1, 2.5]}, sort_keys=True) == '{"a":[1,2.5],"b":"é"}'.encode()
    assert dumps({"n": 10**30}) == b'{"n":1000000000000000000000000000000}'
