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


@dataclass(frozen=True)
class ToolCall:
    """A function call of a session, and where it stands."""

    id: str
    name: str | None
    event_id: str
    seq: int
    timestamp: float
    author: str | None
    invocation_id: str | None
    long_running: bool
    status: str  # answered, pending or orphaned
    deadline: float | None  # when an unanswered call becomes orphaned; None if long-running


def tool_calls(
    events: Iterable[tuple[int, dict[str, Any]]], answered: set[str], now: float, timeout: float
) -> list[ToolCall]:
    """The calls made by `events` ((seq, event), in order): `answered` if a response to them
    is in `answered`; else `pending` while long-running (ADK's `longRunningToolIds`) or
    younger than `timeout` seconds; else `orphaned`."""
    found = []
    for seq, event in events:
        long_running = set(event.get("longRunningToolIds") or ())
        parts = (event.get("content") or {}).get("parts")
        for part in parts if isinstance(parts, list) else ():
            call = part.get("functionCall") if isinstance(part, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                continue
            lasting = call["id"] in long_running
            deadline = None if lasting else event["timestamp"] + timeout
            if call["id"] in answered:
                status = "answered"
            elif deadline is None or now < deadline:
                status = "pending"
            else:
                status = "orphaned"
            name = call.get("name")
            found.append(
                ToolCall(
                    id=call["id"],
                    name=name if isinstance(name, str) else None,
                    event_id=event["id"],
                    seq=seq,
                    timestamp=event["timestamp"],
                    author=event.get("author"),
                    invocation_id=event.get("invocationId"),
                    long_running=lasting,
                    status=status,
                    deadline=deadline,
                )
            )
    return found


HEALED = (
    "No response came within {timeout:g} seconds: the call was abandoned (healed by Sessionary)."
)


def healing_events(orphans: list[ToolCall], timeout: float) -> list[dict[str, Any]]:
    """For each event with orphaned calls, the event answering them all with an error, as
    ADK answers a call: by the agent that made it, in its invocation."""
    by_event: dict[int, list[ToolCall]] = {}
    for call in orphans:
        by_event.setdefault(call.seq, []).append(call)
    events = []
    for calls in by_event.values():
        first = calls[0]
        parts = [
            {
                "functionResponse": {
                    "id": call.id,
                    "name": call.name,
                    "response": {"error": HEALED.format(timeout=timeout)},
                }
            }
            for call in calls
        ]
        event: dict[str, Any] = {
            "author": first.author or "user",
            "content": {"role": "user", "parts": parts},
        }
        if first.invocation_id is not None:
            event["invocationId"] = first.invocation_id
        events.append(event)
    return events
