"""The tool-call rules (app/rules/tool_calls.py), called directly: no database, no HTTP.

Pairing calls and responses, what removing events must take with them (`with_answers`), the
status of each call, and the events that heal the orphans.
"""

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import ToolPairViolation
from app.rules.tool_calls import (
    HEALED,
    ToolCall,
    ToolLinks,
    healing_events,
    links,
    tool_calls,
    with_answers,
)


def call(call_id: str | None, name: Any = "f") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": {}}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def answer(call_id: str) -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": "f", "response": {}}}


def tool_links(seq: int, calls: Iterable[str] = (), responses: Iterable[str] = ()) -> ToolLinks:
    return ToolLinks(seq, frozenset(calls), frozenset(responses))


# Pairing.


def test_links_are_the_ids_of_calls_and_responses() -> None:
    content = {"parts": [call("a"), call(None), answer("b"), {"text": "t"}, "odd", call("c")]}
    assert links(3, content) == tool_links(3, {"a", "c"}, {"b"})
    assert links(1, None) == links(1, {"parts": "nope"}) == links(1, "text") == tool_links(1)


# What removing events takes with it.

CHAIN = [
    tool_links(1, {"a"}),
    tool_links(2, {"b"}, {"a"}),  # answers a, and calls b
    tool_links(3, set(), {"b"}),
    tool_links(4),
]


def test_removing_a_call_takes_its_answers_and_theirs() -> None:
    assert with_answers_of(CHAIN, {1}) == {1, 2, 3}
    assert with_answers_of(CHAIN, {4}) == {4}
    assert with_answers_of(CHAIN, set()) == set()


def test_removing_only_an_answer_whose_call_stays_is_refused() -> None:
    with pytest.raises(ToolPairViolation, match=r"seq 3 answers function call 'b'.*\(seq 2\)"):
        with_answers_of(CHAIN, {3}, strict=True)
    assert with_answers_of(CHAIN, {3}) == {3}


def test_a_response_to_no_call_may_go_alone() -> None:
    events = [tool_links(1, set(), {"ghost"}), tool_links(2, {"x"}, {"x"})]
    assert with_answers_of(events, {1}, strict=True) == {1}
    assert with_answers_of(events, {2}, strict=True) == {2}  # it answers its own call


def with_answers_of(events: list[ToolLinks], seqs: set[int], *, strict: bool = False) -> set[int]:
    return with_answers(iter(events), seqs, strict=strict)  # any iterable, read once


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[ToolLinks], set[int]]:
    """Events making calls of their own (ids unique, as ADK's are) and answering any call,
    earlier or later, or none ('ghost'); and seqs to remove, some of no event."""
    count = draw(st.integers(min_value=0, max_value=10))
    calls = {
        seq: {f"c{seq}_{n}" for n in range(draw(st.integers(min_value=0, max_value=2)))}
        for seq in range(1, count + 1)
    }
    every = [*sorted(call_id for made in calls.values() for call_id in made), "ghost"]
    events = [
        tool_links(seq, made, draw(st.sets(st.sampled_from(every), max_size=2)))
        for seq, made in calls.items()
    ]
    seqs = draw(st.sets(st.integers(min_value=1, max_value=count + 1), max_size=3))
    return events, seqs


def least_closure(events: list[ToolLinks], seqs: set[int]) -> set[int]:
    """`seqs`, and every event answering a call of one of them, and of those, and so on."""
    removed, frontier = set(seqs), list(seqs)
    while frontier:
        seq = frontier.pop()
        calls = {call_id for event in events if event.seq == seq for call_id in event.calls}
        for event in events:
            if event.seq not in removed and event.responses & calls:
                removed.add(event.seq)
                frontier.append(event.seq)
    return removed


HISTORIES = settings(max_examples=200, deadline=None)


@HISTORIES
@given(history=histories())
def test_what_is_removed_holds_the_input_and_every_answer_to_what_is_removed(
    history: tuple[list[ToolLinks], set[int]],
) -> None:
    events, seqs = history
    removed = with_answers_of(events, seqs)
    assert seqs <= removed
    gone = {call_id for event in events if event.seq in removed for call_id in event.calls}
    left = [event.seq for event in events if event.seq not in removed and event.responses & gone]
    assert not left, (removed, left)


@HISTORIES
@given(history=histories())
def test_nothing_is_removed_but_answers_to_what_is_removed(
    history: tuple[list[ToolLinks], set[int]],
) -> None:
    events, seqs = history
    assert with_answers_of(events, seqs) == least_closure(events, seqs)


@HISTORIES
@given(history=histories())
def test_strict_refuses_exactly_when_a_removed_answer_leaves_its_call(
    history: tuple[list[ToolLinks], set[int]],
) -> None:
    events, seqs = history
    removed = with_answers_of(events, seqs)
    maker = {call_id: event.seq for event in events for call_id in event.calls}
    stranded = [
        (event.seq, call_id)
        for event in events
        if event.seq in removed
        for call_id in event.responses
        if call_id in maker and maker[call_id] not in removed
    ]
    if stranded:
        with pytest.raises(ToolPairViolation):
            with_answers_of(events, seqs, strict=True)
    else:
        assert with_answers_of(events, seqs, strict=True) == removed


# The status of each call.


def stored(seq: int, *parts: Any, timestamp: float = 100.0, **fields: Any) -> dict[str, Any]:
    return {"id": f"e{seq}", "timestamp": timestamp, "content": {"parts": list(parts)}, **fields}


def test_a_call_is_answered_pending_or_orphaned() -> None:
    events = [
        (1, stored(1, call("a"), call("b"), call("c"), author="agent", invocationId="i1")),
        (2, stored(2, call("d"), longRunningToolIds=["d"])),
        (3, {"id": "e3", "timestamp": 100.0}),  # no content
        (4, stored(4, call(None), "odd", {"functionCall": "nope"}, call("e", name=3))),
    ]
    found = tool_calls(events, {"a"}, now=130.0, timeout=30.0)
    assert [(c.id, c.seq, c.status, c.deadline) for c in found] == [
        ("a", 1, "answered", 130.0),
        ("b", 1, "orphaned", 130.0),  # as old as the timeout: orphaned
        ("c", 1, "orphaned", 130.0),
        ("d", 2, "pending", None),  # long-running: never orphaned
        ("e", 4, "orphaned", 130.0),
    ]
    assert found[0] == ToolCall("a", "f", "e1", 1, 100.0, "agent", "i1", False, "answered", 130.0)
    assert found[3].long_running and found[3].author is None and found[3].invocation_id is None
    assert found[4].name is None  # not a string
    assert [c.status for c in tool_calls(events, set(), 129.9, 30.0)][:3] == ["pending"] * 3


def test_orphans_are_healed_one_event_per_calling_event() -> None:
    events = [
        (1, stored(1, call("a"), call("b", name="g"), author="agent", invocationId="i1")),
        (2, stored(2, call("c"))),
    ]
    orphans = tool_calls(events, set(), now=1000.0, timeout=300.0)
    error = {"error": HEALED.format(timeout=300.0)}
    assert healing_events(orphans, 300.0) == [
        {
            "author": "agent",
            "invocationId": "i1",
            "content": {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "a", "name": "f", "response": error}},
                    {"functionResponse": {"id": "b", "name": "g", "response": error}},
                ],
            },
        },
        {
            "author": "user",  # no author: the user's
            "content": {
                "role": "user",
                "parts": [{"functionResponse": {"id": "c", "name": "f", "response": error}}],
            },
        },
    ]
    assert "within 300 seconds" in error["error"] and healing_events([], 300.0) == []


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[tuple[int, dict[str, Any]]], set[str]]:
    """Stored events (seq, event) with calls (ids unique, some long-running), parts that are
    no call, and the ids some response answers."""
    events: list[tuple[int, dict[str, Any]]] = []
    ids: list[str] = []
    for seq in range(1, draw(st.integers(min_value=0, max_value=8)) + 1):
        made = [f"c{seq}_{n}" for n in range(draw(st.integers(min_value=0, max_value=3)))]
        ids += made
        parts: list[Any] = [call(call_id) for call_id in made]
        parts.insert(0, draw(st.sampled_from([{"text": "t"}, call(None), "odd", answer("x")])))
        event = stored(seq, *parts, timestamp=float(draw(st.integers(0, 10))))
        if made and draw(st.booleans()):
            event["longRunningToolIds"] = draw(st.lists(st.sampled_from(made), unique=True))
        event.update(
            draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "author": st.sampled_from(["agent", "tool", None]),
                        "invocationId": st.sampled_from(["i1", "i2", None]),
                    },
                )
            )
        )
        events.append((seq, event))
    answered = draw(st.sets(st.sampled_from([*ids, "x"]))) if ids else set()
    return events, answered


MOMENTS = st.integers(min_value=0, max_value=20).map(float)
TIMEOUTS = st.integers(min_value=0, max_value=10).map(float)
SESSIONS = settings(max_examples=200, deadline=None)


def made_calls(events: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """(seq, functionCall) of every call with an id, in order."""
    return [
        (seq, part["functionCall"])
        for seq, event in events
        for part in event["content"]["parts"]
        if isinstance(part, dict)
        and isinstance(part.get("functionCall"), dict)
        and isinstance(part["functionCall"].get("id"), str)
    ]


@SESSIONS
@given(session=sessions(), now=MOMENTS, timeout=TIMEOUTS)
def test_every_call_is_answered_pending_or_orphaned_by_its_age(
    session: tuple[list[tuple[int, dict[str, Any]]], set[str]], now: float, timeout: float
) -> None:
    """Each call with an id is listed once, in order: answered when a response to it is
    there; else pending while long-running or younger than the timeout; else orphaned."""
    events, answered = session
    found = tool_calls(events, answered, now, timeout)
    assert [(c.seq, c.id) for c in found] == [(seq, body["id"]) for seq, body in made_calls(events)]
    by_seq = dict(events)
    for listed in found:
        event = by_seq[listed.seq]
        lasting = listed.id in event.get("longRunningToolIds", ())
        assert listed.long_running == lasting
        assert listed.deadline == (None if lasting else event["timestamp"] + timeout)
        if listed.id in answered:
            assert listed.status == "answered"
        elif lasting or now - event["timestamp"] < timeout:
            assert listed.status == "pending"
        else:
            assert listed.status == "orphaned"


@SESSIONS
@given(session=sessions(), now=MOMENTS, timeout=TIMEOUTS)
def test_healing_answers_each_orphan_once_grouped_by_calling_event(
    session: tuple[list[tuple[int, dict[str, Any]]], set[str]], now: float, timeout: float
) -> None:
    """One event per calling event, in order, by its author (else `user`) in its invocation,
    answering exactly its orphans, each once, with the error; healed, none is left."""
    events, answered = session
    orphans = [c for c in tool_calls(events, answered, now, timeout) if c.status == "orphaned"]
    healing = healing_events(orphans, timeout)
    calling = list(dict.fromkeys(c.seq for c in orphans))
    assert len(healing) == len(calling)
    error = {"error": HEALED.format(timeout=timeout)}
    for seq, event in zip(calling, healing, strict=True):
        own = [c for c in orphans if c.seq == seq]
        assert event["content"] == {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": c.id, "name": c.name, "response": error}} for c in own
            ],
        }
        assert event["author"] == (own[0].author or "user")
        assert event.get("invocationId") == own[0].invocation_id
    healed = {part["functionResponse"]["id"] for e in healing for part in e["content"]["parts"]}
    assert healed == {c.id for c in orphans}
    after = tool_calls(events, answered | healed, now, timeout)
    assert not [c for c in after if c.status == "orphaned"]
