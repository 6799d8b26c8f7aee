"""Group commit: appends that wait for a lane share one statement, and each is still written
whole or refused alone. (One server's machinery: on Citus appends run alone, test_citus.py.)"""

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from app.config import Settings
from app.domain import Append, SessionKey
from app.errors import StateTooLarge
from app.observability import APPENDS_GROUPED
from app.repositories import events as event_rows
from app.rules.events import prepare
from app.services.group_commit import GroupCommit
from tests.helpers import APP, USER, append, create_session, delta_event, session_url


@pytest.fixture
def request_to(settings: Settings) -> Callable[..., Append]:
    """An append of one event to a session of the tests' user."""

    def make(session_id: str, expected_version: int | None = None, **event: Any) -> Append:
        document = {"author": "agent", "invocationId": "inv-1", **event}
        return Append(
            SessionKey(APP, USER, session_id),
            [prepare(document, settings.event_limits)],
            expected_version,
        )

    return make


def grouped() -> float:
    return APPENDS_GROUPED._value.get()  # type: ignore[attr-defined]


async def test_appends_that_wait_for_a_lane_go_together_in_one_statement(app, client, request_to):
    names = [f"s{n}" for n in range(9)]
    for name in names:
        await create_session(client, sessionId=name, state={"kept": name})
    group_commit = GroupCommit(app.state.pool, app.state.settings, lanes=1)
    before = grouped()

    # The first takes the one lane; the eight others wait for it, then go as one group.
    base_seqs = await asyncio.gather(
        *(
            group_commit.append(request_to(name, actions={"stateDelta": {"turn": name}}))
            for name in names
        )
    )

    assert base_seqs == [0] * 9
    assert grouped() - before == 8
    for name in names:
        session = (await client.get(session_url(name))).json()
        assert session["version"] == 1
        assert [event["seq"] for event in session["events"]] == [1]
        assert session["state"] == {"kept": name, "turn": name}


async def test_one_append_per_session_in_a_group_and_shared_state_alone(app, client, request_to):
    for name in ("a", "b"):
        await create_session(client, sessionId=name)
    group_commit = GroupCommit(app.state.pool, app.state.settings, lanes=1)
    before = grouped()

    base_seqs = await asyncio.gather(
        group_commit.append(request_to("a")),  # takes the lane
        group_commit.append(request_to("a")),
        group_commit.append(request_to("b")),
        group_commit.append(request_to("a")),  # a's second: the next group
        group_commit.append(request_to("b", actions={"stateDelta": {"user:seen": True}})),
    )

    assert sorted(base_seqs[:2] + base_seqs[3:4]) == [0, 1, 2]
    assert sorted([base_seqs[2], base_seqs[4]]) == [0, 1]
    # (a, b) together; then a's third, then the user-state append, each alone
    assert grouped() - before == 2
    user_state = (await client.get(f"/apps/{APP}/users/{USER}/state")).json()["state"]
    assert user_state == {"seen": True}


async def test_a_refused_append_leaves_the_rest_of_its_group_written(app, client, request_to):
    for name in ("ok1", "ok2", "stale", "closed", "dup", "huge"):
        await create_session(client, sessionId=name)
    assert (await append(client, "dup", delta_event({}, id="taken"))).status_code == 201
    closed = await client.post(f"{session_url('closed')}:close", json={"outcome": "completed"})
    assert closed.status_code == 200, closed.text
    limited = app.state.settings.model_copy(update={"max_state_bytes": 1000})
    group_commit = GroupCommit(app.state.pool, limited, lanes=1)
    too_big = "x" * 1000

    answers = await asyncio.gather(
        group_commit.append(request_to("ok1")),  # takes the lane
        group_commit.append(request_to("ok2")),
        group_commit.append(request_to("stale", expected_version=5)),
        group_commit.append(request_to("closed")),
        group_commit.append(request_to("absent")),
        group_commit.append(request_to("dup", id="taken")),
        group_commit.append(request_to("huge", actions={"stateDelta": {"big": too_big}})),
        return_exceptions=True,
    )

    assert answers[:5] == [0, 0, None, None, None]
    assert isinstance(answers[5], event_rows.DuplicateEventId)
    assert isinstance(answers[6], StateTooLarge)
    versions = {
        name: (await client.get(session_url(name))).json()["version"]
        for name in ("ok1", "ok2", "stale", "dup", "huge")
    }
    assert versions == {"ok1": 1, "ok2": 1, "stale": 0, "dup": 1, "huge": 0}


async def test_a_session_another_transaction_holds_is_left_out_not_waited_for(
    app, client, request_to
):
    for name in ("free", "held"):
        await create_session(client, sessionId=name)
    settings = app.state.settings
    async with app.state.pool.transaction() as holder:
        await holder.execute("SELECT FROM sessions WHERE id = 'held' FOR UPDATE")
        async with app.state.pool.connection() as connection:
            decided = await asyncio.wait_for(
                event_rows.append_group(
                    connection,
                    [request_to("free"), request_to("held")],
                    settings.max_state_bytes,
                    settings.search_config,
                ),
                timeout=5,
            )
    assert decided == {0: 0}  # "held" skipped, nothing of it written
    for name, version in (("free", 1), ("held", 0)):
        assert (await client.get(session_url(name))).json()["version"] == version


async def test_groups_over_the_same_sessions_from_many_connections_lose_nothing(
    app, client, request_to
):
    names = [f"s{n}" for n in range(12)]
    for name in names:
        await create_session(client, sessionId=name)
    settings = app.state.settings

    async def writer(order: list[str]) -> Counter[str]:
        written: Counter[str] = Counter()
        async with app.state.pool.connection() as connection:
            for _ in range(40):
                decided = await event_rows.append_group(
                    connection,
                    [request_to(name) for name in order],
                    settings.max_state_bytes,
                    settings.search_config,
                )
                assert None not in decided.values()
                written.update(order[number] for number in decided)
        return written

    try:
        counts = await asyncio.gather(
            writer(names), writer(names[::-1]), writer(names[3:] + names[:3])
        )
    except asyncpg.DeadlockDetectedError:
        pytest.fail("two groups deadlocked")
    written = sum(counts, Counter())
    assert written  # each skips only what another holds at that moment
    for name in names:
        session = (await client.get(session_url(name))).json()
        assert [event["seq"] for event in session["events"]] == list(range(1, written[name] + 1))


async def test_the_service_groups_concurrent_appends_over_http(client):
    names = [f"s{n}" for n in range(24)]
    for name in names:
        await create_session(client, sessionId=name)
    before = grouped()

    async def writer(name: str) -> list[int]:
        seqs = []
        for turn in range(5):
            response = await append(client, name, delta_event({"turn": turn}))
            assert response.status_code == 201, response.text
            seqs.append(response.json()["seq"])
        return seqs

    assert await asyncio.gather(*(writer(name) for name in names)) == [[1, 2, 3, 4, 5]] * 24
    assert grouped() > before  # 24 writers, 2 lanes: most appends waited and went in groups
    for name in names:
        assert (await client.get(session_url(name))).json()["state"] == {"turn": 4}
