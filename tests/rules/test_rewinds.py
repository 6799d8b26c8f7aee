"""ADK's rewind rules (app/rules/rewinds.py), called directly: no database, no HTTP.

Which events stay live (`live_seqs`), checked against google-adk's `_apply_rewinds` and against
the walk its docstring describes; and the delta that restores an earlier state.
"""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.rules.rewinds import live_seqs, restoring_delta

Marks = list[tuple[int, str | None, str | None]]


def test_a_rewind_drops_itself_and_the_invocation_it_names_onwards() -> None:
    marks: Marks = [
        (1, "inv-1", None),
        (2, "inv-1", None),
        (3, "inv-2", None),
        (4, "inv-3", None),
        (5, "inv-2", None),  # inv-2 goes on after inv-3 began: dropped all the same
        (7, "e-1", "inv-2"),
        (8, "inv-4", None),
    ]
    assert live_seqs(marks) == [1, 2, 8]


def test_a_rewind_to_no_earlier_invocation_drops_only_itself() -> None:
    marks: Marks = [
        (1, "inv-1", None),
        (2, "e-1", "unknown"),
        (3, "e-2", "e-2"),  # its own invocation: it is the first event of it
        (4, "inv-5", None),
        (5, "e-3", "inv-6"),  # an invocation that only starts later
        (6, "inv-6", None),
    ]
    assert live_seqs(marks) == [1, 4, 6]


def test_a_rewind_that_was_itself_rewound_counts_for_nothing() -> None:
    marks: Marks = [
        (1, "a", None),
        (2, "b", None),
        (3, "c", None),
        (4, "e-1", "c"),  # rewinds c...
        (5, "d", None),
        (6, "e-2", "b"),  # ...but this rewinds b, c, that rewind and d
    ]
    assert live_seqs(marks) == [1]
    assert live_seqs([(1, "a", None), (2, "b", None), (3, "e-1", "")]) == [1, 2, 3]  # no rewind
    assert live_seqs([]) == []


def test_the_delta_sets_what_changed_and_nulls_what_was_not_there() -> None:
    current = {"same": 1, "changed": "now", "new": [1], "nulled": None}
    then = {"same": 1, "changed": "then", "gone": {"k": 2}}
    assert restoring_delta(current, then) == {
        "changed": "then",
        "gone": {"k": 2},
        "new": None,
        "nulled": None,
    }
    assert restoring_delta({"k": None}, {"k": None}) == {}
    assert restoring_delta({}, {"k": None}) == {"k": None}


def test_a_value_that_changed_only_its_json_type_is_restored() -> None:
    """Python's == takes 1 for true and 0.0 for 0 (ADK's rewind compares with it); the state
    is JSON, where they differ."""
    assert restoring_delta({"flag": 1}, {"flag": True}) == {"flag": True}
    assert restoring_delta({"n": [0.0]}, {"n": [0]}) == {"n": [0]}
    assert restoring_delta({"same": {"a": [1]}}, {"same": {"a": [1]}}) == {}


def adk_apply_rewinds(marks: Marks) -> list[int]:
    """google-adk's `_apply_rewinds` (google.adk.events), on (seq, invocation, rewind target)."""
    kept: list[int] = []
    i = len(marks) - 1
    while i >= 0:
        seq, _, target = marks[i]
        if target:
            for j in range(0, i, 1):
                if marks[j][1] == target:
                    i = j
                    break
        else:
            kept.append(seq)
        i -= 1
    kept.reverse()
    return kept


INVOCATIONS = ["i0", "i1", "i2", "i3"]


@st.composite
def histories(draw: st.DrawFn) -> Marks:
    """Events as (seq, invocation, rewind target), seqs growing with gaps; invocations
    interleave and repeat; rewinds name any of them, themselves or none that exists."""
    marks: Marks = []
    seq = 0
    for _ in range(draw(st.integers(min_value=0, max_value=16))):
        seq += draw(st.integers(min_value=1, max_value=3))
        invocation = draw(st.sampled_from([*INVOCATIONS, None, ""]))
        target = draw(st.sampled_from([None, None, None, "", *INVOCATIONS, "i9"]))
        marks.append((seq, invocation, target))
    return marks


HISTORIES = settings(max_examples=300, deadline=None)


@HISTORIES
@given(marks=histories())
def test_the_live_events_are_those_adks_rewinds_keep(marks: Marks) -> None:
    assert live_seqs(marks) == adk_apply_rewinds(marks)


@HISTORIES
@given(marks=histories())
def test_the_newest_rewind_drops_back_to_its_invocation_and_the_rest_goes_on_before(
    marks: Marks,
) -> None:
    """The walk the docstring describes: after the newest rewind every event is live; it
    drops itself and every event back to the first of the invocation it names when that
    comes before it (else only itself); what is before that is as if nothing came after."""
    rewinds = [index for index, (_, _, target) in enumerate(marks) if target]
    if not rewinds:
        assert live_seqs(marks) == [seq for seq, _, _ in marks]
        return
    newest = rewinds[-1]
    target = marks[newest][2]
    first = next((index for index, mark in enumerate(marks) if mark[1] == target), None)
    back_to = first if first is not None and first < newest else newest
    after = [seq for seq, _, _ in marks[newest + 1 :]]
    assert live_seqs(marks) == live_seqs(marks[:back_to]) + after


@HISTORIES
@given(marks=histories())
def test_rewinds_applied_twice_are_applied_once(marks: Marks) -> None:
    """A rewind event drops itself, so the live events hold no rewind: applying the rewinds
    again to them keeps them all."""
    live = live_seqs(marks)
    assert not [seq for seq, _, target in marks if target and seq in live]
    assert live_seqs([mark for mark in marks if mark[0] in live]) == live


# JSON values whose Python equality is JSON's: no booleans beside numbers (1 == True), no
# floats beside integers (1 == 1.0); see test_a_value_that_changed_type_is_restored.
VALUES = st.recursive(
    st.none() | st.integers(-3, 3) | st.sampled_from(["a", "b", ""]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("xy"), inner),
    max_leaves=4,
)
STATES = st.dictionaries(st.sampled_from(["k1", "k2", "k3", "k4"]), VALUES, max_size=4)


@settings(max_examples=300, deadline=None)
@given(current=STATES, then=STATES)
def test_the_delta_applied_to_the_state_now_gives_the_state_then(
    current: dict[str, Any], then: dict[str, Any]
) -> None:
    """Applied to `current`, the delta gives `then`, with the keys absent then set to null
    (a delta cannot remove a key); it names no key whose value is the same in both."""
    delta = restoring_delta(current, then)
    assert {**current, **delta} == {**then, **{k: None for k in current if k not in then}}
    for key in delta:
        assert key not in current or key not in then or current[key] != then[key]
