"""Token usage: a session's sums of its events' `usageMetadata`, kept through every write of
events, and an app's by user and time."""

from typing import Any

import httpx

from tests.helpers import APP, append, assert_problem, create_session, session_url


def reply(prompt: int, candidates: int, at: float, **fields: Any) -> dict[str, Any]:
    return {
        "author": "agent",
        "timestamp": at,
        "content": {"role": "model", "parts": [{"text": "ok"}]},
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates,
        },
        **fields,
    }


def counts(prompt: int, candidates: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates,
    }


async def usage_of(client: httpx.AsyncClient, session_id: str, user: str = "alice") -> Any:
    return (await client.get(session_url(session_id, user=user))).json()["usage"]


async def test_a_session_sums_its_events_usage_through_every_write(client):
    created = await create_session(client, sessionId="s")
    assert created["usage"] == counts(0, 0)
    for event in (reply(100, 20, 1.0, id="a"), reply(150, 30, 2.0, id="b"), {"author": "user"}):
        assert (await append(client, "s", event)).status_code == 201
    odd = reply(5, 5, 3.0)
    odd["usageMetadata"] = {
        "promptTokenCount": "many",
        "candidatesTokenCount": -1,  # not a count: not counted
        "totalTokenCount": 2.5,
    }
    assert (await append(client, "s", odd)).status_code == 201
    assert await usage_of(client, "s") == counts(250, 50)
    listed = (await client.get("/apps/agent-app/users/alice/sessions")).json()["sessions"]
    assert listed[0]["usage"] == counts(250, 50)
    fork = (await client.post(f"{session_url('s')}:fork", json={"atSeq": 1})).json()
    assert fork["usage"] == counts(100, 20)
    assert (await client.delete(f"{session_url('s')}/events/a")).status_code == 200
    assert await usage_of(client, "s") == counts(150, 30)
    trimmed = await client.post(f"{session_url('s')}:trim", json={"keepLast": 1})
    assert trimmed.status_code == 200
    assert await usage_of(client, "s") == counts(0, 0)


async def test_token_counts_past_2_31_count_up_to_what_a_bigint_holds(client):
    big, most = 2**31 + 7, 2**63 - 1

    def used(prompt: float, candidates: float, total: float) -> dict[str, Any]:
        return {
            "author": "agent",
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": candidates,
                "totalTokenCount": total,
            },
        }

    await create_session(client, sessionId="s")
    assert (await append(client, "s", used(big, big, 2 * big))).status_code == 201
    assert await usage_of(client, "s") == counts(big, big)
    assert (await append(client, "s", used(most - big, 0, most - 2 * big))).status_code == 201
    assert await usage_of(client, "s") == {**counts(most, big), "totalTokenCount": most}
    # A sum a bigint cannot hold, or a count past it, is refused, and nothing is written.
    for refused in (used(1, 0, 1), used(0, 1e19, 1e19)):
        assert_problem(await append(client, "s", refused), 422, "validation_error")
    read = (await client.get(session_url("s"))).json()
    assert (read["version"], read["usage"]["promptTokenCount"]) == (2, most)
    # Between sessions an app's usage may pass what a bigint holds: it reads as the most.
    await create_session(client, sessionId="t")
    assert (await append(client, "t", used(big, 0, big))).status_code == 201
    assert (await client.get(f"/apps/{APP}/usage")).json()["total"] == {
        "events": 3,
        "promptTokenCount": most,
        "candidatesTokenCount": big,
        "totalTokenCount": most,
    }


async def test_an_apps_usage_by_user_and_time(client):
    await create_session(client, sessionId="s")
    await create_session(client, user="bob", sessionId="s")
    for event in (reply(10, 1, 100.0), reply(20, 2, 200.0)):
        assert (await append(client, "s", event)).status_code == 201
    assert (await append(client, "s", reply(40, 4, 150.0), user="bob")).status_code == 201
    response = await client.get(f"/apps/{APP}/usage")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "users": [
            {"userId": "alice", "events": 2, **counts(30, 3)},
            {"userId": "bob", "events": 1, **counts(40, 4)},
        ],
        "total": {"events": 3, **counts(70, 7)},
    }
    ranged = await client.get(
        f"/apps/{APP}/usage", params={"afterTimestamp": 150, "beforeTimestamp": 200}
    )
    assert ranged.json()["users"] == [{"userId": "bob", "events": 1, **counts(40, 4)}]
    alice = (await client.get(f"/apps/{APP}/usage", params={"userId": "alice"})).json()
    assert alice["total"] == {"events": 2, **counts(30, 3)}
    empty = (await client.get("/apps/nobody/usage")).json()
    assert empty == {"users": [], "total": {"events": 0, **counts(0, 0)}}
    for params in ({"afterTimestamp": "x"}, {"userId": ""}, {"since": 1}):
        assert_problem(
            await client.get(f"/apps/{APP}/usage", params=params), 422, "validation_error"
        )
