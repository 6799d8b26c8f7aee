"""A model of memories, as docs/memory.md defines them, checked against the service by a
Hypothesis state machine: memories of a user and of the app created, revised (with and without
`If-Match`), rolled back and deleted; a session's user events added to memory, some of them
removed or rewritten, the session deleted.

After every step each memory the model holds reads as the model says (text, topics, revision,
every revision), the listings hold exactly the model's, and recall by words of each memory's
own word finds exactly the memories that hold it.
"""

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from tests.machines import EXAMPLES, ServiceMachine

USER = "ada"
# Words no other text holds, one per text, so that recall by words names exactly its memories.
WORDS = ["zebra", "quartz", "mango", "violet", "falcon"]
TOPICS = st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True)


@dataclass
class Memory:
    scope: str  # "user" or "app"
    text: str
    topics: list[str]
    revisions: list[tuple[str | None, list[str]]] = field(default_factory=list)  # text, topics
    event: tuple[str, str] | None = None  # (session id, event id) of a remembered event


class MemoryMachine(ServiceMachine):
    def __init__(self) -> None:
        super().__init__()
        self.app = f"memories-{uuid.uuid4().hex[:8]}"
        self.memories: dict[str, Memory] = {}
        self.sessions: dict[str, list[tuple[str, str]]] = {}  # id → its user events (id, text)
        self.counter = itertools.count()

    def base(self, scope: str) -> str:
        users = f"/users/{USER}" if scope == "user" else ""
        return f"/apps/{self.app}{users}/memories"

    def url(self, memory_id: str) -> str:
        return f"{self.base(self.memories[memory_id].scope)}/{memory_id}"

    def pick(self, index: int, *, kind: str | None = None) -> str | None:
        chosen = sorted(
            memory_id
            for memory_id, memory in self.memories.items()
            if kind is None or (memory.event is not None) == (kind == "event")
        )
        return chosen[index % len(chosen)] if chosen else None

    # Rules.
    @initialize()
    def start(self) -> None:
        self.session()

    @rule(scope=st.sampled_from(["user", "app"]), word=st.sampled_from(WORDS), topics=TOPICS)
    def create(self, scope: str, word: str, topics: list[str]) -> None:
        text = f"{word} {next(self.counter)}"
        created = self.request("POST", self.base(scope), json={"text": text, "topics": topics})
        assert created.status_code == 201, created.text
        memory = Memory(scope, text, topics, [(text, topics)])
        self.memories[created.json()["id"]] = memory

    @rule(
        index=st.integers(0, 20),
        word=st.none() | st.sampled_from(WORDS),
        topics=st.none() | TOPICS,
        if_match=st.sampled_from(["none", "current", "stale"]),
    )
    def update(self, index: int, word: str | None, topics: list[str] | None, if_match: str) -> None:
        memory_id = self.pick(index)
        if memory_id is None:
            return
        memory = self.memories[memory_id]
        body: dict[str, Any] = {}
        if word is not None and memory.event is None:
            body["text"] = f"{word} {next(self.counter)}"
        if topics is not None:
            body["topics"] = topics
        revision = len(memory.revisions) + (1 if if_match == "stale" else 0)
        headers = {} if if_match == "none" else {"if-match": f'"{revision}"'}
        answer = self.request("PATCH", self.url(memory_id), json=body, headers=headers)
        if if_match == "stale":
            assert answer.status_code == 412, answer.text
            assert answer.json()["code"] == "stale_memory"
            return
        assert answer.status_code == 200, answer.text
        memory.text = body.get("text", memory.text)
        memory.topics = body.get("topics", memory.topics)
        memory.revisions.append((None if memory.event else memory.text, memory.topics))
        assert answer.json()["revision"] == len(memory.revisions)

    @rule(index=st.integers(0, 20), back=st.integers(0, 5))
    def roll_back(self, index: int, back: int) -> None:
        memory_id = self.pick(index)
        if memory_id is None:
            return
        memory = self.memories[memory_id]
        revision = max(1, len(memory.revisions) - back)
        answer = self.request(
            "POST", f"{self.url(memory_id)}:rollback", json={"revision": revision}
        )
        assert answer.status_code == 200, answer.text
        text, topics = memory.revisions[revision - 1]
        memory.text = text if memory.event is None and text is not None else memory.text
        memory.topics = topics
        memory.revisions.append((None if memory.event else memory.text, memory.topics))

    @rule(index=st.integers(0, 20))
    def delete(self, index: int) -> None:
        memory_id = self.pick(index)
        if memory_id is None:
            return
        url = self.url(memory_id)
        answer = self.request("DELETE", url)
        assert answer.status_code == 204, answer.text
        del self.memories[memory_id]
        assert self.request("GET", url).status_code == 404

    @rule()
    def session(self) -> None:
        session_id = f"s{next(self.counter)}"
        events = [{"author": "agent", "content": {"parts": [{"text": "hello"}]}}]
        said = []
        for word in WORDS[:2]:
            event_id = f"e{next(self.counter)}"
            text = f"{word} {next(self.counter)}"
            said.append((event_id, text))
            events.append(
                {"id": event_id, "author": "user", "content": {"parts": [{"text": text}]}}
            )
        created = self.request(
            "POST",
            f"/apps/{self.app}/users/{USER}/sessions",
            json={"sessionId": session_id, "events": events},
        )
        assert created.status_code == 201, created.text
        self.sessions[session_id] = said

    @precondition(lambda self: self.sessions)
    @rule(index=st.integers(0, 20))
    def remember(self, index: int) -> None:
        session_id = sorted(self.sessions)[index % len(self.sessions)]
        answer = self.request(
            "POST", f"/apps/{self.app}/users/{USER}/sessions/{session_id}:remember"
        )
        assert answer.status_code == 200, answer.text
        known = {m.event for m in self.memories.values() if m.event is not None}
        new = [(e, t) for e, t in self.sessions[session_id] if (session_id, e) not in known]
        assert answer.json() == {"remembered": len(new)}
        if not new:
            return
        listed = self.request(
            "GET",
            self.base("user"),
            params={"sessionId": session_id, "kind": "event", "pageSize": 100},
        )
        for found in listed.json()["memories"]:
            event_id = found["source"]["eventIds"][0]
            text = dict(self.sessions[session_id])[event_id]
            if (session_id, event_id) not in known:
                self.memories[found["id"]] = Memory(
                    "user", text, [], [(None, [])], (session_id, event_id)
                )

    @precondition(lambda self: self.sessions)
    @rule(index=st.integers(0, 20), word=st.sampled_from(WORDS), remove=st.booleans())
    def change_event(self, index: int, word: str, remove: bool) -> None:
        """Remove a user event, or rewrite its text."""
        session_id = sorted(self.sessions)[index % len(self.sessions)]
        said = self.sessions[session_id]
        if not said:
            return
        event_id, _ = said[index % len(said)]
        url = f"/apps/{self.app}/users/{USER}/sessions/{session_id}/events/{event_id}"
        remembered = next(
            (mid for mid, m in self.memories.items() if m.event == (session_id, event_id)), None
        )
        if remove:
            assert self.request("DELETE", url).status_code == 200
            said.remove((event_id, dict(said)[event_id]))
            if remembered is not None:
                del self.memories[remembered]
            return
        text = f"{word} {next(self.counter)}"
        answer = self.request("PATCH", url, json={"content": {"parts": [{"text": text}]}})
        assert answer.status_code == 200, answer.text
        said[said.index((event_id, dict(said)[event_id]))] = (event_id, text)
        if remembered is not None:
            memory = self.memories[remembered]
            memory.text = text
            memory.revisions.append((None, memory.topics))

    @precondition(lambda self: self.sessions)
    @rule(index=st.integers(0, 20))
    def delete_session(self, index: int) -> None:
        session_id = sorted(self.sessions)[index % len(self.sessions)]
        url = f"/apps/{self.app}/users/{USER}/sessions/{session_id}"
        assert self.request("DELETE", url).status_code == 204
        del self.sessions[session_id]
        for memory_id in [
            i for i, m in self.memories.items() if m.event and m.event[0] == session_id
        ]:
            del self.memories[memory_id]

    # What the service must show after every step.
    @invariant()
    def memories_read_as_modelled(self) -> None:
        for memory_id, memory in self.memories.items():
            found = self.request("GET", self.url(memory_id))
            assert found.status_code == 200, (memory_id, found.text)
            body = found.json()
            assert (body["text"], body["topics"], body["scope"]) == (
                memory.text,
                memory.topics,
                memory.scope,
            ), memory_id
            assert body["revision"] == len(memory.revisions)
            assert found.headers["etag"] == f'"{len(memory.revisions)}"'
            revisions = self.request("GET", f"{self.url(memory_id)}/revisions").json()
            assert [(r["text"], r["topics"]) for r in revisions["revisions"]] == [
                (text, topics) for text, topics in reversed(memory.revisions)
            ]
            MemoryMachine.reads += 1

    @invariant()
    def nothing_is_left_of_what_was_forgotten(self) -> None:
        """The rows are the model's: none of a deleted memory, event or session is left, and
        no revision or vector outlives its memory."""
        self.call(self._count_rows())

    async def _count_rows(self) -> None:
        async with self.app_under_test.state.pool.connection() as connection:
            stored = await connection.fetchval(
                "SELECT count(*) FROM memories WHERE app_name = $1", self.app
            )
            orphans = await connection.fetchval(
                """SELECT (SELECT count(*) FROM memory_revisions r WHERE r.app_name = $1
                       AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.app_name = r.app_name
                           AND m.user_id = r.user_id AND m.id = r.memory_id))
                     + (SELECT count(*) FROM memory_vectors v WHERE v.app_name = $1
                       AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.app_name = v.app_name
                           AND m.user_id = v.user_id AND m.id = v.memory_id))""",
                self.app,
            )
        assert (stored, orphans) == (len(self.memories), 0)

    @invariant()
    def listings_hold_the_models(self) -> None:
        for scope in ("user", "app"):
            listed = self.request("GET", self.base(scope), params={"pageSize": 100}).json()
            assert sorted(m["id"] for m in listed["memories"]) == sorted(
                i for i, m in self.memories.items() if m.scope == scope
            )

    @invariant()
    def recall_by_words_finds_what_holds_the_word(self) -> None:
        for word in WORDS:
            found = self.request(
                "POST",
                f"{self.base('user')}:recall",
                json={"query": word, "mode": "words", "limit": 100},
            ).json()
            assert sorted(hit["memory"]["id"] for hit in found["memories"]) == sorted(
                i for i, m in self.memories.items() if m.text.split()[0] == word
            ), word


async def test_memories_hold_under_every_operation(client: httpx.AsyncClient, app: FastAPI):
    reads = await MemoryMachine.run(client, app, steps=20)
    print(f"memories model: {reads} reads checked")
    assert reads > EXAMPLES * 5
