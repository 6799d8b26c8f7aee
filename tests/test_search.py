"""Full-text search over events: what is indexed, ranking, snippets, filters, paging, and
which events are never found."""

import asyncio
import json
from typing import Any

import asyncpg
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app import db
from app.repositories.search import SCANNED
from app.rules.search import TEXT_LIMIT, event_text
from tests.fixtures import client_of
from tests.helpers import APP, append, assert_problem, create_session, session_url

SEARCH = f"/apps/{APP}/search"


def said(text: str, author: str = "user", **fields: Any) -> dict[str, Any]:
    return {"author": author, "content": {"role": author, "parts": [{"text": text}]}, **fields}


def calls(name: str, **arguments: Any) -> dict[str, Any]:
    part = {"functionCall": {"id": "c1", "name": name, "args": arguments}}
    return {"author": "agent", "content": {"role": "model", "parts": [part]}}


async def hits(client, q: str, **params: Any) -> list[tuple[str, int]]:
    """(session id, seq) of every hit, page by page, in order."""
    found: list[tuple[str, int]] = []
    token = None
    while True:
        extra = {"pageToken": token} if token else {}
        page = await client.get(SEARCH, params={"q": q, **params, **extra})
        assert page.status_code == 200, page.text
        found += [(hit["sessionId"], hit["seq"]) for hit in page.json()["hits"]]
        token = page.json()["nextPageToken"]
        if token is None:
            return found


async def test_finds_text_and_function_names_but_not_keys_or_arguments(client):
    await create_session(
        client,
        sessionId="s",
        events=[
            said("I want a refund for my order"),
            calls("issue_refund", reason="damaged parcel"),
            {"author": "agent", "actions": {"stateDelta": {"parcel": "refunded"}}},
            said("Refunds take three days", author="agent"),
        ],
    )
    # Stemmed (refunds = refund), and a function name is words too (issue_refund).
    assert sorted(await hits(client, "refunds")) == [("s", 1), ("s", 2), ("s", 4)]
    assert await hits(client, "issue_refund") == [("s", 2)]
    assert await hits(client, "issue") == [("s", 2)]
    assert await hits(client, "parcel") == []  # a tool's argument, a state key: not text
    assert await hits(client, "functionCall") == []  # nor a JSON key
    assert await hits(client, '"three days"') == [("s", 4)]
    assert sorted(await hits(client, "refund -order")) == [("s", 2), ("s", 4)]
    assert await hits(client, "the") == []  # only stop words: nothing to find


async def test_hits_come_best_first_with_escaped_marked_snippets(client):
    await create_session(
        client,
        sessionId="s",
        events=[said("refund"), said("refund refund, if 1<2 & 3>2: refund <script>x")],
    )
    page = (await client.get(SEARCH, params={"q": "refund"})).json()
    first, second = page["hits"]
    assert (first["seq"], second["seq"]) == (2, 1) and first["rank"] > second["rank"]
    snippet = first["snippet"]
    assert snippet.startswith("<mark>refund</mark> <mark>refund</mark>, if 1&lt;2 &amp; 3&gt;2")
    assert "<" not in snippet.replace("<mark>", "").replace("</mark>", "")
    assert snippet.count("<mark>") == snippet.count("</mark>") == 3
    assert first["userId"] == "alice" and first["author"] == "user" and first["eventId"]
    assert isinstance(first["timestamp"], float)


async def test_pages_neither_skip_nor_repeat(client):
    for number in range(5):
        await create_session(
            client, sessionId=f"s{number}", events=[said("refund " * (number % 3 + 1))] * 3
        )
    every = await hits(client, "refund", pageSize=100)
    assert len(every) == 15 and len(set(every)) == 15
    assert await hits(client, "refund", pageSize=4) == every


async def test_hits_come_best_first_in_windows_of_the_newest_matches(settings, client):
    """Windows of `search_candidates` matches, newest first, each ranked: every hit once,
    whatever the page size, and later pages do not take in events stored after the first."""
    # Session `t<n>` says "refund" n % 3 + 1 times at time n: windows of 3 are n = 9, 8, 7
    # (ranked 8, 7, 9: the rank grows with the repeats), then 6, 5, 4 (ranked 5, 4, 6), …
    for n in range(1, 10):
        await create_session(
            client, sessionId=f"t{n}", events=[said("refund " * (n % 3 + 1), timestamp=n)]
        )
    # Newer than all of them and no match: the first window is not among the newest events
    # read (3 * SCANNED), so it comes through the search index.
    chatter = [said("hello", timestamp=100 + n) for n in range(3 * SCANNED)]
    await create_session(client, sessionId="chatter", events=chatter)
    in_order = ["t8", "t7", "t9", "t5", "t4", "t6", "t2", "t1", "t3"]
    windowed = settings.model_copy(update={"search_candidates": 3})
    async with client_of(windowed) as http:
        for size in (1, 2, 3, 4, 100):
            found = await hits(http, "refund", pageSize=size)
            assert [session for session, _ in found] == in_order, size
        first = await http.get(SEARCH, params={"q": "refund", "pageSize": 2})
        await create_session(client, sessionId="late", events=[said("refund", timestamp=99)])
        token, rest = first.json()["nextPageToken"], []
        while token:
            page = (await http.get(SEARCH, params={"q": "refund", "pageToken": token})).json()
            rest += [hit["sessionId"] for hit in page["hits"]]
            token = page["nextPageToken"]
        assert rest == in_order[2:]  # not "late": newer than the first page's window
        # A new search starts from the newest: "late" displaces t7 from the first window.
        assert [session for session, _ in await hits(http, "refund")][:3] == ["t8", "late", "t9"]


async def test_filters_by_user_session_author_and_time(client):
    await create_session(client, sessionId="a", events=[said("refund", timestamp=10.0)])
    await create_session(
        client,
        user="bob",
        sessionId="b",
        events=[said("refund", timestamp=20.0), said("refund", author="agent", timestamp=30.0)],
    )
    assert await hits(client, "refund", userId="bob") == [("b", 1), ("b", 2)]
    assert await hits(client, "refund", sessionId="a") == [("a", 1)]
    assert await hits(client, "refund", author="agent") == [("b", 2)]
    assert await hits(client, "refund", afterTimestamp=20.0, beforeTimestamp=30.0) == [("b", 1)]
    assert await hits(client, "refund", userId="carol") == []


async def test_other_apps_expired_sessions_and_deleted_events_are_never_found(app, client):
    from tests.test_retention import expire

    await create_session(client, sessionId="mine", events=[said("refund", id="gone"), said("x")])
    await create_session(client, app="other", sessionId="theirs", events=[said("refund")])
    await create_session(client, sessionId="old", events=[said("refund")])
    await expire(app, "old")
    assert await hits(client, "refund") == [("mine", 1)]
    assert (await client.delete(f"{session_url('mine')}/events/gone")).status_code == 200
    assert await hits(client, "refund") == []


async def test_rewritten_and_forked_events_are_found_by_their_text(client):
    await create_session(client, sessionId="s", events=[said("my card number is 4242", id="e")])
    rewritten = await client.patch(
        f"{session_url('s')}/events/e",
        json={"content": {"role": "user", "parts": [{"text": "my card number is redacted"}]}},
    )
    assert rewritten.status_code == 200, rewritten.text
    assert await hits(client, "4242") == []
    assert await hits(client, "redacted") == [("s", 1)]
    assert (await client.post(f"{session_url('s')}:fork", json={"sessionId": "f"})).is_success
    assert sorted(await hits(client, "redacted")) == [("f", 1), ("s", 1)]


async def test_a_huge_text_is_stored_and_its_start_is_found(client):
    words = " ".join(f"w{number}" for number in range(300_000))  # ~2 MB, 300k distinct words
    assert (await append_new(client, said(f"needle {words}"))).status_code == 201
    assert await hits(client, "needle") == [("s", 1)]


async def append_new(client, event: dict[str, Any]):
    await create_session(client, sessionId="s")
    return await append(client, "s", event)


@pytest.mark.parametrize(
    "params",
    [{}, {"q": ""}, {"q": "x" * 1001}, {"q": "x", "userId": "a/b"}, {"q": "x", "pageToken": "no"}],
)
async def test_bad_searches_are_refused(client, params):
    assert_problem(await client.get(SEARCH, params=params), 422, "validation_error")


# Any JSON value where an event's parts, names or texts may be: the API stores events of any
# shape. No NUL and no lone surrogate: JSONB holds neither.
_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8)
_VALUE = st.one_of(
    _TEXT, st.integers(), st.booleans(), st.none(), st.lists(st.integers(), max_size=2)
)
_NAMED = st.one_of(st.fixed_dictionaries({"name": _VALUE}, optional={"id": _TEXT}), _VALUE)
_PART = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"text": _VALUE, "functionCall": _NAMED, "functionResponse": _NAMED}
    ),
    _VALUE,
)
_EVENT = st.one_of(
    st.builds(lambda parts: {"content": {"role": "model", "parts": parts}}, st.lists(_PART)),
    st.fixed_dictionaries(
        {}, optional={"content": st.one_of(st.fixed_dictionaries({"parts": _VALUE}), _VALUE)}
    ),
)


@given(events=st.lists(_EVENT, min_size=1, max_size=20))
@example(events=[said("é" * (TEXT_LIMIT + 5))])  # cut at characters, not bytes
@example(events=[said(""), {"content": {"parts": [{"text": ""}, {"text": ""}]}}])
@example(
    events=[
        {"content": {"parts": [{"functionCall": {"name": "a"}, "functionResponse": {"name": "b"}}]}}
    ]
)
@settings(max_examples=100, deadline=None)
def test_the_words_indexed_are_the_words_snippets_are_made_of(database_url, events):
    """The append indexes `event_text` (Python); snippets come from `sessionary_event_text`
    (PostgreSQL) over the stored event: they agree, whatever the event's shape."""

    async def in_postgres() -> list[str | None]:
        connection = await asyncpg.connect(database_url)
        try:
            rows = await connection.fetch(
                "SELECT sessionary_event_text(e) FROM jsonb_array_elements($1::jsonb) e",
                json.dumps(events),
            )
        finally:
            await connection.close()
        return [row[0] for row in rows]

    assert [event_text(event) for event in events] == asyncio.run(in_postgres())


async def many_hits(client, sessions: int = 3) -> None:
    """Sessions of 1,000 events that all hold the searched words: a search that must rank
    every one of them."""
    for n in range(sessions):
        events = [said(f"order {turn} of the refund queue") for turn in range(1000)]
        await create_session(client, sessionId=f"busy{n}", events=events)


async def test_a_search_past_its_time_limit_is_stopped_with_a_problem(settings, client):
    await many_hits(client)
    # Windows as large as the matches, so that this search ranks all 3,000.
    limited = settings.model_copy(update={"search_timeout": 0.001, "search_candidates": 5000})
    async with client_of(limited) as http:
        response = await http.get(SEARCH, params={"q": "refund queue"})
    body = assert_problem(response, 503, "search_timeout")
    assert "SESSIONARY_SEARCH_TIMEOUT" in body["detail"] and "narrow" in body["detail"]
    assert len(await hits(client, "refund queue")) == 3000  # the default limit lets it finish


async def test_searches_past_a_workers_bound_are_refused_at_once(settings, client):
    await many_hits(client, sessions=1)
    bounded = settings.model_copy(update={"search_concurrency": 1})
    async with client_of(bounded) as http:
        responses = await asyncio.gather(
            *(http.get(SEARCH, params={"q": "refund queue"}) for _ in range(6))
        )
        codes = [response.status_code for response in responses]
        assert codes.count(200) >= 1 and codes.count(503) >= 1, codes
        for response in responses:
            if response.status_code == 503:
                assert_problem(response, 503, "search_busy")
                assert response.headers["Retry-After"] == "1"
        # Bounded, not stuck: once they are done, the next search runs.
        assert (await http.get(SEARCH, params={"q": "refund"})).status_code == 200


@pytest.mark.parametrize(
    "position",
    [
        [1.7976931348623157e308, "u", "s", 9223372036854775807],
        [-1.7976931348623157e308, "u", "s", -9223372036854775807],
        [0.0, "u", "s", 1, 1.7976931348623157e308, "u", "s", 9223372036854775807],
        [0.0, "u", "s", 1, -1e-300, "u", "s", -9223372036854775807],
    ],
)
async def test_a_token_of_any_valid_shape_and_extreme_values_gives_a_page(client, position):
    """Tokens come back from clients: whatever values they hold, an answer, never a 500."""
    from app import paging
    from app.domain import SearchQuery

    await create_session(client, sessionId="s", events=[said("refund")])
    token = paging.encode(paging.listing("search", SearchQuery(APP, "refund")), position)
    response = await client.get(SEARCH, params={"q": "refund", "pageToken": token})
    assert response.status_code == 200, response.text


# Events of an app's session, as a fork copies them: the statistics of an app PostgreSQL has
# not analyzed yet say it has no events, and the app's time index would look as good as the
# session's key; on an app of 300,000 events that was a 250 ms scan per fork.
SESSION_EVENTS = (
    "SELECT * FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND seq <= $4"
)


@pytest.fixture
def migrated(new_database) -> str:
    url = new_database()
    db.upgrade(url)
    return url


async def test_only_search_reads_the_apps_time_index_even_for_an_app_never_analyzed(migrated):
    connection = await asyncpg.connect(migrated)
    try:
        for app, sessions in (("known", 40), ("new", 1)):
            await connection.execute(
                """INSERT INTO events (app_name, user_id, session_id, seq, id, author, timestamp,
                    request_hash, event, search)
                SELECT $1, 'u', 's' || (n % $2 + 1), n, 'e' || n, 'user', n, '\\x00', '{}',
                    to_tsvector('english', 'hello world')
                FROM generate_series(1, 4000) AS n""",
                app,
                sessions,
            )
            if app == "known":
                await connection.execute("ANALYZE events")
        plan = await connection.fetchval(
            f"EXPLAIN (FORMAT JSON) {SESSION_EVENTS}", "new", "u", "s1", 4000
        )
        assert "ix_events_app_name_timestamp" not in plan
        search = await connection.fetchval(  # one user's: on Citus, the plan of its shard
            """EXPLAIN (FORMAT JSON) SELECT * FROM events WHERE app_name = 'new'
            AND user_id = 'u' AND search IS NOT NULL ORDER BY timestamp DESC LIMIT 10"""
        )
        assert "ix_events_app_name_timestamp" in search
    finally:
        await connection.close()
