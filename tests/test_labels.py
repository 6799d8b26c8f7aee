"""Display names and labels: set on create and PATCH, filtered on in both lists, with paging."""

import json
import random

import pytest

from app.domain import Order, SessionQuery
from app.repositories import sessions as session_rows
from tests.helpers import APP, SESSIONS, USER, assert_problem, create_session, session_url


async def ids(client, url: str, **params) -> list[str]:
    """Every session id of a listing, page by page."""
    found: list[str] = []
    token = None
    while True:
        page = await client.get(url, params={**params, **({"pageToken": token} if token else {})})
        assert page.status_code == 200, page.text
        body = page.json()
        found += [session["id"] for session in body["sessions"]]
        token = body["nextPageToken"]
        if token is None:
            return found


async def test_create_and_read_back_a_name_and_labels(client):
    created = await create_session(
        client, sessionId="s", displayName="Refund for order 42", labels={"channel": "web"}
    )
    assert created["displayName"] == "Refund for order 42"
    assert created["labels"] == {"channel": "web"}
    read = (await client.get(session_url("s"))).json()
    assert (read["displayName"], read["labels"]) == ("Refund for order 42", {"channel": "web"})
    bare = await create_session(client, sessionId="t")
    assert (bare["displayName"], bare["labels"], bare["expireTime"]) == (None, {}, None)


async def test_label_filters_all_match_and_page(client):
    for number in range(7):
        labels = {"team": "red" if number % 2 else "blue", "tier": "gold" if number < 4 else "free"}
        await create_session(client, sessionId=f"s{number}", labels=labels)
    await create_session(client, sessionId="other", user="bob", labels={"team": "red"})

    assert await ids(client, SESSIONS, label="team:red", pageSize=1) == ["s1", "s3", "s5"]
    both = await ids(client, SESSIONS, label=["team:red", "tier:gold"], pageSize=1)
    assert both == ["s1", "s3"]
    newest_first = await ids(client, SESSIONS, label="tier:free", order="desc", pageSize=2)
    assert newest_first == ["s6", "s5", "s4"]
    across_users = await ids(client, f"/apps/{APP}/sessions", label="team:red", pageSize=2)
    assert sorted(across_users) == ["other", "s1", "s3", "s5"]
    assert await ids(client, SESSIONS, label="team:green") == []
    assert await ids(client, SESSIONS, label="team:") == []  # an empty value is a value


async def test_a_page_token_is_bound_to_its_filters(client):
    for number in range(3):
        await create_session(client, sessionId=f"s{number}", labels={"team": "red"})
    first = (await client.get(SESSIONS, params={"label": "team:red", "pageSize": 1})).json()
    other = await client.get(
        SESSIONS, params={"label": "team:blue", "pageToken": first["nextPageToken"]}
    )
    assert_problem(other, 422, "validation_error")


async def test_display_name_filter(client):
    await create_session(client, sessionId="a", displayName="Support")
    await create_session(client, sessionId="b", displayName="support")
    await create_session(client, sessionId="c")
    assert await ids(client, SESSIONS, displayName="Support") == ["a"]
    assert await ids(client, f"/apps/{APP}/sessions", displayName="support") == ["b"]


# The longest name allowed, in 4-byte characters: 4,096 bytes, more than a btree entry holds,
# and varied, or PostgreSQL would compress it below that.
_RANDOM = random.Random(44)
LONG_NAME = "".join(chr(0x20000 + _RANDOM.randrange(40_000)) for _ in range(1024))


async def test_the_longest_multibyte_name_is_stored_by_create_patch_and_import(client):
    created = await create_session(client, sessionId="made", displayName=LONG_NAME)
    assert created["displayName"] == LONG_NAME
    await create_session(client, sessionId="renamed")
    renamed = await client.patch(session_url("renamed"), json={"displayName": LONG_NAME})
    assert renamed.status_code == 200, renamed.text
    exported = await client.get(f"{session_url('made')}:export")
    imported = await client.post(
        f"/apps/{APP}/users/bob/sessions:import",
        content=exported.content,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    assert await ids(client, SESSIONS, displayName=LONG_NAME) == ["made", "renamed"]
    assert await ids(client, f"/apps/{APP}/sessions", displayName=LONG_NAME[:-1]) == []
    assert len(await ids(client, f"/apps/{APP}/sessions", displayName=LONG_NAME)) == 3


async def test_the_display_name_filter_is_an_index_lookup(app):
    """Many named sessions, statistics taken: the filter's own statement reads the index."""
    seen: list[tuple[str, tuple[object, ...]]] = []

    class Recorder:
        async def fetch(self, sql: str, *arguments: object) -> list[object]:
            seen.append((sql, arguments))
            return []

    query = SessionQuery(APP, USER, Order.ASC, display_name="name 7")
    await session_rows.list_page(Recorder(), query, after=None, limit=10)  # type: ignore[arg-type]
    [(sql, arguments)] = seen
    async with app.state.pool.connection() as connection:
        await connection.execute(
            """INSERT INTO sessions (app_name, user_id, id, display_name, update_second)
            SELECT $1, $2, 's' || n, 'name ' || n, 0 FROM generate_series(1, 5000) AS n""",
            APP,
            USER,
        )
        await connection.execute("ANALYZE sessions")
        plan = await connection.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *arguments)
    assert "ix_sessions_display_name" in json.dumps(plan)


async def test_patch_renames_relabels_and_takes_one_version(client):
    await create_session(client, sessionId="s", displayName="old", labels={"a": "1", "b": "2"})
    changed = await client.patch(
        session_url("s"), json={"labels": {"c": "3"}, "displayName": "new"}
    )
    assert changed.status_code == 200
    assert (changed.json()["labels"], changed.json()["displayName"]) == ({"c": "3"}, "new")
    assert changed.json()["version"] == 1 and changed.headers["etag"] == '"1"'
    assert changed.json()["events"] == []  # no event: nothing happened in the conversation

    together = await client.patch(
        session_url("s"), json={"stateDelta": {"k": 1}, "displayName": None}
    )
    body = together.json()
    assert (body["version"], body["displayName"], body["state"]) == (2, None, {"k": 1})
    assert [event["seq"] for event in body["events"]] == [2]
    assert body["labels"] == {"c": "3"}  # left out: unchanged


async def test_patch_honours_if_match_and_changes_nothing_when_stale(client):
    await create_session(client, sessionId="s", labels={"a": "1"})
    stale = await client.patch(
        session_url("s"), json={"labels": {}, "stateDelta": {"k": 1}}, headers={"If-Match": '"7"'}
    )
    assert_problem(stale, 412, "stale_session")
    unchanged = (await client.get(session_url("s"))).json()
    assert (unchanged["labels"], unchanged["state"], unchanged["version"]) == ({"a": "1"}, {}, 0)
    fresh = await client.patch(session_url("s"), json={"labels": {}}, headers={"If-Match": '"0"'})
    assert fresh.status_code == 200 and fresh.json()["labels"] == {}


async def test_a_closed_session_keeps_its_history_but_may_be_relabelled(client):
    await create_session(client, sessionId="s")
    closed = await client.post(f"{session_url('s')}:close", json={"outcome": "completed"})
    assert closed.status_code == 200
    assert_problem(
        await client.patch(session_url("s"), json={"stateDelta": {"k": 1}}), 409, "session_closed"
    )
    both = await client.patch(session_url("s"), json={"labels": {"a": "b"}, "stateDelta": {"k": 1}})
    assert_problem(both, 409, "session_closed")  # one write: the labels are not set either
    assert (await client.get(session_url("s"))).json()["labels"] == {}
    relabelled = await client.patch(session_url("s"), json={"labels": {"archived": "yes"}})
    assert relabelled.status_code == 200 and relabelled.json()["labels"] == {"archived": "yes"}


@pytest.mark.parametrize(
    "body",
    [
        {"labels": {"a:b": "c"}},  # `:` separates key and value in the filter
        {"labels": {"": "c"}},
        {"labels": {"k" * 64: "v"}},
        {"labels": {"k": "v" * 257}},
        {"labels": {"k": 1}},
        {"labels": {f"k{n}": "v" for n in range(65)}},
        {"displayName": ""},
        {"displayName": "x" * 1025},
        {},
        {"name": "typo"},
    ],
)
async def test_bad_names_and_labels_are_refused(client, body):
    await create_session(client, sessionId="s", labels={"keep": "me"})
    assert_problem(await client.patch(session_url("s"), json=body), 422, "validation_error")
    assert (await client.get(session_url("s"))).json()["labels"] == {"keep": "me"}


@pytest.mark.parametrize(
    "params",
    [{"label": "nocolon"}, {"label": ":v"}, {"label": ["k:1", "k:2"]}, {"displayName": ""}],
)
async def test_bad_filters_are_refused(client, params):
    assert_problem(await client.get(SESSIONS, params=params), 422, "validation_error")
