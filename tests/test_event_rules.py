"""How an event is prepared for the log and recognised when resent: pure rules, no database."""

import pytest

from app.config import Settings
from app.errors import InvalidInput, PayloadTooLarge
from app.rules.events import is_resent, prepare, prepare_batch
from app.schemas import EventIn

SETTINGS = Settings(database_url=None, max_event_bytes=1024, max_events_per_request=3)


def event(**fields: object) -> EventIn:
    return EventIn.model_validate({"author": "agent", **fields})


def test_temp_keys_are_dropped_and_server_fields_filled_in():
    new = prepare(event(actions={"stateDelta": {"temp:x": 1, "k": 2, "app:a": 3}}), SETTINGS)
    assert new.document["actions"]["stateDelta"] == {"k": 2, "app:a": 3}
    assert new.id and new.document["id"] == new.id
    assert new.timestamp == new.document["timestamp"] > 0
    assert (new.delta.session, new.delta.app, new.delta.user) == ({"k": 2}, {"a": 3}, {})


def test_the_same_request_hashes_the_same_whatever_the_key_order():
    first = prepare(event(id="e1", content={"a": 1, "b": 2}), SETTINGS)
    again = prepare(
        EventIn.model_validate({"content": {"b": 2, "a": 1}, "id": "e1", "author": "agent"}),
        SETTINGS,
    )
    other = prepare(event(id="e1", content={"a": 1, "b": 3}), SETTINGS)
    assert first.request_hash == again.request_hash != other.request_hash


def test_the_answer_sent_back_as_a_retry_is_recognised():
    sent = prepare(event(), SETTINGS)  # the server chose its id and timestamp
    answered = {**sent.document, "seq": 7}
    retried = prepare(EventIn.model_validate(answered), SETTINGS)
    assert retried.request_hash != sent.request_hash
    assert is_resent(retried, answered)
    assert not is_resent(prepare(event(id=sent.id), SETTINGS), answered)


def test_limits_and_duplicate_ids_are_refused():
    with pytest.raises(PayloadTooLarge):
        prepare(event(content={"text": "x" * 2000}), SETTINGS)
    with pytest.raises(PayloadTooLarge):
        prepare_batch([event() for _ in range(4)], SETTINGS)
    with pytest.raises(InvalidInput):
        prepare_batch([event(id="same"), event(id="same")], SETTINGS)
    assert prepare_batch([event(partial=True), event()], SETTINGS)[0].document["author"] == "agent"
