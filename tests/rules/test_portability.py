"""An import's replay of a session's history (app/rules/portability.py), called directly: no
database, no HTTP."""

from typing import Any

import pytest

from app.domain import History
from app.errors import InvalidInput
from app.rules.portability import Replay


def changes(**delta: Any) -> dict[str, Any]:
    return {"actions": {"stateDelta": delta}}


def test_the_state_is_the_base_then_events_and_removed_deltas_in_seq_order() -> None:
    replay = Replay(History(0, {"a": 0}, [{"seq": 2, "stateDelta": {"a": 2, "b": 2}}]))
    replay.event(1, changes(a=1), line=2)
    replay.event(3, changes(b=3), line=3)
    assert replay.removed_deltas({"a": 2, "b": 3}, 3) == [
        {"seq": 2, "stateDelta": {"a": 2, "b": 2}}
    ]


def test_a_removed_delta_at_the_seq_of_a_stored_event_is_refused_naming_its_line() -> None:
    replay = Replay(History(0, {}, [{"seq": 2, "stateDelta": {"a": 2}}]))
    replay.event(1, changes(a=1), line=2)
    with pytest.raises(InvalidInput) as refused:
        replay.event(2, changes(b=1), line=3)
    assert refused.value.extra == {"field": "line 3"}
    assert "seq 2" in refused.value.detail


def test_a_difference_is_kept_at_the_version_unless_an_event_is_there() -> None:
    free = Replay(History(0, {}))
    free.event(1, changes(a=1), line=2)
    assert free.removed_deltas({"a": 1, "b": 0}, 2) == [{"seq": 2, "stateDelta": {"b": 0}}]
    taken = Replay(History(0, {}))
    taken.event(2, changes(a=1), line=2)
    with pytest.raises(InvalidInput) as refused:
        taken.removed_deltas({"a": 1, "b": 0}, 2)
    assert refused.value.extra == {"field": "line 2"}
