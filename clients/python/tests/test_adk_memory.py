"""`SessionaryMemoryService`: ADK's Runner recalls through `load_memory` what another process
added to memory, and the service's own contract (what memory holds, idempotent adds)."""

import os
import re
import subprocess
import sys
import uuid
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
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryMemoryService, SessionaryService
from sessionary_client.adk_memory import any_word

EXAMPLE = Path(__file__).parents[3] / "examples" / "adk_memory.py"


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


def said(author: str, text: str, timestamp: float) -> Event:
    role = "user" if author == "user" else "model"
    content = types.Content(role=role, parts=[types.Part(text=text)])
    return Event(author=author, content=content, timestamp=timestamp, invocation_id="i")


def texts(found: list[MemoryEntry]) -> list[str]:
    return [(entry.content.parts or [types.Part()])[0].text or "" for entry in found]


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
    asked = run_example(live_server, app_name, "Which city is my favourite?")
    assert asked[0] == 'load_memory("Which city is my favourite?")'
    assert asked[1].startswith('From memory: user said "My favourite city is Tromsø." (20')
    # Only what matches: the Bergen session shares no word with the question.
    assert "Bergen" not in asked[1]
    # Three sessions and the memory session, in which nothing of theirs was copied.
    sessions = (await http.list_sessions(app_name, "ada"))["sessions"]
    assert len(sessions) == 4
    memory = await http.get_session(app_name, "ada", "memory")
    assert all("content" not in event for event in memory["events"])
    assert len(memory["state"]) == 3


async def test_memory_holds_a_session_as_far_as_it_was_added(
    memory: SessionaryMemoryService, service: SessionaryService, app_name: str
) -> None:
    session = await service.create_session(app_name=app_name, user_id="ada")
    for event in (said("user", "The gate code is 4711.", 100.0), said("bot", "Got it.", 101.0)):
        await service.append_event(session, event)
    await memory.add_session_to_memory(session)
    later = said("user", "The new gate code is 9090.", 102.0)
    await service.append_event(session, later)
    # Added to memory mid-invocation, the session's own version did not move: appends go on.
    await service.append_event(session, said("bot", "Noted the gate.", 103.0))

    found = await memory.search_memory(app_name=app_name, user_id="ada", query="gate code?")
    assert texts(found.memories) == ["The gate code is 4711."]
    [entry] = found.memories
    assert (entry.author, entry.timestamp) == ("user", "1970-01-01T00:01:40+00:00")
    assert entry.custom_metadata == {"session_id": session.id, "seq": 1}

    # Adding it again goes as far as it now goes; an older copy takes nothing back.
    stored = await service.get_session(app_name=app_name, user_id="ada", session_id=session.id)
    assert stored is not None
    await memory.add_session_to_memory(stored)
    await memory.add_session_to_memory(stored)
    await memory.add_session_to_memory(session.model_copy(update={"events": session.events[:1]}))
    found = await memory.search_memory(app_name=app_name, user_id="ada", query="gate code")
    assert sorted(texts(found.memories)) == [
        "Noted the gate.",
        "The gate code is 4711.",
        "The new gate code is 9090.",
    ]
    # Another user's memory is their own.
    other = await memory.search_memory(app_name=app_name, user_id="bob", query="gate code")
    assert other.memories == []


async def test_events_and_entries_of_no_session_are_kept_once_in_the_memory_session(
    memory: SessionaryMemoryService, http: AsyncSessionaryClient, app_name: str
) -> None:
    loose = [said("user", "Allergic to peanuts.", 200.0)]
    entry = MemoryEntry(
        content=types.Content(parts=[types.Part(text="Prefers aisle seats.")]),
        author="travel_agent",
        custom_metadata={"source": "profile"},
    )
    for _ in range(2):  # adding the same again stores nothing
        await memory.add_events_to_memory(
            app_name=app_name, user_id="ada", events=loose, session_id="gone"
        )
        await memory.add_memory(app_name=app_name, user_id="ada", memories=[entry])
    kept = await http.get_session(app_name, "ada", "memory")
    assert [event["author"] for event in kept["events"]] == ["user", "travel_agent"]
    assert "actions" not in kept["events"][0] or not kept["events"][0]["actions"].get("stateDelta")

    seats = await memory.search_memory(app_name=app_name, user_id="ada", query="aisle seats")
    [found] = seats.memories
    assert (texts([found]), found.author) == (["Prefers aisle seats."], "travel_agent")
    assert found.custom_metadata == {"source": "profile", "session_id": "memory", "seq": 2}
    peanuts = await memory.search_memory(app_name=app_name, user_id="ada", query="peanut")
    assert texts(peanuts.memories) == ["Allergic to peanuts."]


async def test_events_of_a_stored_session_remember_it_without_a_copy(
    memory: SessionaryMemoryService,
    service: SessionaryService,
    http: AsyncSessionaryClient,
    app_name: str,
) -> None:
    session = await service.create_session(app_name=app_name, user_id="ada")
    turn = [said("user", "Book the ferry to Hirtshals.", 300.0), said("bot", "Booked.", 301.0)]
    for event in turn:
        await service.append_event(session, event)
    await memory.add_events_to_memory(
        app_name=app_name, user_id="ada", events=turn[1:], session_id=session.id
    )
    found = await memory.search_memory(app_name=app_name, user_id="ada", query="ferry booked")
    assert sorted(texts(found.memories)) == ["Book the ferry to Hirtshals.", "Booked."]
    assert {entry.custom_metadata["session_id"] for entry in found.memories} == {session.id}
    # A fork holds the same events: remembered too, each is still one memory.
    fork = await http.fork_session(app_name, "ada", session.id)
    forked = await service.get_session(app_name=app_name, user_id="ada", session_id=fork["id"])
    assert forked is not None
    await memory.add_session_to_memory(forked)
    again = await memory.search_memory(app_name=app_name, user_id="ada", query="ferry booked")
    assert sorted(texts(again.memories)) == ["Book the ferry to Hirtshals.", "Booked."]


async def test_a_user_without_memory_or_a_query_without_words_recalls_nothing(
    memory: SessionaryMemoryService, app_name: str
) -> None:
    assert (await memory.search_memory(app_name=app_name, user_id="x", query="a")).memories == []
    assert (await memory.search_memory(app_name=app_name, user_id="x", query="?!")).memories == []


def test_a_query_matches_any_of_its_words() -> None:
    assert any_word('What is "my" favourite -city, or colour?') == (
        "what or is or my or favourite or city or colour"
    )
    assert any_word("?!") is None
    long = " ".join(uuid.uuid4().hex for _ in range(100))
    assert len(any_word(long) or "") <= 1000


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
        session = await service.create_session(app_name=app_name, user_id="ada")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        answer = ""
        async for event in runner.run_async(
            user_id="ada", session_id=session.id, new_message=message
        ):
            answer = ((event.content and event.content.parts) or [types.Part()])[0].text or ""
        stored = await service.get_session(app_name=app_name, user_id="ada", session_id=session.id)
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
