"""Hostile and malformed input: each case is a 4xx problem+json and the database is unchanged."""

import base64
import json

import pytest

from app import paging
from app.domain import EventQuery, Order, SessionKey, SessionQuery
from tests.helpers import APP, SESSIONS, USER, assert_problem, create_session, session_url

EVENTS = session_url("s1") + "/events"


def forge(listing: tuple, position: list) -> str:
    """A page token as a client could craft one, bound to the right listing."""
    raw = json.dumps({"q": paging.listing(*listing), "p": position}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


USER_LISTING = ("sessions", SessionQuery(APP, USER, Order.ASC))
EVENTS_LISTING = ("events", SessionKey(APP, USER, "s1"), EventQuery())


JSON = {"content-type": "application/json"}


async def snapshot(client) -> dict:
    session = (await client.get(session_url("s1"))).json()
    app_state = (await client.get(f"/apps/{APP}/state")).json()
    user_state = (await client.get(f"/apps/{APP}/users/{USER}/state")).json()
    sessions = (await client.get(SESSIONS)).json()
    return {"session": session, "app": app_state, "user": user_state, "list": sessions}


RAW_BODIES = {
    "malformed JSON": b'{"author": ',
    "duplicate keys": b'{"author": "a", "author": "b"}',
    "nested duplicate keys": b'{"actions": {"stateDelta": {"k": 1, "k": 2}}}',
    "NaN": b'{"author": "a", "timestamp": NaN}',
    "Infinity": b'{"author": "a", "content": {"x": Infinity}}',
    "number beyond double": b'{"author": "a", "content": {"x": 1e400}}',
    "integer beyond int64": b'{"author": "a", "content": {"x": 9223372036854775808}}',
    "NUL in a string": b'{"author": "a\\u0000b"}',
    "NUL in a key": b'{"actions": {"stateDelta": {"k\\u0000": 1}}}',
    "lone surrogate": b'{"author": "\\ud800"}',
    "invalid UTF-8": b'{"author": "\xff"}',
    "integer literal of 5000 digits": b'{"content": {"x": 1' + b"0" * 5000 + b"}}",
    "nesting deeper than 64": b'{"content": ' + b"[" * 70 + b"]" * 70 + b"}",
    "not an object": b"[1, 2, 3]",
}

EVENT_TYPES = {
    "id not a string": {"id": 5},
    "empty id": {"id": ""},
    "id with a slash": {"id": "a/b"},
    "id too long": {"id": "x" * 129},
    "author not a string": {"author": ["a"]},
    "invocationId not a string": {"invocationId": 1},
    "timestamp a string": {"timestamp": "1700000000"},
    "partial not a bool": {"partial": "yes"},
    "actions not an object": {"actions": []},
    "stateDelta not an object": {"actions": {"stateDelta": [1]}},
    "both spellings of a field": {"invocationId": "a", "invocation_id": "b"},
    "timestamp after year 9999": {"timestamp": 253402300800},
    "timestamp before year 1": {"timestamp": -7e10},
    "timestamp 1e20": {"timestamp": 1e20},
    "id with a C1 control character": {"id": "a\u0085b"},
    # URL dot segments: as a path segment, `..` would name the session, not the event.
    "id `.`": {"id": "."},
    "id `..`": {"id": ".."},
    # ADK's Event refuses these as null, so a stored one would break every ADK reader.
    **{
        f"{field} null": {"author": "a", field: None}
        for field in ("id", "invocationId", "timestamp", "actions")
    },
    "author null": {"author": None},
    "stateDelta null": {"actions": {"stateDelta": None}},
}


@pytest.mark.parametrize("body", RAW_BODIES.values(), ids=RAW_BODIES.keys())
async def test_unparseable_or_ambiguous_json_is_422(client, body):
    await create_session(client, sessionId="s1", state={"k": 1})
    before = await snapshot(client)
    assert_problem(await client.post(EVENTS, content=body, headers=JSON), 422, "validation_error")
    assert await snapshot(client) == before


@pytest.mark.parametrize("event", EVENT_TYPES.values(), ids=EVENT_TYPES.keys())
async def test_wrong_types_in_an_event_are_422(client, event):
    await create_session(client, sessionId="s1")
    before = await snapshot(client)
    assert_problem(await client.post(EVENTS, json=event), 422, "validation_error")
    assert await snapshot(client) == before


async def test_partial_null_is_read_as_absent_as_adk_does(client):
    await create_session(client, sessionId="s1")
    response = await client.post(EVENTS, json={"id": "e1", "author": "a", "partial": None})
    assert response.status_code == 201, response.text
    assert [e["id"] for e in (await client.get(session_url("s1"))).json()["events"]] == ["e1"]


# Routes whose body is optional: JSON `null` is not "no body" (`:reset` would empty).
NULL_BODIES = {
    "create": SESSIONS,
    "fork": session_url("s1") + ":fork",
    "children": session_url("s1") + "/children",
    "reset": session_url("s1") + ":reset",
    "heal": session_url("s1") + ":heal",
    "promote": session_url("s1") + "/pending:promote",
}


@pytest.mark.parametrize("path", NULL_BODIES.values(), ids=NULL_BODIES.keys())
@pytest.mark.parametrize("body", [b"null", b" null\n"])
async def test_a_json_null_body_is_422_not_taken_as_no_body(client, path, body):
    await create_session(client, sessionId="s1", state={"k": 1})
    await client.post(EVENTS, json={"id": "e1", "author": "user"})
    before = await snapshot(client)
    answer = await client.post(path, content=body, headers=JSON)
    assert "null" in assert_problem(answer, 422, "validation_error")["detail"]
    assert await snapshot(client) == before


CONTROL_BODIES = {
    "unknown field in create": (SESSIONS, "post", {"sessionId": "s2", "stat": {}}),
    "state not an object": (SESSIONS, "post", {"sessionId": "s2", "state": [1]}),
    "session id with a slash": (SESSIONS, "post", {"sessionId": "a/b"}),
    "session id too long": (SESSIONS, "post", {"sessionId": "x" * 129}),
    "session id empty": (SESSIONS, "post", {"sessionId": ""}),
    "session id `.`": (SESSIONS, "post", {"sessionId": "."}),
    "session id `..`": (SESSIONS, "post", {"sessionId": ".."}),
    "fork id `..`": (session_url("s1") + ":fork", "post", {"sessionId": ".."}),
    "child id `.`": (session_url("s1") + "/children", "post", {"sessionId": "."}),
    "event timestamp out of range in create": (
        SESSIONS,
        "post",
        {"sessionId": "s2", "events": [{"timestamp": 1e20}]},
    ),
    "events with one id twice": (
        SESSIONS,
        "post",
        {"sessionId": "s2", "events": [{"id": "e"}, {"id": "e"}]},
    ),
    "unknown field in patch": (session_url("s1"), "patch", {"stateDelta": {}, "x": 1}),
    "patch without stateDelta": (session_url("s1"), "patch", {}),
    "heal timeoutSeconds beyond a century": (
        session_url("s1") + ":heal",
        "post",
        {"timeoutSeconds": 1e308},
    ),
    "prefixed key in app state": (f"/apps/{APP}/state", "patch", {"stateDelta": {"app:a": 1}}),
    "unknown field in user state": (
        f"/apps/{APP}/users/{USER}/state",
        "patch",
        {"stateDelta": {}, "extra": 1},
    ),
}


@pytest.mark.parametrize("case", CONTROL_BODIES.values(), ids=CONTROL_BODIES.keys())
async def test_control_bodies_refuse_unknown_fields_and_bad_values(client, case):
    url, method, body = case
    await create_session(client, sessionId="s1")
    before = await snapshot(client)
    response = await client.request(method, url, json=body)
    assert_problem(response, 422, "validation_error")
    assert await snapshot(client) == before
    assert_problem(await client.get(session_url("s2")), 404, "session_not_found")


BAD_QUERIES = {
    "negative numRecentEvents": (session_url("s1"), {"numRecentEvents": -1}),
    "numRecentEvents not a number": (session_url("s1"), {"numRecentEvents": "all"}),
    "afterTimestamp NaN": (session_url("s1"), {"afterTimestamp": "nan"}),
    "pageSize zero": (SESSIONS, {"pageSize": 0}),
    "pageSize over 1000": (SESSIONS, {"pageSize": 1001}),
    "unknown order": (SESSIONS, {"order": "random"}),
    "garbage session pageToken": (SESSIONS, {"pageToken": "%%%"}),
    "token of another listing": (
        EVENTS,
        {"pageToken": "eyJxIjoic2Vzc2lvbnM6YXNjIiwicCI6WzEsIngiXX0"},
    ),
    "events pageSize over 1000": (EVENTS, {"pageSize": 5000}),
    "negative afterSeq": (EVENTS, {"afterSeq": -1}),
    "numRecentEvents beyond int64": (session_url("s1"), {"numRecentEvents": "9" * 20}),
    "afterSeq beyond int64": (EVENTS, {"afterSeq": "9" * 20}),
    "a misspelt parameter": (session_url("s1"), {"numRecentEvent": 1}),
    "timeoutSeconds beyond a century": (
        session_url("s1") + "/toolCalls",
        {"timeoutSeconds": "18446744073709551616"},
    ),
    "negative timeoutSeconds": (session_url("s1") + "/toolCalls", {"timeoutSeconds": -1}),
    "afterTimestamp past year 9999": (session_url("s1"), {"afterTimestamp": "1e300"}),
    "events beforeTimestamp before year 1": (EVENTS, {"beforeTimestamp": "-1e300"}),
    "search afterTimestamp past year 9999": (
        f"/apps/{APP}/search",
        {"q": "x", "afterTimestamp": "1e300"},
    ),
    "usage beforeTimestamp past year 9999": (
        f"/apps/{APP}/usage",
        {"beforeTimestamp": "1e300"},
    ),
    "pageToken of JSON nested 1500 deep": (
        SESSIONS,
        {"pageToken": base64.urlsafe_b64encode(b"[" * 1500).decode()},
    ),
    "pageToken of 10,000 characters": (EVENTS, {"pageToken": "A" * 10_000}),
    "a snake_case parameter out of range": (SESSIONS, {"page_size": 0}),
    "a parameter given twice": (
        session_url("s1"),
        [("numRecentEvents", 2), ("numRecentEvents", 3)],
    ),
    "both spellings of a parameter": (SESSIONS, [("pageSize", 2), ("page_size", 3)]),
    **{
        f"forged token {name}": (url, {"pageToken": forge(query, position)})
        for name, (url, query, position) in {
            "with a huge time": (SESSIONS, USER_LISTING, [10**20, "x"]),
            "with int64 max time": (SESSIONS, USER_LISTING, [2**63 - 1, "x"]),
            "with a NUL id": (SESSIONS, USER_LISTING, [1, "a\u0000"]),
            "with a huge seq": (EVENTS, EVENTS_LISTING, [10**20]),
            "of the wrong shape": (SESSIONS, USER_LISTING, ["x", 1]),
            "of another user's listing": (SESSIONS, ("sessions", APP, "bob", "asc"), [1, "x"]),
        }.items()
    },
}


@pytest.mark.parametrize("case", BAD_QUERIES.values(), ids=BAD_QUERIES.keys())
async def test_out_of_range_query_parameters_are_422(client, case):
    url, params = case
    await create_session(client, sessionId="s1")
    assert_problem(await client.get(url, params=params), 422, "validation_error")


BAD_PATHS = [
    "/apps/" + "a" * 129 + "/state",
    f"/apps/{APP}/users/%00/state",
    f"/apps/{APP}/users/%C2%85/state",
    f"/apps/{APP}/users/{USER}/sessions/" + "s" * 129,
    f"/apps/{APP}/users/{USER}/sessions/a%2Fb",
    f"/apps/{APP}/users/{USER}/sessions/s1%2Fevents",
    f"/apps/{APP}/users//sessions",
    f"/apps/{APP}/users/{USER}/sessions/",
    "/apps/%FF/state",
    "/apps/%ED%A0%80/state",
    # Dot segments, encoded so that the test's own client sends them as they are.
    "/apps/%2E/state",
    f"/apps/{APP}/users/%2e%2E/state",
    f"/apps/{APP}/users/{USER}/sessions/%2E%2E",
    f"/apps/{APP}/users/{USER}/sessions/s1/events/%2E",
]


@pytest.mark.parametrize("path", BAD_PATHS)
async def test_ids_in_paths_that_are_too_long_or_hold_control_characters_are_422(client, path):
    assert_problem(await client.get(path), 422, "validation_error")


async def test_removing_an_event_named_dot_dot_is_422_and_keeps_the_session(client):
    await create_session(client, sessionId="s1")
    await client.post(EVENTS, json={"id": "e1", "author": "user"})
    before = await snapshot(client)
    for event_id in ("%2E%2E", "%2e", ".%2E"):
        answer = await client.delete(f"{EVENTS}/{event_id}")
        assert_problem(answer, 422, "validation_error")
    forked = await client.post(f"{SESSIONS}/%2E%2E:fork", json={"sessionId": "s2"})
    assert_problem(forked, 422, "validation_error")
    assert await snapshot(client) == before


async def test_a_body_over_the_limit_is_413_before_it_is_read_whole(client, settings):
    await create_session(client, sessionId="s1")
    before = await snapshot(client)
    body = b'{"author": "' + b"x" * settings.max_body_bytes + b'"}'
    assert_problem(await client.post(EVENTS, content=body, headers=JSON), 413, "payload_too_large")
    assert await snapshot(client) == before


async def test_a_streamed_body_without_length_is_cut_off_at_the_limit(client, settings):
    await create_session(client, sessionId="s1")
    chunk = b"x" * (1024 * 1024)
    sent = 0

    async def endless_body():
        nonlocal sent
        yield b'{"author": "'
        while sent < 4 * settings.max_body_bytes:
            sent += len(chunk)
            yield chunk

    response = await client.post(EVENTS, content=endless_body(), headers=JSON)
    assert_problem(response, 413, "payload_too_large")
    assert (await client.get(session_url("s1"))).json()["version"] == 0


async def test_an_event_over_the_event_limit_is_413(client, settings):
    await create_session(client, sessionId="s1")
    event = {"author": "a", "content": {"text": "x" * settings.max_event_bytes}}
    assert_problem(await client.post(EVENTS, json=event), 413, "payload_too_large")
    assert (await client.get(session_url("s1"))).json()["version"] == 0


async def test_state_growing_over_the_state_limit_is_413_and_nothing_is_written(client, settings):
    await create_session(client, sessionId="s1")
    half = "x" * (settings.max_state_bytes // 2 + 10)
    first = await client.post(EVENTS, json={"actions": {"stateDelta": {"user:a": half}}})
    assert first.status_code == 201
    second = await client.post(EVENTS, json={"actions": {"stateDelta": {"user:b": half}}})
    assert_problem(second, 413, "payload_too_large")
    assert (await client.get(session_url("s1"))).json()["version"] == 1
    assert list((await client.get(f"/apps/{APP}/users/{USER}/state")).json()["state"]) == ["a"]


async def test_every_state_write_refuses_to_outgrow_the_limit_and_writes_nothing(client, settings):
    too_big = "x" * (settings.max_state_bytes + 10)
    half = "x" * (settings.max_state_bytes // 2 + 10)
    created = await client.post(SESSIONS, json={"sessionId": "s2", "state": {"k": too_big}})
    assert_problem(created, 413, "payload_too_large")
    assert (await client.get(session_url("s2"))).status_code == 404
    shared = await client.post(SESSIONS, json={"sessionId": "s3", "state": {"app:k": too_big}})
    assert_problem(shared, 413, "payload_too_large")
    assert (await client.get(session_url("s3"))).status_code == 404
    app_state = f"/apps/{APP}/state"
    assert (await client.patch(app_state, json={"stateDelta": {"a": half}})).status_code == 200
    refused = await client.patch(app_state, json={"stateDelta": {"b": half}})
    assert "app state" in assert_problem(refused, 413, "payload_too_large")["detail"]
    assert list((await client.get(app_state)).json()["state"]) == ["a"]


@pytest.mark.parametrize(
    "headers",
    [
        [("If-Match", '"1"'), ("If-Match", '"0"')],
        [("If-Match", '"0"'), ("If-Match", '"1"')],
        [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
    ],
    ids=["If-Match, current one second", "If-Match, current one first", "Content-Type"],
)
async def test_a_deciding_header_given_twice_is_422_whatever_the_order(client, headers):
    """As with a query parameter given twice, neither the first nor the last silently wins."""
    await create_session(client, sessionId="s1")
    before = await snapshot(client)
    response = await client.post(EVENTS, content=b'{"author": "u"}', headers=headers)
    body = assert_problem(response, 422, "validation_error")
    assert headers[0][0].lower() in body["detail"]
    assert await snapshot(client) == before


async def test_a_body_that_is_not_json_is_415(client):
    await create_session(client, sessionId="s1")
    for headers in (
        {"content-type": "text/plain"},
        {"content-type": "application/x-www-form-urlencoded"},
    ):
        response = await client.post(EVENTS, content=b'{"author": "a"}', headers=headers)
        assert_problem(response, 415, "unsupported_media_type")
    assert (await client.get(session_url("s1"))).json()["version"] == 0


async def test_unknown_routes_are_problem_json_404(client):
    assert_problem(await client.get("/nowhere"), 404, "not_found")


async def test_a_wrong_method_is_405_naming_every_method_of_the_path(client):
    response = await client.put(session_url("s1"), json={})
    assert_problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "DELETE, GET, HEAD, PATCH"
    response = await client.delete(EVENTS)
    assert response.headers["allow"] == "GET, HEAD, POST"


async def test_head_answers_as_get_without_a_body(client):
    await create_session(client, sessionId="s1")
    get, head = await client.get(session_url("s1")), await client.head(session_url("s1"))
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["etag"] == get.headers["etag"]
    assert head.headers["content-length"] == str(len(get.content))
    missing = await client.head(session_url("nope"))
    assert (missing.status_code, missing.content) == (404, b"")
    assert (await client.head(EVENTS.replace("s1", "nope"))).status_code == 404
