"""`SessionarySession`: the OpenAI Agents SDK's `Session` backed by a Sessionary server.

    session = SessionarySession("chat-42", app_name="support", user_id="ada")
    result = await Runner.run(agent, "Where is my refund?", session=session)

Each item is one event, stored once: `author` and `content` carry what ADK's readers
understand of it (so that the explorer, search, the context view and the tool-call view read
the conversation as they read an ADK one), `customMetadata.openai` the rest of it, and
`get_items` puts the two together again. The mapping and each method's meaning:
docs/openai-agents.md.
"""

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast
from weakref import WeakKeyDictionary

import httpx
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings

from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._core import DEFAULT_TIMEOUT, SessionReads
from sessionary_client.errors import NotFoundError, SessionAlreadyExistsError, SessionNotFoundError
from sessionary_client.models import Event, Session

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
else:
    TResponseInputItem = dict[str, Any]

ITEM_KEY = "openaiItem"
"""Where an event keeps an item whole, in `customMetadata`: an item that `author` and `content`
cannot carry in part, and every item stored before items were split (`REST_KEY`)."""

REST_KEY = "openai"
"""Where an event keeps the fields of its item that `author` and `content` do not carry, in
`customMetadata`: the item is stored once, split between them."""

# A page of the newest events when `get_items` has a limit: enough for it, never more than a page.
_MAX_PAGE = 1000

# A read of a session whose items were read before asks for this many of its newest events,
# and takes the rest from what was read, when only appends came since (`_Items.since`).
_RECENT = 32


def item_event(item: TResponseInputItem, invocation_id: str) -> Event:
    """The event that stores `item` once: what ADK's readers understand of it as `author` and
    `content`, its other fields in `customMetadata`; the item whole there when `event_item`
    would not give it back exactly from those, as the server returns them."""
    fields = cast(dict[str, Any], item)
    author, content, rest = _readable(fields)
    event: Event = {"invocationId": invocation_id, "author": author}
    if content is not None:
        event["content"] = content
    split: Event = {**event, "customMetadata": {REST_KEY: rest}}
    if rest is not None and event_item(_as_stored(split)) == fields:
        return split
    return {**event, "customMetadata": {ITEM_KEY: fields}}


def _readable(fields: dict[str, Any]) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """The item's `author` and `content` for ADK's readers, and its fields they leave out
    (None for a kind that they do not read)."""
    kind = fields.get("type", "message" if "role" in fields else None)
    rest = dict(fields)
    if kind == "message":
        role = str(rest.pop("role", "user"))
        said = rest.pop("content", None)
        if isinstance(said, list):
            rest["content"] = [_without_text(part) for part in said]
        parts = [{"text": text} for text in _texts(said)]
        return role, {"role": "model" if role == "assistant" else "user", "parts": parts}, rest
    if kind == "function_call":
        call: dict[str, Any] = {"id": rest.pop("call_id", None), "name": rest.pop("name", None)}
        arguments = rest.get("arguments")
        if isinstance(args := _args(arguments), dict):
            call["args"] = args
            if _arguments(_as_stored(args)) == arguments:
                del rest["arguments"]  # given back by `args`, as the server returns them
        return "assistant", {"role": "model", "parts": [{"functionCall": call}]}, rest
    if kind == "function_call_output":
        output = {"output": rest.pop("output", None)}
        answer = {"id": rest.pop("call_id", None), "response": output}
        return "tool", {"role": "user", "parts": [{"functionResponse": answer}]}, rest
    return "assistant", None, None


def _joined(rest: dict[str, Any], event: Event) -> dict[str, Any]:
    """The item `_readable` split into `event` and `rest`."""
    content = event.get("content")
    parts = [part for part in (content or {}).get("parts") or [] if isinstance(part, dict)]
    item = dict(rest)
    kind = rest.get("type", "message")
    if kind == "message":
        item["role"] = event.get("author")
        texts = [part.get("text") for part in parts]
        entries = rest.get("content")
        if isinstance(entries, list):  # each of its parts had a text, in order
            given = iter(texts)
            item["content"] = [
                {**entry, "text": next(given, None)} if isinstance(entry, dict) else entry
                for entry in entries
            ]
        elif len(texts) == 1:
            item["content"] = texts[0]
    elif kind == "function_call" and parts:
        call = parts[0].get("functionCall") or {}
        item["call_id"], item["name"] = call.get("id"), call.get("name")
        if "arguments" not in rest and "args" in call:
            item["arguments"] = _arguments(call["args"])
    elif kind == "function_call_output" and parts:
        answer = parts[0].get("functionResponse") or {}
        item["call_id"], item["output"] = (
            answer.get("id"),
            (answer.get("response") or {}).get("output"),
        )
    return item


def _texts(content: object) -> list[str]:
    """A message's text: the string, or its text parts (`input_text`, `output_text`, …)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [part["text"] for part in content if isinstance(part, dict) and "text" in part]


def _without_text(part: object) -> object:
    return {k: v for k, v in part.items() if k != "text"} if isinstance(part, dict) else part


def _args(arguments: object) -> object:
    """ADK's `args` (an object) from the call's `arguments` (JSON text), when they are one."""
    try:
        return json.loads(arguments, parse_constant=_refuse) if isinstance(arguments, str) else None
    except ValueError:
        return None


def _refuse(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")  # NaN and Infinity, which json reads


def _arguments(args: object) -> str:
    """A call's `arguments` as the SDK's models write them: compact JSON."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def _as_stored(value: Any) -> Any:
    """`value` as the server gives it back: PostgreSQL's JSONB orders an object's keys by
    length, then bytes, and writes a number like 1e+16 out in full (an integer)."""
    if isinstance(value, dict):
        order = sorted(value, key=lambda key: (len(key.encode()), key.encode()))
        return {key: _as_stored(value[key]) for key in order}
    if isinstance(value, list):
        return [_as_stored(item) for item in value]
    if isinstance(value, float) and "e+" in repr(value):
        return int(Decimal(repr(value)))
    return value


def _is_users(item: TResponseInputItem) -> bool:
    """A message of the user's: what begins a turn."""
    fields = cast(dict[str, Any], item)
    return fields.get("role") == "user" and fields.get("type", "message") == "message"


def event_item(event: Event) -> TResponseInputItem | None:
    """The item an event stores; None for an event that holds none."""
    metadata = event.get("customMetadata")
    if not isinstance(metadata, dict):
        return None
    if isinstance(whole := metadata.get(ITEM_KEY), dict):
        return cast(TResponseInputItem, whole)
    if isinstance(rest := metadata.get(REST_KEY), dict):
        return cast(TResponseInputItem, _joined(rest, event))
    return None


@dataclass(frozen=True)
class _Items:
    """A session's items as JSON text, as read at `version`: each `get_items` decodes them
    afresh, so what the SDK does with the items it is given changes nothing here."""

    version: int
    create_time: float
    texts: tuple[str, ...]

    def count(self) -> int:
        return len(self.texts)

    def since(self, newest: Session) -> "_Items | None":
        """These items and those of `newest` (a read of the newest events) appended since;
        None unless appends alone came since to the same session (not one deleted and made
        again under its id): its version then moved on by exactly the events after it (a
        removal, rewrite, reset or state write takes a version and appends nothing)."""
        if newest["createTime"] != self.create_time:
            return None
        new = [event for event in newest["events"] if event["seq"] > self.version]
        if [event["seq"] for event in new] != list(range(self.version + 1, newest["version"] + 1)):
            return None
        found = [event_item(event) for event in new]
        return _Items(
            newest["version"], self.create_time, self.texts + _dumped(filter(None, found))
        )


def _dumped(items: Iterable[TResponseInputItem]) -> tuple[str, ...]:
    return tuple(json.dumps(item, ensure_ascii=False) for item in items)


KEPT_ITEMS = 100_000
"""How many items, in all, the session objects on one client keep between reads."""

# The items of the sessions read through each client: every session object on that client
# reads from them, so a worker that makes one per request still reads what is new alone.
_KEPT: "WeakKeyDictionary[AsyncSessionaryClient, SessionReads[_Items]]" = WeakKeyDictionary()


class SessionarySession:
    """A conversation of the OpenAI Agents SDK kept in Sessionary: any number of processes
    may share it. The session is created by its first `add_items`."""

    session_settings: SessionSettings | None

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
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        """`client`: one to share between sessions (then `base_url`, `api_key` and `timeout`
        are its own); by default each session makes one, released by `close`.
        `session_settings`: as the SDK's own sessions take them (`limit`: what `get_items`
        reads when given no limit)."""
        self.session_id = session_id
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.app_name = app_name
        self.user_id = user_id
        self._owns_client = client is None
        self._invocation_id: str | None = None
        self.client = client or AsyncSessionaryClient(base_url, api_key=api_key, timeout=timeout)
        self._kept = _KEPT.setdefault(self.client, SessionReads(KEPT_ITEMS, _Items.count))

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Every item in order; with `limit`, the latest `limit` of them, in order.

        The items read are kept (as text, for every session object on the same client), and
        a later call asks the server only for the newest events, checked by the session's
        version: a turn's read costs what is new."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        key = (self.app_name, self.user_id, self.session_id)
        try:
            if limit is not None and self._kept.get(key) is None:
                return await self._latest(limit)
            return await self._read(key, limit)
        except SessionNotFoundError:
            self._kept.put(key, None)
            return []

    async def _read(self, key: tuple[str, str, str], limit: int | None) -> list[TResponseInputItem]:
        """The latest `limit` items (all without one), decoded afresh: from those kept and
        what was appended since, else from the session read whole (then kept)."""
        if (earlier := self._kept.get(key)) is not None:
            newest = await self.client.get_session(*key, num_recent_events=_RECENT)
            if (kept := earlier.since(newest)) is not None:
                self._kept.put(key, kept)
                texts = kept.texts if limit is None else kept.texts[-limit:]
                return [json.loads(text) for text in texts]
        read = await self.client.get_session(*key)
        found = [event_item(event) for event in read["events"]]
        items = [item for item in found if item is not None]
        self._kept.put(key, _Items(read["version"], read["createTime"], _dumped(items)))
        return items if limit is None else items[-limit:]

    async def _latest(self, limit: int) -> list[TResponseInputItem]:
        """The latest `limit` items, from the newest events back."""
        key = (self.app_name, self.user_id, self.session_id)
        items: list[TResponseInputItem] = []
        page_size = min(limit, _MAX_PAGE)
        async for event in self.client.iter_events(*key, page_size=page_size, order="desc"):
            if (item := event_item(event)) is not None:
                items.append(item)
                if len(items) == limit:
                    break
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
