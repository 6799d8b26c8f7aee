"""The clients' memory methods on a live server: a user's memories and an app's, revised and
rolled back under If-Match, listed, recalled by words and by meaning, sessions remembered, and
the errors each code raises."""

import asyncio
import time

import pytest
from sessionary_client import (
    AsyncSessionaryClient,
    InvalidRequestError,
    MemoryAlreadyExistsError,
    MemoryNotFoundError,
    NotFoundError,
    PreconditionFailedError,
    SessionaryClient,
    SessionNotFoundError,
    StaleMemoryError,
    StaleSessionError,
)
from sessionary_client.models import EmbeddingsStatus

USER = "ada"


async def embedded(client: AsyncSessionaryClient) -> EmbeddingsStatus:
    """The server's status once its worker has embedded every memory."""
    for _ in range(600):
        status = await client.embeddings_status()
        if status["pending"] == 0:
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"still not embedded: {status}")


def said(author: str, text: str, event_id: str) -> dict[str, object]:
    role = "user" if author == "user" else "model"
    return {"id": event_id, "author": author, "content": {"role": role, "parts": [{"text": text}]}}


async def test_a_users_memory_is_made_revised_rolled_back_and_forgotten(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    before = time.time()
    made = await client.create_memory(
        app_name,
        USER,
        "I'm vegetarian.",
        memory_id="diet",
        author="user",
        metadata={"from": "onboarding"},
        topics=["food"],
        source={"sessionId": "s1", "eventIds": ["e1"]},
        ttl=3600,
    )
    assert made == {
        **made,
        "id": "diet",
        "scope": "user",
        "userId": USER,
        "kind": "text",
        "revision": 1,
        "text": "I'm vegetarian.",
        "content": {"role": "user", "parts": [{"text": "I'm vegetarian."}]},
        "author": "user",
        "metadata": {"from": "onboarding"},
        "topics": ["food"],
        "source": {"sessionId": "s1", "eventIds": ["e1"]},
    }
    assert made["expireTime"] is not None and made["expireTime"] >= before + 3600 - 1
    assert (await client.get_memory(app_name, USER, "diet"))["revision"] == 1
    with pytest.raises(MemoryAlreadyExistsError) as taken:
        await client.create_memory(app_name, USER, "Again.", memory_id="diet")
    assert (taken.value.status_code, taken.value.code) == (409, "memory_already_exists")

    # Each change a revision; If-Match takes a revision or its ETag.
    vegan = await client.update_memory(app_name, USER, "diet", text="I'm vegan.", if_match=1)
    assert (vegan["revision"], vegan["text"], vegan["topics"]) == (2, "I'm vegan.", ["food"])
    with pytest.raises(StaleMemoryError) as stale:
        await client.update_memory(app_name, USER, "diet", text="Late.", if_match=1)
    assert (stale.value.status_code, stale.value.current_revision) == (412, 2)
    assert isinstance(stale.value, PreconditionFailedError)
    assert not isinstance(stale.value, StaleSessionError)
    kept = await client.update_memory(
        app_name, USER, "diet", topics=["food", "health"], expire_time=None, if_match='"2"'
    )
    assert (kept["revision"], kept["expireTime"], kept["text"]) == (3, None, "I'm vegan.")
    revisions = await client.list_memory_revisions(app_name, USER, "diet", page_size=2)
    assert [found["revision"] for found in revisions["revisions"]] == [3, 2]
    every = [found["text"] async for found in client.iter_memory_revisions(app_name, USER, "diet")]
    assert every == ["I'm vegan.", "I'm vegan.", "I'm vegetarian."]
    back = await client.roll_back_memory(app_name, USER, "diet", 1, if_match=3)
    assert (back["revision"], back["text"], back["topics"]) == (4, "I'm vegetarian.", ["food"])
    with pytest.raises(MemoryNotFoundError):
        await client.roll_back_memory(app_name, USER, "diet", 9)

    # A memory of ADK's `Content`, listed and filtered.
    name = {"role": "user", "parts": [{"text": "Call me Ada."}]}
    called = await client.create_memory(app_name, USER, content=name, topics=["name"])
    assert (called["text"], called["content"], called["author"]) == ("Call me Ada.", name, None)
    listed = await client.list_memories(app_name, USER)
    assert [memory["id"] for memory in listed["memories"]] == [called["id"], "diet"]
    assert listed["nextPageToken"] is None
    food = await client.list_memories(app_name, USER, topic="food", kind="text")
    assert [memory["id"] for memory in food["memories"]] == ["diet"]
    learnt = await client.list_memories(app_name, USER, session_id="s1")
    assert [memory["id"] for memory in learnt["memories"]] == ["diet"]
    paged = [memory["id"] async for memory in client.iter_memories(app_name, USER, page_size=1)]
    assert paged == [called["id"], "diet"]

    # Recalled by words at once, before any embedding.
    found = await client.recall_memories(app_name, USER, "vegetarian", mode="words")
    assert found["recalledBy"] == "words"
    [hit] = found["memories"]
    assert (hit["memory"]["id"], hit["score"], hit["similarity"]) == ("diet", 1.0, None)
    assert hit["wordScore"] is not None and hit["wordScore"] > 0

    with pytest.raises(InvalidRequestError):
        await client.create_memory(app_name, USER)  # neither text nor content
    with pytest.raises(InvalidRequestError):
        await client.create_memory(app_name, USER, "Both.", content=name)
    await client.delete_memory(app_name, USER, "diet", if_match=4)
    with pytest.raises(MemoryNotFoundError) as gone:
        await client.get_memory(app_name, USER, "diet")
    assert isinstance(gone.value, NotFoundError) and gone.value.code == "memory_not_found"
    with pytest.raises(MemoryNotFoundError):
        await client.delete_memory(app_name, USER, "diet")


async def test_the_apps_memories_are_every_users(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    made = await client.create_app_memory(
        app_name, "The office is closed on Sundays.", memory_id="hours", topics=["office"]
    )
    assert (made["scope"], made["userId"], made["revision"]) == ("app", None, 1)
    assert (await client.get_app_memory(app_name, "hours"))["text"] == made["text"]
    with pytest.raises(MemoryNotFoundError):
        await client.get_memory(app_name, USER, "hours")  # not a user's
    changed = await client.update_app_memory(
        app_name, "hours", text="The office is closed on Mondays.", if_match=1
    )
    with pytest.raises(StaleMemoryError):
        await client.update_app_memory(app_name, "hours", text="No.", if_match=1)
    assert changed["revision"] == 2
    revisions = await client.list_app_memory_revisions(app_name, "hours")
    assert [found["revision"] for found in revisions["revisions"]] == [2, 1]
    assert (await client.roll_back_app_memory(app_name, "hours", 1))["text"] == made["text"]
    listed = await client.list_app_memories(app_name, topic="office")
    assert [memory["id"] for memory in listed["memories"]] == ["hours"]
    assert [memory["id"] async for memory in client.iter_memories(app_name, None)] == ["hours"]

    # A user's recall finds the app's memories too, unless told not to.
    await client.create_memory(app_name, USER, "I visit the office on Sundays.")
    both = await client.recall_memories(app_name, USER, "office Sundays", mode="words")
    assert sorted(hit["memory"]["scope"] for hit in both["memories"]) == ["app", "user"]
    own = await client.recall_memories(
        app_name, USER, "office Sundays", mode="words", include_app=False
    )
    assert [hit["memory"]["scope"] for hit in own["memories"]] == ["user"]
    apps = await client.recall_app_memories(app_name, "office", mode="words")
    assert [hit["memory"]["id"] for hit in apps["memories"]] == ["hours"]

    await client.delete_app_memory(app_name, "hours")
    with pytest.raises(MemoryNotFoundError):
        await client.get_app_memory(app_name, "hours")


async def test_a_session_is_remembered_once_and_forgotten_with_it(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    events = [
        said("user", "My locker is number 12.", "e1"),
        said("bot", "Noted: locker 12.", "e2"),
        said("user", "And my badge is blue.", "e3"),
        {"id": "e4", "author": "user"},  # no words: nothing to recall
    ]
    await client.create_session(app_name, USER, session_id="s1", events=events)
    # Without ids, what the server takes (by default what the user said), each once.
    assert await client.remember_session(app_name, USER, "s1") == {"remembered": 2}
    assert await client.remember_session(app_name, USER, "s1") == {"remembered": 0}
    # With ids, those events, whoever wrote them; through the session's handle too.
    assert await client.session(app_name, USER, "s1").remember(event_ids=["e2", "e1"]) == {
        "remembered": 1
    }
    with pytest.raises(InvalidRequestError):
        await client.remember_session(app_name, USER, "s1", event_ids=["e2", "nope"])
    with pytest.raises(SessionNotFoundError):
        await client.remember_session(app_name, USER, "gone")

    remembered = await client.list_memories(app_name, USER, kind="event", session_id="s1")
    assert sorted(memory["text"] or "" for memory in remembered["memories"]) == [
        "And my badge is blue.",
        "My locker is number 12.",
        "Noted: locker 12.",
    ]
    [locker] = [
        memory
        for memory in remembered["memories"]
        if memory["source"] == {"sessionId": "s1", "eventIds": ["e1"]}
    ]
    assert (locker["kind"], locker["author"], locker["revision"]) == ("event", "user", 1)
    # The event's words are the event's: its metadata and topics are the memory's own.
    tagged = await client.update_memory(app_name, USER, locker["id"], topics=["locker"])
    assert (tagged["topics"], tagged["text"]) == (["locker"], "My locker is number 12.")
    with pytest.raises(InvalidRequestError):
        await client.update_memory(app_name, USER, locker["id"], text="Locker 13.")
    found = await client.recall_memories(app_name, USER, "locker", mode="words")
    assert {hit["memory"]["text"] for hit in found["memories"]} == {
        "My locker is number 12.",
        "Noted: locker 12.",
    }

    await client.delete_session(app_name, USER, "s1")
    assert (await client.list_memories(app_name, USER))["memories"] == []
    assert (await client.recall_memories(app_name, USER, "locker"))["memories"] == []


async def test_memories_are_recalled_by_meaning_once_embedded(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    for fact in (
        "I'm vegetarian.",
        "My sister lives in Oslo.",
        "I drive a blue Volvo.",
        "I work as a nurse at night.",
    ):
        await client.create_memory(app_name, USER, fact)
    status = await embedded(client)
    assert status == {
        **status,
        "recall": "meaning+words",
        "note": None,
        "provider": "wordllama",
        "pending": 0,
    }
    assert status["pgvector"] and (status["model"] or "").startswith("wordllama")
    assert (await client.readiness())["recall"] == "meaning+words"
    assert all(
        memory["embedded"] for memory in (await client.list_memories(app_name, USER))["memories"]
    )
    # No word in common: found by meaning alone.
    found = await client.recall_memories(app_name, USER, "What should I cook for dinner?")
    assert found["recalledBy"] == "meaning+words" and found["note"] is None
    best = found["memories"][0]
    assert best["memory"]["text"] == "I'm vegetarian."
    assert best["similarity"] is not None and best["wordScore"] is None
    car = await client.recall_memories(
        app_name, USER, "Which car do I have?", mode="meaning", limit=1
    )
    assert [hit["memory"]["text"] for hit in car["memories"]] == ["I drive a blue Volvo."]
    assert car["recalledBy"] == "meaning"
    # A vector of the client's own model is compared with that model's alone.
    own = await client.create_memory(
        app_name, USER, "North.", embedding={"model": "mine", "vector": [1.0, 0.0]}
    )
    mine = await client.recall_memories(
        app_name, USER, embedding={"model": "mine", "vector": [0.9, 0.1]}, mode="meaning"
    )
    assert [hit["memory"]["id"] for hit in mine["memories"]] == [own["id"]]


def test_the_blocking_client_has_the_memory_methods(
    sync_client: SessionaryClient, app_name: str
) -> None:
    made = sync_client.create_memory(app_name, USER, "Prefers aisle seats.", memory_id="seat")
    assert sync_client.get_memory(app_name, USER, "seat")["text"] == made["text"]
    assert sync_client.update_memory(app_name, USER, "seat", topics=["travel"])["revision"] == 2
    assert sync_client.roll_back_memory(app_name, USER, "seat", 1)["revision"] == 3
    assert len(sync_client.list_memory_revisions(app_name, USER, "seat")["revisions"]) == 3
    assert [m["id"] for m in sync_client.iter_memories(app_name, USER)] == ["seat"]
    assert [m["id"] for m in sync_client.list_memories(app_name, USER)["memories"]] == ["seat"]
    found = sync_client.recall_memories(app_name, USER, "aisle seats", mode="words")
    assert [hit["memory"]["id"] for hit in found["memories"]] == ["seat"]
    sync_client.delete_memory(app_name, USER, "seat")
    with pytest.raises(MemoryNotFoundError):
        sync_client.get_memory(app_name, USER, "seat")

    sync_client.create_app_memory(app_name, "Support answers in English.", memory_id="lang")
    sync_client.update_app_memory(app_name, "lang", metadata={"set": "by hand"})
    assert sync_client.get_app_memory(app_name, "lang")["metadata"] == {"set": "by hand"}
    assert sync_client.roll_back_app_memory(app_name, "lang", 1)["metadata"] == {}
    assert len(sync_client.list_app_memory_revisions(app_name, "lang")["revisions"]) == 3
    assert [m["id"] for m in sync_client.list_app_memories(app_name)["memories"]] == ["lang"]
    answers = sync_client.recall_app_memories(app_name, "English", mode="words")
    assert [hit["memory"]["id"] for hit in answers["memories"]] == ["lang"]
    sync_client.delete_app_memory(app_name, "lang")

    sync_client.create_session(app_name, USER, session_id="s", events=[said("user", "Hi.", "e")])
    assert sync_client.remember_session(app_name, USER, "s", event_ids=["e"]) == {"remembered": 1}
    assert sync_client.embeddings_status()["provider"] == "wordllama"
