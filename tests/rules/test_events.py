"""How an event is prepared for the log and recognised when resent: pure rules, no database."""

from typing import Any

import pytest

from app.domain import Usage
from app.errors import InvalidInput, PayloadTooLarge
from app.rules.context import estimate_tokens
from app.rules.events import EventLimits, is_resent, prepare, prepare_batch, usage_of

LIMITS = EventLimits(max_bytes=1024, max_depth=64, estimate=estimate_tokens)


def event(**fields: object) -> dict[str, Any]:
    return {"author": "agent", **fields}


def prepare_all(events: list[dict[str, Any]]) -> list[Any]:
    return prepare_batch(events, LIMITS, max_events=3)


def test_temp_keys_are_dropped_and_server_fields_filled_in():
    new = prepare(event(actions={"stateDelta": {"temp:x": 1, "k": 2, "app:a": 3}}), LIMITS)
    assert new.document["actions"]["stateDelta"] == {"k": 2, "app:a": 3}
    assert new.id and new.document["id"] == new.id
    assert new.timestamp == new.document["timestamp"] > 0
    assert (new.delta.session, new.delta.app, new.delta.user) == ({"k": 2}, {"a": 3}, {})


def test_the_same_request_hashes_the_same_whatever_the_key_order():
    first = prepare(event(id="e1", content={"a": 1, "b": 2}), LIMITS)
    again = prepare({"content": {"b": 2, "a": 1}, "id": "e1", "author": "agent"}, LIMITS)
    other = prepare(event(id="e1", content={"a": 1, "b": 3}), LIMITS)
    assert first.request_hash == again.request_hash != other.request_hash


def test_the_answer_sent_back_as_a_retry_is_recognised():
    sent = prepare(event(), LIMITS)  # the server chose its id and timestamp
    answered = {**sent.document, "seq": 7}
    retried = prepare(answered, LIMITS)
    assert retried.request_hash != sent.request_hash
    assert is_resent(retried, answered)
    assert not is_resent(prepare(event(id=sent.id), LIMITS), answered)


def test_limits_and_duplicate_ids_are_refused():
    with pytest.raises(PayloadTooLarge):
        prepare(event(content={"text": "x" * 2000}), LIMITS)
    with pytest.raises(PayloadTooLarge):
        prepare_all([event() for _ in range(4)])
    with pytest.raises(InvalidInput):
        prepare_all([event(id="same"), event(id="same")])
    assert prepare_all([event(partial=True), event()])[0].document["author"] == "agent"


def test_partial_fragments_and_nesting_past_the_limit_are_never_stored():
    limits = EventLimits(max_bytes=1024 * 1024, max_depth=5, estimate=estimate_tokens)
    with pytest.raises(InvalidInput):
        prepare(event(partial=True), limits)
    # Wide is not deep: a hundred brackets, five levels.
    wide = event(content={"parts": [{"a": [1]} for _ in range(50)]})
    assert prepare(wide, limits).document["content"] == wide["content"]
    with pytest.raises(InvalidInput):
        prepare(event(content={"a": [[[[1]]]]}), limits)  # six levels


def test_every_token_count_a_bigint_holds_is_counted_and_one_past_it_refused():
    counts = {"promptTokenCount": 2**31, "candidatesTokenCount": 2**63 - 1, "totalTokenCount": 5.0}
    assert usage_of({"usageMetadata": counts}) == Usage(2**31, 2**63 - 1, 5)
    odd = {"promptTokenCount": "many", "candidatesTokenCount": -1, "totalTokenCount": 2.5}
    assert usage_of({"usageMetadata": odd}) == Usage(None, None, None)
    assert usage_of({"usageMetadata": {"totalTokenCount": True}}) == Usage(None, None, None)
    for past in (2**63, 1e19, float(2**63 - 1)):  # the float nearest 2^63 - 1 is 2^63
        with pytest.raises(InvalidInput) as refused:
            prepare(event(usageMetadata={"totalTokenCount": past}), LIMITS)
        assert refused.value.extra == {"field": "usageMetadata.totalTokenCount"}
        assert "2^63 - 1" in refused.value.detail
