"""What the MCP tools show a model: the API's answers as compact text, fitted to a budget.

A model pays for every character of a tool result. The API's JSON carries what a program
needs (ids, float epochs, every field even when empty); the text keeps what a model reads:
who said what, when (readable times), the calls made and their results, a session's facts only
where they say something. The JSON goes beside it, as the result's structured content.
"""

import codecs
import html
import json
import re
from datetime import UTC, datetime
from typing import Any

from app.rules.context import content_parts, estimate_tokens

# The longest call arguments or result shown: a tool's raw output is the costliest part of a
# session, and the whole of it stays in the structured content.
TOOL_CHARS = 500


def tokens(text: str) -> int:
    """The service's own estimate, of the text as one text part."""
    return estimate_tokens({"content": {"parts": [{"text": text}]}})


def when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _json(value: Any, limit: int = TOOL_CHARS) -> str:
    said = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return said if len(said) <= limit else said[:limit] + f"…({len(said) - limit} more)"


def _parts(event: dict[str, Any]) -> list[str]:
    shown = []
    for part in content_parts(event):
        if part.get("thought"):
            continue
        call, answer = part.get("functionCall"), part.get("functionResponse")
        if isinstance(part.get("text"), str):
            shown.append(part["text"])
        elif isinstance(call, dict):
            shown.append(f"→ {call.get('name')}({_json(call.get('args') or {})})")
        elif isinstance(answer, dict):
            shown.append(f"← {answer.get('name')}: {_json(answer.get('response') or {})}")
    return shown


def _actions(event: dict[str, Any]) -> list[str]:
    actions = event.get("actions")
    if not isinstance(actions, dict):
        return []
    shown = []
    compaction = actions.get("compaction")
    if isinstance(compaction, dict):
        summary = " ".join(_parts({"content": compaction.get("compactedContent")}))
        shown.append(f"[summary of earlier events] {summary}")
    if actions.get("stateDelta"):
        shown.append(f"[state {_json(actions['stateDelta'])}]")
    if actions.get("rewindBeforeInvocationId"):
        shown.append(f"[rewind before invocation {actions['rewindBeforeInvocationId']}]")
    if actions.get("transferToAgent"):
        shown.append(f"[transfer to {actions['transferToAgent']}]")
    return shown


def events(listed: list[dict[str, Any]]) -> list[str]:
    """One line per event: `#seq time author: what it said, called, answered or changed`;
    the date only where it changes."""
    lines, day = [], ""
    for event in listed:
        stamp = when(event["timestamp"]) if isinstance(event.get("timestamp"), float | int) else ""
        shown = stamp if stamp[:10] != day else stamp[11:]
        day = stamp[:10]
        said = " ".join(_parts(event) + _actions(event)) or "(nothing to read)"
        lines.append(f"#{event.get('seq')} {shown} {event.get('author')}: {said}")
    return lines


def _facts(session: dict[str, Any]) -> str:
    """A session's facts that say something: its name, kind, status, labels, usage."""
    facts = [f"updated {when(session['lastUpdateTime'])}"]
    if session.get("displayName"):
        facts.append(f'"{session["displayName"]}"')
    parent = session.get("parent")
    if isinstance(parent, dict):
        facts.append(f"{session.get('kind')} of {parent.get('sessionId')} at #{parent.get('seq')}")
    if session.get("status") == "closed":
        facts.append(f"closed ({session.get('outcome')})")
    if session.get("labels"):
        facts.append(f"labels {_json(session['labels'])}")
    total = (session.get("usage") or {}).get("totalTokenCount")
    if total:
        facts.append(f"{total} tokens used")
    if session.get("expireTime"):
        facts.append(f"expires {when(session['expireTime'])}")
    return ", ".join(facts)


def _state(session: dict[str, Any]) -> list[str]:
    return [f"state {_json(session['state'])}"] if session.get("state") else []


def _next(answer: dict[str, Any]) -> list[str]:
    token = answer.get("nextPageToken")
    return [f"more: page_token={token}"] if token else []


def session_page(answer: dict[str, Any]) -> str:
    lines = [
        f"{session['id']} (user {session['userId']}): {_facts(session)}"
        + (f"; state {_json(session['state'])}" if session.get("state") else "")
        for session in answer["sessions"]
    ]
    return "\n".join(lines + _next(answer)) or "no sessions"


def session(answer: dict[str, Any]) -> str:
    head = f"session {answer['id']} of user {answer['userId']}: {_facts(answer)}"
    return "\n".join([head, *_state(answer), *events(answer["events"])])


def event_page(answer: dict[str, Any]) -> str:
    return "\n".join(events(answer["events"]) + _next(answer)) or "no events"


def _snippet(snippet: str) -> str:
    return html.unescape(re.sub(r"</?mark>", "", snippet))


def search_page(answer: dict[str, Any]) -> str:
    lines = [
        f"{hit['sessionId']} #{hit['seq']} (user {hit['userId']}, {when(hit['timestamp'])}) "
        f"{hit['author']}: {_snippet(hit['snippet'])}"
        for hit in answer["hits"]
    ]
    return "\n".join(lines + _next(answer)) or "no matches"


def note(answer: dict[str, Any]) -> str:
    return f"noted at #{answer['seq']} by {answer['author']}"


# --- Memories -----------------------------------------------------------------------------


def _memory_text(memory: dict[str, Any]) -> str:
    said = memory.get("text")
    return said if isinstance(said, str) else " ".join(_parts(memory))


def _recalled_head(hit: dict[str, Any]) -> str:
    """What a recalled memory is, before its text: `id (kind, time, score 0.97) author: `."""
    memory = hit["memory"]
    what = str(memory.get("kind"))
    source = memory.get("source") or {}
    if what == "event" and source.get("sessionId"):
        what = f"event of session {source['sessionId']}"
    if memory.get("scope") == "app":
        what = f"the app's {what}"
    facts = [what, when(memory["timestamp"]), f"score {hit['score']:.2f}"]
    if memory.get("topics"):
        facts.append(f"topics {_json(memory['topics'])}")
    author = f" {memory['author']}" if memory.get("author") else ""
    return f"{memory['id']} ({', '.join(facts)}){author}: "


def _left_out(count: int) -> list[str]:
    return [f"({count} more left out: raise token_budget)"] if count else []


def recall(answer: dict[str, Any], budget: int) -> tuple[str, int]:
    """A recall within `budget` tokens, the text itself counted: how it recalled (and the
    server's note when it fell back to words), then a line per memory, best first, whole
    while they fit; the first that does not fit is cut short where its text is, saying how
    much is left out, and a last line says how many more were left out. Answers the text and
    how many memories it shows."""
    found = answer["memories"]
    by = f"by {answer['recalledBy']}"
    note = f"; {answer['note']}" if answer.get("note") else ""
    lines = [_within(f"recalled {by}{note}" if found else f"nothing recalled ({by}){note}", budget)]
    room = budget * 4  # the estimate is UTF-8 bytes / 4

    def size(said: list[str]) -> int:
        return len("\n".join(said).encode())

    shown = 0
    for index, hit in enumerate(found):
        after = _left_out(len(found) - index - 1)
        head, said = _recalled_head(hit), _memory_text(hit["memory"])
        if size([*lines, head + said, *after]) <= room:
            lines.append(head + said)
            shown += 1
            continue
        # This one, cut where its text is, in the room left: its id and facts stay whole.
        marker = f"…({len(said)} more characters)"  # the longest it can be
        space = room - size([*lines, *after]) - len(f"\n{head}{marker}".encode())
        part = said.encode()[: max(space, 0)].decode(errors="ignore")
        if part:
            lines.append(f"{head}{part}…({len(said) - len(part)} more characters)")
            shown += 1
        break
    more = _left_out(len(found) - shown)
    if more and size([*lines, *more]) <= room:
        lines += more
    return "\n".join(lines), shown


def remembered(memory: dict[str, Any]) -> str:
    said = f"remembered as memory {memory['id']}"
    if memory.get("expireTime"):
        said += f", forgotten at {when(memory['expireTime'])}"
    return said


def remembered_session(session_id: str, added: int) -> str:
    if not added:
        return f"nothing new to remember in session {session_id}"
    return f"remembered {added} event{'' if added == 1 else 's'} of session {session_id}"


def forgotten(answer: dict[str, Any], user: str) -> str:
    if answer["forgotten"]:
        return f"forgot memory {answer['id']}"
    return f"no memory {answer['id']} of user {user}: nothing to forget"


def fitting(listed: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The newest events whose lines fit in `budget` tokens."""
    start = 0
    while start < len(listed) and tokens("\n".join(events(listed[start:]))) > budget:
        start += 1
    return listed[start:]


def context(answer: dict[str, Any], budget: int) -> str:
    """The context view's events within `budget` tokens, the text itself counted: the newest
    that fit, a line saying that older ones were left out when it fits too, and the newest
    one cut short when even it alone does not fit."""
    listed = answer["events"]
    kept = fitting(listed, budget)
    lines = events(kept)
    if not lines and listed:
        lines = [_cut(events(listed[-1:])[0], budget)]
    if answer.get("truncatedBeforeSeq") or len(kept) < len(listed):
        marker = "(older events left out)"
        if tokens("\n".join([marker, *lines])) <= budget:
            lines.insert(0, marker)
    return "\n".join(lines)


def _cut(line: str, budget: int) -> str:
    """The start of the line, with `…`, within the budget."""
    room = budget * 4 - len("…".encode())
    return line.encode()[: max(room, 0)].decode(errors="ignore") + "…"


# --- Artifacts ----------------------------------------------------------------------------

# Media types read as text besides `text/*`: what a model reads as it is (JSON, XML, YAML).
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/yaml"})
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB")


def essence(mime_type: str | None) -> str:
    """A media type without its parameters, in lower case: `text/plain; charset=utf-8` →
    `text/plain`."""
    return (mime_type or "").split(";")[0].strip().lower()


def is_text(mime_type: str | None) -> bool:
    """Whether content of this type reads as text."""
    kind = essence(mime_type)
    return kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))


def charset(mime_type: str | None) -> str:
    """The type's `charset`, when Python knows it; else UTF-8 (an artifact's text is stored
    so)."""
    found = re.search(r";\s*charset=\"?([^\";\s]+)", mime_type or "", re.IGNORECASE)
    try:
        return codecs.lookup(found[1]).name if found else "utf-8"
    except LookupError:
        return "utf-8"


def size(count: int) -> str:
    """`1 byte`, `74 bytes`, `1.2 KiB`, `3 MiB`."""
    if count < 1024:
        return f"{count} byte{'' if count == 1 else 's'}"
    value = float(count)
    for unit in _BYTE_UNITS:
        value /= 1024
        if value < 1024 or unit == _BYTE_UNITS[-1]:
            break
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"


def removed(record: dict[str, Any]) -> bool:
    """ADK's rewind marker: an empty `application/octet-stream` version, which reads as absent."""
    return (
        record.get("kind") == "bytes"
        and record.get("size") == 0
        and essence(record.get("mimeType")) == "application/octet-stream"
    )


def artifact(record: dict[str, Any]) -> str:
    """An artifact's version in a few words: `chart.png v1 image/png 74 bytes`."""
    said = f"{record['name']} v{record['version']}"
    if removed(record):
        return f"{said} removed"
    if record.get("kind") == "reference":
        kind = f" ({record['mimeType']})" if record.get("mimeType") else ""
        return f"{said} reference to {record.get('fileUri')}{kind}"
    return f"{said} {record.get('mimeType') or 'untyped'} {size(record['size'])}"


def artifact_page(answer: dict[str, Any]) -> str:
    return "\n".join([artifact(one) for one in answer["artifacts"]] + _next(answer)) or (
        "no artifacts"
    )


# Why an artifact's content is not read.
NOT_TEXT = "not text: its content is not shown"
ELSEWHERE = "stored elsewhere: not read here"
ABSENT = "ADK's rewind marker: it reads as absent"


def artifact_unread(record: dict[str, Any], why: str, budget: int) -> str:
    """What an artifact whose content is not read is, and why, within `budget` tokens."""
    return _within(f"{artifact(record)}: {why}", budget)


def artifact_text(
    record: dict[str, Any], data: bytes, whole: int, media_type: str | None, budget: int
) -> tuple[str, str, bool]:
    """A text artifact within `budget` tokens, the text itself counted: what it is, then its
    content (`data`, the first bytes of `whole`, decoded as `media_type` says), cut short with
    how many bytes are left out when it does not fit. Answers the text, the content it shows
    and whether that is cut."""
    head = f"{artifact(record)}:"
    encoding = charset(media_type)
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    # A character the read cut in two is left out: the rest of it was not read.
    content = decoder.decode(data, final=len(data) >= whole)
    if len(data) >= whole and tokens(f"{head}\n{content}") <= budget:
        return f"{head}\n{content}", content, False
    marker = f"…({whole} more bytes)"  # the longest it can be: every byte left out
    room = budget * 4 - len(f"{head}\n".encode()) - len(marker.encode())
    if room < 0:  # not even what it is fits: that, cut short
        return _cut(head, budget), "", whole > 0
    shown = content.encode()[:room].decode(errors="ignore")
    left = max(whole - len(shown.encode(encoding, errors="replace")), 0)
    return f"{head}\n{shown}…({left} more bytes)", shown, True


def _within(line: str, budget: int) -> str:
    return line if tokens(line) <= budget else _cut(line, budget)
