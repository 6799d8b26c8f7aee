"""The export format, NDJSON: what a line may be, and when an import repeats what is stored.

A session's export is its header (`SessionExport`: the session as a read shows it, with
`eventCount`, `baseSeq` and `baseState`), then its events, one per line, as stored (with
`seq`). A bulk export (`sessionary export`) is app and user state lines, then sessions.
"""

from collections.abc import Iterable, Iterator
from typing import Any

from app import strict_json
from app.domain import Usage
from app.errors import InvalidInput

SESSION_FORMAT = "sessionary.session.v1"
APP_STATE_FORMAT = "sessionary.appState.v1"
USER_STATE_FORMAT = "sessionary.userState.v1"


def decode(text: bytes, number: int, max_depth: int) -> Any:
    """One line's JSON, strictly (as every request body); a 422 naming the line otherwise."""
    try:
        return strict_json.loads(text, max_depth=max_depth)
    except ValueError as error:
        raise InvalidInput(f"Line {number} is not JSON: {error}", field=f"line {number}") from None


def check_seqs(version: int, previous: int, seqs: Iterable[int], first_line: int) -> int:
    """Seqs rise strictly, after `previous` (at first the header's `baseSeq`), up to the
    session's `version`; returns the last one."""
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


def numbered(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of a byte stream, however it is cut into chunks, each with its
    number in the stream."""
    number, rest = 0, b""
    for chunk in chunks:
        *whole, rest = (rest + chunk).split(b"\n")
        for text in whole:
            number += 1
            if text.strip():
                yield number, text
    if rest.strip():
        yield number + 1, rest
