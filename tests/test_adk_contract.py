"""ADK's session semantics as HTTP behaviour: one rule per test, named for the rule.

Checked against google-adk 2.x's DatabaseSessionService; where our HTTP contract differs
(201 on create, 404 on deleting a missing session), docs/semantics.md says so.
"""

import uuid

import httpx
import pytest

from tests.helpers import (
    APP,
    SESSIONS,
    USER,
    append,
    assert_problem,
    create_session,
    delta_event,
    session_url,
)


async def get(client: httpx.AsyncClient, session_id: str, **params: object) -> dict:
    response = await client.get(session_url(session_id), params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_create_generates_a_uuid_id_and_returns_the_session(client):
    session = await create_session(client)
    uuid.UUID(session["id"])
    assert session["appName"] == APP and session["userId"] == USER
    assert session["state"] == {} and session["events"] == [] and session["version"] == 0


async def test_create_with_no_body_at_all_is_allowed(client):
    response = await client.post(SESSIONS)
    assert response.status_code == 201


async def test_create_with_a_taken_id_is_409_session_already_exists(client):
    await create_session(client, sessionId="s1")
    response = await client.post(SESSIONS, json={"sessionId": "s1"})
    assert_problem(response, 409, "session_already_exists")


async def test_the_same_session_id_may_exist_for_another_user(client):
    await create_session(client, sessionId="s1")
    await create_session(client, user="bob", sessionId="s1")


async def test_create_splits_state_by_prefix_and_drops_temp(client):
    session = await create_session(
        client, sessionId="s1", state={"k": 1, "app:a": 2, "user:u": 3, "temp:t": 4}
    )
    assert session["state"] == {"k": 1, "app:a": 2, "user:u": 3}
    assert (await client.get(f"/apps/{APP}/state")).json() == {"state": {"a": 2}}
    assert (await client.get(f"/apps/{APP}/users/{USER}/state")).json() == {"state": {"u": 3}}


async def test_get_missing_session_is_404_session_not_found(client):
    assert_problem(await client.get(session_url("nope")), 404, "session_not_found")


async def test_last_update_time_is_create_time_until_an_event_then_its_timestamp(client):
    session = await create_session(client, sessionId="s1")
    assert session["lastUpdateTime"] == session["createTime"]
    await append(client, "s1", {"author": "user", "timestamp": 1700000000.25})
    assert (await get(client, "s1"))["lastUpdateTime"] == 1700000000.25


async def test_last_update_time_equals_a_full_precision_event_timestamp(client):
    await create_session(client, sessionId="s1")
    for timestamp in (1795334452.2540379, 1.0000005, 5e-07):
        await append(client, "s1", {"author": "user", "timestamp": timestamp})
        assert (await get(client, "s1"))["lastUpdateTime"] == timestamp
        listed = (await client.get(SESSIONS)).json()["sessions"][0]
        assert listed["lastUpdateTime"] == timestamp


async def test_create_time_is_not_after_server_stamped_first_events(client):
    session = await create_session(client, sessionId="s1", events=[{"author": "user"}])
    assert session["createTime"] <= session["events"][0]["timestamp"] == session["lastUpdateTime"]


async def test_app_state_is_shared_by_every_user_of_the_app(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", delta_event({"app:theme": "dark"}))
    other = await create_session(client, user="bob")
    assert other["state"] == {"app:theme": "dark"}
    elsewhere = await create_session(client, app="other-app")
    assert elsewhere["state"] == {}


async def test_user_state_is_shared_by_the_users_sessions_only(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", delta_event({"user:name": "Alice"}))
    assert (await create_session(client))["state"] == {"user:name": "Alice"}
    assert (await create_session(client, user="bob"))["state"] == {}


async def test_session_state_stays_in_its_session(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", delta_event({"step": 1}))
    assert (await get(client, "s1"))["state"] == {"step": 1}
    assert (await create_session(client))["state"] == {}


async def test_temp_keys_are_neither_stored_in_the_event_nor_in_state(client):
    await create_session(client, sessionId="s1")
    response = await append(client, "s1", delta_event({"temp:scratch": 1, "k": 2}))
    assert response.json()["actions"]["stateDelta"] == {"k": 2}
    session = await get(client, "s1")
    assert session["state"] == {"k": 2}
    assert session["events"][0]["actions"]["stateDelta"] == {"k": 2}


async def test_a_dict_value_replaces_the_stored_value_top_level_merge(client):
    await create_session(client, sessionId="s1", state={"cfg": {"a": 1}, "user:p": {"x": 1}})
    await append(client, "s1", delta_event({"cfg": {"b": 2}, "user:p": {"y": 2}}))
    assert (await get(client, "s1"))["state"] == {"cfg": {"b": 2}, "user:p": {"y": 2}}


async def test_null_is_stored_as_null_not_deleted(client):
    await create_session(client, sessionId="s1", state={"k": 1, "app:a": 1})
    await append(client, "s1", delta_event({"k": None, "app:a": None}))
    assert (await get(client, "s1"))["state"] == {"k": None, "app:a": None}


async def test_num_recent_events_returns_the_last_n_in_order(client):
    await create_session(client, sessionId="s1")
    for n in range(5):
        await append(client, "s1", {"id": f"e{n}", "author": "user"})
    events = (await get(client, "s1", numRecentEvents=2))["events"]
    assert [e["id"] for e in events] == ["e3", "e4"]


async def test_num_recent_events_zero_returns_no_events(client):
    await create_session(client, sessionId="s1", state={"k": 1})
    await append(client, "s1", {"author": "user"})
    session = await get(client, "s1", numRecentEvents=0)
    assert session["events"] == [] and session["state"] == {"k": 1}


async def test_negative_num_recent_events_is_422(client):
    await create_session(client, sessionId="s1")
    response = await client.get(session_url("s1"), params={"numRecentEvents": -1})
    assert_problem(response, 422, "validation_error")


async def test_query_names_are_camel_case_or_snake_case_and_unknown_ones_are_422(client):
    await create_session(client, sessionId="s1")
    for n in range(3):
        await append(client, "s1", {"id": f"e{n}", "author": "user"})
    events = (await get(client, "s1", num_recent_events=1))["events"]
    assert [e["id"] for e in events] == ["e2"]
    typo = await client.get(session_url("s1"), params={"numRecentEvent": 1})
    assert "numRecentEvents" in assert_problem(typo, 422, "validation_error")["detail"]


async def test_after_timestamp_is_inclusive(client):
    await create_session(client, sessionId="s1")
    for n, ts in enumerate([10.0, 20.0, 30.0]):
        await append(client, "s1", {"id": f"e{n}", "author": "user", "timestamp": ts})
    events = (await get(client, "s1", afterTimestamp=20.0))["events"]
    assert [e["id"] for e in events] == ["e1", "e2"]


async def test_both_filters_give_the_most_recent_n_at_or_after_the_timestamp(client):
    await create_session(client, sessionId="s1")
    for n, ts in enumerate([10.0, 20.0, 30.0, 40.0]):
        await append(client, "s1", {"id": f"e{n}", "author": "user", "timestamp": ts})
    events = (await get(client, "s1", afterTimestamp=20.0, numRecentEvents=2))["events"]
    assert [e["id"] for e in events] == ["e2", "e3"]
    events = (await get(client, "s1", afterTimestamp=35.0, numRecentEvents=3))["events"]
    assert [e["id"] for e in events] == ["e3"]


async def test_events_keep_append_order_when_timestamps_tie_or_go_backwards(client):
    await create_session(client, sessionId="s1")
    for n, ts in enumerate([30.0, 10.0, 10.0, 20.0]):
        await append(client, "s1", {"id": f"e{n}", "author": "user", "timestamp": ts})
    events = (await get(client, "s1"))["events"]
    assert [e["id"] for e in events] == ["e0", "e1", "e2", "e3"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4]


async def test_server_assigns_event_id_and_timestamp_when_absent(client):
    await create_session(client, sessionId="s1")
    event = (await append(client, "s1", {"author": "user"})).json()
    uuid.UUID(event["id"])
    assert isinstance(event["timestamp"], float) and event["seq"] == 1


async def test_unknown_event_fields_are_stored_and_returned_verbatim(client):
    await create_session(client, sessionId="s1")
    event = {
        "id": "e1",
        "author": "model",
        "content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        "someFutureField": {"nested": [1, 2.5, None, "x"]},
        "actions": {"stateDelta": {}, "artifactDelta": {"f.png": 0}},
    }
    await append(client, "s1", event)
    stored = (await get(client, "s1"))["events"][0]
    assert {k: stored[k] for k in event} == event


async def test_snake_case_event_fields_are_accepted_and_returned_camel_case(client):
    await create_session(client, sessionId="s1")
    event = {"author": "a", "invocation_id": "i1", "actions": {"state_delta": {"k": 1}}}
    stored = (await append(client, "s1", event)).json()
    assert stored["invocationId"] == "i1" and stored["actions"]["stateDelta"] == {"k": 1}
    assert (await get(client, "s1"))["state"] == {"k": 1}


async def test_fields_the_service_does_not_read_are_stored_exactly_as_sent(client):
    await create_session(client, sessionId="s1")
    event = {
        "id": "e1",
        "timestamp": 5.0,
        "custom_field": {"a_b": 1},
        "actions": {"skip_summarization": True, "stateDelta": {}},
    }
    assert (await append(client, "s1", event)).json() == {**event, "seq": 1}
    (stored,) = (await get(client, "s1"))["events"]
    assert stored["custom_field"] == {"a_b": 1}
    assert stored["actions"]["skip_summarization"] is True


async def test_partial_events_are_acknowledged_with_202_and_not_stored(client):
    await create_session(client, sessionId="s1")
    response = await append(client, "s1", delta_event({"k": 1}, partial=True))
    assert response.status_code == 202
    session = await get(client, "s1")
    assert session["events"] == [] and session["state"] == {} and session["version"] == 0


async def test_append_to_a_missing_session_is_404_partial_or_not(client):
    assert_problem(await append(client, "nope", {"author": "user"}), 404, "session_not_found")
    partial = await append(client, "nope", {"author": "user", "partial": True})
    assert_problem(partial, 404, "session_not_found")


async def test_partial_events_given_at_create_are_not_stored_either(client):
    session = await create_session(
        client,
        sessionId="s1",
        events=[delta_event({"k": 1}, id="e1", partial=True), delta_event({"j": 2}, id="e2")],
    )
    assert [e["id"] for e in session["events"]] == ["e2"] and session["state"] == {"j": 2}


async def test_list_returns_merged_state_and_no_events_oldest_update_first(client):
    for name, ts in [("s1", 30.0), ("s2", 10.0), ("s3", 20.0)]:
        await create_session(client, sessionId=name, state={"app:a": 1})
        await append(client, name, {"author": "user", "timestamp": ts})
    body = (await client.get(SESSIONS)).json()
    assert [s["id"] for s in body["sessions"]] == ["s2", "s3", "s1"]
    assert all(s["events"] == [] and s["state"] == {"app:a": 1} for s in body["sessions"])
    assert body["nextPageToken"] is None
    newest = (await client.get(SESSIONS, params={"order": "desc"})).json()
    assert [s["id"] for s in newest["sessions"]] == ["s1", "s3", "s2"]


async def test_list_is_per_user_and_list_by_app_spans_users(client):
    await create_session(client, sessionId="a1")
    await create_session(client, user="bob", sessionId="b1")
    await create_session(client, app="other", sessionId="o1")
    mine = (await client.get(SESSIONS)).json()["sessions"]
    assert [s["id"] for s in mine] == ["a1"]
    everyone = (await client.get(f"/apps/{APP}/sessions")).json()["sessions"]
    assert sorted((s["userId"], s["id"]) for s in everyone) == [("alice", "a1"), ("bob", "b1")]


async def test_list_pages_through_every_session_once(client):
    for n in range(7):
        await create_session(client, sessionId=f"s{n}")
        await create_session(client, user="bob", sessionId=f"s{n}")
    for url, expected in [(SESSIONS, 7), (f"/apps/{APP}/sessions", 14)]:
        for order in ("asc", "desc"):
            seen, token = [], None
            while True:
                params = {"pageSize": 3, "order": order, **({"pageToken": token} if token else {})}
                page = (await client.get(url, params=params)).json()
                seen += [(s["userId"], s["id"]) for s in page["sessions"]]
                token = page["nextPageToken"]
                if token is None:
                    break
            assert len(seen) == expected and len(set(seen)) == expected


async def test_pages_keep_the_exact_update_order_within_and_across_seconds(client):
    """The list index holds whole seconds (migration 0007); the order must still be exact."""
    times = [100.9, 100.1, 100.5, 101.0, 100.5, 99.999999, 101.000001, 100.1]
    for n, timestamp in enumerate(times):
        await create_session(client, sessionId=f"t{n}")
        event = {"author": "user", "timestamp": 1_790_000_000 + timestamp}
        assert (await append(client, f"t{n}", event)).status_code == 201
    expected = sorted(range(len(times)), key=lambda n: (times[n], f"t{n}"))
    for order, wanted in (("asc", expected), ("desc", expected[::-1])):
        seen, token = [], None
        while True:
            params = {"pageSize": 3, "order": order, **({"pageToken": token} if token else {})}
            page = (await client.get(SESSIONS, params=params)).json()
            seen += [s["id"] for s in page["sessions"]]
            token = page["nextPageToken"]
            if token is None:
                break
        assert seen == [f"t{n}" for n in wanted]


async def test_a_garbage_page_token_is_422(client):
    response = await client.get(SESSIONS, params={"pageToken": "not-a-token"})
    assert_problem(response, 422, "validation_error")


async def test_delete_removes_the_session_and_its_events_then_404(client):
    await create_session(client, sessionId="s1", state={"user:u": 1})
    await append(client, "s1", {"author": "user"})
    assert (await client.delete(session_url("s1"))).status_code == 204
    assert_problem(await client.get(session_url("s1")), 404, "session_not_found")
    assert_problem(await client.delete(session_url("s1")), 404, "session_not_found")
    assert (await create_session(client, sessionId="s1"))["events"] == []
    assert (await client.get(f"/apps/{APP}/users/{USER}/state")).json() == {"state": {"u": 1}}


async def test_patch_records_a_user_event_carrying_the_delta(client):
    await create_session(client, sessionId="s1")
    response = await client.patch(session_url("s1"), json={"stateDelta": {"k": 1, "temp:x": 2}})
    assert response.status_code == 200
    session = response.json()
    assert session["state"] == {"k": 1} and session["version"] == 1
    event = session["events"][0]
    assert event["author"] == "user" and event["actions"]["stateDelta"] == {"k": 1}


async def test_get_carries_the_version_as_etag(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", {"author": "user"})
    response = await client.get(session_url("s1"))
    assert response.headers["etag"] == '"1"' and response.json()["version"] == 1


async def test_if_match_on_the_current_version_appends(client):
    await create_session(client, sessionId="s1")
    response = await append(client, "s1", {"author": "u"}, headers={"If-Match": '"0"'})
    assert response.status_code == 201 and response.headers["etag"] == '"1"'


async def test_if_match_on_an_old_version_is_412_and_writes_nothing(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", {"author": "u"})
    stale = await append(client, "s1", delta_event({"k": 1}), headers={"If-Match": '"0"'})
    assert_problem(stale, 412, "stale_session")
    session = await get(client, "s1")
    assert session["version"] == 1 and session["state"] == {}


async def test_if_match_star_appends_to_any_version_of_an_existing_session(client):
    await create_session(client, sessionId="s1")
    assert (
        await append(client, "s1", {"author": "u"}, headers={"If-Match": "*"})
    ).status_code == 201
    missing = await append(client, "nope", {"author": "u"}, headers={"If-Match": "*"})
    assert_problem(missing, 404, "session_not_found")


async def test_if_match_makes_a_delete_conditional_too(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", {"author": "u"})
    stale = await client.delete(session_url("s1"), headers={"If-Match": '"0"'})
    assert assert_problem(stale, 412, "stale_session")["currentVersion"] == 1
    assert (await get(client, "s1"))["version"] == 1
    current = await client.delete(session_url("s1"), headers={"If-Match": '"1"'})
    assert current.status_code == 204
    missing = await client.delete(session_url("s1"), headers={"If-Match": '"1"'})
    assert_problem(missing, 404, "session_not_found")


@pytest.mark.parametrize("if_match", ["yesterday", '"0', '0"', 'W/"0"', '"0", "1"', '""'])
async def test_if_match_that_is_not_a_version_is_422(client, if_match):
    await create_session(client, sessionId="s1")
    response = await append(client, "s1", {"author": "u"}, headers={"If-Match": if_match})
    assert_problem(response, 422, "validation_error")
    assert (await get(client, "s1"))["version"] == 0


async def test_a_retried_event_is_stored_once_and_answered_with_200(client):
    await create_session(client, sessionId="s1")
    event = delta_event({"n": 1}, id="e1")
    first = await append(client, "s1", event)
    retry = await append(client, "s1", event)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json() == first.json()
    session = await get(client, "s1")
    assert session["version"] == 1 and len(session["events"]) == 1
    await append(client, "s1", {"author": "u"})
    late_retry = await append(client, "s1", event)
    assert late_retry.headers["etag"] == first.headers["etag"] == '"1"'  # the original answer


async def test_a_retry_is_recognised_even_with_a_stale_if_match(client):
    await create_session(client, sessionId="s1")
    event = {"id": "e1", "author": "u"}
    assert (await append(client, "s1", event, headers={"If-Match": '"0"'})).status_code == 201
    retry = await append(client, "s1", event, headers={"If-Match": '"0"'})
    assert retry.status_code == 200


async def test_resending_the_event_exactly_as_returned_is_a_retry(client):
    await create_session(client, sessionId="s1")
    stored = (await append(client, "s1", delta_event({"k": 1}))).json()
    retry = await append(client, "s1", stored)
    assert retry.status_code == 200 and retry.json() == stored
    assert (await get(client, "s1"))["version"] == 1


async def test_the_same_event_id_with_other_content_is_409_event_conflict(client):
    await create_session(client, sessionId="s1")
    await append(client, "s1", {"id": "e1", "author": "u", "timestamp": 1.0})
    clash = await append(client, "s1", {"id": "e1", "author": "u", "timestamp": 2.0})
    assert_problem(clash, 409, "event_conflict")
    assert (await get(client, "s1"))["version"] == 1


async def test_create_with_events_appends_them_and_applies_their_deltas(client):
    session = await create_session(
        client,
        sessionId="s1",
        events=[delta_event({"k": 1}, id="e1"), delta_event({"user:u": 2}, id="e2")],
    )
    assert [e["seq"] for e in session["events"]] == [1, 2]
    assert session["state"] == {"k": 1, "user:u": 2} and session["version"] == 2
