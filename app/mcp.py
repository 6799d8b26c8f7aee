"""`sessionary mcp`: a Model Context Protocol server an agent uses on its own history.

It is a client of a running Sessionary's REST API, not a second way into the database: each
tool call is requests to the API (one, for most tools), made with the caller's key, so a tool
can do exactly what that key may do on the API and nothing more. Over stdio the key is the one
this process was started with; over streamable HTTP, an MCP client's own `Authorization`
header is forwarded when it sends one, so each client acts with its own key.

The official MCP SDK (the `mcp` extra: `pip install '.[mcp]'` in a checkout) is imported here
only: `sessionary mcp` imports this module when it runs, and the service never does.
"""

import functools
import inspect
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Annotated, Any, Literal
from urllib.parse import quote

import httpx
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from app import mcp_http, mcp_text, workers
from app.limits import ARTIFACT_NAME_BYTES, ID_LENGTH
from app.rules.context import estimate_tokens

DEFAULT_URL = "http://127.0.0.1:8000"
INSTRUCTIONS = """\
Sessionary stores this agent's sessions: each is an ordered log of events (what the user
said, what the agent answered, its tool calls and their results) with the session's state.
Sessions belong to an app and, within it, to a user. Use recall for what you know about the
user (their memories, by meaning and by words), remember to keep a fact about them or add a
session to their memory, forget_memory to drop a memory that is wrong or stale; search to find
where something was said, get_session or list_events to read a session, get_context for what a
model should see next within a token budget, list_artifacts and read_artifact for the files a
session saved, and append_note to leave a note in a session for later turns.
Results are compact text (`#seq time author: text`, times in UTC), with the API's JSON as
structured content; a refusal comes back as an error naming its code."""
# How many sessions' last written versions are remembered (read-your-writes, below).
REMEMBERED = 1000


@dataclass
class Api:
    """Sessionary's REST API as the tools call it, with the caller's key.

    `written` keeps the version each session was at after this server's last write to it,
    so that reading it back asks for at least that version (`minVersion`): with a read
    replica, the API then answers from the primary until the replica has the note.
    """

    http: httpx.AsyncClient
    key: str | None
    written: dict[tuple[str, str, str], int] = field(default_factory=dict)

    async def call(
        self,
        ctx: "Ctx",
        show: Callable[[dict[str, Any]], str],
        method: str,
        where: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        session: tuple[str, str, str] | None = None,
    ) -> CallToolResult:
        """The API's answer as a tool result: `show`'s text of its JSON, the JSON as
        structured content; or the problem as an error result."""
        answer = await self.fetch(ctx, method, where, params=params, body=body, session=session)
        return answer if isinstance(answer, CallToolResult) else shown(answer, show(answer))

    async def fetch(
        self,
        ctx: "Ctx",
        method: str,
        where: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        session: tuple[str, str, str] | None = None,
    ) -> dict[str, Any] | CallToolResult:
        """The API's JSON answer, or the problem as an error result."""
        query = {name: value for name, value in (params or {}).items() if value is not None}
        if session is not None and method == "GET" and session in self.written:
            query["minVersion"] = self.written[session]
        try:
            response = await self.http.request(
                method, where, params=query, json=body, headers=self.headers(ctx)
            )
        except (httpx.InvalidURL, httpx.TransportError) as error:
            return self.unsent(error)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code == httpx.codes.NO_CONTENT:
            answer = {}  # done, with nothing to say (a DELETE)
        if response.is_error or not isinstance(answer, dict):
            return refused(response, answer)
        if session is not None and method != "GET" and "etag" in response.headers:
            self.remember(session, int(response.headers["etag"].strip('"')))
        return answer

    async def read(
        self, ctx: "Ctx", where: str, *, params: dict[str, Any], first: int
    ) -> "Content | CallToolResult":
        """The first `first` bytes of a content the API serves (an artifact's download): asked
        for with a `Range`, and the stream left there whatever comes, so that a large
        artifact is never read whole."""
        headers = self.headers(ctx, {"Range": f"bytes=0-{first - 1}"})
        data = bytearray()
        try:
            async with self.http.stream("GET", where, params=params, headers=headers) as response:
                if response.status_code == httpx.codes.REQUESTED_RANGE_NOT_SATISFIABLE:
                    return Content(b"", None, 0)  # empty: it has no first byte
                if response.is_redirect:  # a reference the API does not follow
                    return Content(b"", None, 0, response.headers["location"])
                if response.is_error:
                    await response.aread()
                    try:
                        answer = response.json()
                    except ValueError:
                        answer = None
                    return refused(response, answer)
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) >= first:
                        break
        except (httpx.InvalidURL, httpx.TransportError) as error:
            return self.unsent(error)
        whole = response.headers.get("content-range", "").rpartition("/")[2]
        length = response.headers.get("content-length", "")
        size = int(whole) if whole.isdigit() else int(length) if length.isdigit() else len(data)
        return Content(bytes(data[:first]), response.headers.get("content-type"), size)

    def headers(self, ctx: "Ctx", extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        authorization = self.authorization(ctx)
        if authorization is not None:
            headers["Authorization"] = authorization
        return headers

    def unsent(self, error: httpx.InvalidURL | httpx.TransportError) -> CallToolResult:
        """A request that never reached the API, as a tool error."""
        if isinstance(error, httpx.InvalidURL):
            # httpx refuses a URL over 64 KiB before sending it: an argument too long to send.
            detail = f"the arguments are too long for one request ({error}); shorten them."
            return refusal({"code": "validation_error", "detail": detail})
        reason = str(error) or type(error).__name__
        return refusal(
            {
                "code": "api_unreachable",
                "detail": f"cannot reach Sessionary at {self.http.base_url}: {reason}; "
                "check that it is running there.",
            }
        )

    def authorization(self, ctx: "Ctx") -> str | None:
        """The MCP client's own `Authorization` (streamable HTTP only), else the key this
        server was started with."""
        given = (ctx.headers or {}).get("authorization")
        if given:
            return given
        return f"Bearer {self.key}" if self.key else None

    def remember(self, session: tuple[str, str, str], version: int) -> None:
        self.written.pop(session, None)
        self.written[session] = version
        if len(self.written) > REMEMBERED:
            del self.written[next(iter(self.written))]


@dataclass
class Content:
    """The first bytes of a content the API served, its media type and its whole size; or,
    for a reference the API answered with its URI (303), where the content is."""

    data: bytes
    media_type: str | None
    size: int
    location: str | None = None


Ctx = Context[Api, Any]


def api(ctx: Ctx) -> Api:
    """The API client of this server, opened for as long as it runs (its lifespan)."""
    return ctx.request_context.lifespan_context


def refusal(problem: dict[str, Any]) -> CallToolResult:
    """An error result a model can act on: the API's `code` and `detail` first, then the
    whole problem as structured content."""
    status = f" (HTTP {problem['status']})" if "status" in problem else ""
    text = f"{problem['code']}{status}: {problem.get('detail') or problem.get('title', '')}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=problem, is_error=True
    )


def refused(response: httpx.Response, answer: Any) -> CallToolResult:
    """An error answer of the API: its problem, or its status and the start of its body."""
    if not isinstance(answer, dict) or "code" not in answer:
        answer = {"code": "http_error", "detail": response.text[:500]}
    return refusal({"status": response.status_code, **answer})


def shown(answer: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)


def path(*segments: str) -> str:
    """An API path of ids, each quoted whole: an id with a `/`, `?` or `#` is the API's to
    refuse or find, not a way to reach another route."""
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def one_segment(value: str) -> str:
    """An id that stays one segment of its path: quoting leaves `.` and `..` as they are, and
    a URL resolves them (`users/..` is the app's path), so another route would answer."""
    if value in (".", ".."):
        raise ValueError(f"`{value}` is not an id: it names a step of a path")
    return value


# An id that goes in the path: one segment, of the API's length.
PathId = Annotated[str, Field(min_length=1, max_length=ID_LENGTH), AfterValidator(one_segment)]
App = Annotated[PathId, Field(description="The agent application's name.")]
User = Annotated[PathId, Field(description="The user id the session belongs to.")]
SessionId = Annotated[PathId, Field(description="The session's id.")]
PageToken = Annotated[
    str | None,
    Field(
        description="`nextPageToken` of the previous page, to get the next one (with the same "
        "other arguments); omit for the first page."
    ),
]
PageSize = Annotated[int, Field(ge=1, le=1000, description="How many per page (1 to 1000).")]
# A note's signature, shown outside ADK's quotes (`[note:NAME] said:`): nothing to break out with.
NAME = r"^[A-Za-z0-9_.-]+$"


class Answer(BaseModel):
    """What an answer of the API always holds, as on the wire (camelCase); its other fields
    pass as they are, so the schema holds for a newer API too."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Event(Answer):
    """An event as stored: ADK's event JSON, with the `id`, `timestamp` and `seq` the server
    gave it."""

    id: str
    seq: int = Field(description="Its place in the session's log: 1, 2, … as appended.")
    timestamp: float = Field(description="Epoch seconds.")
    author: str | None = Field(default=None, description="`user`, an agent, `note:…`.")
    content: dict[str, Any] | None = Field(default=None, description="`role` and `parts`.")


class Note(Event):
    """The note as stored."""

    author: str = Field(description="`note:` and who wrote it.")


class Session(Answer):
    """A session: its state (`app:`, `user:` and its own keys), version and events."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any]
    events: list[Event] = Field(description="Oldest first; none in a listing.")
    version: int
    last_update_time: float = Field(description="Epoch seconds.")


NextPageToken = Annotated[
    str | None, Field(description="Give it as `page_token` for the next page; null at the end.")
]


class SessionPage(Answer):
    sessions: list[Session]
    next_page_token: NextPageToken


class EventPage(Answer):
    events: list[Event]
    next_page_token: NextPageToken


class Hit(Answer):
    """An event that matches: where it is, its rank and a snippet with the matches marked."""

    user_id: str
    session_id: str
    seq: int
    event_id: str
    author: str | None
    timestamp: float
    rank: float = Field(description="Higher is better.")
    snippet: str = Field(description="HTML-escaped, each match in `<mark>…</mark>`.")


class SearchPage(Answer):
    hits: list[Hit] = Field(description="Best match first.")
    next_page_token: NextPageToken


class Memory(Answer):
    """A memory: a text of its own (`kind` text), or an event of a session added to memory
    (`kind` event), whose text, author and timestamp are the event's."""

    id: str = Field(description="What forget_memory takes.")
    scope: str = Field(description="`user`: the user's; `app`: every user's of the app.")
    kind: str = Field(description="`text` or `event`.")
    text: str | None = Field(description="What is recalled.")
    topics: list[str]
    timestamp: float = Field(description="When it was said (epoch seconds).")
    revision: int


class RecalledMemory(Answer):
    memory: Memory
    score: float = Field(description="In (0, 1]: 1 is first both by meaning and by words.")


class Recalled(Answer):
    memories: list[RecalledMemory] = Field(description="Best first: those the text shows.")
    recalled_by: str = Field(description="`meaning+words`, `meaning` or `words`.")
    note: str | None = Field(description="Why recall by meaning was left out, when it was.")


class Remembered(Answer):
    memory: Memory | None = Field(description="The memory `text` made; null for a session.")
    remembered: int | None = Field(
        description="How many of the session's events were added now; null for a `text`."
    )


class Forgotten(Answer):
    id: str
    forgotten: bool = Field(description="False: there was no such memory.")


class ContextView(Answer):
    """The events a model should see next, within the budget."""

    events: list[Event]
    estimated_tokens: int
    truncated_before_seq: int | None = Field(
        description="The first seq shown when older events were left out; else null."
    )
    over_budget: bool = Field(description="Even the newest events do not fit: shown anyway.")


class Artifact(Answer):
    """One version of an artifact (a file a session saved): its record, not its content."""

    name: str = Field(description="Its name; a `user:` name is the user's, seen by each session.")
    version: int = Field(description="0 for the first save of the name, then 1, 2, …")
    mime_type: str | None = Field(description="Its media type.")
    kind: str = Field(description="`bytes`, `text` (a `Part`'s text) or `reference` (a URI).")
    size: int = Field(description="Its content's length in bytes (0 for a reference).")
    create_time: float = Field(description="When it was saved (epoch seconds).")


class ArtifactPage(Answer):
    artifacts: list[Artifact] = Field(description="The newest version of each name, by name.")
    next_page_token: NextPageToken


class ArtifactRead(Answer):
    """A version's record and, for text, its content as far as the budget goes."""

    artifact: Artifact
    text: str | None = Field(
        description="Its content, as text, as much as the budget holds; null when it is not "
        "read (not text, stored elsewhere, or ADK's removal marker)."
    )
    truncated: bool = Field(description="`text` is the start of the content only.")


def no_step(name: str) -> str:
    """An artifact name without `.` or `..` segments: a URL resolves them (`a/../b` is `b`),
    so another artifact, or another route, would answer."""
    if any(segment in (".", "..") for segment in name.split("/")):
        raise ValueError(f"`{name}` has a `.` or `..` segment: it names a step of a path")
    return name


ArtifactName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=ARTIFACT_NAME_BYTES,
        description="The artifact's name as list_artifacts shows it (`/` separates folders).",
    ),
    AfterValidator(no_step),
]


def artifact_path(app: str, user: str, session_id: str, name: str) -> str:
    """An artifact's API path: each segment of its name quoted, its `/` kept (the API takes a
    name's segments so, never an encoded `/`)."""
    where = path("apps", app, "users", user, "sessions", session_id, "artifacts")
    return f"{where}/{quote(name, safe='/')}"


async def list_sessions(
    ctx: Ctx,
    app: App,
    user: Annotated[
        PathId | None, Field(description="Only this user's sessions; omit for every user's.")
    ] = None,
    order: Annotated[
        Literal["asc", "desc"],
        Field(description="`desc`: most recently updated first; `asc`: least recently first."),
    ] = "desc",
    page_size: PageSize = 20,
    page_token: PageToken = None,
) -> Annotated[CallToolResult, SessionPage]:
    """List sessions (without their events): id, user, last update time, and the display
    name, labels, status and state each has. Use it to find a session to read when you do not
    know its id; a `page_token` at the end gives the next page."""
    where = path("apps", app, "users", user, "sessions") if user else path("apps", app, "sessions")
    params = {"order": order, "pageSize": page_size, "pageToken": page_token}
    return await api(ctx).call(ctx, mcp_text.session_page, "GET", where, params=params)


async def get_session(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    recent_events: Annotated[
        int, Field(ge=0, description="How many of its newest events to include (0: none).")
    ] = 20,
) -> Annotated[CallToolResult, Session]:
    """Read one session: its state (app:, user: and session keys), version, last update time
    and its newest events, oldest of them first. Use list_events to page further back and
    get_context for what fits a token budget."""
    params = {"numRecentEvents": recent_events}
    where = path("apps", app, "users", user, "sessions", session_id)
    return await api(ctx).call(
        ctx, mcp_text.session, "GET", where, params=params, session=(app, user, session_id)
    )


async def list_events(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    after_seq: Annotated[
        int | None, Field(ge=0, description="Only events after this seq (exclusive).")
    ] = None,
    order: Annotated[
        Literal["asc", "desc"], Field(description="`asc`: oldest first; `desc`: newest first.")
    ] = "asc",
    page_size: PageSize = 50,
    page_token: PageToken = None,
) -> Annotated[CallToolResult, EventPage]:
    """Page through a session's events by seq (1, 2, … in the order they were appended), one
    line each: `#seq time author: text`, calls (→) and results (←), state changes. Use it to
    read a long session piece by piece, or what came after a seq you saw; a `page_token` at
    the end gives the next page."""
    params = {
        "afterSeq": after_seq,
        "order": order,
        "pageSize": page_size,
        "pageToken": page_token,
    }
    where = path("apps", app, "users", user, "sessions", session_id, "events")
    return await api(ctx).call(
        ctx, mcp_text.event_page, "GET", where, params=params, session=(app, user, session_id)
    )


async def search(
    ctx: Ctx,
    app: App,
    q: Annotated[
        str,
        Field(
            min_length=1,
            description='Words to find, in web-search syntax: `refund order` (both), `"full '
            'refund"` (the phrase), `refund or return`, `refund -partial`. Words are stemmed.',
        ),
    ],
    user: Annotated[str | None, Field(description="Only this user's sessions.")] = None,
    session_id: Annotated[str | None, Field(description="Only this session.")] = None,
    author: Annotated[
        str | None,
        Field(description="Only events by this author (`user`, an agent, `note:agent`)."),
    ] = None,
    page_size: PageSize = 20,
    page_token: PageToken = None,
) -> Annotated[CallToolResult, SearchPage]:
    """Full-text search of the app's events (their text and the names of the functions they
    call), best matches first, each hit with its session, seq, time, author and a snippet
    around the matches. Use it to find where something was said, then read around the hit
    with list_events (after_seq = the hit's seq minus a few)."""
    params = {
        "q": q,
        "userId": user,
        "sessionId": session_id,
        "author": author,
        "pageSize": page_size,
        "pageToken": page_token,
    }
    where = path("apps", app, "search")
    return await api(ctx).call(ctx, mcp_text.search_page, "GET", where, params=params)


async def get_context(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    token_budget: Annotated[
        int, Field(ge=1, description="The most tokens the events may hold (estimated).")
    ],
) -> Annotated[CallToolResult, ContextView]:
    """What a model should see next from a session, within a token budget: the newest live
    events that fit (rewinds applied, compaction summaries in place of what they cover, a
    function call never separated from its response), the text of the answer itself within
    the budget. Use it to reload a conversation without reading all of it; the structured
    answer is `{events, estimatedTokens, truncatedBeforeSeq, overBudget}`."""
    where = path("apps", app, "users", user, "sessions", session_id, "context")
    # The API fits the events' own tokens; the text adds who and when to each. When the
    # text of its view is over, the API is asked again for the events whose text fits, so
    # that the view keeps its cuts (never a call without its response); the text is cut
    # itself only when that does not get there (a server with another token estimate).
    view = await api(ctx).fetch(ctx, "GET", where, params={"tokenBudget": token_budget})
    if isinstance(view, CallToolResult):
        return view
    fits = mcp_text.fitting(view["events"], token_budget)
    if len(fits) < len(view["events"]):
        asked = max(1, sum(map(estimate_tokens, fits)))
        view = await api(ctx).fetch(ctx, "GET", where, params={"tokenBudget": asked})
        if isinstance(view, CallToolResult):
            return view
    return shown(view, mcp_text.context(view, token_budget))


async def append_note(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    text: Annotated[str, Field(min_length=1, description="The note.")],
    author: Annotated[
        str,
        Field(
            pattern=NAME,
            max_length=64,
            description="Who writes the note: `agent` unless a name says more (letters, "
            "digits, `_`, `-`, `.`). The note's author is `note:` and this name.",
        ),
    ] = "agent",
) -> Annotated[CallToolResult, Note]:
    """Append a note to a session, as one event at the end of its log: a fact to keep, a
    decision, a summary for later turns. It becomes part of the session's history, by
    `note:<author>`, so that an ADK agent reading the session is shown it as a note quoted
    as context, never as a turn of the user or of an agent; search finds it. Answers the
    event as stored, with its seq."""
    # `note:` marks every note: ADK shows the words of any author but `user` and the agent
    # itself as another's, quoted, and an agent's name is an identifier, which has no `:`.
    event = {"author": f"note:{author}", "content": {"role": "user", "parts": [{"text": text}]}}
    where = path("apps", app, "users", user, "sessions", session_id, "events")
    return await api(ctx).call(
        ctx, mcp_text.note, "POST", where, body=event, session=(app, user, session_id)
    )


async def list_artifacts(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    page_size: PageSize = 50,
    page_token: PageToken = None,
) -> Annotated[CallToolResult, ArtifactPage]:
    """List a session's artifacts (the files its agents saved: reports, images, data) and
    the user's `user:` ones, by name, one line each: name, newest version, media type, size.
    Read a text one with read_artifact; a `page_token` at the end gives the next page."""
    where = path("apps", app, "users", user, "sessions", session_id, "artifacts")
    params = {"pageSize": page_size, "pageToken": page_token}
    return await api(ctx).call(ctx, mcp_text.artifact_page, "GET", where, params=params)


async def read_artifact(
    ctx: Ctx,
    app: App,
    user: User,
    session_id: SessionId,
    name: ArtifactName,
    version: Annotated[
        int | None, Field(ge=0, description="Which version; the newest when omitted.")
    ] = None,
    token_budget: Annotated[
        int,
        Field(
            ge=1,
            le=1_000_000,
            description="The most tokens the answer may hold (estimated: UTF-8 bytes / 4).",
        ),
    ] = 1000,
) -> Annotated[CallToolResult, ArtifactRead]:
    """Read a text artifact of a session (text, Markdown, CSV, JSON, XML, YAML) within a
    token budget: a line saying what it is, then its content, cut short when it does not fit,
    saying how many bytes are left out. Any other artifact (an image, a PDF, an archive)
    answers what it is and how big, never its bytes."""
    where = artifact_path(app, user, session_id, name)
    which = "latest" if version is None else str(version)
    record = await api(ctx).fetch(ctx, "GET", f"{where}/versions/{which}")
    if isinstance(record, CallToolResult):
        return record
    why = None
    if mcp_text.removed(record):
        why = mcp_text.ABSENT  # its download is a 404, as ADK loads it: absent
    elif record["kind"] == "reference":
        # An `artifact://` URI the API follows to another version; any other is elsewhere.
        if not str(record.get("fileUri")).startswith("artifact://"):
            why = mcp_text.ELSEWHERE
    elif not mcp_text.is_text(record.get("mimeType")):
        why = mcp_text.NOT_TEXT
    if why is None:
        # The estimate is UTF-8 bytes / 4: no more than budget * 4 bytes can be shown.
        params = {"version": record["version"]}
        got = await api(ctx).read(ctx, where, params=params, first=token_budget * 4)
        if isinstance(got, CallToolResult):
            return got
        if got.location is not None:
            why = mcp_text.ELSEWHERE
        elif not mcp_text.is_text(got.media_type):
            why = mcp_text.NOT_TEXT
        else:
            said, content, cut = mcp_text.artifact_text(
                record, got.data, got.size, got.media_type, token_budget
            )
            return shown({"artifact": record, "text": content, "truncated": cut}, said)
    answer = {"artifact": record, "text": None, "truncated": False}
    return shown(answer, mcp_text.artifact_unread(record, why, token_budget))


# The API's longest recall query.
QUERY_LENGTH = 1000
# The memories API's longest memory text.
MEMORY_TEXT = 32_768
# A topic as the memories API takes it, and how many a memory or a recall takes.
MemoryTopic = Annotated[str, Field(min_length=1, max_length=100)]
MemoryTopics = Annotated[list[MemoryTopic], Field(max_length=50)]


def user_memories(app: str, user: str) -> str:
    return path("apps", app, "users", user, "memories")


def distinct(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event once: a fork holds its parent's events, so a fork and its parent both
    added to memory hold a memory of the same event (as the memory service answers it)."""
    seen: set[str] = set()
    kept = []
    for hit in found:
        memory = hit["memory"]
        event_ids = (memory.get("source") or {}).get("eventIds") or []
        if memory.get("kind") == "event" and event_ids:
            if event_ids[0] in seen:
                continue
            seen.add(event_ids[0])
        kept.append(hit)
    return kept


async def recall(
    ctx: Ctx,
    app: App,
    user: User,
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=QUERY_LENGTH,
            description="A question or a topic, in plain words: `what food do I like?`.",
        ),
    ],
    max_results: Annotated[
        int, Field(ge=1, le=100, description="The most memories to answer.")
    ] = 10,
    topics: Annotated[
        MemoryTopics | None, Field(description="Only memories with one of these topics.")
    ] = None,
    token_budget: Annotated[
        int,
        Field(
            ge=1,
            le=1_000_000,
            description="The most tokens the answer may hold (estimated: UTF-8 bytes / 4).",
        ),
    ] = 1000,
) -> Annotated[CallToolResult, Recalled]:
    """What you know about the user: their memories that best answer a question, by meaning
    and by words (`what food do I like?` finds `I'm vegetarian.`), best first, one line each
    with its id, kind, time, score and text, within a token budget. It finds the facts kept
    with remember (the user's, and the app's that every user shares) and what the user said
    in sessions added to memory: the memories an ADK agent's `load_memory` gets from
    Sessionary's memory service. The first line says how they were recalled: by words
    alone, and why, when meaning is not available."""
    body: dict[str, Any] = {"query": query, "limit": max_results, "topics": topics or []}
    if not re.search(r"\w", query):
        # Nothing to mean: by meaning, the nearest memories would be any of them.
        body["mode"] = "words"
    found = await api(ctx).fetch(ctx, "POST", f"{user_memories(app, user)}:recall", body=body)
    if isinstance(found, CallToolResult):
        return found
    found = {**found, "memories": distinct(found["memories"])}
    said, count = mcp_text.recall(found, token_budget)
    # What the text shows, for a program to read as the model did.
    return shown({**found, "memories": found["memories"][:count]}, said)


async def remember(
    ctx: Ctx,
    app: App,
    user: User,
    text: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=MEMORY_TEXT,
            description="What to keep, as a sentence that stands on its own: `Ada is "
            "vegetarian.`, `Ada's invoice for the laptop is INV-20931.`",
        ),
    ] = None,
    topics: Annotated[
        MemoryTopics | None,
        Field(description="Labels to recall it by (`food`), with `text`."),
    ] = None,
    ttl_seconds: Annotated[
        float | None,
        Field(
            gt=0,
            le=100 * 365 * 86400,
            description="Forget it after this many seconds, with `text`; omit to keep it.",
        ),
    ] = None,
    session_id: Annotated[
        PathId | None,
        Field(
            description="With `text`: the session it was learnt in, kept as its source. "
            "Alone: add what the user said in this session to their memory."
        ),
    ] = None,
) -> Annotated[CallToolResult, Remembered]:
    """Keep something about the user for later sessions. With `text`: a memory of its own
    (a fact, a preference, a decision), recalled at once by its words and within moments by
    its meaning; answers its id, which forget_memory takes. With `session_id` alone: add what
    the user said in that session to their memory (again later adds only what is new).
    recall finds both."""
    if text is None:
        if session_id is None:
            detail = "`text` or `session_id` is required"
            return refusal({"code": "validation_error", "detail": detail})
        if topics or ttl_seconds is not None:
            # A session's events are remembered as they are: no labels or expiry of their own.
            detail = "`topics` and `ttl_seconds` go with `text`, not with a session alone"
            return refusal({"code": "validation_error", "detail": detail})
        where = f"{path('apps', app, 'users', user, 'sessions', session_id)}:remember"
        added = await api(ctx).fetch(ctx, "POST", where)
        if isinstance(added, CallToolResult):
            return added
        answer = {"memory": None, "remembered": added["remembered"]}
        return shown(answer, mcp_text.remembered_session(session_id, added["remembered"]))
    body: dict[str, Any] = {"text": text, "topics": topics or []}
    if ttl_seconds is not None:
        body["ttl"] = ttl_seconds
    if session_id is not None:
        body["source"] = {"sessionId": session_id}
    memory = await api(ctx).fetch(ctx, "POST", user_memories(app, user), body=body)
    if isinstance(memory, CallToolResult):
        return memory
    return shown({"memory": memory, "remembered": None}, mcp_text.remembered(memory))


async def forget_memory(
    ctx: Ctx,
    app: App,
    user: User,
    memory_id: Annotated[
        PathId, Field(description="The memory's id, as recall or remember showed it.")
    ],
) -> Annotated[CallToolResult, Forgotten]:
    """Forget one of the user's memories for good, by its id: a fact that was wrong or is no
    longer true (keep the new one with remember). A memory of a session's event leaves the
    session as it is: only memory forgets it. The app's memories, which every user shares,
    are not forgotten here. Says so when there was no such memory."""
    done = await api(ctx).fetch(
        ctx, "DELETE", path("apps", app, "users", user, "memories", memory_id)
    )
    if isinstance(done, CallToolResult):
        problem = done.structured_content or {}
        # Gone either way; the model is told it named no memory (a wrong id, or forgotten).
        if problem.get("code") != "memory_not_found":
            return done
    answer = {"id": memory_id, "forgotten": not isinstance(done, CallToolResult)}
    return shown(answer, mcp_text.forgotten(answer, user))


Tool = Callable[..., Awaitable[CallToolResult]]
READS: tuple[Tool, ...] = (
    list_sessions,
    get_session,
    list_events,
    search,
    get_context,
    recall,
    list_artifacts,
    read_artifact,
)
# What each writing tool does: adds (a note, a memory), or removes (a memory, idempotently).
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
REMOVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
WRITES: tuple[tuple[Tool, ToolAnnotations], ...] = (
    (append_note, ADDS),
    (remember, ADDS),
    (forget_memory, REMOVES),
)


def pin(tool: Tool, fixed: dict[str, str]) -> Tool:
    """The tool without the arguments this server was started with (`--app`, `--user`): a
    model is not asked for what it may not choose."""
    signature = inspect.signature(tool)
    fixed = {name: value for name, value in fixed.items() if name in signature.parameters}
    if not fixed:
        return tool

    @functools.wraps(tool)
    async def pinned(**arguments: Any) -> CallToolResult:
        return await tool(**arguments, **fixed)

    kept = [p for p in signature.parameters.values() if p.name not in fixed]
    pinned.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    pinned.__annotations__ = {
        name: hint for name, hint in tool.__annotations__.items() if name not in fixed
    }
    return pinned


class Server(MCPServer[Api]):
    """The SDK's server, with arguments that do not fit a tool refused in plain words."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Ctx | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            # The SDK's text would be pydantic's report, with its types and links.
            if not isinstance(error.__cause__, ValidationError):
                raise
            detail = misfits(error.__cause__)
            return refusal({"code": "validation_error", "detail": detail})


def misfits(error: ValidationError) -> str:
    """Each argument that does not fit, named: "`user` is required; `page_size`: …"."""
    said = []
    for problem in error.errors():
        name = ".".join(map(str, problem["loc"]))
        if problem["type"] == "missing":
            said.append(f"`{name}` is required")
        else:
            said.append(f"`{name}`: {problem['msg'].removeprefix('Value error, ')}")
    return "; ".join(said)


def build(url: str, key: str | None, app: str | None = None, user: str | None = None) -> Server:
    """The MCP server: its tools, calling the API at `url`."""

    @asynccontextmanager
    async def connect(_: MCPServer[Api]) -> AsyncIterator[Api]:
        timeout = httpx.Timeout(60, connect=10)
        headers = {"User-Agent": "sessionary-mcp"}
        async with httpx.AsyncClient(base_url=url, timeout=timeout, headers=headers) as http:
            yield Api(http, key)

    server = Server(
        "sessionary",
        version=version("sessionary"),
        instructions=INSTRUCTIONS,
        lifespan=connect,
        log_level="WARNING",
    )
    fixed = {name: value for name, value in (("app", app), ("user", user)) if value}
    for tool in READS:
        server.add_tool(pin(tool, fixed), annotations=ToolAnnotations(read_only_hint=True))
    for tool, hints in WRITES:
        server.add_tool(pin(tool, fixed), annotations=hints)
    return server


def serve(
    url: str,
    key: str | None,
    transport: str,
    host: str,
    port: int,
    app: str | None = None,
    user: str | None = None,
) -> None:
    # Ctrl-C ends it from the start, even where the shell that started it ignores SIGINT (a
    # background job's); `sessionary` ends quietly on it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = build(url, key, app, user)
    if transport == "stdio":
        print(f"sessionary mcp: MCP on stdio, for the API at {url}", file=sys.stderr)
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            pass
    else:
        try:
            workers.require_free_port(host, port)
        except workers.PortInUse as error:
            sys.exit(f"sessionary mcp: {error}; stop it or choose another --port.")
        where = f"[{host}]" if ":" in host else host
        mcp_http.serve(
            server.streamable_http_app(host=host),
            host,
            port,
            f"sessionary mcp: MCP on http://{where}:{port}/mcp (streamable HTTP), "
            f"for the API at {url}",
        )
