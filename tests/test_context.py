"""The context view and compaction over HTTP: rewinds, summaries, the token budget, tool-call
pairs, observation masks."""

from typing import Any

import asyncpg
import httpx

from tests.helpers import append, assert_problem, create_session, session_url

S = session_url("s")


def said(text: str, author: str = "user", **fields: Any) -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {"author": author, "content": {"role": role, "parts": [{"text": text}]}, **fields}


def calls(*ids: str, **fields: Any) -> dict[str, Any]:
    parts = [{"functionCall": {"id": i, "name": "search", "args": {"q": i}}} for i in ids]
    return {"author": "agent", "content": {"role": "model", "parts": parts}, **fields}


def answers(*ids: str, result: Any = "ok", **fields: Any) -> dict[str, Any]:
    parts = [
        {"functionResponse": {"id": i, "name": "search", "response": {"result": result}}}
        for i in ids
    ]
    return {"author": "agent", "content": {"role": "user", "parts": parts}, **fields}


async def add(client: httpx.AsyncClient, *events: dict[str, Any]) -> list[dict[str, Any]]:
    stored = []
    for event in events:
        response = await append(client, "s", event)
        assert response.status_code == 201, response.text
        stored.append(response.json())
    return stored


async def context(client: httpx.AsyncClient, query: str = "") -> dict[str, Any]:
    response = await client.get(f"{S}/context{query}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def texts(view: dict[str, Any]) -> list[str]:
    return [
        part.get("text") or next(iter(part))
        for e in view["events"]
        for part in e["content"]["parts"]
    ]


def seqs(view: dict[str, Any]) -> list[int]:
    return [event["seq"] for event in view["events"]]


async def test_without_a_budget_the_view_is_every_live_event_with_its_estimate(client):
    await create_session(client, sessionId="s")
    await add(client, said("hello"), said("hi there", "agent"), {"author": "agent"})
    response = await client.get(f"{S}/context")
    assert response.status_code == 200 and response.headers["etag"] == '"3"'
    view = response.json()
    # The state-only event has no text: it is shown (ADK filters it on its side), for 0 tokens.
    assert seqs(view) == [1, 2, 3]
    assert view["estimatedTokens"] == 2 + 2  # "hello" 5 bytes -> 2, "hi there" 8 -> 2
    assert view["truncatedBeforeSeq"] is None and view["overBudget"] is False


async def test_rewound_events_are_left_out_as_adk_leaves_them(client):
    await create_session(client, sessionId="s")
    await add(client, said("one", invocationId="i1"), said("two", invocationId="i2"))
    await add(client, said("three", invocationId="i3"))
    assert (await client.post(f"{S}:rewind", json={"beforeInvocationId": "i2"})).status_code == 201
    await add(client, said("four", invocationId="i4"))
    assert texts(await context(client)) == ["one", "four"]


async def test_the_budget_keeps_the_newest_events_that_fit(client):
    await create_session(client, sessionId="s")
    await add(client, *(said("x" * 40) for _ in range(10)))  # 10 tokens each
    view = await context(client, "?tokenBudget=35")
    assert seqs(view) == [8, 9, 10]
    assert view["estimatedTokens"] == 30 and view["truncatedBeforeSeq"] == 8
    assert not view["overBudget"]


async def test_the_cut_never_separates_parallel_calls_from_their_responses(client):
    await create_session(client, sessionId="s")
    await add(client, said("q" * 40), calls("a", "b"), answers("a"), answers("b"))
    await add(client, said("z" * 40, "agent"))
    # The calls (8 tokens), their answers (6 each) and the reply (10) are 30 tokens: a
    # budget of 29 would cut between them, so the cut moves on past the last answer.
    view = await context(client, "?tokenBudget=29")
    assert seqs(view) == [5] and view["estimatedTokens"] == 10
    view = await context(client, "?tokenBudget=30")
    assert seqs(view) == [2, 3, 4, 5] and view["estimatedTokens"] == 30


async def test_a_response_to_no_earlier_call_is_dropped(client):
    await create_session(client, sessionId="s")
    await add(client, said("hi"), answers("ghost"), said("bye", "agent"))
    mixed = answers("ghost")
    mixed["content"]["parts"].append({"text": "and text"})
    await add(client, mixed)
    view = await context(client)
    assert seqs(view) == [1, 3, 4]
    assert view["events"][-1]["content"]["parts"] == [{"text": "and text"}]


async def test_a_pair_over_the_budget_alone_is_shown_and_said_to_be(client):
    await create_session(client, sessionId="s")
    await add(client, said("hi"), calls("a"), answers("a", result="r" * 400))
    view = await context(client, "?tokenBudget=50")
    assert seqs(view) == [2, 3] and view["overBudget"] is True
    assert view["estimatedTokens"] > 50 and view["truncatedBeforeSeq"] == 2


async def test_an_answer_over_the_budget_brings_back_its_call_from_far_behind(client):
    """The newest event alone is over the budget and answers a call twenty events back, past
    what the view reads beyond the budget: the view reads back to the call."""
    await create_session(client, sessionId="s")
    await add(client, said("hi"), calls("far"), *(said(f"meanwhile {n}") for n in range(20)))
    await add(client, answers("far", result="r" * 400))
    view = await context(client, "?tokenBudget=50")
    assert seqs(view) == list(range(2, 24)) and view["overBudget"] is True
    assert view["truncatedBeforeSeq"] == 2


async def test_a_summary_replaces_its_range_at_its_end(client):
    await create_session(client, sessionId="s")
    first = await add(client, *(said(f"old {i}", timestamp=100.0 + i) for i in range(4)))
    await add(client, said("new", timestamp=110.0))
    response = await client.post(
        f"{S}:compact", json={"strategy": "summary", "summary": "They chatted.", "keepLast": 1}
    )
    assert response.status_code == 201, response.text
    event = response.json()
    assert event["seq"] == 6 and event["author"] == "user"
    assert event["actions"]["compaction"] == {
        "startTimestamp": 100.0,
        "endTimestamp": 103.0,
        "compactedContent": {"role": "model", "parts": [{"text": "They chatted."}]},
    }
    view = await context(client)
    assert texts(view) == ["They chatted.", "new"]
    summary = view["events"][0]
    assert summary["author"] == "model" and summary["timestamp"] == 103.0
    assert summary["seq"] == 6 and summary["id"] == event["id"]
    assert first[0]["seq"] == 1


async def test_a_new_summary_replaces_the_one_before(client):
    await create_session(client, sessionId="s")
    await add(client, *(said(f"m{i}", timestamp=100.0 + i) for i in range(3)))
    body = {"strategy": "summary", "summary": "first", "keepLast": 1}
    assert (await client.post(f"{S}:compact", json=body)).status_code == 201
    await add(client, said("m3", timestamp=103.0), said("m4", timestamp=104.0))
    body = {"strategy": "summary", "summary": "second", "keepLast": 1}
    event = (await client.post(f"{S}:compact", json=body)).json()
    assert event["actions"]["compaction"]["startTimestamp"] == 100.0
    assert texts(await context(client)) == ["second", "m4"]


async def test_truncate_leaves_a_note_of_what_it_left_out(client):
    await create_session(client, sessionId="s")
    await add(client, said("a"), said("b"), said("c"))
    body = {"strategy": "truncate", "keepLast": 1}
    assert (await client.post(f"{S}:compact", json=body)).status_code == 201
    assert texts(await context(client)) == ["[2 earlier events were truncated]", "c"]


async def test_compaction_keeps_a_call_whose_answer_it_keeps(client):
    await create_session(client, sessionId="s")
    await add(client, said("a"), calls("k"), said("thinking", "agent"), answers("k"))
    body = {"strategy": "summary", "summary": "S", "keepLast": 2}
    event = (await client.post(f"{S}:compact", json=body)).json()
    # keepLast 2 would cut between the call (seq 2) and its answer (seq 4).
    assert event["actions"]["compaction"]["endTimestamp"] == (await session_events(client))[0]
    assert seqs(await context(client)) == [5, 2, 3, 4]


async def session_events(client: httpx.AsyncClient) -> list[float]:
    return [event["timestamp"] for event in (await client.get(S)).json()["events"]]


async def test_observation_mask_hides_old_long_tool_outputs_in_the_view(client):
    await create_session(client, sessionId="s")
    await add(client, calls("a"), answers("a", result="x" * 50), calls("b"))
    await add(client, answers("b", result="y" * 5))
    await add(client, calls("c"), answers("c", result="z" * 50))
    body = {"strategy": "observationMask", "keepLast": 2, "toolOutputMaxChars": 20}
    response = await client.post(f"{S}:compact", json=body)
    assert response.status_code == 201, response.text
    event = response.json()
    assert event["customMetadata"] == {
        "sessionary": {"observationMask": {"throughSeq": 4, "toolOutputMaxChars": 20}}
    }
    assert "actions" not in event
    view = await context(client)
    outputs = [
        part["functionResponse"]["response"]
        for e in view["events"]
        for part in e["content"]["parts"]
        if "functionResponse" in part
    ]
    assert outputs == [
        {"result": "[63 characters of tool output masked by observationMask]"},
        {"result": "y" * 5},
        {"result": "z" * 50},
    ]
    # The stored events are untouched.
    stored = (await client.get(S)).json()["events"][1]
    assert stored["content"]["parts"][0]["functionResponse"]["response"] == {"result": "x" * 50}


async def test_a_call_compaction_covered_comes_back_before_its_surviving_response(client):
    await create_session(client, sessionId="s")
    await add(client, said("go", timestamp=100.0), calls("long", timestamp=101.0))
    body = {"strategy": "summary", "summary": "S", "keepLast": 0}
    assert (await client.post(f"{S}:compact", json=body)).status_code == 201
    await add(client, answers("long", timestamp=200.0))
    view = await context(client)
    assert texts(view) == ["S", "functionCall", "functionResponse"]
    assert seqs(view) == [3, 2, 4]


async def test_compact_refuses_unknown_or_misplaced_options(client):
    await create_session(client, sessionId="s")
    await add(client, said("a"), said("b"))
    for body in (
        {"strategy": "summary"},
        {"strategy": "truncate", "summary": "no"},
        {"strategy": "truncate", "toolOutputMaxChars": 5},
        {"strategy": "rewrite"},
        {"strategy": "truncate", "keep": 1},
        {"strategy": "truncate", "keepLast": -1},
    ):
        assert_problem(await client.post(f"{S}:compact", json=body), 422, "validation_error")
    body = {"strategy": "truncate", "keepLast": 2}
    problem = assert_problem(await client.post(f"{S}:compact", json=body), 422, "validation_error")
    assert "Nothing to compact" in problem["detail"]
    assert (await client.get(S)).json()["version"] == 2


async def test_compact_honours_if_match_and_a_closed_session(client):
    await create_session(client, sessionId="s")
    await add(client, said("a"), said("b"))
    body = {"strategy": "truncate", "keepLast": 1}
    stale = await client.post(f"{S}:compact", json=body, headers={"If-Match": '"1"'})
    assert_problem(stale, 412, "stale_session")
    ok = await client.post(f"{S}:compact", json=body, headers={"If-Match": '"2"'})
    assert ok.status_code == 201 and ok.headers["etag"] == '"3"'
    assert (await client.post(f"{S}:close", json={"outcome": "completed"})).status_code == 200
    assert_problem(await client.post(f"{S}:compact", json=body), 409, "session_closed")


async def test_context_of_an_unknown_session_or_a_bad_budget(client):
    assert_problem(await client.get(f"{S}/context"), 404, "session_not_found")
    await create_session(client, sessionId="s")
    for query in ("?tokenBudget=0", "?tokenBudget=x", "?budget=5"):
        assert_problem(await client.get(f"{S}/context{query}"), 422, "validation_error")


async def test_a_compaction_sent_by_a_client_is_validated_as_adks(client):
    await create_session(client, sessionId="s")
    bad = {"author": "user", "actions": {"compaction": {"startTimestamp": 1.0}}}
    assert_problem(await append(client, "s", bad), 422, "validation_error")
    snake = {
        "author": "user",
        "actions": {
            "compaction": {
                "start_timestamp": 1.0,
                "end_timestamp": 2.0,
                "compacted_content": {"role": "model", "parts": [{"text": "s"}]},
            }
        },
    }
    stored = (await append(client, "s", snake)).json()
    assert set(stored["actions"]["compaction"]) == {
        "startTimestamp",
        "endTimestamp",
        "compactedContent",
    }


async def test_events_stored_without_their_facts_are_read_whole(client, database_url):
    """Events stored before migration 0008 have no stored facts: the view reads them whole."""
    await create_session(client, sessionId="s")
    await add(client, said("q" * 40), calls("a"), answers("a"), said("z" * 40, "agent"))
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE events SET tokens = NULL, calls = NULL, responses = NULL "
            "WHERE session_id = 's' AND seq IN (2, 3)"
        )
    finally:
        await connection.close()
    # The call is 4 tokens, its answer 6, the reply 10: a budget of 19 would split the pair.
    view = await context(client, "?tokenBudget=19")
    assert seqs(view) == [4] and view["estimatedTokens"] == 10
    view = await context(client, "?tokenBudget=20")
    assert seqs(view) == [2, 3, 4] and view["estimatedTokens"] == 20
    assert view["events"][1]["content"]["parts"][0]["functionResponse"]["id"] == "a"


async def test_a_summary_larger_than_an_event_may_be_is_413_and_appends_nothing(client, settings):
    await create_session(client, sessionId="s")
    await add(client, said("a"), said("b"))
    body = {"strategy": "summary", "summary": "x" * settings.max_event_bytes, "keepLast": 1}
    assert_problem(await client.post(f"{S}:compact", json=body), 413, "payload_too_large")
    assert (await client.get(S)).json()["version"] == 2
