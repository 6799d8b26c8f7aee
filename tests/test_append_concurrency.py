"""The append transaction under real concurrency: many requests, many connections at once."""

import asyncio

import pytest

from app.domain import SessionKey
from app.errors import StaleSession
from app.schemas import EventIn
from app.services.events import Appended
from tests.helpers import APP, SESSIONS, USER, append, create_session, delta_event, session_url

WRITERS, EVENTS_EACH = 12, 10


async def test_concurrent_appends_get_gap_free_seqs_and_keep_every_state_key(client):
    await create_session(client, sessionId="s1")

    async def writer(w: int) -> list[int]:
        seqs = []
        for n in range(EVENTS_EACH):
            response = await append(client, "s1", delta_event({f"writer{w}": n}, id=f"w{w}-{n}"))
            assert response.status_code == 201, response.text
            seqs.append(response.json()["seq"])
        return seqs

    acknowledged = await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    total = WRITERS * EVENTS_EACH
    assert sorted(seq for seqs in acknowledged for seq in seqs) == list(range(1, total + 1))
    assert all(seqs == sorted(seqs) for seqs in acknowledged)  # each writer's order kept
    session = (await client.get(session_url("s1"))).json()
    assert [e["seq"] for e in session["events"]] == list(range(1, total + 1))
    assert session["version"] == total
    assert session["state"] == {f"writer{w}": EVENTS_EACH - 1 for w in range(WRITERS)}


async def test_concurrent_app_and_user_deltas_on_different_keys_all_survive(client):
    names = [f"s{n}" for n in range(16)]
    for name in names:
        await create_session(client, sessionId=name)
    await asyncio.gather(
        *(
            append(client, name, delta_event({f"app:{name}": 1, f"user:{name}": 2}))
            for name in names
        )
    )
    app_state = (await client.get(f"/apps/{APP}/state")).json()["state"]
    user_state = (await client.get(f"/apps/{APP}/users/{USER}/state")).json()["state"]
    assert app_state == {name: 1 for name in names}
    assert user_state == {name: 2 for name in names}


async def test_concurrent_creates_of_one_id_make_exactly_one_session(client):
    responses = await asyncio.gather(
        *(client.post(SESSIONS, json={"sessionId": "same", "state": {"n": n}}) for n in range(10))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [201] + [409] * 9


async def test_a_delete_racing_appends_leaves_none_of_its_events_behind(app, client):
    """The log has no foreign key to its session: the delete removes the events itself,
    including those appended while it waited for the session's lock."""
    for _ in range(5):
        await create_session(client, sessionId="doomed")
        *appended, deleted = await asyncio.gather(
            *(append(client, "doomed", delta_event({"n": n})) for n in range(16)),
            client.delete(session_url("doomed")),
        )
        assert deleted.status_code == 204, deleted.text
        assert {response.status_code for response in appended} <= {201, 404}
        async with app.state.pool.connection() as connection:
            left = await connection.fetchval(
                "SELECT count(*) FROM events WHERE app_name = $1 AND user_id = $2 "
                "AND session_id = 'doomed'",
                APP,
                USER,
            )
        assert left == 0


async def test_if_match_race_has_exactly_one_winner_per_version(client):
    await create_session(client, sessionId="s1")
    for version in range(3):
        responses = await asyncio.gather(
            *(
                append(
                    client, "s1", delta_event({"winner": n}), headers={"If-Match": f'"{version}"'}
                )
                for n in range(8)
            )
        )
        codes = sorted(r.status_code for r in responses)
        assert codes == [201] + [412] * 7
    session = (await client.get(session_url("s1"))).json()
    assert session["version"] == 3 and len(session["events"]) == 3


async def test_concurrent_retries_of_one_event_store_it_once(client):
    await create_session(client, sessionId="s1")
    event = delta_event({"n": 1}, id="retried")
    responses = await asyncio.gather(*(append(client, "s1", event) for _ in range(10)))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    assert len({r.json()["seq"] for r in responses}) == 1
    assert (await client.get(session_url("s1"))).json()["version"] == 1


async def test_service_appends_on_separate_connections_serialise_in_postgres(app, client):
    """Below HTTP: each append owns a database session, as separate API workers would."""
    await create_session(client, sessionId="s1")
    key = SessionKey(APP, USER, "s1")

    service = app.state.services.events

    async def append_once(n: int) -> int:
        stored, appended = await service.append(
            key, EventIn(author=f"w{n}"), None, app_state_writable=True
        )
        assert appended is Appended.CREATED
        seq: int = stored["seq"]
        return seq

    seqs = await asyncio.gather(*(append_once(n) for n in range(20)))
    assert sorted(seqs) == list(range(1, 21))

    with pytest.raises(StaleSession) as refused:
        await service.append(key, EventIn(author="x"), 3, app_state_writable=True)
    assert refused.value.extra == {"currentVersion": 20}
