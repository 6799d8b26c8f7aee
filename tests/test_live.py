"""Live streams over real HTTP from real server processes: what a session stream sends, resume
without loss or repeat, delivery across processes, slow clients dropped, lifecycle streams."""

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.domain import SessionKey
from app.repositories import live as live_rows
from tests.fixtures import start_server, stop_server
from tests.helpers import APP, USER, session_url
from tests.sse import Frame, Reader

SESSIONS = f"/apps/{APP}/users/{USER}/sessions"


def said(text: str, **fields: Any) -> dict[str, Any]:
    return {"author": "user", "content": {"parts": [{"text": text}]}, **fields}


@asynccontextmanager
async def stream(
    base_url: str, path: str, *, params: dict[str, Any] | None = None, **headers: str
) -> AsyncIterator[Reader]:
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=30) as http,
        http.stream("GET", path, params=params, headers=headers) as response,
    ):
        yield Reader(response)


async def new_session(http: httpx.AsyncClient, session_id: str, **body: Any) -> dict[str, Any]:
    created = await http.post(SESSIONS, json={"sessionId": session_id, **body})
    assert created.status_code == 201, created.text
    return dict(created.json())


async def append_all(http: httpx.AsyncClient, session_id: str, count: int) -> None:
    for number in range(count):
        appended = await http.post(f"{session_url(session_id)}/events", json=said(f"m{number}"))
        assert appended.status_code == 201, appended.text


@pytest.fixture
async def http(live_server: str, app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the live server; `app` makes each test start from empty tables."""
    async with httpx.AsyncClient(base_url=live_server, timeout=30) as client:
        yield client


async def test_a_session_stream_replays_then_goes_live(live_server, http):
    await new_session(http, "s", events=[said("before")])
    path = f"{session_url('s')}/events:stream"
    async with stream(live_server, path, params={"afterSeq": 0}) as response:
        assert response.response.status_code == 200
        assert response.response.headers["content-type"].startswith("text/event-stream")
        replayed = await response.take(1)
        await append_all(http, "s", 3)
        live = await response.take(3)
    assert [(frame.event, frame.id) for frame in replayed + live] == [
        ("appended", 1),
        ("appended", 2),
        ("appended", 3),
        ("appended", 4),
    ]
    assert live[0].data["content"]["parts"][0]["text"] == "m0"
    assert live[0].data["seq"] == 2


async def test_without_a_position_it_starts_from_now(live_server, http):
    await new_session(http, "s", events=[said("old")])
    async with stream(live_server, f"{session_url('s')}/events:stream") as response:
        await asyncio.sleep(0.3)  # the stream is open before the append
        await append_all(http, "s", 1)
        (frame,) = await response.take(1)
    assert frame.id == 2


async def test_changes_other_than_appends_and_the_end_on_delete(live_server, http):
    await new_session(http, "s", events=[said("a", id="a"), said("b", id="b"), said("c")])
    async with stream(live_server, f"{session_url('s')}/events:stream") as response:
        await asyncio.sleep(0.3)
        url = session_url("s")
        rewritten = await http.patch(f"{url}/events/b", json={"content": {"parts": []}})
        assert rewritten.status_code == 200
        assert (await http.delete(f"{url}/events/a")).status_code == 200
        assert (await http.post(f"{url}:trim", json={"keepLast": 1})).status_code == 200
        assert (await http.delete(url)).status_code == 204
        received = await response.rest()  # until the stream ends
    assert [(frame.event, frame.id) for frame in received] == [
        ("updated", 4),
        ("removed", 5),
        ("trimmed", 6),
        ("deleted", None),
    ]
    assert received[0].data["event"]["content"] == {"parts": []}
    assert received[1].data == {"version": 5, "removedEventIds": ["a"]}
    assert received[2].data == {"version": 6, "removedEvents": 1, "keptEvents": 1}


async def test_an_erase_of_the_user_ends_the_stream_with_deleted(live_server, http):
    await new_session(http, "s", events=[said("a")])
    async with stream(live_server, f"{session_url('s')}/events:stream") as response:
        await asyncio.sleep(0.3)
        erased = await http.delete(f"/apps/{APP}/users/{USER}")
        assert erased.status_code == 200, erased.text
        received = await response.rest()  # until the stream ends
    assert [(frame.event, frame.id) for frame in received] == [("deleted", None)]


async def test_an_erase_of_the_app_ends_the_stream_with_deleted(live_server, http):
    await new_session(http, "s", events=[said("a")])
    async with stream(live_server, f"{session_url('s')}/events:stream") as response:
        await asyncio.sleep(0.3)
        erased = await http.delete(f"/apps/{APP}")
        assert erased.status_code == 200, erased.text
        received = await response.rest()  # until the stream ends
    assert [(frame.event, frame.id) for frame in received] == [("deleted", None)]


async def test_an_erase_ends_the_users_stream_and_tells_the_apps(live_server, http):
    await new_session(http, "s")
    async with (
        stream(live_server, f"{SESSIONS}:stream") as mine,
        stream(live_server, f"/apps/{APP}/users/bob/sessions:stream") as bobs,
        stream(live_server, f"/apps/{APP}/sessions:stream") as every,
    ):
        await asyncio.sleep(0.3)
        erased = await http.delete(f"/apps/{APP}/users/{USER}")
        assert erased.status_code == 200, erased.text
        received = await mine.rest()  # until the stream ends
        told = await every.take(2)
        await new_session(http, "later")  # the user afresh: the app's stream goes on
        assert (await http.post(f"/apps/{APP}/users/bob/sessions", json={})).status_code == 201
        (bobs_frame,) = await bobs.take(1)  # bob's stream never heard of it
        (afterwards,) = await every.take(1)
    assert [(frame.event, frame.data) for frame in received] == [
        ("deleted", {"userId": USER, "sessionId": "s", "version": 0}),
        ("erased", {"userId": USER}),
    ]
    assert sorted(frame.event for frame in told) == ["deleted", "erased"]
    assert bobs_frame.event == "created" and bobs_frame.data["userId"] == "bob"
    assert (afterwards.event, afterwards.data["sessionId"]) == ("created", "later")


async def test_an_erase_of_the_app_ends_its_streams(live_server, http):
    async with (
        stream(live_server, f"{SESSIONS}:stream") as mine,
        stream(live_server, f"/apps/{APP}/sessions:stream") as every,
    ):
        await asyncio.sleep(0.3)
        erased = await http.delete(f"/apps/{APP}")
        assert erased.status_code == 200, erased.text
        assert [(frame.event, frame.data) for frame in await mine.rest()] == [
            ("erased", {"userId": None})
        ]
        assert [(frame.event, frame.data) for frame in await every.rest()] == [
            ("erased", {"userId": None})
        ]


async def test_artifacts_saved_and_deleted_are_told_without_a_position(live_server, http):
    await new_session(http, "s")
    artifacts = f"{session_url('s')}/artifacts"
    async with stream(live_server, f"{session_url('s')}/events:stream") as response:
        await asyncio.sleep(0.3)
        assert (await http.post(f"{artifacts}/a.txt", content=b"1")).status_code == 201
        assert (await http.post(f"{artifacts}/user:b", content=b"2")).status_code == 201
        await append_all(http, "s", 1)
        assert (await http.delete(f"{artifacts}/a.txt")).status_code == 204
        received = await response.take(4)
    assert [(frame.event, frame.id, frame.data.get("name")) for frame in received] == [
        ("artifact", None, "a.txt"),
        ("artifact", None, "user:b"),
        ("appended", 1, None),
        ("artifact", None, "a.txt"),
    ]
    assert received[0].data == {"name": "a.txt", "version": 0}
    assert received[3].data == {"name": "a.txt", "deleted": True}


async def test_a_resume_after_other_writes_says_resync(live_server, http):
    await new_session(http, "s", events=[said("a", id="a"), said("b")])
    assert (await http.delete(f"{session_url('s')}/events/a")).status_code == 200
    path = f"{session_url('s')}/events:stream"
    async with stream(live_server, path, **{"Last-Event-ID": "1"}) as response:
        received = await response.take(2)
    assert [(frame.event, frame.id) for frame in received] == [("appended", 2), ("resync", 3)]


async def test_a_closed_session_streams_its_close_and_ends(live_server, http):
    await new_session(http, "s", events=[said("a")])
    path = f"{session_url('s')}/events:stream"
    async with stream(live_server, path, params={"afterSeq": 0}) as response:
        await response.take(1)
        closed = await http.post(f"{session_url('s')}:close", json={"outcome": "completed"})
        assert closed.status_code == 200
        rest = await response.rest()
    assert [(frame.event, frame.id, frame.data) for frame in rest] == [
        ("closed", 2, {"version": 2, "outcome": "completed"})
    ]
    async with stream(live_server, path, params={"afterSeq": 0}) as response:
        again = await response.rest()
    assert [frame.event for frame in again] == ["appended", "closed"]


async def test_a_parent_stream_announces_its_children(live_server, http):
    await new_session(http, "p")
    async with stream(live_server, f"{session_url('p')}/events:stream") as response:
        await asyncio.sleep(0.3)
        child = await http.post(f"{session_url('p')}/children", json={"sessionId": "c"})
        assert child.status_code == 201
        closed = await http.post(f"{session_url('c')}:close", json={"outcome": "failed"})
        assert closed.status_code == 200
        announced = await response.take(2)
    told = [(frame.event, frame.data["sessionId"], frame.data["change"]) for frame in announced]
    assert told == [("child", "c", "created"), ("child", "c", "closed")]
    assert announced[1].data["outcome"] == "failed"


async def test_user_and_app_streams_follow_the_sessions(live_server, http):
    user_path = f"{SESSIONS}:stream"
    async with (
        stream(live_server, user_path) as mine,
        stream(live_server, f"/apps/{APP}/sessions:stream") as every,
    ):
        await asyncio.sleep(0.3)
        await new_session(http, "s")
        await append_all(http, "s", 1)
        await http.post(f"{session_url('s')}:close", json={"outcome": "completed"})
        await http.delete(session_url("s"))
        other = await http.post(f"/apps/{APP}/users/bob/sessions", json={"sessionId": "b"})
        assert other.status_code == 201
        seen = await mine.take(4)
        seen_by_app = await every.take(5)
    assert [(frame.event, frame.data["sessionId"], frame.data["version"]) for frame in seen] == [
        ("created", "s", 0),
        ("updated", "s", 1),
        ("closed", "s", 2),
        ("deleted", "s", 2),
    ]
    assert seen[0].data["kind"] == "root" and seen[2].data["outcome"] == "completed"
    assert [(frame.data["userId"], frame.event) for frame in seen_by_app][-1] == ("bob", "created")


async def test_bad_requests_are_refused_before_streaming(live_server, http):
    path = f"{session_url('absent')}/events:stream"
    assert (await http.get(path)).status_code == 404
    await new_session(http, "s")
    bad = await http.get(f"{session_url('s')}/events:stream", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(drops=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=4))
async def test_resuming_after_dropped_connections_loses_and_repeats_nothing(
    live_server, http, drops
):
    """Appends run all along; the client drops its connection after a random number of
    frames, again and again, and resumes after the last id it saw, as EventSource does."""
    session_id = f"r{abs(hash(tuple(drops)))}-{len(drops)}"
    await new_session(http, session_id)
    total = 40
    writer = asyncio.create_task(append_all(http, session_id, total))
    path = f"{session_url(session_id)}/events:stream"
    received: list[Frame] = []
    last: int | None = 0
    for drop_after in [*drops, total]:
        headers = {"Last-Event-ID": str(last)}
        async with stream(live_server, path, **headers) as response:
            received += await response.take(min(drop_after, total - len(received)))
        last = received[-1].id if received else 0
        if len(received) == total:
            break
    await writer
    assert [frame.id for frame in received] == list(range(1, total + 1))
    assert [frame.data["content"]["parts"][0]["text"] for frame in received] == [
        f"m{number}" for number in range(total)
    ]


@pytest.fixture
def two_servers(database_url: str, app: Any) -> Iterator[tuple[str, str]]:
    """Two separate server processes on one database: two replicas, as far as streams go."""
    env = {"SESSIONARY_STREAM_BUFFER": "8", "SESSIONARY_MAX_STREAMS": "3"}
    first, first_url = start_server(database_url, env=env)
    try:
        second, second_url = start_server(database_url, env=env)
        try:
            yield first_url, second_url
        finally:
            stop_server(second)
    finally:
        stop_server(first)


async def test_a_stream_on_one_server_sees_appends_made_through_another(two_servers):
    reader, writer = two_servers
    async with httpx.AsyncClient(base_url=writer, timeout=30) as http:
        await new_session(http, "x")
        async with stream(reader, f"{session_url('x')}/events:stream") as response:
            await asyncio.sleep(0.3)
            await append_all(http, "x", 5)
            received = await response.take(5)
    assert [frame.id for frame in received] == [1, 2, 3, 4, 5]


async def metrics_when(base_url: str, line: str) -> str:
    """The server's metrics once they show `line` (within 10 s)."""
    async with httpx.AsyncClient(base_url=base_url) as http:
        for _ in range(100):
            metrics = (await http.get("/metrics")).text
            if line in metrics.splitlines():
                break
            await asyncio.sleep(0.1)
    return metrics


def stalled_stream(base_url: str, path: str) -> socket.socket:
    """A client that asks for a stream and never reads a byte of it."""
    where = urlsplit(base_url)
    client = socket.create_connection((where.hostname, where.port))
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: {where.hostname}\r\n\r\n".encode())
    return client


async def test_a_stalled_client_is_dropped_while_a_fast_one_keeps_up(two_servers):
    reader, writer = two_servers
    path = f"{session_url('big')}/events:stream"
    count, text = 60, "x" * 100_000  # ~6 MB in all: more than any socket buffer holds
    async with httpx.AsyncClient(base_url=writer, timeout=30) as http:
        await new_session(http, "big")
        stalled = stalled_stream(reader, path)
        try:
            async with stream(reader, path) as fast:
                await asyncio.sleep(0.3)
                reading = asyncio.create_task(fast.take(count))  # keeps up all along
                for number in range(count):
                    event = said(f"{number} {text}")
                    assert (await http.post(f"{session_url('big')}/events", json=event)).is_success
                received = await reading
            assert [frame.id for frame in received] == list(range(1, count + 1))
            # The server gave up on the stalled client (its connection closes once what the
            # kernel holds for it is read), and holds nothing more for it.
            metrics = await metrics_when(reader, "sessionary_streams_open 1.0")  # the fast one
            assert "sessionary_streams_dropped_total 1.0" in metrics
        finally:
            stalled.close()


async def test_open_streams_are_bounded_per_worker(two_servers):
    reader, writer = two_servers
    async with httpx.AsyncClient(base_url=writer, timeout=30) as http:
        await new_session(http, "s")
    path = f"{session_url('s')}/events:stream"
    async with stream(reader, path), stream(reader, path), stream(reader, path):
        async with httpx.AsyncClient(base_url=reader) as http:
            refused = await http.get(path)
    assert refused.status_code == 503
    assert refused.json()["code"] == "too_many_streams"
    assert refused.headers["retry-after"]


async def test_an_append_nobody_announced_reaches_streams_at_the_next_heartbeat(
    database_url: str, app: Any
):
    """A worker that committed an append and died before telling the others: the streams
    read it anyway, after a heartbeat's quiet."""
    from app.config import Settings
    from app.db import Connector
    from app.domain import Append, SessionKey
    from app.repositories import events as event_rows
    from app.rules.events import prepare

    process, base_url = start_server(database_url, env={"SESSIONARY_STREAM_HEARTBEAT": "0.5"})
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            await new_session(http, "quiet")
        async with stream(base_url, f"{session_url('quiet')}/events:stream") as response:
            await asyncio.sleep(0.3)
            settings = Settings(database_url=database_url)
            event = prepare(said("unannounced"), settings.event_limits)
            connection = await Connector.of(database_url).connect()
            try:
                key = SessionKey(APP, USER, "quiet")
                stored = await event_rows.append(
                    connection, Append(key, [event], None), 1 << 20, "english", announced=False
                )
            finally:
                await connection.close()
            assert stored == 0
            (frame,) = await asyncio.wait_for(response.take(1), 5)
        assert (frame.event, frame.id) == ("appended", 1)
    finally:
        stop_server(process)


@pytest.mark.parametrize("events", [0, 2])
async def test_a_reset_between_a_streams_start_and_its_feeds_is_never_skipped(
    app, client, monkeypatch, events
):
    """The interleaving forced: the stream reads the session's version, then a reset commits,
    then the session's feed (new, for this stream) reads its own starting version, and so
    takes the reset as seen. The stream must still say so, before the next append."""
    await client.post(SESSIONS, json={"sessionId": "s", "events": [said("x")] * events})
    key = SessionKey(APP, USER, "s")
    broker = app.state.services.live
    read = live_rows.events_between
    reset: list[int] = []

    async def then_reset(*args: Any) -> Any:
        found = await read(*args)
        if not reset:  # the stream's own read of where the session is
            reset.append((await client.post(f"{session_url('s')}:reset")).status_code)
        return found

    monkeypatch.setattr(live_rows, "events_between", then_reset)
    subscription = await broker.session_stream(key, None)
    try:
        await asyncio.wait_for(broker.feeds[key].ready.wait(), 5)
        monkeypatch.setattr(live_rows, "events_between", read)
        assert reset == [200] and broker.feeds[key].position == events + 1
        first = asyncio.ensure_future(anext(subscription.frames))
        await asyncio.wait({first}, timeout=2)  # the stream's replay, before the append
        appended = await client.post(f"{session_url('s')}/events", json=said("after"))
        assert appended.status_code == 201, appended.text
        frames = [(await asyncio.wait_for(first, 5)).decode()]
        while "event: appended" not in frames[-1]:
            frames.append((await asyncio.wait_for(anext(subscription.frames), 5)).decode())
    finally:
        await subscription.close()
    assert [text.split("\n")[:2] for text in frames] == [
        [f"id: {events + 1}", "event: resync"],
        [f"id: {events + 2}", "event: appended"],
    ]


async def test_a_reset_committed_before_the_streams_replay_is_told_before_the_append(app, client):
    """The stream's replay reads the table after a reset and the append that followed it
    (a slow start, as on a cluster): the `resync` comes at the reset's version, before the
    append, not after it."""
    await client.post(SESSIONS, json={"sessionId": "s", "events": [said("x")] * 2})
    broker = app.state.services.live
    subscription = await broker.session_stream(SessionKey(APP, USER, "s"), None)
    try:
        assert (await client.post(f"{session_url('s')}:reset")).status_code == 200
        appended = await client.post(f"{session_url('s')}/events", json=said("after"))
        assert appended.status_code == 201, appended.text
        frames = [(await asyncio.wait_for(anext(subscription.frames), 5)).decode()]
        while "event: appended" not in frames[-1]:
            frames.append((await asyncio.wait_for(anext(subscription.frames), 5)).decode())
    finally:
        await subscription.close()
    assert [text.split("\n")[:2] for text in frames] == [
        ["id: 3", "event: resync"],
        ["id: 4", "event: appended"],
    ]


async def test_a_reset_whose_notice_is_lost_is_never_gone_past(app, client, monkeypatch):
    """A feed that hears nothing reads the newest events itself (a worker may have died
    between a commit and its notice): a reset and an append committed unheard are not an
    append alone, but a `resync` at the reset's version, then the append."""
    await client.post(SESSIONS, json={"sessionId": "s", "events": [said("x")]})
    key = SessionKey(APP, USER, "s")
    broker = app.state.services.live
    monkeypatch.setattr(broker.settings, "stream_heartbeat", 0.3)
    subscription = await broker.session_stream(key, None)
    try:
        await asyncio.wait_for(broker.feeds[key].ready.wait(), 5)
        monkeypatch.setattr(broker.feeds[key], "notice", lambda change: None)  # lost
        first = asyncio.ensure_future(anext(subscription.frames))
        await asyncio.wait({first}, timeout=0.2)  # the stream's replay done: it is live
        assert (await client.post(f"{session_url('s')}:reset")).status_code == 200
        appended = await client.post(f"{session_url('s')}/events", json=said("after"))
        assert appended.status_code == 201, appended.text
        frames = [(await asyncio.wait_for(first, 5)).decode()]
        deadline = asyncio.get_running_loop().time() + 3  # ten heartbeats' quiet reads
        while "event: appended" not in frames[-1]:
            left = deadline - asyncio.get_running_loop().time()
            frames.append((await asyncio.wait_for(anext(subscription.frames), left)).decode())
    finally:
        await subscription.close()
    assert [text.split("\n")[:2] for text in frames if not text.startswith(":")] == [
        ["id: 2", "event: resync"],
        ["id: 3", "event: appended"],
    ]


# Each operation: its request (method, path after the session's, body), and its frame.
OPERATIONS = {
    "reset": (("POST", ":reset", None), "reset"),
    "trim": (("POST", ":trim", {"keepLast": 1}), "trimmed"),
    "remove": (("DELETE", "/events/a", None), "removed"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
async def test_a_stream_is_told_of_every_reset_trim_and_removal_before_the_next_append(
    live_server, http, operation
):
    """Many times over, across the server's two workers: a stream open before a reset (a
    trim, a removal) hears of it, as its own frame or a `resync`, before the append after."""
    (method, suffix, body), told = OPERATIONS[operation]
    for attempt in range(25):
        session_id = f"{operation}-{attempt}"
        await new_session(http, session_id, events=[said("a", id="a"), said("b", id="b")])
        url = session_url(session_id)
        async with stream(live_server, f"{url}/events:stream") as response:
            changed = await http.request(method, url + suffix, json=body)
            assert changed.status_code in (200, 204), changed.text
            appended = await http.post(f"{url}/events", json=said("after"))
            assert appended.status_code == 201, appended.text
            frames: list[Frame] = []
            while not frames or frames[-1].event != "appended":
                frames += await asyncio.wait_for(response.take(1), 10)
        seen = [(frame.event, frame.id) for frame in frames]
        assert seen in ([(told, 3), ("appended", 4)], [("resync", 3), ("appended", 4)]), attempt
