"""`POST …/events:batch`: several events in one transaction, all or nothing."""

import asyncio

from tests.helpers import APP, USER, assert_problem, create_session, delta_event, session_url

BATCH = session_url("s1") + "/events:batch"


async def test_a_batch_gets_consecutive_seqs_and_its_deltas_apply_in_order(client):
    await create_session(client, sessionId="s1")
    await client.post(BATCH, json={"events": [{"author": "u"}]})
    events = [delta_event({"k": n, f"user:u{n}": n}, id=f"e{n}") for n in range(5)]
    response = await client.post(BATCH, json={"events": events})
    assert response.status_code == 201 and response.headers["etag"] == '"6"'
    assert [e["seq"] for e in response.json()["events"]] == [2, 3, 4, 5, 6]
    session = (await client.get(session_url("s1"))).json()
    assert session["state"] == {"k": 4, **{f"user:u{n}": n for n in range(5)}}


async def test_one_bad_event_refuses_the_whole_batch(client):
    await create_session(client, sessionId="s1")
    events = [{"id": "ok", "author": "u"}, {"id": "bad", "timestamp": "yesterday"}]
    assert_problem(await client.post(BATCH, json={"events": events}), 422, "validation_error")
    assert (await client.get(session_url("s1"))).json()["version"] == 0


async def test_a_batch_growing_state_over_the_limit_writes_nothing(client, settings):
    await create_session(client, sessionId="s1")
    big = "x" * (settings.max_state_bytes // 2 + 10)
    events = [
        delta_event({"user:a": big}),
        delta_event({"app:b": "small"}),
        delta_event({"user:c": big}),
    ]
    assert_problem(await client.post(BATCH, json={"events": events}), 413, "payload_too_large")
    assert (await client.get(f"/apps/{APP}/state")).json() == {"state": {}}
    assert (await client.get(f"/apps/{APP}/users/{USER}/state")).json() == {"state": {}}


async def test_if_match_applies_to_the_whole_batch(client):
    await create_session(client, sessionId="s1")
    events = {"events": [{"author": "u"}, {"author": "u"}]}
    assert (await client.post(BATCH, json=events, headers={"If-Match": '"0"'})).status_code == 201
    stale = await client.post(BATCH, json=events, headers={"If-Match": '"0"'})
    assert_problem(stale, 412, "stale_session")
    assert (await client.get(session_url("s1"))).json()["version"] == 2


async def test_a_retried_batch_is_stored_once(client):
    await create_session(client, sessionId="s1")
    batch = {"events": [delta_event({"n": 1}, id="a"), delta_event({"n": 2}, id="b")]}
    first = await client.post(BATCH, json=batch)
    retry = await client.post(BATCH, json=batch)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json() == first.json()
    assert retry.headers["etag"] == first.headers["etag"] == '"2"'
    assert (await client.get(session_url("s1"))).json()["version"] == 2


async def test_idempotency_is_per_event_id_events_already_stored_are_not_stored_again(client):
    await create_session(client, sessionId="s1")
    await client.post(BATCH, json={"events": [delta_event({"n": 1}, id="a")]})
    overlapping = {"events": [delta_event({"n": 1}, id="a"), delta_event({"n": 2}, id="b")]}
    response = await client.post(BATCH, json=overlapping)
    assert response.status_code == 201, response.text
    assert [(e["id"], e["seq"]) for e in response.json()["events"]] == [("a", 1), ("b", 2)]
    session = (await client.get(session_url("s1"))).json()
    assert [e["id"] for e in session["events"]] == ["a", "b"]
    assert session["state"] == {"n": 2}


async def test_a_batch_reusing_an_id_for_other_content_is_a_conflict_naming_it(client):
    await create_session(client, sessionId="s1")
    await client.post(BATCH, json={"events": [delta_event({"n": 1}, id="a")]})
    reused = {"events": [delta_event({"n": 3}, id="c"), delta_event({"n": 9}, id="a")]}
    body = assert_problem(await client.post(BATCH, json=reused), 409, "event_conflict")
    assert "'a'" in body["detail"]
    assert (await client.get(session_url("s1"))).json()["version"] == 1


async def test_an_empty_batch_is_422(client):
    await create_session(client, sessionId="s1")
    assert_problem(await client.post(BATCH, json={"events": []}), 422, "validation_error")


async def test_a_batch_over_the_size_limit_is_413(client, settings):
    await create_session(client, sessionId="s1")
    events = [{"author": "u"}] * (settings.max_events_per_request + 1)
    assert_problem(await client.post(BATCH, json={"events": events}), 413, "payload_too_large")


async def test_partial_events_in_a_batch_are_skipped(client):
    await create_session(client, sessionId="s1")
    events = [{"id": "p", "partial": True}, {"id": "e", "author": "u"}]
    response = await client.post(BATCH, json={"events": events})
    assert [e["id"] for e in response.json()["events"]] == ["e"]
    only_partial = await client.post(BATCH, json={"events": [{"partial": True}]})
    assert only_partial.status_code == 202 and only_partial.json() == {"events": []}


async def test_a_batch_to_a_missing_session_is_404(client):
    response = await client.post(session_url("nope") + "/events:batch", json={"events": [{}]})
    assert_problem(response, 404, "session_not_found")


async def test_concurrent_batches_never_interleave(client):
    await create_session(client, sessionId="s1")
    responses = await asyncio.gather(
        *(
            client.post(BATCH, json={"events": [{"author": f"w{w}"} for _ in range(10)]})
            for w in range(8)
        )
    )
    for response in responses:
        seqs = [e["seq"] for e in response.json()["events"]]
        assert seqs == list(range(seqs[0], seqs[0] + 10))
    assert (await client.get(session_url("s1"))).json()["version"] == 80
