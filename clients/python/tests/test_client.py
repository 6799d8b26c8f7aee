"""The sync and async clients on a live server: every endpoint, typed errors, paging, retries."""

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest
from sessionary_client import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncSessionaryClient,
    EventConflictError,
    InvalidRequestError,
    NotFoundError,
    ServiceUnavailableError,
    SessionAlreadyExistsError,
    SessionaryClient,
    SessionaryError,
    SessionClosedError,
    SessionNotFoundError,
    StaleSessionError,
    StreamEvent,
    ToolCallsPendingError,
    ToolPairViolationError,
)
from sessionary_client.errors import error_for

USER = "ada"


def event(event_id: str, timestamp: float, **delta: object) -> dict[str, object]:
    return {
        "id": event_id,
        "author": "agent",
        "invocationId": "inv-1",
        "timestamp": timestamp,
        "actions": {"stateDelta": delta},
    }


def test_sync_client_covers_every_endpoint(sync_client: SessionaryClient, app_name: str) -> None:
    created = sync_client.create_session(
        app_name,
        USER,
        session_id="s1",
        state={"k": 1, "app:a": 2, "user:u": 3, "temp:t": 4},
        events=[{"author": "user", "timestamp": 1.0}],
    )
    assert created["state"] == {"k": 1, "app:a": 2, "user:u": 3}
    assert created["version"] == 1 and created["events"][0]["id"]

    stored = sync_client.append_event(app_name, USER, "s1", event("e2", 2.0, k=5), if_match=1)
    assert stored["seq"] == 2
    patched = sync_client.update_session_state(app_name, USER, "s1", {"k": 6}, if_match=2)
    assert patched["state"]["k"] == 6 and patched["version"] == 3
    batch = [event("e4", 4.0), {"author": "user", "timestamp": 5.0}]
    assert [e["seq"] for e in sync_client.append_events(app_name, USER, "s1", batch)] == [4, 5]
    assert sync_client.health() == {"status": "ok"}
    assert sync_client.readiness()["status"] == "ready"

    recent = sync_client.get_session(app_name, USER, "s1", num_recent_events=1)
    assert [e["seq"] for e in recent["events"]] == [5]
    since = sync_client.get_session(app_name, USER, "s1", after_timestamp=2.0)
    assert [e["seq"] for e in since["events"]] == [2, 3, 4, 5]

    page = sync_client.list_events(app_name, USER, "s1", page_size=2)
    assert [e["seq"] for e in page["events"]] == [1, 2] and page["nextPageToken"]
    newest_first = sync_client.iter_events(app_name, USER, "s1", page_size=2, order="desc")
    assert [e["seq"] for e in newest_first] == [5, 4, 3, 2, 1]
    after = sync_client.iter_events(app_name, USER, "s1", after_seq=1, before_timestamp=2.5)
    assert [e["id"] for e in after] == ["e2"]

    sync_client.create_session(app_name, "bob", session_id="s2")
    listed = sync_client.list_sessions(app_name, USER)
    assert [s["id"] for s in listed["sessions"]] == ["s1"] and listed["nextPageToken"] is None
    everyone = sync_client.iter_sessions(app_name, page_size=1)
    assert sorted(s["userId"] for s in everyone) == ["ada", "bob"]

    assert sync_client.update_app_state(app_name, {"b": 1}) == {"a": 2, "b": 1}
    assert sync_client.get_app_state(app_name) == {"a": 2, "b": 1}
    assert sync_client.update_user_state(app_name, USER, {"v": None}) == {"u": 3, "v": None}
    assert sync_client.get_user_state(app_name, USER) == {"u": 3, "v": None}

    sync_client.delete_session(app_name, USER, "s1")
    with pytest.raises(SessionNotFoundError):
        sync_client.get_session(app_name, USER, "s1")


async def test_async_client_covers_every_endpoint(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    created = await client.create_session(app_name, USER, state={"user:u": 1})
    session_id = created["id"]
    stored = await client.append_event(
        app_name, USER, session_id, event("e1", 1.0, k=1), if_match=0
    )
    assert stored["seq"] == 1
    patched = await client.update_session_state(app_name, USER, session_id, {"k": 2})
    assert patched["version"] == 2
    batch = [event("e3", 3.0), event("e4", 4.0)]
    stored_batch = await client.append_events(app_name, USER, session_id, batch, if_match=2)
    assert [e["seq"] for e in stored_batch] == [3, 4]
    assert await client.append_events(app_name, USER, session_id, batch) == stored_batch
    assert await client.health() == {"status": "ok"}
    assert (await client.readiness())["status"] == "ready"
    found = await client.get_session(app_name, USER, session_id, num_recent_events=0)
    assert found["events"] == [] and found["state"] == {"k": 2, "user:u": 1}

    page = await client.list_events(app_name, USER, session_id, page_size=1, order="desc")
    assert [e["seq"] for e in page["events"]] == [4]
    pages = client.iter_events(app_name, USER, session_id, page_size=1, before_timestamp=4.0)
    assert [e["seq"] async for e in pages] == [1, 3]

    for _ in range(2):
        await client.create_session(app_name, USER)
    listed = await client.list_sessions(app_name, USER, page_size=2, order="desc")
    assert len(listed["sessions"]) == 2 and listed["nextPageToken"]
    assert len([s async for s in client.iter_sessions(app_name, USER, page_size=2)]) == 3
    assert len([s async for s in client.iter_sessions(app_name)]) == 3

    assert await client.update_app_state(app_name, {"a": 1}) == {"a": 1}
    assert await client.get_app_state(app_name) == {"a": 1}
    assert await client.update_user_state(app_name, USER, {"w": 2}) == {"u": 1, "w": 2}
    assert await client.get_user_state(app_name, USER) == {"u": 1, "w": 2}

    await client.delete_session(app_name, USER, session_id)
    with pytest.raises(SessionNotFoundError):
        await client.delete_session(app_name, USER, session_id)


def call(call_id: str) -> dict[str, object]:
    parts = [{"functionCall": {"id": call_id, "name": "lookup", "args": {}}}]
    return {
        "id": f"e-{call_id}",
        "author": "planner",
        "invocationId": "inv-2",
        "content": {"parts": parts},
    }


def test_sync_client_forks_reads_back_in_time_and_closes_children(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="p", state={"k": 0})
    sync_client.append_events(app_name, USER, "p", [event("e1", 1.0, k=1), call("c1")])
    then = sync_client.get_session(app_name, USER, "p", until_seq=1)
    assert then["state"] == {"k": 1} and len(then["events"]) == 1
    fork = sync_client.fork_session(app_name, USER, "p", session_id="f", at_seq=1)
    assert fork["kind"] == "fork" and fork["parent"] == {
        "sessionId": "p",
        "seq": 1,
        "functionCallId": None,
    }
    assert [s["id"] for s in sync_client.get_lineage(app_name, USER, "f")] == ["p"]
    child = sync_client.create_child_session(
        app_name, USER, "p", session_id="c", function_call_id="c1", inherit="context"
    )
    assert child["kind"] == "child"
    assert len(sync_client.get_session(app_name, USER, "c")["events"]) == 2
    closed = sync_client.close_session(app_name, USER, "c", "completed", result=7, if_match=2)
    assert closed["status"] == "closed"
    answer = sync_client.get_session(app_name, USER, "p", num_recent_events=1)["events"][0]
    assert answer["content"]["parts"][0]["functionResponse"]["response"] == {
        "outcome": "completed",
        "result": 7,
    }
    children = sync_client.list_children(app_name, USER, "p", page_size=1)
    assert [s["id"] for s in children["sessions"]] == ["f"] and children["nextPageToken"]
    with pytest.raises(SessionClosedError):
        sync_client.append_event(app_name, USER, "c", event("e9", 9.0))


def test_sync_client_rewinds_trims_resets_and_edits_history(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="h")
    sync_client.append_events(
        app_name, USER, "h", [event("e1", 1.0, k=1), call("c1"), event("e3", 3.0, k=3)]
    )
    answer = {
        "id": "a1",
        "author": "planner",
        "invocationId": "inv-2",
        "content": {
            "parts": [{"functionResponse": {"id": "c1", "name": "lookup", "response": {}}}]
        },
    }
    sync_client.append_event(app_name, USER, "h", answer)
    with pytest.raises(ToolPairViolationError):
        sync_client.remove_event(app_name, USER, "h", "a1")
    rewritten = sync_client.rewrite_event(
        app_name, USER, "h", "e1", {"role": "user", "parts": [{"text": "[redacted]"}]}, if_match=4
    )
    assert rewritten["content"]["parts"] == [{"text": "[redacted]"}]
    removed = sync_client.remove_event(app_name, USER, "h", "e-c1")
    assert removed == {"removedEventIds": ["e-c1", "a1"], "version": 6}
    rewind = sync_client.rewind_session(app_name, USER, "h", "inv-1")
    assert rewind["actions"]["rewindBeforeInvocationId"] == "inv-1"
    assert sync_client.trim_session(app_name, USER, "h", 1) == {
        "removedEvents": 2,
        "keptEvents": 1,
        "version": 8,
    }
    reset = sync_client.reset_session(app_name, USER, "h", if_match=8)
    assert reset == {"removedEvents": 1, "keptEvents": 0, "version": 9}
    assert sync_client.get_session(app_name, USER, "h")["events"] == []


def test_sync_client_builds_context_compacts_and_heals(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="c")
    said = {"author": "user", "timestamp": 1.0, "content": {"parts": [{"text": "hi " * 40}]}}
    sync_client.append_events(app_name, USER, "c", [said, {**call("c1"), "timestamp": 2.0}])
    view = sync_client.get_context(app_name, USER, "c", token_budget=10)
    assert [e["seq"] for e in view["events"]] == [2] and view["truncatedBeforeSeq"] == 2
    # Made in 1970: orphaned, unless the timeout (at most a century) is longer than that.
    pending = sync_client.list_tool_calls(app_name, USER, "c", timeout_seconds=3e9)
    assert [c["status"] for c in pending] == ["pending"]
    orphaned = sync_client.list_tool_calls(app_name, USER, "c", status="orphaned")
    assert [c["id"] for c in orphaned] == ["c1"]
    assert sync_client.heal_session(app_name, USER, "c", if_match=2) == {
        "healed": 1,
        "version": 3,
    }
    used = sync_client.get_app_usage(app_name, user_id=USER, after_timestamp=0)
    assert used["total"] == {
        "events": 0,
        "promptTokenCount": 0,
        "candidatesTokenCount": 0,
        "totalTokenCount": 0,
    }
    summary = sync_client.compact_session(
        app_name, USER, "c", "summary", keep_last=2, summary="They said hi."
    )
    assert summary["actions"]["compaction"]["endTimestamp"] == 1.0
    view = sync_client.get_context(app_name, USER, "c")
    assert [part["text"] for part in view["events"][0]["content"]["parts"]] == ["They said hi."]


async def test_async_client_queues_input_until_the_calls_are_answered(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="q")
    await client.append_event(app_name, USER, "q", call("c1"))
    typed = {"author": "user", "content": {"parts": [{"text": "and Bergen?"}]}}
    queued = await client.queue_event(app_name, USER, "q", typed)
    assert await client.list_pending(app_name, USER, "q") == [queued]
    with pytest.raises(ToolCallsPendingError) as refused:
        await client.promote_pending(app_name, USER, "q")
    assert refused.value.call_ids == ["c1"]
    promoted = await client.promote_pending(app_name, USER, "q", force=True, if_match=1)
    assert [event["seq"] for event in promoted] == [2]
    assert await client.promote_pending(app_name, USER, "q") == []
    await client.queue_event(app_name, USER, "q", typed)
    await client.clear_pending(app_name, USER, "q")
    assert await client.list_pending(app_name, USER, "q") == []


def test_sync_client_names_labels_filters_and_expires(
    sync_client: SessionaryClient, app_name: str
) -> None:
    for number, team in enumerate(("red", "blue", "red")):
        sync_client.create_session(
            app_name, USER, session_id=f"l{number}", labels={"team": team}, display_name="x"
        )
    reds = sync_client.iter_sessions(app_name, USER, page_size=1, labels={"team": "red"})
    assert [session["id"] for session in reds] == ["l0", "l2"]
    named = sync_client.list_sessions(app_name, display_name="x", labels={"team": "blue"})
    assert [session["id"] for session in named["sessions"]] == ["l1"]

    changed = sync_client.update_session(
        app_name, USER, "l0", labels={}, display_name=None, ttl=60, if_match=0
    )
    assert (changed["labels"], changed["displayName"], changed["version"]) == ({}, None, 1)
    assert changed["expireTime"] is not None
    kept = sync_client.update_session(app_name, USER, "l0", expire_time=None)
    assert kept["expireTime"] is None and kept["displayName"] is None
    brief = sync_client.create_session(app_name, USER, ttl=3600)
    assert brief["expireTime"] is not None

    said = {"author": "user", "content": {"parts": [{"text": "where is my refund"}]}}
    sync_client.append_event(app_name, USER, "l1", said)
    found = sync_client.search(app_name, "refunds", user_id=USER, page_size=1)
    assert [(hit["sessionId"], hit["seq"]) for hit in found["hits"]] == [("l1", 1)]
    assert found["hits"][0]["snippet"] == "where is my <mark>refund</mark>"


async def test_async_client_streams_a_session_until_it_closes(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="live", events=[event("a", 1.0)])
    sessions = client.stream_sessions(app_name, USER)
    changes = client.stream_events(app_name, USER, "live", after_seq=0)
    assert (await anext(changes)).id == 1  # replayed from the log; now it is live
    await client.append_event(app_name, USER, "live", event("b", 2.0))
    await client.close_session(app_name, USER, "live", "completed")
    rest = [(change.event, change.id) async for change in changes]  # ends at `closed`
    assert rest == [("appended", 2), ("closed", 3)]
    first = asyncio.ensure_future(anext(sessions))
    await asyncio.sleep(1.5)  # connected (its request is served): it tells what happens from now
    await client.create_session(app_name, USER, session_id="next")
    created = await first
    assert (created.event, created.data["sessionId"]) == ("created", "next")
    await sessions.aclose()


async def test_an_erase_ends_the_users_stream_and_the_apps_goes_on(
    live_server: str, transport: httpx.AsyncBaseTransport, app_name: str
) -> None:
    opened: list[str] = []

    async def note(request: httpx.Request) -> None:
        opened.append(request.url.path)

    http = httpx.AsyncClient(
        base_url=live_server, transport=transport, event_hooks={"request": [note]}
    )
    async with AsyncSessionaryClient(http=http) as client:
        await client.create_session(app_name, USER, session_id="gone")
        mine = client.stream_sessions(app_name, USER)
        every = client.stream_sessions(app_name)
        first = asyncio.ensure_future(anext(mine))
        first_of_every = asyncio.ensure_future(anext(every))
        await asyncio.sleep(1.5)  # both connected: they tell what happens from now
        await client.erase_user(app_name, USER)

        async def to_the_end() -> list[StreamEvent]:
            return [await first] + [change async for change in mine]

        heard = await asyncio.wait_for(to_the_end(), 30)  # ends at `erased`, not reopened
        told = [await first_of_every, await anext(every)]
        await client.create_session(app_name, "bob", session_id="later")
        afterwards = await asyncio.wait_for(anext(every), 30)  # the app's stream goes on
        await every.aclose()
    assert [(change.event, change.data.get("sessionId")) for change in heard] == [
        ("deleted", "gone"),
        ("erased", None),
    ]
    assert heard[-1].data == {"userId": USER}
    assert sorted((change.event, change.data["userId"]) for change in told) == [
        ("deleted", USER),
        ("erased", USER),
    ]
    assert (afterwards.event, afterwards.data["sessionId"]) == ("created", "later")
    users_stream = f"/apps/{app_name}/users/{USER}/sessions:stream"
    assert opened.count(users_stream) == 1


async def test_async_client_forks_and_closes(client: AsyncSessionaryClient, app_name: str) -> None:
    await client.create_session(app_name, USER, session_id="p")
    await client.append_event(app_name, USER, "p", event("e1", 1.0, k=1))
    fork = await client.fork_session(app_name, USER, "p", before_invocation_id="inv-1")
    assert fork["events"] == [] and fork["parent"] is not None
    with pytest.raises(InvalidRequestError):
        await client.fork_session(app_name, USER, "p", at_seq=9)
    child = await client.create_child_session(app_name, USER, "p", state={"x": 1})
    assert child["state"] == {"x": 1} and child["version"] == 0
    closed = await client.close_session(app_name, USER, child["id"], "failed")
    assert (closed["status"], closed["outcome"]) == ("closed", "failed")
    with pytest.raises(SessionClosedError):
        await client.close_session(app_name, USER, child["id"], "completed")
    assert await client.get_lineage(app_name, USER, child["id"]) != []
    children = await client.list_children(app_name, USER, "p")
    assert {s["kind"] for s in children["sessions"]} == {"fork", "child"}


async def test_ids_with_spaces_and_reserved_characters_round_trip(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    odd = "a b?c#d%e&f ✓"
    await client.create_session(app_name + odd, odd, session_id=odd)
    found = await client.get_session(app_name + odd, odd, odd)
    assert (found["appName"], found["userId"], found["id"]) == (app_name + odd, odd, odd)


async def test_dot_segment_ids_are_refused_and_never_reach_another_route(
    client: AsyncSessionaryClient, sync_client: SessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    await client.append_event(app_name, USER, "s1", event("e1", 1.0))
    for dots in (".", ".."):
        with pytest.raises(InvalidRequestError):
            await client.remove_event(app_name, USER, "s1", dots)
        with pytest.raises(InvalidRequestError):
            sync_client.remove_event(app_name, USER, "s1", dots)
        with pytest.raises(InvalidRequestError):
            await client.get_session(app_name, dots, "s1")
    found = await client.get_session(app_name, USER, "s1")
    assert [e["id"] for e in found["events"]] == ["e1"]


def test_strings_utf8_cannot_encode_are_refused_before_they_are_sent(
    live_server: str, app_name: str
) -> None:
    """A lone surrogate (as `surrogateescape` decodes a byte that is not UTF-8) is the client's
    own refusal, as the server's would be, not httpx's UnicodeEncodeError from deep inside."""
    sent: list[httpx.Request] = []
    http = httpx.Client(base_url=live_server, event_hooks={"request": [sent.append]})
    with SessionaryClient(http=http) as client:
        client.create_session(app_name, USER, session_id="s")
        refused: list[tuple[str, Callable[[], object]]] = [
            ("path.session_id", lambda: client.get_session(app_name, USER, "s\udcff")),
            ("path.user_id", lambda: client.delete_session(app_name, "ada\ud800", "s")),
            ("body", lambda: client.create_session(app_name, USER, session_id="t\ud800")),
            ("body", lambda: client.append_event(app_name, USER, "s", event("e\udcff", 1.0))),
            ("body", lambda: client.append_events(app_name, USER, "s", [event("e\udcfe", 1.0)])),
            ("body", lambda: client.update_session_state(app_name, USER, "s", {"k\ud800": 1})),
        ]
        before = len(sent)
        for where, call in refused:
            with pytest.raises(InvalidRequestError) as refusal:
                call()
            assert refusal.value.detail.startswith(f"{where}: "), refusal.value.detail
            assert refusal.value.detail.endswith(" must be valid UTF-8 (not sent)")
            assert [error["loc"] for error in refusal.value.errors] == [where.split(".")]
        assert len(sent) == before, "none was sent"
        # A character beyond U+FFFF is valid, and so is text that only reads like an escape.
        for event_id in ("e\U0001f600", "e\\ud800"):
            assert client.append_event(app_name, USER, "s", event(event_id, 2.0))["id"] == event_id


async def test_problems_become_exceptions_named_by_their_code(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    with pytest.raises(SessionNotFoundError) as missing:
        await client.get_session(app_name, USER, "nope")
    assert missing.value.status_code == 404 and missing.value.problem["instance"].endswith("/nope")

    await client.create_session(app_name, USER, session_id="s1")
    with pytest.raises(SessionAlreadyExistsError):
        await client.create_session(app_name, USER, session_id="s1")

    await client.append_event(app_name, USER, "s1", event("e1", 1.0))
    with pytest.raises(StaleSessionError) as stale:
        await client.append_event(app_name, USER, "s1", event("e2", 2.0), if_match=0)
    assert stale.value.code == "stale_session" and stale.value.current_version == 1

    with pytest.raises(EventConflictError):
        await client.append_event(app_name, USER, "s1", event("e1", 1.0, changed=True))

    with pytest.raises(InvalidRequestError) as invalid:
        await client.list_sessions(app_name, USER, page_size=0)
    assert invalid.value.errors and invalid.value.detail


def test_unknown_codes_fall_back_on_the_status_and_non_problem_bodies_are_kept() -> None:
    request = httpx.Request("GET", "http://sessionary/x")
    newer = httpx.Response(404, json={"code": "label_not_found", "detail": "d"}, request=request)
    assert type(error_for(newer)) is NotFoundError
    proxy = httpx.Response(503, text="<html>Bad gateway</html>", request=request)
    error = error_for(proxy)
    assert type(error) is ServiceUnavailableError and error.code == "http_error"
    assert "Bad gateway" in error.detail
    odd = httpx.Response(418, json={"title": "teapot"}, request=request)
    assert type(error_for(odd)) is APIError


async def test_partial_events_are_echoed_not_stored(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    echoed = await client.append_event(app_name, USER, "s1", {"author": "a", "partial": True})
    assert "seq" not in echoed
    assert (await client.get_session(app_name, USER, "s1"))["version"] == 0


class LoseFirstAnswer(httpx.AsyncBaseTransport):
    """Delivers the first request to the server, then pretends its answer never came back."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.requests += 1
        if self.requests == 1:
            await response.aread()
            await response.aclose()
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class RefuseFirstConnection(httpx.AsyncBaseTransport):
    """The first request never reaches the server; later ones do."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.requests == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def flaky(live_server: str, transport: httpx.AsyncBaseTransport) -> AsyncSessionaryClient:
    http = httpx.AsyncClient(base_url=live_server, transport=transport)
    return AsyncSessionaryClient(live_server, http=http, backoff=0.01)


async def test_an_append_whose_answer_was_lost_is_resent_and_stored_once(
    client: AsyncSessionaryClient, live_server: str, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    transport = LoseFirstAnswer()
    no_id = {"author": "user", "timestamp": 1.0}  # the client gives it one, kept across resends
    async with flaky(live_server, transport) as retrying:
        stored = await retrying.append_event(app_name, USER, "s1", no_id, if_match=0)
    assert transport.requests == 2 and stored["seq"] == 1 and stored["id"]
    assert (await client.get_session(app_name, USER, "s1"))["version"] == 1


async def test_a_create_whose_answer_was_lost_is_not_resent(
    live_server: str, app_name: str
) -> None:
    transport = LoseFirstAnswer()
    async with flaky(live_server, transport) as retrying:
        with pytest.raises(APITimeoutError) as timed_out:
            await retrying.create_session(app_name, USER)
    assert isinstance(timed_out.value.__cause__, httpx.ReadTimeout)
    assert transport.requests == 1


async def test_a_request_that_never_left_is_resent_whatever_it_is(
    client: AsyncSessionaryClient, live_server: str, app_name: str
) -> None:
    transport = RefuseFirstConnection()
    async with flaky(live_server, transport) as retrying:
        created = await retrying.create_session(app_name, USER)
    assert transport.requests == 2
    assert len((await client.list_sessions(app_name, USER))["sessions"]) == 1
    assert created["version"] == 0


class RefuseEveryConnection(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        raise httpx.ConnectError("connection refused", request=request)


async def test_retries_give_up_after_the_configured_number(live_server: str) -> None:
    transport = RefuseEveryConnection()
    http = httpx.AsyncClient(base_url=live_server, transport=transport)
    async with AsyncSessionaryClient(live_server, http=http, retries=3, backoff=0.01) as down:
        with pytest.raises(APIConnectionError) as refused:
            await down.get_app_state("any")
    assert isinstance(refused.value, SessionaryError)
    assert isinstance(refused.value.__cause__, httpx.ConnectError)
    assert transport.requests == 4


def test_an_api_key_is_sent_as_a_bearer_token() -> None:
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(200, json={"state": {}})

    with SessionaryClient("http://sessionary", api_key="sk_test") as keyed:
        keyed._http._transport = httpx.MockTransport(answer)
        keyed.get_app_state("any")
    assert seen == ["Bearer sk_test"]


def test_the_sync_client_resends_a_request_that_never_left() -> None:
    attempts: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        attempts.append(request.method)
        if len(attempts) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(201, json={"id": "s1"}, request=request)

    http = httpx.Client(base_url="http://sessionary", transport=httpx.MockTransport(answer))
    with SessionaryClient("http://sessionary", http=http, backoff=0.01) as retrying:
        assert retrying.create_session("app", USER)["id"] == "s1"
    assert attempts == ["POST", "POST"]


@pytest.mark.parametrize(("code", "sent"), [("search_timeout", 1), ("search_busy", 3)])
def test_a_search_past_the_time_limit_is_not_resent(code: str, sent: int) -> None:
    """A 503 the same search would meet again is final; a busy server's is retried."""
    attempts: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.path)
        problem = {"status": 503, "code": code, "title": "t", "detail": "d", "type": "about:blank"}
        return httpx.Response(503, json=problem, request=request)

    http = httpx.Client(base_url="http://sessionary", transport=httpx.MockTransport(answer))
    with SessionaryClient("http://sessionary", http=http, backoff=0.01) as searching:
        with pytest.raises(SessionaryError):
            searching.search("app", "refund")
    assert len(attempts) == sent


def test_reads_after_a_delete_or_an_erase_ask_for_its_position() -> None:
    """The position a delete or an erase answered with goes with the reads of what it
    removed (`minPosition`), the latest when there are several; other sessions' reads, and
    reads after a server that sends none, ask for no position."""
    positions = iter(["0/16B3748", "1/A", "0/FF", None])
    asked: list[tuple[str, str | None]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "DELETE":
            position = next(positions)
            headers = {} if position is None else {"Sessionary-Position": position}
            body = {} if "/sessions/" in request.url.path else {"status": "done"}
            return httpx.Response(204 if body == {} else 200, json=body or None, headers=headers)
        asked.append((request.url.path, request.url.params.get("minPosition")))
        return httpx.Response(200, json={"events": [], "nextPageToken": None})

    http = httpx.Client(base_url="http://sessionary", transport=httpx.MockTransport(answer))
    with SessionaryClient("http://sessionary", http=http) as client:
        client.delete_session("app", USER, "s1")  # 0/16B3748
        client.erase_user("app", USER)  # 1/A: later
        client.delete_session("app", USER, "s2")  # 0/FF: earlier than the erase's
        client.delete_session("app", "other", "s3")  # none
        client.get_session_json("app", USER, "s1")
        client.list_events("app", USER, "s2")
        client.list_events("app", "other", "s3")
        client.list_events("elsewhere", USER, "s1")
    sessions = "/apps/app/users"
    assert asked == [
        (f"{sessions}/{USER}/sessions/s1", "1/A"),
        (f"{sessions}/{USER}/sessions/s2/events", "1/A"),
        (f"{sessions}/other/sessions/s3/events", None),
        (f"/apps/elsewhere/users/{USER}/sessions/s1/events", None),
    ]


async def test_apps_and_their_users_are_listed(
    client: AsyncSessionaryClient, sync_client: SessionaryClient, app_name: str
) -> None:
    for user in ("bo", "ann", "ann"):
        await client.create_session(app_name, user)
    apps = [app async for app in client.iter_apps(page_size=1)]
    mine = next(app for app in apps if app["appName"] == app_name)
    assert mine["sessionCount"] == 3
    users = list(sync_client.iter_users(app_name, page_size=1))
    assert [(user["userId"], user["sessionCount"]) for user in users] == [("ann", 2), ("bo", 1)]
    assert sync_client.list_users(app_name, page_size=1)["nextPageToken"]


async def test_a_session_is_counted_exported_and_imported_elsewhere(
    client: AsyncSessionaryClient, sync_client: SessionaryClient, app_name: str
) -> None:
    chat = client.session(app_name, USER, "s1")
    await client.create_session(app_name, USER, session_id="s1", state={"k": 1})
    await chat.append_events([event("e1", 1.0), event("e2", 2.0)])
    assert await chat.count_events() == {"count": 2, "firstSeq": 1, "lastSeq": 2}

    exported = await chat.export()
    lines = [json.loads(line) for line in exported.splitlines()]
    assert [line.get("id") for line in lines[1:]] == ["e1", "e2"], "NDJSON, a line an event"
    imported = sync_client.import_session(app_name, "bob", exported)
    assert (imported["userId"], imported["id"], imported["state"]) == ("bob", "s1", {"k": 1})
    assert sync_client.count_events(app_name, "bob", "s1")["count"] == 2

    assert (await client.get_key_scope())["authEnabled"] is False
    assert "# TYPE" in sync_client.metrics()
