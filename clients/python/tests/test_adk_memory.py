"""`SessionaryMemoryService` on a live server: ADK's Runner recalls through `load_memory` and
`preload_memory` what another process added to memory, and the service keeps ADK's memory
contract, one behaviour a test.

google-adk's own memory-service tests are not in what this machine can fetch (its wheel and
its sdist hold no `tests/`), so the behaviours its tests of `InMemoryMemoryService` check are
written here, against this service: what a session adds, idempotent adds, a search scoped to
its user and bounded, deletes. Where this service differs (recall by meaning as well as by
words; the server's choice of what a session adds), the test says so.
"""

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.session import Session
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryMemoryService, SessionaryService

EXAMPLE = Path(__file__).parents[3] / "examples" / "adk_memory.py"
USER = "ada"


@pytest.fixture
async def http(live_server: str) -> AsyncIterator[AsyncSessionaryClient]:
    """The client on its default transport: what is tested here is the memory service."""
    async with AsyncSessionaryClient(live_server) as client:
        yield client


@pytest.fixture
async def memory(live_server: str) -> AsyncIterator[SessionaryMemoryService]:
    service = SessionaryMemoryService(live_server)
    yield service
    await service.close()


def said(author: str, text: str, timestamp: float, event_id: str | None = None) -> Event:
    role = "user" if author == "user" else "model"
    content = types.Content(role=role, parts=[types.Part(text=text)])
    ids = {} if event_id is None else {"id": event_id}
    return Event(author=author, content=content, timestamp=timestamp, invocation_id="i", **ids)


def texts(found: list[MemoryEntry]) -> list[str]:
    return [(entry.content.parts or [types.Part()])[0].text or "" for entry in found]


async def search(memory: SessionaryMemoryService, app_name: str, query: str) -> list[str]:
    found = await memory.search_memory(app_name=app_name, user_id=USER, query=query)
    return texts(found.memories)


async def embedded(http: AsyncSessionaryClient) -> None:
    """Wait until the server's worker has embedded every memory."""
    for _ in range(600):
        if (await http.embeddings_status())["pending"] == 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("memories still not embedded")


async def stored_session(service: SessionaryService, app_name: str, *events: Event) -> Session:
    session = await service.create_session(app_name=app_name, user_id=USER)
    for event in events:
        await service.append_event(session, event)
    return session


def run_example(live_server: str, app_name: str, text: str) -> list[str]:
    """The example, as a process of its own, in an app of the test's own."""
    script = EXAMPLE.read_text().replace('"examples"', repr(app_name))
    done = subprocess.run(
        [sys.executable, "-c", script, text],
        env={**os.environ, "SESSIONARY_URL": live_server},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


async def test_an_agent_recalls_with_load_memory_what_another_process_told_it(
    live_server: str, app_name: str, http: AsyncSessionaryClient
) -> None:
    assert run_example(live_server, app_name, "My favourite city is Tromsø.") == ["Noted."]
    assert run_example(live_server, app_name, "I had rain in Bergen all week.") == ["Noted."]
    await embedded(http)  # else one found by meaning alone may tie with one found by words
    asked = run_example(live_server, app_name, "Which city is my favourite?")
    assert asked[0] == 'load_memory("Which city is my favourite?")'
    assert asked[1].startswith('From memory: user said "My favourite city is Tromsø." (20')
    # Each session's user statement is a memory of its event: no copy, no session of memory.
    sessions = (await http.list_sessions(app_name, "ada"))["sessions"]
    memories = (await http.list_memories(app_name, "ada"))["memories"]
    assert len(sessions) == 3
    assert sorted((m["kind"], (m["source"] or {})["sessionId"]) for m in memories) == sorted(
        ("event", session["id"]) for session in sessions
    )


async def test_a_stored_session_is_remembered_by_the_server_as_it_grows(
    memory: SessionaryMemoryService,
    service: SessionaryService,
    http: AsyncSessionaryClient,
    app_name: str,
) -> None:
    silent = Event(author="user", invocation_id="i", timestamp=99.0)  # no content: not kept
    session = await stored_session(
        service,
        app_name,
        said("user", "The gate code is 4711.", 100.0),
        silent,
        said("bot", "Got it.", 101.0),
    )
    await memory.add_session_to_memory(session)
    # Added mid-invocation, the session's own version did not move: appends go on.
    await service.append_event(session, said("user", "The new gate code is 9090.", 102.0))
    [entry] = (await memory.search_memory(app_name=app_name, user_id=USER, query="gate")).memories
    # What the user said (the server's SESSIONARY_MEMORY_FROM, by default; ADK's in-memory
    # service keeps every event with content).
    assert (texts([entry]), entry.author) == (["The gate code is 4711."], "user")
    assert entry.timestamp == "1970-01-01T00:01:40+00:00"
    assert entry.custom_metadata == {
        "scope": "user",
        "score": entry.custom_metadata["score"],
        "session_id": session.id,
        "event_ids": [session.events[0].id],
    }
    assert entry.id and (await http.get_memory(app_name, USER, entry.id))["kind"] == "event"

    # Added again, what is new; what was there stays once.
    await memory.add_session_to_memory(session)
    await memory.add_session_to_memory(session)
    assert sorted(await search(memory, app_name, "gate code")) == [
        "The gate code is 4711.",
        "The new gate code is 9090.",
    ]
    assert len((await http.list_memories(app_name, USER))["memories"]) == 2
    # A session with no events adds nothing, and is no error.
    await memory.add_session_to_memory(await stored_session(service, app_name))
    # Deleted, the session is forgotten.
    await service.delete_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert await search(memory, app_name, "gate code") == []


async def test_events_of_a_stored_session_are_added_whoever_wrote_them(
    memory: SessionaryMemoryService,
    service: SessionaryService,
    http: AsyncSessionaryClient,
    app_name: str,
) -> None:
    turn = [said("user", "Book the ferry to Hirtshals.", 300.0), said("bot", "Booked.", 301.0)]
    session = await stored_session(service, app_name, *turn)
    await memory.add_events_to_memory(
        app_name=app_name, user_id=USER, events=turn[1:], session_id=session.id
    )
    [booked] = (await http.list_memories(app_name, USER))["memories"]
    assert (booked["kind"], booked["text"], booked["author"]) == ("event", "Booked.", "bot")

    # An event the session does not hold is kept as a memory of its own, learnt there; the
    # others are the server's. Added again, nothing changes.
    aside = said("user", "Window seat on the ferry, please.", 302.0, event_id="aside")
    for _ in range(2):
        await memory.add_events_to_memory(
            app_name=app_name, user_id=USER, events=[*turn, aside], session_id=session.id
        )
    listed = (await http.list_memories(app_name, USER))["memories"]
    assert sorted((m["kind"], m["text"]) for m in listed) == [
        ("event", "Book the ferry to Hirtshals."),
        ("event", "Booked."),
        ("text", "Window seat on the ferry, please."),
    ]
    [own] = [m for m in listed if m["kind"] == "text"]
    assert own["source"] == {"sessionId": session.id, "eventIds": ["aside"]}
    await embedded(http)  # "Booked." shares no word with the question
    assert sorted(await search(memory, app_name, "ferry")) == [
        "Book the ferry to Hirtshals.",
        "Booked.",
        "Window seat on the ferry, please.",
    ]

    # A fork holds the same events: remembered there too, each is still one memory.
    fork = await http.fork_session(app_name, USER, session.id)
    forked = await service.get_session(app_name=app_name, user_id=USER, session_id=fork["id"])
    assert forked is not None
    await memory.add_events_to_memory(
        app_name=app_name, user_id=USER, events=forked.events, session_id=forked.id
    )
    assert len((await http.list_memories(app_name, USER))["memories"]) == 5
    await embedded(http)
    assert sorted(await search(memory, app_name, "ferry")) == [
        "Book the ferry to Hirtshals.",
        "Booked.",
        "Window seat on the ferry, please.",
    ]


async def test_events_of_no_stored_session_are_kept_once_as_memories_of_their_own(
    memory: SessionaryMemoryService, http: AsyncSessionaryClient, app_name: str
) -> None:
    peanuts = said("user", "Allergic to peanuts.", 200.0)
    loose = Session(
        app_name=app_name,
        user_id=USER,
        id="elsewhere",
        events=[
            said("user", "Lives in Narvik.", 201.0),
            Event(author="user", invocation_id="i", timestamp=202.0),  # no text: not kept
        ],
    )
    for _ in range(2):  # adding the same again stores nothing
        await memory.add_events_to_memory(app_name=app_name, user_id=USER, events=[peanuts])
        await memory.add_events_to_memory(
            app_name=app_name, user_id=USER, events=[peanuts], session_id="gone"
        )
        await memory.add_session_to_memory(loose)
    listed = (await http.list_memories(app_name, USER))["memories"]
    narvik = loose.events[0].id
    assert sorted(((m["kind"], m["text"], m["author"], m["source"]) for m in listed), key=str) == [
        ("text", "Allergic to peanuts.", "user", None),
        ("text", "Allergic to peanuts.", "user", {"sessionId": "gone", "eventIds": [peanuts.id]}),
        ("text", "Lives in Narvik.", "user", {"sessionId": "elsewhere", "eventIds": [narvik]}),
    ]
    await embedded(http)  # else one found by meaning alone may tie with one found by words
    assert (await search(memory, app_name, "peanut"))[0] == "Allergic to peanuts."
    assert (await search(memory, app_name, "Narvik"))[0] == "Lives in Narvik."


async def test_add_memory_keeps_each_entry_once_with_its_metadata(
    memory: SessionaryMemoryService, http: AsyncSessionaryClient, app_name: str
) -> None:
    seats = MemoryEntry(
        content=types.Content(parts=[types.Part(text="Prefers aisle seats.")]),
        author="travel_agent",
        custom_metadata={"source": "profile"},
    )
    named = MemoryEntry(id="diet", content=types.Content(parts=[types.Part(text="Eats no fish.")]))
    for _ in range(2):
        await memory.add_memory(app_name=app_name, user_id=USER, memories=[seats, named])
    listed = (await http.list_memories(app_name, USER))["memories"]
    assert sorted(m["id"] for m in listed)[0] == "diet" and len(listed) == 2
    await embedded(http)
    [found] = (
        await memory.search_memory(app_name=app_name, user_id=USER, query="aisle seats")
    ).memories[:1]
    assert (texts([found]), found.author) == (["Prefers aisle seats."], "travel_agent")
    assert found.custom_metadata == {
        "source": "profile",
        "scope": "user",
        "score": found.custom_metadata["score"],
    }
    assert found.id and found.id.startswith("memory-")


async def test_search_recalls_by_meaning_and_words_the_users_and_the_apps_memories(
    memory: SessionaryMemoryService, http: AsyncSessionaryClient, app_name: str
) -> None:
    facts = ["I'm vegetarian.", "My sister lives in Oslo.", "I drive a blue Volvo."]
    await memory.add_memory(
        app_name=app_name,
        user_id=USER,
        memories=[MemoryEntry(content=types.Content(parts=[types.Part(text=t)])) for t in facts],
    )
    await http.create_app_memory(app_name, "The office is closed on Sundays.")
    await embedded(http)
    assert "I'm vegetarian." in await search(memory, app_name, "what food do I like?")
    # No word in common: by meaning alone.
    assert (await search(memory, app_name, "What should I cook for dinner?"))[0] == (
        "I'm vegetarian."
    )
    # Words count too, and any case.
    assert (await search(memory, app_name, "VOLVO"))[0] == "I drive a blue Volvo."
    found = await memory.search_memory(app_name=app_name, user_id=USER, query="Is the office open?")
    assert texts(found.memories)[0] == "The office is closed on Sundays."
    assert found.memories[0].custom_metadata["scope"] == "app"
    # Another user recalls the app's memories, never this user's.
    other = await memory.search_memory(app_name=app_name, user_id="bob", query="vegetarian")
    assert texts(other.memories) == ["The office is closed on Sundays."]


async def test_a_search_answers_at_most_max_results_and_nothing_without_a_word(
    live_server: str, memory: SessionaryMemoryService, app_name: str
) -> None:
    notes = [f"Note {i} about work." for i in range(15)]
    entries = [MemoryEntry(content=types.Content(parts=[types.Part(text=t)])) for t in notes]
    await memory.add_memory(app_name=app_name, user_id=USER, memories=entries)
    assert len(await search(memory, app_name, "work")) == 10
    few = SessionaryMemoryService(live_server, max_results=3)
    try:
        found = await few.search_memory(app_name=app_name, user_id=USER, query="work")
        assert len(found.memories) == 3
    finally:
        await few.close()
    assert await search(memory, app_name, "?!") == []
    assert await search(memory, app_name, "   ") == []


async def test_delete_memory_forgets_the_users_memory_of_that_id(
    memory: SessionaryMemoryService, http: AsyncSessionaryClient, app_name: str
) -> None:
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Hates hotels.")]))
    await memory.add_memory(app_name=app_name, user_id=USER, memories=[entry])
    shared = await http.create_app_memory(app_name, "Hotels are booked by the office.")
    found = await memory.search_memory(app_name=app_name, user_id=USER, query="hotels")
    assert len(found.memories) == 2
    for each in found.memories:
        await memory.delete_memory(app_name=app_name, user_id=USER, memory_id=each.id)
    # Gone already, or no id: nothing to do.
    await memory.delete_memory(app_name=app_name, user_id=USER, memory_id=found.memories[0].id)
    await memory.delete_memory(app_name=app_name, user_id=USER)
    # The user's is gone; the app's, every user's, is not deleted through one user's memory.
    assert await search(memory, app_name, "hotels") == [shared["text"]]


class EchoMemory(BaseLlm):
    """Answers with what `preload_memory` put before the user's message, or "nothing"."""

    model: str = "echo"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        said = [part.text or "" for content in llm_request.contents for part in content.parts or []]
        past = [text for text in said if "<PAST_CONVERSATIONS>" in text]
        text = (
            past[0].split("<PAST_CONVERSATIONS>\n")[1].split("\n</PAST")[0] if past else "nothing"
        )
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def test_preload_memory_puts_what_memory_holds_before_the_question(
    memory: SessionaryMemoryService, service: SessionaryService, app_name: str
) -> None:
    agent = LlmAgent(name="assistant", model=EchoMemory(), tools=[preload_memory_tool])
    runner = Runner(agent=agent, app_name=app_name, session_service=service, memory_service=memory)

    async def ask(text: str) -> str:
        session = await service.create_session(app_name=app_name, user_id=USER)
        message = types.Content(role="user", parts=[types.Part(text=text)])
        answer = ""
        async for event in runner.run_async(
            user_id=USER, session_id=session.id, new_message=message
        ):
            answer = ((event.content and event.content.parts) or [types.Part()])[0].text or ""
        stored = await service.get_session(app_name=app_name, user_id=USER, session_id=session.id)
        assert stored is not None
        await memory.add_session_to_memory(stored)
        return answer

    assert await ask("My locker is number 12.") == "nothing"
    # The question's own session is not in memory yet: only the earlier one is recalled.
    recalled = await ask("Which locker is mine?")
    assert re.fullmatch(
        r"Time: 20\d\d-\S+\+00:00\nuser: My locker is number 12\.",
        recalled,
    ), recalled
