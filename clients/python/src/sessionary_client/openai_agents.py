"""`SessionarySession`: the OpenAI Agents SDK's `Session` backed by a Sessionary server.

    session = SessionarySession("chat-42", app_name="support", user_id="ada")
    result = await Runner.run(agent, "Where is my refund?", session=session)

Each item is one event: the item kept whole in `customMetadata.openaiItem` (what `get_items`
returns), `author` and `content` derived from it so that the explorer, search, the context view
and the tool-call view read the conversation as they read an ADK one. The mapping and each
method's meaning: docs/openai-agents.md.
"""

import json
import uuid
from typing import TYPE_CHECKING, Any, cast

import httpx

from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._core import DEFAULT_TIMEOUT
from sessionary_client.errors import NotFoundError, SessionAlreadyExistsError, SessionNotFoundError
from sessionary_client.models import Event

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
else:
    TResponseInputItem = dict[str, Any]

ITEM_KEY = "openaiItem"
"""Where an event keeps its item, in `customMetadata`."""

# A page of the newest events when `get_items` has a limit: enough for it, never more than a page.
_MAX_PAGE = 1000


def item_event(item: TResponseInputItem, invocation_id: str) -> Event:
    """The event that stores `item`: the item whole, and what ADK's readers understand of it."""
    fields = cast(dict[str, Any], item)
    kind = fields.get("type", "message" if "role" in fields else None)
    event: Event = {"invocationId": invocation_id, "customMetadata": {ITEM_KEY: fields}}
    if kind == "message":
        role = str(fields.get("role", "user"))
        event["author"] = role
        event["content"] = {
            "role": "model" if role == "assistant" else "user",
            "parts": [{"text": text} for text in _texts(fields.get("content"))],
        }
    elif kind == "function_call":
        event["author"] = "assistant"
        call = {"id": fields.get("call_id"), "name": fields.get("name")}
        event["content"] = {"role": "model", "parts": [{"functionCall": {**call, **_args(fields)}}]}
    elif kind == "function_call_output":
        event["author"] = "tool"
        answer = {"id": fields.get("call_id"), "response": {"output": fields.get("output")}}
        event["content"] = {"role": "user", "parts": [{"functionResponse": answer}]}
    else:
        event["author"] = "assistant"
    return event


def _texts(content: object) -> list[str]:
    """A message's text: the string, or its text parts (`input_text`, `output_text`, …)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [part["text"] for part in content if isinstance(part, dict) and "text" in part]


def _args(call: dict[str, Any]) -> dict[str, Any]:
    """ADK's `args` (an object) from the call's `arguments` (JSON text), when they are one."""
    try:
        args = json.loads(call.get("arguments") or "{}")
    except (TypeError, ValueError):
        return {}
    return {"args": args} if isinstance(args, dict) else {}


def _is_users(item: TResponseInputItem) -> bool:
    """A message of the user's: what begins a turn."""
    fields = cast(dict[str, Any], item)
    return fields.get("role") == "user" and fields.get("type", "message") == "message"


def event_item(event: Event) -> TResponseInputItem | None:
    """The item an event stores; None for an event that holds none."""
    metadata = event.get("customMetadata")
    item = metadata.get(ITEM_KEY) if isinstance(metadata, dict) else None
    return cast(TResponseInputItem, item) if isinstance(item, dict) else None


class SessionarySession:
    """A conversation of the OpenAI Agents SDK kept in Sessionary: any number of processes
    may share it. The session is created by its first `add_items`."""

    session_settings: "SessionSettings | None" = None

    def __init__(
        self,
        session_id: str,
        *,
        app_name: str,
        user_id: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        client: AsyncSessionaryClient | None = None,
    ) -> None:
        """`client`: one to share between sessions (then `base_url`, `api_key` and `timeout`
        are its own); by default each session makes one, released by `close`."""
        self.session_id = session_id
        self.app_name = app_name
        self.user_id = user_id
        self._owns_client = client is None
        self._invocation_id: str | None = None
        self.client = client or AsyncSessionaryClient(base_url, api_key=api_key, timeout=timeout)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Every item in order; with `limit`, the latest `limit` of them, in order."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        key = (self.app_name, self.user_id, self.session_id)
        items: list[TResponseInputItem] = []
        try:
            if limit is None:
                async for event in self.client.iter_events(*key, page_size=_MAX_PAGE):
                    if (item := event_item(event)) is not None:
                        items.append(item)
                return items
            if limit <= 0:
                return items
            page_size = min(limit, _MAX_PAGE)
            async for event in self.client.iter_events(*key, page_size=page_size, order="desc"):
                if (item := event_item(event)) is not None:
                    items.append(item)
                    if len(items) == limit:
                        break
        except SessionNotFoundError:
            return []
        return items[::-1]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items as events, in order, all or none; the first creates the session."""
        if not items:
            return
        if self._invocation_id is None or _is_users(items[0]):
            self._invocation_id = f"e-{uuid.uuid4()}"
        events = [item_event(item, self._invocation_id) for item in items]
        key = (self.app_name, self.user_id, self.session_id)
        try:
            await self.client.append_events(*key, events)
            return
        except SessionNotFoundError:
            pass
        try:
            await self.client.create_session(
                self.app_name, self.user_id, session_id=self.session_id, events=events
            )
        except SessionAlreadyExistsError:  # made meanwhile by another process: append to it
            await self.client.append_events(*key, events)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item and return it; None when there is none."""
        key = (self.app_name, self.user_id, self.session_id)
        while True:
            try:
                async for event in self.client.iter_events(*key, page_size=10, order="desc"):
                    if (item := event_item(event)) is not None:
                        break
                else:
                    return None
                await self.client.remove_event(*key, event["id"])
                return item
            except SessionNotFoundError:
                return None
            except NotFoundError:  # removed meanwhile by another process: the next one
                continue

    async def clear_session(self) -> None:
        """Remove every item (the session's events and state); the session itself stays."""
        try:
            await self.client.reset_session(self.app_name, self.user_id, self.session_id)
        except SessionNotFoundError:
            pass

    async def close(self) -> None:
        """Release the connections of the client this session made (not a shared one)."""
        if self._owns_client:
            await self.client.aclose()
