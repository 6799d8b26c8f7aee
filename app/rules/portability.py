"""The export format, NDJSON: what a line may be, and when an import repeats what is stored.

A session's export is its header (`SessionExport`: the session as a read shows it, with
`eventCount`, `baseSeq` and `baseState`), then its events, one per line, as stored (with
`seq`), then its artifacts (`artifactLines` lines): each version's record, after the pieces
of its content where no earlier version holds the same. A bulk export (`sessionary export`)
is app and user state lines, then sessions, then each user's `user:` artifacts (a
`UserArtifactsExport` line, then as many artifact lines as it says), then memories, a line
each. A user's export (`…/users/{user}:export`, `sessionary export-user`) is the same, of
one user, without the app's state.
"""

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from app import strict_json
from app.domain import History, StoredArtifact, Usage
from app.errors import InvalidInput
from app.rules.events import canonical_json
from app.rules.scopes import split_delta

SESSION_FORMAT = "sessionary.session.v1"
APP_STATE_FORMAT = "sessionary.appState.v1"
USER_STATE_FORMAT = "sessionary.userState.v1"
USER_ARTIFACTS_FORMAT = "sessionary.userArtifacts.v1"
MEMORY_FORMAT = "sessionary.memory.v1"


def decode(text: bytes, number: int, max_depth: int) -> Any:
    """One line's JSON, strictly (as every request body), but for integers past 64 bits:
    PostgreSQL renders a large stored float (`1e20`) as one; a 422 naming the line otherwise."""
    try:
        return strict_json.loads(text, max_depth=max_depth, wide_integers=True)
    except ValueError as error:
        raise InvalidInput(f"Line {number} is not JSON: {error}", field=f"line {number}") from None


def check_seqs(version: int, previous: int, seqs: Iterable[int], first_line: int) -> int:
    """Seqs rise strictly, after `previous` (at first 0: a child's inherited events come
    before its `baseSeq`), up to the session's `version`; returns the last one."""
    for offset, seq in enumerate(seqs):
        if not previous < seq <= version:
            raise InvalidInput(
                f"Line {first_line + offset}: seq {seq} is not between the previous event's "
                f"({previous}) and the session's version ({version}).",
                field=f"line {first_line + offset}",
            )
        previous = seq
    return previous


def check_usage(announced: tuple[int, int, int] | None, used: Usage) -> None:
    """A session's usage is the sum of its events' (as every write keeps it): a header that
    announces other counts (prompt, candidates, total) describes other events, and is
    refused; one that announces none has it summed."""
    if announced is None:
        return
    summed = (used.prompt or 0, used.candidates or 0, used.total or 0)
    if announced != summed:
        raise InvalidInput(
            f"Line 1: the header's usage {announced} (prompt, candidates, total tokens) is not "
            f"the sum of its events' usageMetadata {summed}; leave it out to have it summed.",
            field="usage",
        )


def pieces(size: int, chunk_size: int) -> int:
    """How many lines an export gives a content of `size` bytes stored in chunks of
    `chunk_size`: one per chunk."""
    return -(-size // chunk_size) if size else 0


def artifact_line_count(versions: Sequence[StoredArtifact]) -> int:
    """The artifact lines of a session's export: a line per version, and before the first
    version of each content, a line per piece of its bytes."""
    given: set[bytes] = set()
    count = len(versions)
    for version in versions:
        if version.content_hash is not None and version.content_hash not in given:
            given.add(version.content_hash)
            count += pieces(version.size, version.chunk_size)
    return count


class Lines:
    """The non-blank lines of a byte stream, however it is cut into chunks, each with its
    number in the stream: those each chunk completes, then the last."""

    def __init__(self) -> None:
        self.number, self.rest = 0, b""

    def feed(self, chunk: bytes) -> list[tuple[int, bytes]]:
        *whole, self.rest = (self.rest + chunk).split(b"\n")
        found = []
        for text in whole:
            self.number += 1
            if text.strip():
                found.append((self.number, text))
        return found

    def end(self) -> list[tuple[int, bytes]]:
        return [(self.number + 1, self.rest)] if self.rest.strip() else []


def numbered(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    lines = Lines()
    for chunk in chunks:
        yield from lines.feed(chunk)
    yield from lines.end()


async def numbered_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    lines = Lines()
    async for chunk in chunks:
        for line in lines.feed(chunk):
            yield line
    for line in lines.end():
        yield line


class Replay:
    """A session's own state at its version, rebuilt from its history as an import reads it:
    the base state, then the delta of each event after the base and each removed delta, in
    seq order (`app.domain.History`)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.state = dict(history.base_state)
        self.removed = list(history.removed_deltas)
        self.next_removed = 0
        self.last_event: tuple[int, int] | None = None  # the last event's seq and line

    def event(self, seq: int, document: dict[str, Any], line: int) -> None:
        """Apply the stored event at `seq`, given on line `line` (events come in seq order).
        422 when a removed delta is at its seq: the delta of an event no longer there, at the
        seq of one that is."""
        self._removed_before(seq)
        if self.next_removed < len(self.removed) and self.removed[self.next_removed]["seq"] == seq:
            raise InvalidInput(
                f"Line {line}: the event at seq {seq} is stored, yet the header's removedDeltas "
                f"hold the delta of an event removed from seq {seq}.",
                field=f"line {line}",
            )
        self.last_event = seq, line
        delta = (document.get("actions") or {}).get("stateDelta")
        if seq > self.history.base_seq and isinstance(delta, dict):
            self.state.update(split_delta(delta).session)

    def removed_deltas(self, state: dict[str, Any], version: int) -> list[dict[str, Any]]:
        """The removed deltas that make the history end at `state`, the session's own state:
        the history's own; or, for an export of a session whose state kept a removed event's
        delta while its history did not (as exports made before `removedDeltas` may), with
        the difference as one more at `version`, so that every read gives what it gave at
        the source. 422 when no delta can make up the difference (a key the history sets
        that the state lacks)."""
        self._removed_before(version + 1)
        missing = sorted(self.state.keys() - state.keys())
        if missing:
            raise InvalidInput(
                f"Line 1: the header's state lacks {missing[0]!r}, which its baseState and "
                "the events' deltas set.",
                field="state",
            )
        difference = {
            key: value
            for key, value in state.items()
            if key not in self.state or canonical_json(self.state[key]) != canonical_json(value)
        }
        if not difference:
            return self.removed
        if self.removed and self.removed[-1]["seq"] == version:
            raise InvalidInput(
                "Line 1: the header's state is not what its baseState, removedDeltas and the "
                "events' deltas give.",
                field="state",
            )
        if self.last_event is not None and self.last_event[0] == version:
            seq, line = self.last_event
            raise InvalidInput(
                f"Line {line}: the header's state is not what its baseState and the events' "
                f"deltas give, and the event at seq {seq}, the version, leaves the difference "
                "no seq of its own (the delta of a removed event).",
                field=f"line {line}",
            )
        return [*self.removed, {"seq": version, "stateDelta": difference}]

    def _removed_before(self, seq: int) -> None:
        while (
            self.next_removed < len(self.removed) and self.removed[self.next_removed]["seq"] < seq
        ):
            self.state.update(self.removed[self.next_removed]["stateDelta"])
            self.next_removed += 1
