"""What the MCP tools show a model (app/mcp_text.py), without a server: each answer's text, and
the context view's text within its budget whatever the events."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app import mcp_text

T = 1795000100.5  # 2026-11-18 11:08:20 UTC


def event(seq: int, author: str, *parts: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "id": f"00000000-0000-0000-0000-{seq:012d}",
        "seq": seq,
        "invocationId": "e-1",
        "author": author,
        "timestamp": T + seq,
        "content": {"role": "model", "parts": list(parts)},
        "actions": {"stateDelta": {}, "artifactDelta": {}},
        **more,
    }


def test_an_event_is_one_line_of_what_it_said_called_answered_and_changed() -> None:
    call = {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Oslo"}}}
    answer = {"functionResponse": {"id": "c1", "name": "get_weather", "response": {"t": 7}}}
    shown = mcp_text.events(
        [
            event(1, "user", {"text": "Weather?"}),
            event(2, "bot", {"thought": True, "text": "hmm"}, call),
            event(3, "bot", answer),
            {**event(4, "user"), "actions": {"stateDelta": {"city": "Oslo"}}},
            {**event(90000, "bot", {"text": "Next day."}), "timestamp": T + 86400},
        ]
    )
    assert shown == [
        "#1 2026-11-18 11:08:21 user: Weather?",
        '#2 11:08:22 bot: → get_weather({"city":"Oslo"})',
        '#3 11:08:23 bot: ← get_weather: {"t":7}',
        '#4 11:08:24 user: [state {"city":"Oslo"}]',
        "#90000 2026-11-19 11:08:20 bot: Next day.",
    ]


def test_a_long_tool_result_is_cut_and_says_how_much_is_left() -> None:
    answer = {"functionResponse": {"name": "dump", "response": {"x": "y" * 1000}}}
    [line] = mcp_text.events([event(1, "bot", answer)])
    assert line.endswith("…(508 more)")
    assert len(line) < 600


def test_a_session_says_only_what_is_set() -> None:
    session = {
        "id": "trip",
        "appName": "a",
        "userId": "ada",
        "state": {},
        "events": [event(1, "user", {"text": "Hi"})],
        "lastUpdateTime": T,
        "createTime": T,
        "version": 1,
        "kind": "root",
        "parent": None,
        "status": "open",
        "outcome": None,
        "usage": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
        "displayName": None,
        "labels": {},
        "expireTime": None,
    }
    assert mcp_text.session(session) == (
        "session trip of user ada: updated 2026-11-18 11:08:20\n#1 2026-11-18 11:08:21 user: Hi"
    )
    fork = {
        **session,
        "kind": "fork",
        "parent": {"sessionId": "root", "seq": 3},
        "status": "closed",
        "outcome": "completed",
        "labels": {"topic": "weather"},
        "state": {"city": "Oslo"},
        "events": [],
    }
    assert mcp_text.session(fork) == (
        "session trip of user ada: updated 2026-11-18 11:08:20, fork of root at #3, "
        'closed (completed), labels {"topic":"weather"}\n'
        'state {"city":"Oslo"}'
    )


def test_a_search_hit_is_plain_text() -> None:
    hit = {
        "userId": "ada",
        "sessionId": "trip",
        "seq": 3,
        "eventId": "e",
        "author": "user",
        "timestamp": T,
        "rank": 0.1,
        "snippet": "a <mark>harbour</mark> &amp; &lt;b&gt;",
    }
    page = {"hits": [hit], "nextPageToken": "tok"}
    assert mcp_text.search_page(page) == (
        "trip #3 (user ada, 2026-11-18 11:08:20) user: a harbour & <b>\nmore: page_token=tok"
    )
    assert mcp_text.search_page({"hits": [], "nextPageToken": None}) == "no matches"


words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)
parts = st.one_of(
    words.map(lambda text: {"text": text}),
    st.dictionaries(st.text(max_size=5), words, max_size=3).map(
        lambda args: {"functionCall": {"id": "c", "name": "f", "args": args}}
    ),
)


@given(
    st.lists(st.tuples(st.sampled_from(["user", "agent"]), st.lists(parts, max_size=3))),
    st.integers(min_value=1, max_value=400),
    st.booleans(),
)
def test_a_context_text_is_within_its_budget_whatever_the_events(
    said: list[tuple[str, list[dict[str, Any]]]], budget: int, truncated: bool
) -> None:
    listed = [event(seq, author, *content) for seq, (author, content) in enumerate(said, 1)]
    view = {"events": listed, "truncatedBeforeSeq": 1 if truncated and listed else None}
    shown = mcp_text.context(view, budget)
    assert mcp_text.tokens(shown) <= budget
    whole = mcp_text.events(listed)
    if mcp_text.tokens("\n".join(whole)) <= budget and not truncated:
        assert shown == "\n".join(whole)  # all of it fits: all of it, nothing more
    kept = mcp_text.fitting(listed, budget)
    if kept:  # the newest that fit, whole, newest last
        assert shown.endswith("\n".join(mcp_text.events(kept)))


def record(
    name: str, size: int, mime_type: str | None = "text/plain", **more: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "version": 2,
        "mimeType": mime_type,
        "kind": "bytes",
        "size": size,
        "createTime": T,
        "fileUri": None,
        **more,
    }


def test_an_artifact_is_one_line_of_name_version_type_and_size() -> None:
    page = {
        "artifacts": [
            record("chart.png", 74, "image/png"),
            record("report.pdf", 3 * 1024 * 1024 + 200_000, "application/pdf"),
            record("a", 1, None),
            record("link", 0, None, kind="reference", fileUri="gs://b/x"),
            record("old", 0, "application/octet-stream"),
        ],
        "nextPageToken": "tok",
    }
    assert mcp_text.artifact_page(page).splitlines() == [
        "chart.png v2 image/png 74 bytes",
        "report.pdf v2 application/pdf 3.2 MiB",
        "a v2 untyped 1 byte",
        "link v2 reference to gs://b/x",
        "old v2 removed",
        "more: page_token=tok",
    ]
    assert mcp_text.artifact_page({"artifacts": [], "nextPageToken": None}) == "no artifacts"
    assert mcp_text.size(1024) == "1 KiB" and mcp_text.size(1536) == "1.5 KiB"


def test_what_reads_as_text_and_in_which_charset() -> None:
    for text in ("text/plain", "Text/CSV; charset=utf-8", "application/json", "image/svg+xml"):
        assert mcp_text.is_text(text), text
    for binary in ("image/png", "application/pdf", "application/octet-stream", None, ""):
        assert not mcp_text.is_text(binary), binary
    assert mcp_text.charset("text/plain; charset=ISO-8859-1") == "iso8859-1"
    assert mcp_text.charset('text/plain; charset="nonsense"') == "utf-8"
    assert mcp_text.charset(None) == "utf-8"


def test_a_text_artifact_that_fits_is_whole_and_one_that_does_not_says_what_is_left() -> None:
    data = "Smørbrød ✓\n".encode()
    shown, content, cut = mcp_text.artifact_text(
        record("n.txt", len(data)), data, len(data), "text/plain", 100
    )
    assert (shown, content, cut) == (
        "n.txt v2 text/plain 15 bytes:\nSmørbrød ✓\n",
        "Smørbrød ✓\n",
        False,
    )
    # Only the first bytes were read, cut inside `ø`: that character is left out.
    whole = 10_000
    shown, content, cut = mcp_text.artifact_text(
        record("n.txt", whole), data[:3], whole, "text/plain", 100
    )
    assert (content, cut) == ("Sm", True)
    assert shown == f"n.txt v2 text/plain 9.8 KiB:\nSm…({whole - 2} more bytes)"
    # Latin-1, as its type says: the bytes left out are counted in its encoding.
    latin = "Smørbrød".encode("latin-1")
    shown, content, cut = mcp_text.artifact_text(
        record("l.txt", len(latin)), latin, len(latin), "text/plain; charset=latin-1", 100
    )
    assert (content, cut) == ("Smørbrød", False)


@given(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=600),
    st.integers(min_value=0, max_value=2500),
    st.integers(min_value=1, max_value=300),
    st.text(min_size=1, max_size=80),
)
def test_a_text_artifact_is_within_its_budget_whatever_it_holds(
    said: str, read: int, budget: int, name: str
) -> None:
    data = said.encode()
    first = data[:read]  # what a read of its first bytes got
    saved = record(name, len(data))
    shown, content, cut = mcp_text.artifact_text(saved, first, len(data), "text/plain", budget)
    assert mcp_text.tokens(shown) <= budget
    assert said.startswith(content)  # the start of it, never a character it did not hold
    assert cut == (content != said)
    whole = f"{mcp_text.artifact(saved)}:\n{said}"
    if read >= len(data) and mcp_text.tokens(whole) <= budget:
        assert shown == whole  # all of it fits: all of it, nothing more
    if cut and content:
        assert shown.endswith(f"{content}…({len(data) - len(content.encode())} more bytes)")


def test_an_artifact_not_read_says_what_it_is_within_its_budget() -> None:
    image = record("chart.png", 74, "image/png")
    assert mcp_text.artifact_unread(image, mcp_text.NOT_TEXT, 100) == (
        "chart.png v2 image/png 74 bytes: not text: its content is not shown"
    )
    short = mcp_text.artifact_unread(image, mcp_text.NOT_TEXT, 3)
    assert short.endswith("…") and mcp_text.tokens(short) <= 3


def recalled(
    number: int, text: str, score: float, kind: str = "text", **more: Any
) -> dict[str, Any]:
    """A memory as `memories:recall` answers it, with its score."""
    memory = {
        "id": f"m{number}",
        "scope": "user",
        "userId": "ada",
        "kind": kind,
        "revision": 1,
        "text": text,
        "content": {"role": "user", "parts": [{"text": text}]},
        "author": None,
        "metadata": {},
        "topics": [],
        "expireTime": None,
        "source": None,
        "timestamp": T,
        "createTime": T,
        "updateTime": T,
        "embedded": True,
        **more,
    }
    return {"memory": memory, "score": score, "similarity": 0.5, "wordScore": None}


def test_a_recalled_memory_is_one_line_of_id_kind_time_score_and_text() -> None:
    answer = {
        "memories": [
            recalled(1, "I'm vegetarian.", 1.0, topics=["food"]),
            recalled(
                2,
                "And a hotel near the harbour, please.",
                0.4918,
                "event",
                author="user",
                source={"sessionId": "weather", "eventIds": ["e5"]},
            ),
            recalled(3, "Returns are free for 30 days.", 0.3, scope="app", userId=None),
        ],
        "recalledBy": "meaning+words",
        "note": None,
    }
    assert mcp_text.recall(answer, 1000) == (
        "recalled by meaning+words\n"
        'm1 (text, 2026-11-18 11:08:20, score 1.00, topics ["food"]): I\'m vegetarian.\n'
        "m2 (event of session weather, 2026-11-18 11:08:20, score 0.49) user: And a hotel "
        "near the harbour, please.\n"
        "m3 (the app's text, 2026-11-18 11:08:20, score 0.30): Returns are free for 30 days.",
        3,
    )
    # Fallen back to words: the server's note says why.
    words = {
        "memories": [],
        "recalledBy": "words",
        "note": "pgvector is not installed on the database: recalled by words alone.",
    }
    assert mcp_text.recall(words, 1000) == (
        "nothing recalled (by words); pgvector is not installed on the database: recalled by "
        "words alone.",
        0,
    )


def test_a_recall_over_its_budget_cuts_the_first_that_does_not_fit_and_counts_the_rest() -> None:
    long = "I keep a detailed diary of every meal. " * 40
    answer = {
        "memories": [
            recalled(1, "I'm vegetarian.", 1.0),
            recalled(2, long, 0.5),
            recalled(3, "My dog is called Rex.", 0.2),
        ],
        "recalledBy": "meaning+words",
        "note": None,
    }
    shown, count = mcp_text.recall(answer, 60)
    first, one, two, rest = shown.splitlines()
    assert (first, one) == (
        "recalled by meaning+words",
        "m1 (text, 2026-11-18 11:08:20, score 1.00): I'm vegetarian.",
    )
    assert two.startswith("m2 (text, 2026-11-18 11:08:20, score 0.50): I keep a detailed")
    cut = two.split(": ", 1)[1].split("…(")[0]
    assert long.startswith(cut) and two.endswith(f"…({len(long) - len(cut)} more characters)")
    assert rest == "(1 more left out: raise token_budget)"
    assert count == 2 and mcp_text.tokens(shown) <= 60


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400),
            st.sampled_from(["text", "event"]),
            st.lists(st.text(min_size=1, max_size=10), max_size=3),
        ),
        max_size=12,
    ),
    st.integers(min_value=1, max_value=400),
    st.one_of(st.none(), st.text(max_size=200)),
)
def test_a_recall_is_within_its_budget_whatever_the_memories(
    memories: list[tuple[str, str, list[str]]], budget: int, note: str | None
) -> None:
    found = [
        recalled(number, text, 1 / number, kind, topics=topics, source={"sessionId": "s"})
        for number, (text, kind, topics) in enumerate(memories, 1)
    ]
    answer = {"memories": found, "recalledBy": "words" if note else "meaning", "note": note}
    shown, count = mcp_text.recall(answer, budget)
    assert mcp_text.tokens(shown) <= budget
    assert 0 <= count <= len(found)
    whole, _ = mcp_text.recall(answer, 1_000_000)
    if mcp_text.tokens(whole) <= budget:
        assert (shown, count) == (whole, len(found))  # all of it fits: all of it
    # The memories shown are the best, in order, each line starting with its id.
    lines = shown.split("\n")[1:]
    for number in range(1, count + 1):
        assert any(line.startswith(f"m{number} (") for line in lines)
    if count < len(found):  # what was left out is counted, when that fits too
        tail = f"\n({len(found) - count} more left out: raise token_budget)"
        assert shown.endswith(tail) or mcp_text.tokens(shown + tail) > budget


def test_what_remember_and_forget_say() -> None:
    memory = recalled(1, "I'm vegetarian.", 1.0)["memory"]
    assert mcp_text.remembered(memory) == "remembered as memory m1"
    expiring = {**memory, "expireTime": T + 86400}
    assert mcp_text.remembered(expiring) == (
        "remembered as memory m1, forgotten at 2026-11-19 11:08:20"
    )
    assert mcp_text.remembered_session("chat", 2) == "remembered 2 events of session chat"
    assert mcp_text.remembered_session("chat", 1) == "remembered 1 event of session chat"
    assert mcp_text.remembered_session("chat", 0) == "nothing new to remember in session chat"
    assert mcp_text.forgotten({"id": "m1", "forgotten": True}, "ada") == "forgot memory m1"
    assert mcp_text.forgotten({"id": "m1", "forgotten": False}, "ada") == (
        "no memory m1 of user ada: nothing to forget"
    )
