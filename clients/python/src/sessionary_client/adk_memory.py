"""`SessionaryMemoryService`: google-adk's `BaseMemoryService` over the sessions Sessionary holds.

    runner = Runner(agent=agent, app_name="my-app",
                    session_service=SessionaryService(url),
                    memory_service=SessionaryMemoryService(url))

A session's events are stored already, so adding one to memory copies nothing: it records, in
the user's memory session (`memory` unless told otherwise), how far the session is
remembered (the timestamp of its newest event added). Explicit memories (`add_memory`), and
events that are in no stored session, are events of that memory session. `search_memory` is
the server's full-text search over the user's events, any of the query's words, best first,
keeping what memory holds: events of remembered sessions up to how far each is remembered,
and the memory session's own.

Nothing is written to a remembered session itself: its version stays where a runner loaded
it, so adding it to memory mid-invocation never makes the runner's next append stale.
"""

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
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

MEMORY_SESSION = "memory"
# The memory session's state key that says how far a session is remembered.
REMEMBERED = "remembered:"
# Who an explicit memory is by when its entry names no author.
MEMORY_AUTHOR = "memory"
# The search's page, and how many pages a search reads at most to find enough memories.
_PAGE, _PAGES = 100, 5
# The API's longest `q`.
_QUERY_LIMIT = 1000


def any_word(query: str) -> str | None:
    """The query as the search's web-search syntax for any of its words (`a or b or c`), as
    ADK's own memory services match; None when it has no word."""
    words = dict.fromkeys(word.lower() for word in re.findall(r"\w+", query))
    words.pop("or", None)  # the syntax's own word
    said = ""
    for word in words:
        joined = f"{said} or {word}" if said else word
        if len(joined) > _QUERY_LIMIT:
            break
        said = joined
    return said or None


def remembered(hit: wire.SearchHit, memory_session: str, index: Mapping[str, Any]) -> bool:
    """Whether memory holds the hit: an event of the memory session, or of a session
    remembered as far as the event."""
    if hit["sessionId"] == memory_session:
        return True
    until = index.get(REMEMBERED + hit["sessionId"])
    return isinstance(until, int | float) and hit["timestamp"] <= until


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
        memory_session: str = MEMORY_SESSION,
        max_results: int = 10,
    ) -> None:
        """`memory_session` is the id of each user's session that holds the memory's index and
        explicit memories; `max_results` bounds what a search answers."""
        self.client = client or AsyncSessionaryClient(
            base_url, timeout=timeout, retries=retries, api_key=api_key, headers=headers
        )
        self.memory_session = memory_session
        self.max_results = max_results

    async def close(self) -> None:
        await self.client.aclose()

    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session as far as its newest event; adding it again, or an older
        copy of it, changes nothing."""
        if session.events:
            newest = max(event.timestamp for event in session.events)
            await self._remember(session.app_name, session.user_id, session.id, newest)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Events of a stored session remember it as far as the newest of them (with those
        before: memory is how far each session goes). Events of no stored session are kept
        in the memory session, once each (by id)."""
        if not events:
            return
        if session_id is not None and session_id != self.memory_session:
            try:
                await self.client.get_session(app_name, user_id, session_id, num_recent_events=0)
            except errors.SessionNotFoundError:
                pass
            else:
                newest = max(event.timestamp for event in events)
                await self._remember(app_name, user_id, session_id, newest)
                return
        # What it said, by whom and when: never its actions, whose deltas would write state.
        kept = [
            {
                "id": event.id,
                "author": event.author,
                "timestamp": event.timestamp,
                "content": event.content.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
            for event in events
            if event.content and event.content.parts
        ]
        await self._keep(app_name, user_id, kept)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Each entry becomes an event of the memory session, by its author (else `memory`),
        at its time (else now); an entry without an id gets one from what it says, so adding
        it again stores nothing."""
        await self._keep(app_name, user_id, [_entry_event(entry) for entry in memories])

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's remembered events that share a word with the query, best first."""
        words = any_word(query)
        if words is None:
            return SearchMemoryResponse()
        index = await self._index(app_name, user_id)
        if index is None:
            return SearchMemoryResponse()
        hits: dict[str, wire.SearchHit] = {}
        token: str | None = None
        for _ in range(_PAGES):
            page = await self.client.search(
                app_name, words, user_id=user_id, page_size=_PAGE, page_token=token
            )
            for hit in page["hits"]:
                # A fork holds its parent's events: one memory, whichever session it was found in.
                if remembered(hit, self.memory_session, index):
                    hits.setdefault(hit["eventId"], hit)
            token = page["nextPageToken"]
            if len(hits) >= self.max_results or token is None:
                break
        chosen = list(hits.values())[: self.max_results]
        events = await asyncio.gather(*(self._event(app_name, user_id, hit) for hit in chosen))
        return SearchMemoryResponse(
            memories=[
                self._memory(hit, event)
                for hit, event in zip(chosen, events, strict=True)
                if event is not None
            ]
        )

    async def _index(self, app_name: str, user_id: str) -> dict[str, Any] | None:
        """The memory session's state (how far each session is remembered); None when the
        user has no memory."""
        try:
            memory = await self.client.get_session(
                app_name, user_id, self.memory_session, num_recent_events=0
            )
        except errors.SessionNotFoundError:
            return None
        return memory["state"]

    async def _remember(self, app_name: str, user_id: str, session_id: str, until: float) -> None:
        """Record that memory holds the session up to `until`, unless it holds it further:
        a conditional append, read again when another process wrote between."""
        key = REMEMBERED + session_id
        while True:
            try:
                memory = await self.client.get_session(
                    app_name, user_id, self.memory_session, num_recent_events=0
                )
            except errors.SessionNotFoundError:
                try:
                    await self.client.create_session(
                        app_name, user_id, session_id=self.memory_session, state={key: until}
                    )
                    return
                except errors.SessionAlreadyExistsError:
                    continue
            known = memory["state"].get(key)
            if isinstance(known, int | float) and known >= until:
                return
            event = {"author": MEMORY_AUTHOR, "actions": {"stateDelta": {key: until}}}
            try:
                await self.client.append_event(
                    app_name, user_id, self.memory_session, event, if_match=memory["version"]
                )
                return
            except errors.StaleSessionError:
                continue

    async def _keep(self, app_name: str, user_id: str, events: list[wire.Event]) -> None:
        """Append events to the memory session, made when missing; ids already there with
        the same content are stored once."""
        if not events:
            return
        try:
            await self.client.append_events(app_name, user_id, self.memory_session, events)
        except errors.SessionNotFoundError:
            try:
                await self.client.create_session(
                    app_name, user_id, session_id=self.memory_session, events=events
                )
            except errors.SessionAlreadyExistsError:
                await self.client.append_events(app_name, user_id, self.memory_session, events)

    async def _event(self, app_name: str, user_id: str, hit: wire.SearchHit) -> wire.Event | None:
        """The hit's event as stored; None when it went since the search."""
        page = await self.client.list_events(
            app_name, user_id, hit["sessionId"], after_seq=hit["seq"] - 1, page_size=1
        )
        found = page["events"]
        return found[0] if found and found[0]["id"] == hit["eventId"] else None

    def _memory(self, hit: wire.SearchHit, event: wire.Event) -> MemoryEntry:
        """A remembered event as ADK's memory tools show it: its content, author and time
        (ISO 8601, UTC), and where it is; an explicit memory with its own metadata too."""
        where = {"session_id": hit["sessionId"], "seq": hit["seq"]}
        own = event.get("customMetadata") if hit["sessionId"] == self.memory_session else None
        return MemoryEntry(
            id=event["id"],
            content=types.Content.model_validate(event.get("content") or {}),
            author=event.get("author"),
            timestamp=datetime.fromtimestamp(event["timestamp"], UTC).isoformat(timespec="seconds"),
            custom_metadata={**(own or {}), **where},
        )


def _entry_event(entry: MemoryEntry) -> wire.Event:
    content = entry.content.model_dump(mode="json", by_alias=True, exclude_none=True)
    event: wire.Event = {"author": entry.author or MEMORY_AUTHOR, "content": content}
    if entry.timestamp:
        event["timestamp"] = datetime.fromisoformat(entry.timestamp).timestamp()
    if entry.custom_metadata:
        event["customMetadata"] = entry.custom_metadata
    said = json.dumps(event, sort_keys=True, separators=(",", ":"))
    event["id"] = entry.id or "memory-" + hashlib.sha256(said.encode()).hexdigest()[:32]
    return event
