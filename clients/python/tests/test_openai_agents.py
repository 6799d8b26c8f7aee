"""`SessionarySession` under the OpenAI Agents SDK's real Runner, over two processes, and its
`Session` methods against the live server."""

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sessionary_client import AsyncSessionaryClient, ToolPairViolationError
from sessionary_client._transport import AsyncPoolTransport
from sessionary_client.openai_agents import ITEM_KEY, REST_KEY, SessionarySession

EXAMPLE = Path(__file__).parents[3] / "examples" / "openai_agents_session.py"
USER = "ada"


async def turn(live_server: str, session_id: str, city: str) -> str:
    """One turn of the example agent in a new process: its answer."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, str(EXAMPLE), city, session_id),
        env={**os.environ, "SESSIONARY_URL": live_server},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, stderr.decode()
    return stdout.decode().strip()


def message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


async def test_a_second_process_resumes_the_conversation(
    client: AsyncSessionaryClient, live_server: str, app_name: str
) -> None:
    """The example agent, run twice: the second process is given the first one's items."""
    chat = app_name  # a session of its own in the example's app
    assert await turn(live_server, chat, "Oslo") == "remembered; I was given 3 items"
    assert await turn(live_server, chat, "Bergen") == "remembered; I was given 7 items"
    items = await SessionarySession(
        chat, app_name="examples", user_id=USER, client=client
    ).get_items()
    assert items[0] == {"role": "user", "content": "Oslo"}
    assert [item.get("type") for item in items[1:4]] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert items[4] == {"role": "user", "content": "Bergen"}

    # Each item is one event that ADK's readers, the tool-call view and search understand.
    session = await client.get_session("examples", USER, chat)
    events = session["events"]
    assert [event["author"] for event in events] == ["user", "assistant", "tool", "assistant"] * 2
    assert events[1]["content"]["parts"] == [
        {"functionCall": {"id": "call-Oslo", "name": "remember", "args": {"city": "Oslo"}}}
    ]
    assert events[2]["content"]["parts"] == [
        {"functionResponse": {"id": "call-Oslo", "response": {"output": "remembered Oslo"}}}
    ]
    assert events[3]["content"] == {
        "role": "model",
        "parts": [{"text": "remembered; I was given 3 items"}],
    }
    assert len({event["invocationId"] for event in events}) == 2  # one per turn
    calls = await client.list_tool_calls("examples", USER, chat)
    assert [(call["id"], call["status"]) for call in calls] == [
        ("call-Oslo", "answered"),
        ("call-Bergen", "answered"),
    ]
    found = await client.search("examples", "Bergen", user_id=USER, session_id=chat)
    assert [hit["seq"] for hit in found["hits"]] == [events[4]["seq"]]  # text, not calls


async def test_items_round_trip_whole_and_limit_takes_the_latest(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    session = SessionarySession("s", app_name=app_name, user_id=USER, client=client)
    assert await session.get_items() == []
    said = [
        message("user", "hi"),
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        message("user", "bye"),
    ]
    await session.add_items(said[:2])  # creates the session
    await session.add_items(said[2:])
    assert await session.get_items() == said
    assert await session.get_items(limit=2) == said[2:]
    assert await session.get_items(limit=10) == said
    assert await session.get_items(limit=0) == []
    stored = await client.get_session(app_name, USER, "s")
    assert [e.get("content") for e in stored["events"]][1:3] == [
        {"role": "model", "parts": [{"text": "hello"}]},
        None,
    ]

    # An event that holds no item (a note, an ADK agent's) is not an item.
    await client.append_event(app_name, USER, "s", {"author": "note", "content": {"parts": []}})
    assert await session.get_items(limit=1) == [said[3]]
    assert await session.pop_item() == said[3]
    assert await session.get_items() == said[:3]
    remaining = await client.get_session(app_name, USER, "s")
    assert [event["author"] for event in remaining["events"]] == [
        "user",
        "assistant",
        "assistant",
        "note",
    ]


async def test_pop_keeps_calls_with_their_answers(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    session = SessionarySession("calls", app_name=app_name, user_id=USER, client=client)
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "42"}
    await session.add_items([message("user", "go"), call, output])
    with pytest.raises(ToolPairViolationError):
        await session.pop_item()  # the answer alone would outlive its call
    assert await session.get_items() == [message("user", "go"), call, output]
    await client.remove_event(app_name, USER, "calls", (await _event_ids(client, app_name))[1])
    assert await session.get_items() == [message("user", "go")]
    assert await session.pop_item() == message("user", "go")
    assert await session.pop_item() is None


async def _event_ids(client: AsyncSessionaryClient, app_name: str) -> list[str]:
    stored = await client.get_session(app_name, USER, "calls")
    return [event["id"] for event in stored["events"]]


async def test_clear_and_a_missing_session(client: AsyncSessionaryClient, app_name: str) -> None:
    missing = SessionarySession("none", app_name=app_name, user_id=USER, client=client)
    assert await missing.get_items(limit=3) == []
    assert await missing.pop_item() is None
    await missing.clear_session()

    session = SessionarySession("c", app_name=app_name, user_id=USER, client=client)
    await session.add_items([message("user", "one"), message("user", "two")])
    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items([message("user", "three")])
    assert await session.get_items() == [message("user", "three")]


async def test_concurrent_first_writes_both_land(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    writers = [
        SessionarySession("race", app_name=app_name, user_id=USER, client=client) for _ in range(4)
    ]
    await asyncio.gather(
        *(
            w.add_items([message("user", f"w{i}a"), message("user", f"w{i}b")])
            for i, w in enumerate(writers)
        )
    )
    items = await writers[0].get_items()
    assert sorted(item["content"] for item in items) == sorted(
        f"w{i}{part}" for i in range(4) for part in "ab"
    )
    # Each writer's items stay together, in order: one transaction per add_items.
    texts = [item["content"] for item in items]
    for i in range(4):
        assert texts.index(f"w{i}b") == texts.index(f"w{i}a") + 1


# Items as the SDK's models dump them: the model's messages and calls carry ids and statuses.
TYPICAL = [
    message("user", "What will the weather be like in Oslo tomorrow afternoon?"),
    {
        "type": "function_call",
        "id": "fc_68a1c2d3e4f5",
        "call_id": "call_Xk2Lq9Vb7Rt1",
        "name": "get_forecast",
        "arguments": '{"day":"tomorrow","city":"Oslo"}',
        "status": "completed",
    },
    {
        "type": "function_call_output",
        "call_id": "call_Xk2Lq9Vb7Rt1",
        "output": "Sunny, 21 degrees, light breeze from the west.",
    },
    {
        "type": "message",
        "id": "msg_68a1c2d3e4f6",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "Tomorrow afternoon in Oslo: sunny and 21 degrees, with a light breeze.",
                "annotations": [],
            }
        ],
    },
]


async def test_an_item_is_stored_once(client: AsyncSessionaryClient, app_name: str) -> None:
    """Its text, call and output are in `content`, and `customMetadata` keeps only the rest of
    the item; a call's `arguments` go too where its `args` give them back exactly."""
    session = SessionarySession("once", app_name=app_name, user_id=USER, client=client)
    reordered = {**TYPICAL[1], "arguments": '{"when":{"hour":15,"day":"tomorrow"},"city":"Oslo"}'}
    await session.add_items([*TYPICAL, reordered])
    assert await session.get_items() == [*TYPICAL, reordered]
    stored = (await client.get_session(app_name, USER, "once"))["events"]
    kept = [event["customMetadata"][REST_KEY] for event in stored]
    assert kept == [
        {},
        {"type": "function_call", "id": "fc_68a1c2d3e4f5", "status": "completed"},
        {"type": "function_call_output"},
        {
            "type": "message",
            "id": "msg_68a1c2d3e4f6",
            "status": "completed",
            "content": [{"type": "output_text", "annotations": []}],
        },
        # The server orders an object's keys its own way: text in another order stays.
        {key: reordered[key] for key in ("type", "id", "status", "arguments")},
    ]
    assert stored[4]["content"]["parts"][0]["functionCall"]["args"] == {
        "when": {"hour": 15, "day": "tomorrow"},
        "city": "Oslo",
    }


async def test_items_stored_whole_stay_readable(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    """Items kept whole in `customMetadata.openaiItem`, as they were stored before items were
    split, and those that cannot be split (an image, a reasoning item) read as they were."""
    kept = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "https://example.com/a.png"},
            ],
        },
    ]
    session = SessionarySession("old", app_name=app_name, user_id=USER, client=client)
    await session.add_items(kept)
    legacy = {"content": {"role": "user", "parts": [{"text": "hi"}]}}
    await client.append_event(
        app_name,
        USER,
        "old",
        {**legacy, "author": "user", "customMetadata": {ITEM_KEY: TYPICAL[0]}},
    )
    assert await session.get_items() == [*kept, TYPICAL[0]]
    stored = (await client.get_session(app_name, USER, "old"))["events"]
    assert [list(event["customMetadata"]) for event in stored] == [[ITEM_KEY]] * 3
    assert stored[1]["content"]["parts"] == [{"text": "What is this?"}]


_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | _TEXT
    # JSON numbers as JSONB keeps them: 1e+16 and beyond come back written out, as integers.
    | st.floats(-1e15, 1e15),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_EXTRA = st.dictionaries(st.sampled_from(["id", "status", "annotations", "x"]), _JSON, max_size=2)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_ITEMS = st.one_of(
    st.builds(
        lambda role, text: {"role": role, "content": text},
        st.sampled_from(["user", "assistant", "system", "developer"]),
        _TEXT,
    ),
    st.builds(
        lambda extra, texts: {
            **extra,
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": t} for t in texts],
        },
        _EXTRA,
        st.lists(_TEXT, max_size=3),
    ),
    st.builds(
        lambda extra, call_id, name, arguments: {
            **extra,
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
        },
        _EXTRA,
        _TEXT,
        _TEXT,
        st.dictionaries(_TEXT, _JSON, max_size=4).map(_compact)
        | st.dictionaries(_TEXT, _JSON, max_size=4).map(json.dumps)
        | _TEXT,
    ),
    st.builds(
        lambda extra, call_id, output: {
            **extra,
            "type": "function_call_output",
            "call_id": call_id,
            "output": output,
        },
        _EXTRA,
        _TEXT,
        _JSON,
    ),
    st.builds(lambda extra: {**extra, "type": "reasoning"}, _EXTRA),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(_ITEMS, min_size=1, max_size=6))
@example(items=[{**TYPICAL[1], "arguments": '{"n":1e+16,"m":1e-07}'}])
def test_any_items_come_back_exactly(live_server: str, items: list[dict[str, Any]]) -> None:
    """Whatever the items (calls' arguments in any key order and spacing, any text), what
    `get_items` reads back through the server is what `add_items` was given."""

    async def round_trip() -> list[Any]:
        async with AsyncSessionaryClient(live_server) as client:
            session = SessionarySession(
                uuid.uuid4().hex, app_name="items-round-trip", user_id=USER, client=client
            )
            await session.add_items(items)
            return await session.get_items()

    assert asyncio.run(round_trip()) == items


async def test_a_read_after_a_read_sees_every_change_from_elsewhere(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    """A session's items are kept between reads, and a read asks only for the newest events:
    what another process appends, removes, clears or makes again under the id still shows."""
    mine = SessionarySession("kept", app_name=app_name, user_id=USER, client=client)
    theirs = SessionarySession("kept", app_name=app_name, user_id=USER, client=client)
    said = [message("user", f"m{n}") for n in range(40)]
    await mine.add_items(said[:2])
    first = await mine.get_items()
    assert first == said[:2]
    first[0]["content"] = "changed by the caller"  # items handed out are the caller's own
    assert await mine.get_items() == said[:2]

    await theirs.add_items(said[2:4])
    assert await mine.get_items() == said[:4]
    assert await mine.get_items(limit=3) == said[1:4]
    assert await theirs.pop_item() == said[3]
    assert await mine.get_items() == said[:3]
    await theirs.add_items(said[3:40])  # more than a read of the newest events holds
    assert await mine.get_items() == said
    await theirs.clear_session()
    assert await mine.get_items() == []
    await theirs.add_items(said[:1])
    assert await mine.get_items() == said[:1]
    await client.delete_session(app_name, USER, "kept")
    await theirs.add_items(said[5:6])  # made again under the same id, at the same version
    assert await mine.get_items() == said[5:6]
    await client.delete_session(app_name, USER, "kept")
    assert await mine.get_items() == []


class Recording(httpx.AsyncBaseTransport):
    """httpx's transport, and the query of every read it sent."""

    def __init__(self) -> None:
        self.sent = AsyncPoolTransport()
        self.queries: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.queries.append(request.url.query.decode())
        return await self.sent.handle_async_request(request)

    async def aclose(self) -> None:
        await self.sent.aclose()


async def test_session_objects_on_one_client_read_what_is_new(
    live_server: str, app_name: str
) -> None:
    """A worker that makes a session object per request, on one shared client: after the
    first read of a session, a new object's read asks only for its newest events."""
    recording = Recording()
    async with AsyncSessionaryClient(live_server, transport=recording) as shared:

        def session() -> SessionarySession:
            return SessionarySession("turns", app_name=app_name, user_id=USER, client=shared)

        said = [message("user", f"m{n}") for n in range(6)]
        await session().add_items(said[:4])
        recording.queries.clear()
        assert await session().get_items() == said[:4]
        await session().add_items(said[4:])
        assert await session().get_items() == said
        first, *_, last = recording.queries
        assert "numRecentEvents" not in first and "numRecentEvents=32" in last
