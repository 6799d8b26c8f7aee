"""`SessionaryMemoryService`: google-adk's `BaseMemoryService` over Sessionary's memories.

    runner = Runner(agent=agent, app_name="my-app",
                    session_service=SessionaryService(url),
                    memory_service=SessionaryMemoryService(url))

`search_memory` is the server's recall, by meaning and by words, over the user's memories and
the app's. A session Sessionary holds is added to memory by the server (`:remember`), which
keeps no copy of its events' text and forgets them with the session; events of a session it
does not hold, and `add_memory`'s entries, become memories of their own, each under an id
derived from it, so adding one again changes nothing.
"""

import asyncio
import hashlib
import json
import re
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from sessionary_client import errors
from sessionary_client import models as wire
from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._core import DEFAULT_TIMEOUT

# The API's longest recall query, and most event ids of one `:remember`.
_QUERY_LIMIT = 1000
_REMEMBER_LIMIT = 1000
# Memories created at once, by one call.
_CONCURRENCY = 8


class SessionaryMemoryService(BaseMemoryService):
    """ADK memory over Sessionary: what any process adds, every process recalls."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: AsyncSessionaryClient | None = None,
        max_results: int = 10,
    ) -> None:
        """`max_results` bounds what a search answers (1 to 100)."""
        self.client = client or AsyncSessionaryClient(
            base_url, timeout=timeout, retries=retries, api_key=api_key, headers=headers
        )
        self.max_results = max_results

    async def close(self) -> None:
        await self.client.aclose()

    async def add_session_to_memory(self, session: Session) -> None:
        """The server adds the stored session's events (what SESSIONARY_MEMORY_FROM takes: by
        default the user's), each once; a session it does not hold, its events' text."""
        try:
            await self.client.remember_session(session.app_name, session.user_id, session.id)
        except errors.SessionNotFoundError:
            await self._keep(session.app_name, session.user_id, session.events, session.id)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Events the session `session_id` holds are added by the server, whoever wrote
        them; the others' text is kept as memories of its own, once each. The call's
        `custom_metadata` is not used."""
        if not events:
            return
        if session_id is None:
            await self._keep(app_name, user_id, events, None)
            return
        held = [event.id for event in events]
        for start in range(0, len(held), _REMEMBER_LIMIT):
            chunk = held[start : start + _REMEMBER_LIMIT]
            try:
                await self.client.remember_session(app_name, user_id, session_id, event_ids=chunk)
            except errors.SessionNotFoundError:
                await self._keep(app_name, user_id, events, session_id)
                return
            except errors.InvalidRequestError:
                # Some are not the session's (the server adds none then): add those it holds.
                stored = await self._stored(app_name, user_id, session_id, events, set(chunk))
                if stored:
                    await self.client.remember_session(
                        app_name, user_id, session_id, event_ids=stored
                    )
                chosen = set(chunk) - set(stored)
                loose = [event for event in events if event.id in chosen]
                await self._keep(app_name, user_id, loose, session_id)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Each entry becomes a memory of the user, with its content, author and
        `custom_metadata` (as its metadata), under its id, else one derived from its
        content: an entry added again is there already. The call's `custom_metadata` is
        not used."""
        await _all(
            self._create(
                app_name,
                user_id,
                memory_id=entry.id or _derived("memory", _content_json(entry.content)),
                content=_content_json(entry.content),
                author=entry.author,
                metadata=dict(entry.custom_metadata),
            )
            for entry in memories
        )

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The memories of the user, and of the app, that best answer the query, by meaning
        and by words, best first (none for a query without a word)."""
        query = query.strip()[:_QUERY_LIMIT]
        if not re.search(r"\w", query):  # nothing to mean: the nearest would be any memory
            return SearchMemoryResponse()
        found = await self.client.recall_memories(app_name, user_id, query, limit=self.max_results)
        entries: list[MemoryEntry] = []
        seen: set[str] = set()
        for recalled in found["memories"]:
            memory = recalled["memory"]
            # A fork holds its parent's events: one memory, whichever session added it.
            said = _event_key(memory)
            if said is not None and said in seen:
                continue
            if said is not None:
                seen.add(said)
            entries.append(_entry(recalled))
        return SearchMemoryResponse(memories=entries)

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget the user's memory of that id (as `search_memory` gave it); one already
        gone is no error. The app's memories, which every user shares, are not deleted
        through one user's memory: `delete_app_memory` does that."""
        if not memory_id:
            return
        try:
            await self.client.delete_memory(app_name, user_id, memory_id)
        except errors.MemoryNotFoundError:
            pass

    async def _stored(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: Sequence[Event],
        wanted: set[str],
    ) -> list[str]:
        """Which of the `wanted` event ids the stored session holds: read from a little
        before the earliest timestamp among those events on."""
        earliest = min(event.timestamp for event in events if event.id in wanted)
        found: list[str] = []
        async for stored in self.client.iter_events(
            app_name, user_id, session_id, after_timestamp=max(earliest - 1, 0), page_size=1000
        ):
            if stored["id"] in wanted:
                found.append(stored["id"])
                if len(found) == len(wanted):
                    break
        return found

    async def _keep(
        self, app_name: str, user_id: str, events: Iterable[Event], session_id: str | None
    ) -> None:
        """The text of events that no stored session holds, as memories of their own: by
        their authors, learnt in `session_id` when there is one, once each by event id."""
        await _all(
            self._create(
                app_name,
                user_id,
                memory_id=_derived("event", session_id or "", event.id),
                content=_content_json(event.content),
                author=event.author,
                source=None if session_id is None else _source(session_id, event.id),
            )
            for event in events
            if event.content and any(part.text for part in event.content.parts or [])
        )

    async def _create(
        self,
        app_name: str,
        user_id: str,
        *,
        memory_id: str,
        content: dict[str, Any],
        author: str | None,
        metadata: dict[str, Any] | None = None,
        source: wire.MemorySource | None = None,
    ) -> None:
        """Create the memory; one of that id is the same one, made before."""
        try:
            await self.client.create_memory(
                app_name,
                user_id,
                memory_id=memory_id,
                content=content,
                author=author,
                metadata=metadata,
                source=source,
            )
        except errors.MemoryAlreadyExistsError:
            pass


async def _all(calls: Iterable[Awaitable[None]]) -> None:
    """Run the calls, a few at a time."""
    limit = asyncio.Semaphore(_CONCURRENCY)

    async def bounded(call: Awaitable[None]) -> None:
        async with limit:
            await call

    await asyncio.gather(*(bounded(call) for call in calls))


def _content_json(content: types.Content | None) -> dict[str, Any]:
    if content is None:
        return {}
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def _derived(kind: str, *parts: str | dict[str, Any]) -> str:
    """An id that the same parts always give: `kind-` and 32 hex digits of their hash."""
    said = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{kind}-{hashlib.sha256(said.encode()).hexdigest()[:32]}"


def _source(session_id: str, event_id: str) -> wire.MemorySource:
    return {"sessionId": session_id, "eventIds": [event_id]}


def _event_key(memory: wire.Memory) -> str | None:
    """The event a memory of an event is of, by its id; None for a memory of its own."""
    source = memory["source"]
    if memory["kind"] != "event" or source is None or not source.get("eventIds"):
        return None
    return source["eventIds"][0]


def _entry(recalled: wire.RecalledMemory) -> MemoryEntry:
    """A recalled memory as ADK's memory tools show it: its content, author, time (ISO 8601,
    UTC) and id; its metadata, with where it came from and its score."""
    memory = recalled["memory"]
    where: dict[str, Any] = {"scope": memory["scope"], "score": recalled["score"]}
    if memory["source"] is not None:
        where["session_id"] = memory["source"]["sessionId"]
        where["event_ids"] = memory["source"].get("eventIds", [])
    return MemoryEntry(
        id=memory["id"],
        content=types.Content.model_validate(memory["content"]),
        author=memory["author"],
        timestamp=datetime.fromtimestamp(memory["timestamp"], UTC).isoformat(timespec="seconds"),
        custom_metadata={**memory["metadata"], **where},
    )
