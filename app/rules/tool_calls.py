"""The tool-call invariant, as pure functions: a `functionResponse` answers a `functionCall` of
the same session, matched by id, and history surgery removes a call and its answers together.

An event's function calls and responses are the `functionCall` / `functionResponse` parts of
its `content`, as ADK (google-genai) writes them; parts without an id are not paired.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.errors import ToolPairViolation


@dataclass(frozen=True)
class ToolLinks:
    """The ids of the calls an event makes and of the calls it answers."""

    seq: int
    calls: frozenset[str]
    responses: frozenset[str]


def _ids(content: Any, kind: str) -> frozenset[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return frozenset()
    found = (part.get(kind) for part in parts if isinstance(part, dict))
    return frozenset(
        item["id"] for item in found if isinstance(item, dict) and isinstance(item.get("id"), str)
    )


def links(seq: int, content: Any) -> ToolLinks:
    """The tool links of an event with this `content`."""
    return ToolLinks(seq, _ids(content, "functionCall"), _ids(content, "functionResponse"))


def with_answers(events: Iterable[ToolLinks], seqs: set[int], *, strict: bool = True) -> set[int]:
    """`seqs` and every event answering a call of one of them, and of those, and so on: what
    removing `seqs` must remove so that no response is left without its call.

    With `strict`, ToolPairViolation if one of them answers a call whose event stays: that
    call would be left unanswered, which removing only a response must never do.
    """
    events = list(events)
    removed = set(seqs)
    while True:
        calls = {call for event in events if event.seq in removed for call in event.calls}
        answers = {
            event.seq for event in events if event.seq not in removed and event.responses & calls
        }
        if not answers:
            break
        removed |= answers
    if strict:
        call_seq = {call: event.seq for event in events for call in event.calls}
        for event in events:
            if event.seq in removed:
                kept = sorted(
                    r for r in event.responses if call_seq.get(r, event.seq) not in removed
                )
                if kept:
                    raise ToolPairViolation(
                        f"The event at seq {event.seq} answers function call {kept[0]!r}, whose "
                        f"call stays (seq {call_seq[kept[0]]}): remove the call's event instead, "
                        "and its answers go with it."
                    )
    return removed
