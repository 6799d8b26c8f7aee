"""The context view, as pure functions: what a model should see next of a session.

Three steps, each google-adk's own where ADK has one (`google.adk.flows.llm_flows.context`):
1. `plan`: from the session's few marked events (rewinds, compactions, observation masks),
   which seqs rewinds drop (`_apply_rewinds`), which compaction summaries stand and which
   timestamps they cover (`_get_compaction_ranges`, `_process_compaction_events`);
2. the events that are left, newest first, read a page at a time until the budget is spent
   (`app.services.context`), the calls compaction hid brought back before their surviving
   responses (`_recover_compacted_function_calls`, `recover`);
3. `fit`: responses to no earlier call dropped (`_drop_orphaned_function_responses`), and
   the newest events within the token budget, cut where no call is separated from its
   responses.

They work on what is stored beside each event (`Facts`: its token estimate, the ids of its
calls and of the calls its responses answer, taken when it is stored), so that the view
reads whole only the events it shows. An event is a dict in ADK's wire format (camelCase).
"""

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from app import strict_json
from app.domain import Facts

# Marks what `fit` masks in `customMetadata`, beside whatever a client keeps there.
MASK_KEY = "sessionary"
MASKED = "[{size} characters of tool output masked by observationMask]"

TokenEstimator = Callable[[dict[str, Any]], int]


def content_parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The event's content parts that are objects, in order; none when it has no such list."""
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return []
    return [part for part in parts if isinstance(part, dict)]


def _payload(part: dict[str, Any], kind: str) -> dict[str, Any] | None:
    item = part.get(kind)
    return item if isinstance(item, dict) else None


def estimate_tokens(event: dict[str, Any]) -> int:
    """The default token estimate of an event: the UTF-8 bytes of its text parts, and of the
    names and JSON arguments or results of its function calls and responses, over 4, rounded
    up. Other parts (inline data, files) count for nothing.

    Replace it with `SESSIONARY_TOKEN_ESTIMATOR=module:function`, any function of an event
    (a dict, as stored) to a number of tokens: a real tokenizer, say.
    """
    size = 0
    for part in content_parts(event):
        text = part.get("text")
        if isinstance(text, str):
            size += len(text.encode())
        for kind, body in _TOOL_PARTS:
            item = part.get(kind)
            if isinstance(item, dict):
                name = item.get("name")
                size += len(name.encode()) if isinstance(name, str) else 0
                size += len(strict_json.dumps(item.get(body) or {}))
    return -(-size // 4)


_TOOL_PARTS = (("functionCall", "args"), ("functionResponse", "response"))


def facts(event: dict[str, Any], estimate: TokenEstimator) -> Facts:
    return Facts(estimate(event), tuple(calls(event)), tuple(responses(event)))


def calls(event: dict[str, Any]) -> list[str]:
    """The ids of the event's function calls, in part order (calls without one are not
    paired)."""
    found = (_payload(part, "functionCall") for part in content_parts(event))
    return [item["id"] for item in found if item and isinstance(item.get("id"), str)]


def responses(event: dict[str, Any]) -> list[str]:
    """The ids of the calls the event's function responses answer."""
    found = (_payload(part, "functionResponse") for part in content_parts(event))
    return [item["id"] for item in found if item and isinstance(item.get("id"), str)]


@dataclass(frozen=True, slots=True)
class Item:
    """One event of the view, at its place (`order` sorts the view: by seq, or by timestamp
    then seq once a compaction makes ADK order by time), with its facts; as the view shows it:
    `event` when the view made or changed it (a summary, a masked event), else `body`, the
    UTF-8 JSON PostgreSQL rendered."""

    seq: int
    timestamp: float
    order: tuple[float, ...]
    facts: Facts
    event: dict[str, Any] | None = None
    body: bytes | None = None

    @property
    def tokens(self) -> int:
        return self.facts.tokens

    @property
    def calls(self) -> tuple[str, ...]:
        return self.facts.calls

    @property
    def responses(self) -> tuple[str, ...]:
        return self.facts.responses


@dataclass(frozen=True)
class Mark:
    """A marked event: one that rewinds, compacts or masks (found by a partial index)."""

    seq: int
    event: dict[str, Any]

    @property
    def actions(self) -> dict[str, Any]:
        actions = self.event.get("actions")
        return actions if isinstance(actions, dict) else {}

    @property
    def rewinds_before(self) -> str | None:
        target = self.actions.get("rewindBeforeInvocationId")
        return target if isinstance(target, str) and target else None

    @property
    def compaction(self) -> dict[str, Any] | None:
        compaction = self.actions.get("compaction")
        return compaction if isinstance(compaction, dict) else None

    @property
    def mask(self) -> dict[str, Any] | None:
        metadata = self.event.get("customMetadata")
        ours = metadata.get(MASK_KEY) if isinstance(metadata, dict) else None
        mask = ours.get("observationMask") if isinstance(ours, dict) else None
        return mask if isinstance(mask, dict) else None


@dataclass(frozen=True)
class Plan:
    """What the marks decide before a single other event is read."""

    dropped: list[tuple[int, int]]  # seq ranges, inclusive, that rewinds remove
    marks: frozenset[int]  # never shown as they are: rewinds, compactions, masks
    summaries: list[Item]  # the compaction summaries that stand, materialized, in order
    coverage: list[tuple[float, float]]  # merged timestamp ranges the summaries replace
    masks: list[tuple[int, int]]  # (through seq, max chars) of each observation mask
    by_time: bool  # ADK orders by timestamp once a live compaction event is there

    def order(self, seq: int, timestamp: float) -> tuple[float, ...]:
        return (timestamp, seq) if self.by_time else (seq,)

    def is_covered(self, timestamp: float) -> bool:
        index = bisect_right([start for start, _ in self.coverage], timestamp) - 1
        return index >= 0 and timestamp <= self.coverage[index][1]


def plan(marks: Sequence[Mark], first_seq_of: dict[str, int], estimate: TokenEstimator) -> Plan:
    """The plan of a session whose marked events are `marks` (in seq order), given the first
    seq of each invocation a rewind names."""
    dropped: list[tuple[int, int]] = []
    floor: int | None = None
    for mark in reversed(marks):  # ADK walks back from the newest, jumping over what it drops
        target = mark.rewinds_before
        if target is None or (floor is not None and mark.seq >= floor):
            continue
        first = first_seq_of.get(target)
        floor = first if first is not None and first < mark.seq else mark.seq
        dropped.append((floor, mark.seq))

    def live(seq: int) -> bool:
        return not any(low <= seq <= high for low, high in dropped)

    compactions = [mark for mark in marks if mark.compaction is not None and live(mark.seq)]
    ranges = _standing_ranges(compactions)
    summaries = [_summary(mark, end, estimate) for mark, _, end in ranges]
    coverage: list[tuple[float, float]] = []
    for start, end in sorted((start, end) for _, start, end in ranges if start <= end):
        if coverage and start <= coverage[-1][1]:
            coverage[-1] = (coverage[-1][0], max(coverage[-1][1], end))
        else:
            coverage.append((start, end))
    masks = [
        (through, limit)
        for mark in marks
        if live(mark.seq) and (mask := mark.mask) is not None
        for through, limit in [(mask.get("throughSeq"), mask.get("toolOutputMaxChars"))]
        if isinstance(through, int) and isinstance(limit, int)
    ]
    return Plan(
        dropped=dropped,
        marks=frozenset(mark.seq for mark in marks),
        summaries=sorted(summaries, key=lambda item: item.order),
        coverage=coverage,
        masks=masks,
        by_time=bool(compactions),
    )


def _standing_ranges(compactions: list[Mark]) -> list[tuple[Mark, float, float]]:
    """ADK's `_get_compaction_ranges`: a range contained in another gives way to it; of equal
    ranges the latest stands."""
    ranges: list[tuple[int, Mark, float, float]] = []
    for index, mark in enumerate(compactions):
        compaction = mark.compaction or {}
        start, end = compaction.get("startTimestamp"), compaction.get("endTimestamp")
        if compaction.get("compactedContent") is None or not (_number(start) and _number(end)):
            continue
        ranges.append((index, mark, start, end))
    standing: set[int] = set()
    max_end: float | None = None
    for index, _, _, end in sorted(ranges, key=lambda item: (item[2], -item[3], -item[0])):
        if max_end is None or end > max_end:
            standing.add(index)
            max_end = end
    return [(mark, start, end) for index, mark, start, end in ranges if index in standing]


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _summary(mark: Mark, end: float, estimate: TokenEstimator) -> Item:
    """The summary as ADK's context assembly materializes it: at the range's end, by the
    model, with the compacted content as its content; it keeps its id, seq and actions, so
    that ADK, given the view, materializes it again the same way."""
    compaction = mark.compaction or {}
    event = {
        **mark.event,
        "author": "model",
        "timestamp": end,
        "content": compaction.get("compactedContent"),
    }
    return Item(mark.seq, end, (end, mark.seq), facts(event, estimate), event)


def merge(summaries: Iterable[Item], raw: Iterable[Item]) -> list[Item]:
    """Summaries and raw events in view order."""
    return sorted([*summaries, *raw], key=lambda item: item.order)


@dataclass(frozen=True)
class Recovery:
    """Calls a compaction covered whose responses survive it: ADK brings each call's event
    back just before the first surviving response (with the responses to its other calls
    that compaction removed)."""

    call_events: dict[str, Item]  # by the call id a surviving response answers
    sibling_responses: dict[str, Item]  # by call id, the latest covered response


def recover(items: list[Item], recovery: Recovery) -> list[Item]:
    """`items` with the covered calls of `recovery` brought back."""
    result: list[Item] = []
    restored: set[int] = set()
    present = {item.seq for item in items}
    for item in items:
        for call_id in item.responses:
            found = recovery.call_events.get(call_id)
            if found is None or found.seq in present or found.seq in restored:
                continue
            result.append(found)
            restored.add(found.seq)
            for sibling in found.calls:
                answer = recovery.sibling_responses.get(sibling)
                if answer is not None and answer.seq not in present | restored:
                    result.append(answer)
                    restored.add(answer.seq)
        result.append(item)
    return result


@dataclass(frozen=True)
class Fit:
    """The view decided: its items, and of each the responses to drop (to no earlier call)."""

    items: list[Item]
    orphans: dict[int, frozenset[str]]
    estimated_tokens: int
    truncated_before_seq: int | None
    over_budget: bool


def fit(
    items: list[Item], *, complete: bool, earlier_calls: frozenset[str], budget: int | None
) -> Fit:
    """The view of `items`, the newest events in view order: all of them when `complete` (the
    session's whole live history), else a window that holds more than the budget.

    A response whose call is in no earlier item is to be dropped (`orphans`), unless its call
    is in `earlier_calls`, made before the window: then the cut falls after it. The cut leaves
    out the oldest events until the rest fits `budget`, then moves on past any response whose
    call it left out. If even the newest event with the calls it answers does not fit, they
    are the view, `over_budget`.
    """
    orphans = _orphans(items, earlier_calls)
    tokens = [item.tokens for item in items]
    owner = _owners(items, earlier_calls)
    count = len(items)
    start, total = count, 0
    while start > 0 and (budget is None or total + tokens[start - 1] <= budget):
        start -= 1
        total += tokens[start]
    start = _clean_from(start, owner)
    # Nothing fits: the newest event and the calls it answers, over the budget.
    over_budget = start == count > 0
    if over_budget:
        start = _smallest_whole_tail(owner)
    kept = items[start:]
    return Fit(
        items=kept,
        orphans={item.seq: orphans[item.seq] for item in kept if item.seq in orphans},
        estimated_tokens=sum(tokens[start:]),
        truncated_before_seq=kept[0].seq if kept and (start > 0 or not complete) else None,
        over_budget=over_budget,
    )


_BEFORE_WINDOW = -1


def _owners(items: list[Item], earlier_calls: frozenset[str]) -> list[int | None]:
    """For each item, the index of the oldest call its responses answer (the latest earlier
    call of that id), `_BEFORE_WINDOW` for one before the window; None without responses."""
    latest: dict[str, int] = {}
    owner: list[int | None] = []
    for index, item in enumerate(items):
        found = [
            latest.get(call_id, _BEFORE_WINDOW)
            for call_id in item.responses
            if call_id in latest or call_id in earlier_calls
        ]
        owner.append(min(found) if found else None)
        for call_id in item.calls:
            latest[call_id] = index
    return owner


def _clean_from(start: int, owner: list[int | None]) -> int:
    """The first cut at or after `start` that separates no response from its call."""
    while True:
        split = [
            index
            for index in range(start, len(owner))
            if (found := owner[index]) is not None and found < start
        ]
        if not split:
            return start
        start = max(split) + 1


def _smallest_whole_tail(owner: list[int | None]) -> int:
    """Where the shortest tail that holds the newest event and the calls it answers starts;
    past the end if one of those calls is before the window."""
    start = len(owner) - 1
    while True:
        needed = [found for found in owner[start:] if found is not None and found < start]
        if not needed:
            return start
        if min(needed) == _BEFORE_WINDOW:
            return len(owner)
        start = min(needed)


def _orphans(items: list[Item], earlier_calls: frozenset[str]) -> dict[int, frozenset[str]]:
    """ADK's `_drop_orphaned_function_responses`, for responses with an id: by seq, the
    responses of each item to no earlier call. (ADK also pairs a response without an id with
    an earlier call of the same name; the view keeps those and leaves them to ADK.)"""
    seen: set[str] = set(earlier_calls)
    orphans: dict[int, frozenset[str]] = {}
    for item in items:
        lost = frozenset(call_id for call_id in item.responses if call_id not in seen)
        if lost:
            orphans[item.seq] = lost
        seen.update(item.calls)
    return orphans


def without_responses(event: dict[str, Any], call_ids: frozenset[str]) -> dict[str, Any] | None:
    """The event less its function responses to these calls; None if nothing else is left."""
    content = event["content"]
    parts = [part for part in content["parts"] if _answered(part) not in call_ids]
    return {**event, "content": {**content, "parts": parts}} if parts else None


def _answered(part: Any) -> str | None:
    response = _payload(part, "functionResponse") if isinstance(part, dict) else None
    answered = response.get("id") if response else None
    return answered if isinstance(answered, str) else None


def masked(event: dict[str, Any], masks: list[tuple[int, int]], seq: int) -> dict[str, Any]:
    """The event with each function response whose JSON is longer than an observation mask
    covering `seq` allows replaced by a note of its size."""
    limits = [limit for through, limit in masks if seq <= through]
    if not limits or not content_parts(event):
        return event
    parts = [_masked_part(part, min(limits)) for part in event["content"]["parts"]]
    return {**event, "content": {**event["content"], "parts": parts}}


def _masked_part(part: Any, limit: int) -> Any:
    response = _payload(part, "functionResponse") if isinstance(part, dict) else None
    if response is None:
        return part
    size = len(strict_json.dumps(response.get("response")))
    if size <= limit:
        return part
    note = {"result": MASKED.format(size=size)}
    return {**part, "functionResponse": {**response, "response": note}}


def is_masked(masks: list[tuple[int, int]], seq: int) -> bool:
    """Whether an observation mask covers the event at `seq`."""
    return any(seq <= through for through, _ in masks)
