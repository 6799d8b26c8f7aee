"""ADK's rewind, as pure functions: which events stay live, and what undoes state and
artifacts.

They follow google-adk (`google.adk.events._rewind_events._apply_rewinds` and
`google.adk.sessions._rewind_utils.compute_state_delta_for_rewind` and
`compute_artifact_delta_for_rewind`), so that ADK's own runner and Sessionary agree on what a
rewound session holds.
"""

from collections.abc import Sequence
from typing import Any

from app.domain import StateMap
from app.rules.events import canonical_json


def live_seqs(marks: Sequence[tuple[int, str | None, str | None]]) -> list[int]:
    """The seqs of the events that survive every rewind, in order.

    `marks` are each event's (seq, invocation id, the invocation its rewind goes back before
    or None), in seq order. Walking back from the newest, a rewind event drops itself and
    every event back to the first event of the invocation it names (when that comes before
    it), and the walk goes on from there: a rewind that was itself rewound counts for nothing.
    """
    first_of: dict[str, int] = {}
    for index, (_, invocation_id, _) in enumerate(marks):
        if invocation_id and invocation_id not in first_of:
            first_of[invocation_id] = index
    kept: list[int] = []
    index = len(marks) - 1
    while index >= 0:
        seq, _, rewinds_before = marks[index]
        if rewinds_before:
            target = first_of.get(rewinds_before)
            if target is not None and target < index:
                index = target
        else:
            kept.append(seq)
        index -= 1
    kept.reverse()
    return kept


def restoring_delta(current: StateMap, then: StateMap) -> dict[str, Any]:
    """The delta that takes the session state `current` back to `then`: keys that changed get
    their value then, keys that did not exist then become null (a delta cannot remove a key;
    ADK's rewind nulls them the same way). Values are compared as JSON, where `true` is not
    `1` (Python's `==`, which ADK's rewind compares with, takes them for one)."""
    delta = {
        key: value
        for key, value in then.items()
        if key not in current or canonical_json(current[key]) != canonical_json(value)
    }
    delta.update({key: None for key in current if key not in then})
    return delta


def restoring_artifacts(deltas: Sequence[tuple[int, Any]], before: int) -> dict[str, int | None]:
    """The artifact versions a rewind to before the event at seq `before` + 1 restores, by
    name: the version the events up to `before` last named (None: none, so the name is to be
    marked removed), for each session name whose version the events named later differs.
    `deltas` are the events' `artifactDelta`s with their seqs, in order; `user:` names are left
    as they are, as ADK leaves them."""
    then: dict[str, int] = {}
    now: dict[str, int] = {}
    for seq, delta in deltas:
        if not isinstance(delta, dict):
            continue
        versions = {
            name: version
            for name, version in delta.items()
            if type(version) is int  # a version; anything else names none
        }
        now.update(versions)
        if seq <= before:
            then.update(versions)
    return {
        name: then.get(name)
        for name, version in now.items()
        if not name.startswith("user:") and then.get(name) != version
    }
