"""The context view's pure rules (app/rules/context.py), called directly: no database, no HTTP.

Examples for each step, and properties of `fit` (what the budget keeps), `plan` (rewinds,
standing compactions, coverage) and `recover` (calls a compaction hid, brought back).
"""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.rules import context as rules
from app.rules.rewinds import live_seqs

CALL_IDS = [f"c{n}" for n in range(5)]


def item(
    seq: int,
    tokens: int = 1,
    calls: tuple[str, ...] = (),
    responses: tuple[str, ...] = (),
) -> rules.Item:
    """A raw event of the view, ordered by seq (no compaction)."""
    facts = rules.Facts(tokens, calls, responses)
    return rules.Item(seq, float(seq), (seq,), facts, body=b"{}")


def said(text: str) -> dict[str, Any]:
    return {"author": "user", "content": {"role": "user", "parts": [{"text": text}]}}


def call_part(call_id: str | None, name: str = "f", **args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def response_part(call_id: str | None, name: str = "f", **result: Any) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": result}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


def with_parts(*parts: Any) -> dict[str, Any]:
    return {"author": "agent", "content": {"role": "model", "parts": list(parts)}}


# Estimates, calls and responses of an event.


def test_the_estimate_is_utf8_bytes_over_four_rounded_up() -> None:
    assert rules.estimate_tokens(said("")) == 0
    assert rules.estimate_tokens(said("abcd")) == 1
    assert rules.estimate_tokens(said("abcde")) == 2
    assert rules.estimate_tokens(said("ééé")) == 2  # six bytes
    assert rules.estimate_tokens({"author": "user"}) == 0


def test_calls_and_responses_count_their_name_and_compact_json() -> None:
    # "f" (1) + {"a":1} (7) = 8 bytes; "g" (1) + {} (2) = 3 bytes; 11 bytes in all: 3 tokens.
    event = with_parts(call_part("c1", a=1), response_part("c0", name="g"))
    assert rules.estimate_tokens(event) == 3
    missing = with_parts({"functionCall": {"name": "f"}})  # no args: counted as {}
    assert rules.estimate_tokens(missing) == 1


def test_other_parts_count_for_nothing() -> None:
    event = with_parts({"inlineData": {"mimeType": "image/png", "data": "x" * 400}}, "text")
    assert rules.estimate_tokens(event) == 0


def test_calls_and_responses_are_the_ids_in_part_order() -> None:
    event = with_parts(
        call_part("b"),
        call_part(None),  # no id: not paired
        response_part("r1"),
        {"text": "t"},
        call_part("a"),
        "not a part",
        response_part("r0"),
    )
    assert rules.calls(event) == ["b", "a"]
    assert rules.responses(event) == ["r1", "r0"]
    assert rules.facts(event, lambda _: 7) == rules.Facts(7, ("b", "a"), ("r1", "r0"))
    assert rules.calls({"content": {"parts": "nope"}}) == rules.calls({}) == []
    assert rules.content_parts({"content": "text"}) == []


# Marks and the plan.


def test_a_mark_reads_its_rewind_compaction_and_mask() -> None:
    plain = rules.Mark(1, {"actions": "not an object"})
    assert (plain.rewinds_before, plain.compaction, plain.mask) == (None, None, None)
    assert rules.Mark(1, {"actions": {"rewindBeforeInvocationId": ""}}).rewinds_before is None
    rewind = rules.Mark(1, {"actions": {"rewindBeforeInvocationId": "inv"}})
    assert rewind.rewinds_before == "inv"
    mask = {"throughSeq": 3, "toolOutputMaxChars": 10}
    masking = rules.Mark(2, {"customMetadata": {rules.MASK_KEY: {"observationMask": mask}}})
    assert masking.mask == mask


def compaction(seq: int, start: float, end: float, text: str = "sum") -> rules.Mark:
    content = {"role": "model", "parts": [{"text": text}]}
    actions = {
        "compaction": {"startTimestamp": start, "endTimestamp": end, "compactedContent": content}
    }
    return rules.Mark(seq, {"id": f"e{seq}", "author": "user", "actions": actions})


def rewind(seq: int, before: str) -> rules.Mark:
    return rules.Mark(seq, {"id": f"e{seq}", "actions": {"rewindBeforeInvocationId": before}})


def test_a_rewind_drops_back_to_the_first_event_of_its_invocation() -> None:
    planned = rules.plan([rewind(6, "inv-2")], {"inv-2": 3}, rules.estimate_tokens)
    assert planned.dropped == [(3, 6)]
    assert planned.marks == frozenset({6})
    assert not planned.by_time and planned.order(4, 100.0) == (4,)


def test_a_rewind_to_no_earlier_invocation_drops_only_itself() -> None:
    unknown = rules.plan([rewind(6, "nowhere")], {}, rules.estimate_tokens)
    later = rules.plan([rewind(6, "later")], {"later": 9}, rules.estimate_tokens)
    assert unknown.dropped == later.dropped == [(6, 6)]


def test_a_rewound_compaction_or_mask_counts_for_nothing() -> None:
    mask = {"throughSeq": 2, "toolOutputMaxChars": 5}
    masking = rules.Mark(4, {"customMetadata": {rules.MASK_KEY: {"observationMask": mask}}})
    marks = [compaction(3, 1.0, 2.0), masking, rewind(5, "inv")]
    planned = rules.plan(marks, {"inv": 3}, rules.estimate_tokens)
    assert planned.summaries == [] and planned.coverage == [] and planned.masks == []
    assert not planned.by_time
    assert planned.marks == frozenset({3, 4, 5})


def test_a_standing_summary_is_its_compacted_content_by_the_model_at_its_range_end() -> None:
    planned = rules.plan([compaction(7, 1.0, 5.0, "abcdefgh")], {}, rules.estimate_tokens)
    [summary] = planned.summaries
    assert summary.event is not None
    assert summary.seq == 7 and summary.timestamp == 5.0 and summary.order == (5.0, 7)
    assert summary.event["author"] == "model" and summary.event["timestamp"] == 5.0
    assert summary.event["content"] == {"role": "model", "parts": [{"text": "abcdefgh"}]}
    assert summary.event["id"] == "e7" and "compaction" in summary.event["actions"]
    assert summary.tokens == 2
    assert planned.by_time and planned.order(3, 4.0) == (4.0, 3)
    assert planned.coverage == [(1.0, 5.0)]
    assert planned.is_covered(1.0) and planned.is_covered(5.0) and not planned.is_covered(5.5)


def test_a_contained_range_gives_way_and_of_equal_ranges_the_latest_stands() -> None:
    marks = [compaction(1, 2.0, 3.0), compaction(2, 1.0, 4.0), compaction(3, 1.0, 4.0)]
    planned = rules.plan(marks, {}, rules.estimate_tokens)
    assert [summary.seq for summary in planned.summaries] == [3]


def test_an_incomplete_compaction_makes_no_summary_but_orders_by_time() -> None:
    incomplete = rules.Mark(1, {"actions": {"compaction": {"startTimestamp": 1.0}}})
    planned = rules.plan([incomplete], {}, rules.estimate_tokens)
    assert planned.summaries == [] and planned.coverage == [] and planned.by_time


def test_overlapping_ranges_cover_their_union() -> None:
    marks = [compaction(1, 1.0, 3.0), compaction(2, 2.0, 5.0), compaction(3, 7.0, 8.0)]
    planned = rules.plan(marks, {}, rules.estimate_tokens)
    assert planned.coverage == [(1.0, 5.0), (7.0, 8.0)]
    assert [summary.seq for summary in planned.summaries] == [1, 2, 3]


# Properties of the plan.

INVOCATIONS = ["i0", "i1", "i2", "i3"]


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[int, str | None, str | None]]:
    """Events as (seq, invocation id, the invocation a rewind goes back before or None), seqs
    growing with gaps; invocations interleave, and rewinds name any of them."""
    count = draw(st.integers(min_value=0, max_value=14))
    seq, events = 0, []
    for _ in range(count):
        seq += draw(st.integers(min_value=1, max_value=2))
        invocation = draw(st.sampled_from([*INVOCATIONS, None]))
        target = draw(st.sampled_from([None, None, None, "", *INVOCATIONS, "i9"]))
        events.append((seq, invocation, target))
    return events


@settings(max_examples=200, deadline=None)
@given(events=sessions())
def test_the_plan_drops_what_adks_rewinds_drop(
    events: list[tuple[int, str | None, str | None]],
) -> None:
    """The view's rewinds (`plan`) and the events' (`rewinds.live_seqs`) both follow ADK's
    `_apply_rewinds`: from the same events they keep the same seqs."""
    marks = [
        rules.Mark(seq, {"invocationId": invocation, "actions": {"rewindBeforeInvocationId": t}})
        for seq, invocation, t in events
        if t
    ]
    first_seq_of: dict[str, int] = {}
    for seq, invocation, _ in events:
        if invocation:
            first_seq_of.setdefault(invocation, seq)
    planned = rules.plan(marks, first_seq_of, rules.estimate_tokens)
    kept = [
        seq for seq, _, _ in events if not any(low <= seq <= high for low, high in planned.dropped)
    ]
    assert kept == live_seqs(events)


TIMES = st.integers(min_value=0, max_value=6).map(float)


@st.composite
def compactions(draw: st.DrawFn) -> list[rules.Mark]:
    """Compaction marks over a few timestamps (so that ranges often coincide or nest), some
    incomplete, some rewound by a rewind mark."""
    marks: list[rules.Mark] = []
    for seq in range(1, draw(st.integers(min_value=0, max_value=8)) + 1):
        kind = draw(st.sampled_from(["compaction", "compaction", "incomplete", "rewind"]))
        if kind == "rewind":
            marks.append(rewind(seq, "target"))
        elif kind == "incomplete":
            marks.append(rules.Mark(seq, {"actions": {"compaction": {"endTimestamp": 1.0}}}))
        else:
            start, end = draw(TIMES), draw(TIMES)
            marks.append(compaction(seq, min(start, end), max(start, end)))
    return marks


def live_ranges(marks: list[rules.Mark], rewound_from: int) -> list[tuple[int, float, float]]:
    """(seq, start, end) of each complete compaction no rewind drops (`rewinds.live_seqs`
    over seqs 1-8, the invocation the rewinds name starting at `rewound_from`)."""
    rewinding = {mark.seq for mark in marks if mark.rewinds_before}
    live = live_seqs(
        [
            (seq, "target" if seq == rewound_from else None, "target" if seq in rewinding else None)
            for seq in range(1, 9)
        ]
    )
    return [
        (mark.seq, body["startTimestamp"], body["endTimestamp"])
        for mark in marks
        if (body := mark.compaction) is not None and "startTimestamp" in body and mark.seq in live
    ]


@settings(max_examples=200, deadline=None)
@given(marks=compactions(), rewound_from=st.integers(min_value=1, max_value=8))
def test_the_summaries_that_stand_are_the_ranges_no_other_contains(
    marks: list[rules.Mark], rewound_from: int
) -> None:
    """A live range stands unless another live range contains it; of equal ranges, only the
    latest. The summaries are in view order."""
    planned = rules.plan(marks, {"target": rewound_from}, rules.estimate_tokens)
    ranges = live_ranges(marks, rewound_from)

    def gives_way(seq: int, start: float, end: float) -> bool:
        return any(
            (other_start, other_end) != (start, end) and other_start <= start <= end <= other_end
            for _, other_start, other_end in ranges
        ) or any((s, e) == (start, end) and other > seq for other, s, e in ranges)

    standing = [seq for seq, start, end in ranges if not gives_way(seq, start, end)]
    assert sorted(summary.seq for summary in planned.summaries) == standing
    orders = [summary.order for summary in planned.summaries]
    assert orders == sorted(orders)


@settings(max_examples=200, deadline=None)
@given(
    marks=compactions(),
    rewound_from=st.integers(min_value=1, max_value=8),
    moments=st.lists(st.integers(min_value=-1, max_value=7).map(float), max_size=10),
)
def test_a_timestamp_is_covered_when_a_live_range_holds_it(
    marks: list[rules.Mark], rewound_from: int, moments: list[float]
) -> None:
    """The coverage is sorted and disjoint, and covers exactly the timestamps some live range
    holds, ends included (a contained range adds nothing its container does not)."""
    planned = rules.plan(marks, {"target": rewound_from}, rules.estimate_tokens)
    ranges = live_ranges(marks, rewound_from)
    assert all(start <= end for start, end in planned.coverage)
    assert all(a[1] < b[0] for a, b in zip(planned.coverage, planned.coverage[1:], strict=False))
    for moment in [*moments, *(t for _, start, end in ranges for t in (start, end))]:
        held = any(start <= moment <= end for _, start, end in ranges)
        assert planned.is_covered(moment) == held, (moment, ranges, planned.coverage)


# Bringing back the calls a compaction hid.


def test_a_hidden_call_comes_back_just_before_its_first_surviving_response() -> None:
    hidden = item(1, calls=("a", "b"))
    sibling = item(2, responses=("b",))
    first, second = item(5, responses=("a",)), item(6, responses=("a",))
    recovery = rules.Recovery({"a": hidden}, {"b": sibling})
    assert rules.recover([item(4), first, second], recovery) == [
        item(4),
        hidden,
        sibling,
        first,
        second,
    ]


def test_a_call_already_in_the_view_is_not_brought_back() -> None:
    present = item(1, calls=("a",))
    recovery = rules.Recovery({"a": present}, {})
    assert rules.recover([present, item(2, responses=("a",))], recovery) == [
        present,
        item(2, responses=("a",)),
    ]


@st.composite
def recoveries(draw: st.DrawFn) -> tuple[list[rules.Item], rules.Recovery]:
    """Hidden call events (seqs 1-3, two calls each), hidden answers to some of their other
    calls (seqs 4-9), and the view's items (seqs from 20) answering any of those calls."""
    hidden = [item(seq, calls=(f"h{seq}a", f"h{seq}b")) for seq in (1, 2, 3)]
    ids = [call_id for event in hidden for call_id in event.calls]
    call_events = {
        call_id: event
        for event in hidden
        for call_id in event.calls
        if draw(st.booleans())  # the call a surviving response answers
    }
    siblings = {
        call_id: item(4 + index, responses=(call_id,))
        for index, call_id in enumerate(ids)
        if call_id not in call_events and draw(st.booleans())
    }
    answers = st.lists(st.sampled_from(ids), max_size=2, unique=True).map(tuple)
    items = [item(20 + n, responses=draw(answers)) for n in range(draw(st.integers(0, 6)))]
    return items, rules.Recovery(call_events, siblings)


@settings(max_examples=200, deadline=None)
@given(case=recoveries())
def test_each_hidden_call_comes_back_once_before_the_first_response_to_it(
    case: tuple[list[rules.Item], rules.Recovery],
) -> None:
    items, recovery = case
    result = rules.recover(items, recovery)
    seqs = [entry.seq for entry in result]
    assert len(seqs) == len(set(seqs)), seqs
    assert [entry for entry in result if entry in items] == items
    for call_event in set(recovery.call_events.values()):
        answering = [
            index
            for index, entry in enumerate(items)
            if any(recovery.call_events.get(r) == call_event for r in entry.responses)
        ]
        if not answering:
            assert call_event not in result
            continue
        # Just before that response: between them, only what was brought back.
        at, first = result.index(call_event), result.index(items[answering[0]])
        assert result.count(call_event) == 1
        assert at < first and not any(entry in items for entry in result[at:first])
        # With the hidden answers to its other calls, after it.
        for call_id in call_event.calls:
            answer = recovery.sibling_responses.get(call_id)
            if answer is not None:
                assert at < result.index(answer)


# The budget: what `fit` keeps.


def test_everything_fits_without_a_budget() -> None:
    items = [item(1), item(2, calls=("a",)), item(3, responses=("a",))]
    chosen = rules.fit(items, complete=True, earlier_calls=frozenset(), budget=None)
    assert chosen == rules.Fit(items, {}, 3, None, False)


def test_a_cut_between_parallel_calls_and_their_answers_moves_past_the_last_answer() -> None:
    # As in tests/test_context.py: a budget of 29 would cut between the answers.
    items = [
        item(1, 5),
        item(2, 10, calls=("a", "b")),
        item(3, 5, responses=("a",)),
        item(4, 5, responses=("b",)),
        item(5, 10),
    ]
    chosen = rules.fit(items, complete=True, earlier_calls=frozenset(), budget=29)
    assert [entry.seq for entry in chosen.items] == [5]
    assert (chosen.estimated_tokens, chosen.truncated_before_seq) == (10, 5)
    chosen = rules.fit(items, complete=True, earlier_calls=frozenset(), budget=30)
    assert [entry.seq for entry in chosen.items] == [2, 3, 4, 5]
    assert not chosen.over_budget


def test_a_pair_over_the_budget_alone_is_the_view_and_said_to_be() -> None:
    items = [item(1, 1), item(2, 5, calls=("a",)), item(3, 100, responses=("a",))]
    chosen = rules.fit(items, complete=True, earlier_calls=frozenset(), budget=50)
    assert [entry.seq for entry in chosen.items] == [2, 3]
    assert chosen.over_budget and chosen.estimated_tokens == 105
    assert chosen.truncated_before_seq == 2


def test_a_response_to_no_earlier_call_is_an_orphan_to_drop() -> None:
    items = [item(1), item(2, responses=("ghost", "a")), item(3, calls=("a",))]
    chosen = rules.fit(items, complete=True, earlier_calls=frozenset(), budget=None)
    assert chosen.items == items and chosen.orphans == {2: frozenset({"ghost", "a"})}


def test_the_cut_falls_after_a_response_to_a_call_before_the_window() -> None:
    items = [item(4), item(5, responses=("old",)), item(6)]
    chosen = rules.fit(items, complete=False, earlier_calls=frozenset({"old"}), budget=100)
    assert [entry.seq for entry in chosen.items] == [6]
    assert chosen.orphans == {} and chosen.truncated_before_seq == 6


def test_a_window_shown_whole_still_says_where_it_was_cut() -> None:
    items = [item(4), item(5)]
    chosen = rules.fit(items, complete=False, earlier_calls=frozenset(), budget=100)
    assert chosen.items == items and chosen.truncated_before_seq == 4


def test_nothing_is_shown_when_the_newest_event_answers_a_call_before_the_window() -> None:
    """`_smallest_whole_tail`: "past the end if one of those calls is before the window"."""
    items = [item(4), item(5, 100, responses=("old",))]
    chosen = rules.fit(items, complete=False, earlier_calls=frozenset({"old"}), budget=10)
    assert chosen == rules.Fit([], {}, 0, None, True)


def test_no_events_no_view() -> None:
    assert rules.fit([], complete=True, earlier_calls=frozenset(), budget=0) == rules.Fit(
        [], {}, 0, None, False
    )


@st.composite
def windows(draw: st.DrawFn) -> tuple[list[rules.Item], frozenset[str]]:
    """Items of a window, seqs growing: each makes and answers a few calls of a small pool
    (ids repeat, responses may come before, without or long after their call); and the calls
    made before the window."""
    items = []
    for seq in range(1, draw(st.integers(min_value=0, max_value=12)) + 1):
        ids = st.lists(st.sampled_from(CALL_IDS), max_size=2, unique=True).map(tuple)
        tokens = draw(st.integers(min_value=0, max_value=10))
        items.append(item(seq, tokens, calls=draw(ids), responses=draw(ids)))
    earlier = draw(st.frozensets(st.sampled_from(CALL_IDS), max_size=2))
    return items, earlier


BUDGETS = st.one_of(st.none(), st.integers(min_value=0, max_value=40))
FIT = settings(max_examples=200, deadline=None)


def owner(items: list[rules.Item], earlier: frozenset[str], index: int, call_id: str) -> int | None:
    """Where the call a response at `index` answers was made: the latest earlier item making
    it; -1 when only before the window; None when nowhere (an orphan)."""
    for before in range(index - 1, -1, -1):
        if call_id in items[before].calls:
            return before
    return -1 if call_id in earlier else None


def is_clean(items: list[rules.Item], earlier: frozenset[str], start: int) -> bool:
    """Whether a view starting at `start` separates no response from its call."""
    return all(
        (found := owner(items, earlier, index, call_id)) is None or found >= start
        for index in range(start, len(items))
        for call_id in items[index].responses
    )


def fits(items: list[rules.Item], start: int, budget: int | None) -> bool:
    return budget is None or sum(entry.tokens for entry in items[start:]) <= budget


@FIT
@given(window=windows(), budget=BUDGETS, complete=st.booleans())
def test_the_view_is_the_newest_events_with_their_tokens_counted(
    window: tuple[list[rules.Item], frozenset[str]], budget: int | None, complete: bool
) -> None:
    """A suffix of the items, in their order; its estimate is theirs; `truncatedBeforeSeq`
    is its first seq when older events were left out or the window is not all there is."""
    items, earlier = window
    chosen = rules.fit(items, complete=complete, earlier_calls=earlier, budget=budget)
    start = len(items) - len(chosen.items)
    assert chosen.items == items[start:]
    assert chosen.estimated_tokens == sum(entry.tokens for entry in chosen.items)
    cut = chosen.items and (start > 0 or not complete)
    assert chosen.truncated_before_seq == (chosen.items[0].seq if cut else None)


@FIT
@given(window=windows(), budget=BUDGETS, complete=st.booleans())
def test_no_response_is_shown_without_its_call(
    window: tuple[list[rules.Item], frozenset[str]], budget: int | None, complete: bool
) -> None:
    """Each response shown answers a call shown before it, or answers no call at all and is
    listed to be dropped; a response to a call before the window is never shown. So the view
    never starts on a response it keeps, and parallel calls keep all their answers."""
    items, earlier = window
    chosen = rules.fit(items, complete=complete, earlier_calls=earlier, budget=budget)
    start = len(items) - len(chosen.items)
    for index in range(start, len(items)):
        lost = set()
        for call_id in items[index].responses:
            found = owner(items, earlier, index, call_id)
            assert found is None or found >= start, (index, call_id, found)
            if found is None:
                lost.add(call_id)
        assert chosen.orphans.get(items[index].seq, frozenset()) == lost
    assert set(chosen.orphans) <= {entry.seq for entry in chosen.items}


@FIT
@given(window=windows(), budget=st.integers(min_value=0, max_value=40), complete=st.booleans())
def test_the_view_holds_to_the_budget_unless_said_to_be_over_it(
    window: tuple[list[rules.Item], frozenset[str]], budget: int, complete: bool
) -> None:
    items, earlier = window
    chosen = rules.fit(items, complete=complete, earlier_calls=earlier, budget=budget)
    assert chosen.over_budget or chosen.estimated_tokens <= budget
    assert not chosen.over_budget or chosen.estimated_tokens > budget or not chosen.items


@FIT
@given(window=windows(), budget=BUDGETS, complete=st.booleans())
def test_the_view_is_the_longest_whole_tail_within_the_budget(
    window: tuple[list[rules.Item], frozenset[str]], budget: int | None, complete: bool
) -> None:
    """The oldest events are left out until the rest fits, then the cut moves on past any
    response whose call it left out: the longest tail that fits and splits no pair. If no
    tail but the empty one does, the view is over the budget: the shortest tail that splits
    no pair (the newest event and the calls it answers), or nothing if it needs a call made
    before the window."""
    items, earlier = window
    chosen = rules.fit(items, complete=complete, earlier_calls=earlier, budget=budget)
    start = len(items) - len(chosen.items)
    whole = [at for at in range(len(items) + 1) if is_clean(items, earlier, at)]
    best = min(at for at in whole if fits(items, at, budget))
    assert chosen.over_budget == (best == len(items) > 0)
    if not chosen.over_budget:
        assert start == best
    else:
        assert start == max((at for at in whole if at < len(items)), default=len(items))


@FIT
@given(window=windows(), complete=st.booleans())
def test_without_a_budget_every_event_is_shown(
    window: tuple[list[rules.Item], frozenset[str]], complete: bool
) -> None:
    """No budget, no call before the window (the whole live history, as the service reads it
    then): every item is shown, orphans listed to be dropped."""
    items, _ = window
    chosen = rules.fit(items, complete=complete, earlier_calls=frozenset(), budget=None)
    assert chosen.items == items and not chosen.over_budget
    assert chosen.truncated_before_seq == (None if complete or not items else items[0].seq)


# What the view changes in the events it shows.


def test_an_event_less_its_orphan_responses() -> None:
    event = with_parts(response_part("a"), {"text": "kept"}, response_part("b"), "odd")
    trimmed = rules.without_responses(event, frozenset({"a"}))
    assert trimmed is not None
    assert trimmed["content"]["parts"] == [{"text": "kept"}, response_part("b"), "odd"]
    assert trimmed["author"] == "agent" and event["content"]["parts"][0] == response_part("a")
    assert rules.without_responses(with_parts(response_part("a")), frozenset({"a"})) is None


def test_a_mask_replaces_only_tool_output_longer_than_its_limit() -> None:
    long, short = response_part("a", out="x" * 20), response_part("b", out="y")
    event = with_parts(long, short, {"text": "z" * 50})
    size = len('{"out":"' + "x" * 20 + '"}')
    exactly = len('{"out":"y"}')  # the short one's size: not longer than the limit
    masked = rules.masked(event, [(5, exactly)], 5)
    note = {"result": rules.MASKED.format(size=size)}
    assert masked["content"]["parts"] == [
        {"functionResponse": {"id": "a", "name": "f", "response": note}},
        short,
        {"text": "z" * 50},
    ]
    assert event["content"]["parts"][0] == long  # the stored event is not changed
    assert rules.masked(with_parts(short), [(5, exactly - 1)], 5) != with_parts(short)


def test_the_tightest_mask_covering_an_event_applies() -> None:
    event = with_parts(response_part("a", out="x" * 20))
    assert rules.masked(event, [(3, 10), (9, 1000)], 3) != event
    assert rules.masked(event, [(3, 10), (9, 1000)], 4) == event  # only the loose one covers
    assert rules.masked(event, [], 1) == event
    assert rules.is_masked([(3, 10)], 3) and not rules.is_masked([(3, 10)], 4)
    assert not rules.is_masked([], 1)
    assert rules.masked({"author": "user"}, [(3, 10)], 1) == {"author": "user"}


def test_merge_orders_summaries_among_events() -> None:
    summary = rules.Item(9, 2.5, (2.5, 9), rules.Facts(1, (), ()), event={})
    raw = [rules.Item(seq, float(seq), (float(seq), seq), rules.Facts(1, (), ())) for seq in (1, 3)]
    assert [entry.seq for entry in rules.merge([summary], raw)] == [1, 9, 3]
