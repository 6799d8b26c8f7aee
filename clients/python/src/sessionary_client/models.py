"""The wire types, as typed dicts of the server's camelCase JSON (no parsing layer, no copies);
what the client itself makes of an answer (`Appended`, `StreamEvent`), as frozen dataclasses."""

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

State = dict[str, Any]
"""Key-value state. In a session: its own keys, app keys as `app:k`, user keys as `user:k`."""

Event = dict[str, Any]
"""An ADK event as JSON (`id`, `author`, `invocationId`, `timestamp`, `content`, `actions`, …).

Stored events also carry `seq`, their position in the log. Kept open: the server stores and
returns fields it does not know, so newer ADK fields survive a round trip.
"""

Order = Literal["asc", "desc"]
Kind = Literal["root", "fork", "child"]
Status = Literal["open", "closed"]
Outcome = Literal["completed", "failed", "canceled"]
Inherit = Literal["none", "all", "context"]


class Parent(TypedDict):
    """Where a fork or a child came from: a session of the same user (maybe deleted since)."""

    sessionId: str
    seq: int
    """The parent's version then; a fork holds the parent's events up to it."""
    functionCallId: str | None
    """For a child made for one of the parent's function calls."""


class Usage(TypedDict):
    """Token counts of `usageMetadata`, summed."""

    promptTokenCount: int
    candidatesTokenCount: int
    totalTokenCount: int


class Session(TypedDict):
    id: str
    appName: str
    userId: str
    state: State
    events: list[Event]
    lastUpdateTime: float
    createTime: float
    version: int
    """Counts the session's writes (an appended event takes the next as its `seq`): what
    `if_match` takes."""
    kind: Kind
    parent: Parent | None
    status: Status
    """A `closed` session refuses writes (`SessionClosedError`)."""
    outcome: Outcome | None
    usage: Usage
    """The sums of its events' `usageMetadata` token counts."""
    displayName: str | None
    labels: dict[str, str]
    expireTime: float | None
    """Epoch seconds when it expires (then it is gone); None: never."""


class SessionList(TypedDict):
    sessions: list[Session]


class SessionPage(TypedDict):
    sessions: list[Session]
    nextPageToken: str | None


class EventPage(TypedDict):
    events: list[Event]
    nextPageToken: str | None


class AppSummary(TypedDict):
    appName: str
    sessionCount: int
    lastUpdateTime: float


class AppPage(TypedDict):
    apps: list[AppSummary]
    nextPageToken: str | None


class UserSummary(TypedDict):
    userId: str
    sessionCount: int
    lastUpdateTime: float


class UserPage(TypedDict):
    users: list[UserSummary]
    nextPageToken: str | None


class EventList(TypedDict):
    events: list[Event]


class Trimmed(TypedDict):
    removedEvents: int
    keptEvents: int
    version: int


class EventsRemoved(TypedDict):
    removedEventIds: list[str]
    """The event asked for, then the events that answered its function calls."""
    version: int


class ContextView(TypedDict):
    """What a model should see next (`get_context`)."""

    events: list[Event]
    """Live events in order: rewound ones left out, summaries in place of what they compact,
    the oldest left out until the rest fits the budget, never a call without its answers."""
    estimatedTokens: int
    truncatedBeforeSeq: int | None
    """The first event's seq when older live events were left out for the budget."""
    overBudget: bool
    """Even the newest event with the calls it answers exceeds the budget (shown anyway)."""


CompactionStrategy = Literal["summary", "truncate", "observationMask"]
ToolCallStatus = Literal["pending", "orphaned", "answered"]


class ToolCall(TypedDict):
    """A function call of a session's live events (`list_tool_calls`)."""

    id: str
    name: str | None
    eventId: str
    seq: int
    timestamp: float
    status: ToolCallStatus
    deadline: float | None
    """When, unanswered, it becomes orphaned; None for a long-running call."""
    longRunning: bool


class Healed(TypedDict):
    healed: int
    """How many orphaned calls were answered with an error."""
    version: int


class UserUsage(Usage):
    userId: str
    events: int


class TotalUsage(Usage):
    events: int


class SearchHit(TypedDict):
    userId: str
    sessionId: str
    seq: int
    eventId: str
    author: str | None
    timestamp: float
    rank: float
    snippet: str
    """The text around the matches, HTML-escaped, each match in `<mark>…</mark>`."""


class SearchPage(TypedDict):
    hits: list[SearchHit]
    nextPageToken: str | None


class AppUsage(TypedDict):
    """An app's token usage (`get_app_usage`): by user, and in all."""

    users: list[UserUsage]
    total: TotalUsage


class EventCount(TypedDict):
    """How many events a session holds (`count_events`); the seqs are None without events."""

    count: int
    firstSeq: int | None
    lastSeq: int | None


class KeyScope(TypedDict):
    """What the client's API key reaches (`get_key_scope`); None: every app, or every user."""

    authEnabled: bool
    keyId: str | None
    appName: str | None
    userId: str | None
    readOnly: bool
    writesAppState: bool


ArtifactKind = Literal["bytes", "text", "reference"]

ArtifactPart = dict[str, Any]
"""An artifact as ADK's JSON carries it, a genai `Part` with one of `text`, `inlineData`
(`{"data": <base64>, "mimeType", "displayName"}`) or `fileData` (`{"fileUri", "mimeType",
"displayName"}`, a reference to content stored elsewhere)."""


class ArtifactVersion(TypedDict):
    """One saved version of an artifact: ADK's `ArtifactVersion` and what its content is."""

    name: str
    version: int
    """0 for the first save of the name."""
    canonicalUri: str
    """ADK's `artifact://` URI of this version (a reference to it reads as its content)."""
    customMetadata: dict[str, Any]
    createTime: float
    mimeType: str | None
    kind: ArtifactKind
    """`bytes` (an upload, or `inlineData`), `text`, or `reference` (`fileData`: no bytes)."""
    size: int
    sha256: str | None
    """Of its content, in hex: its download's `ETag`. None for a reference."""
    displayName: str | None
    fileUri: str | None
    """A reference's URI."""


class ArtifactPage(TypedDict):
    artifacts: list[ArtifactVersion]
    """The newest version of each name, by name."""
    nextPageToken: str | None


class ArtifactVersionPage(TypedDict):
    versions: list[ArtifactVersion]
    """Oldest first."""
    nextPageToken: str | None


MemoryKind = Literal["text", "event"]
MemoryScope = Literal["user", "app"]
RecallMode = Literal["hybrid", "meaning", "words"]


class MemorySource(TypedDict):
    """Where a memory was learnt: a session of its user, and events of it."""

    sessionId: str
    eventIds: NotRequired[list[str]]
    """Always in answers (maybe empty); optional in a request."""


class Embedding(TypedDict):
    """A vector of the client's, by a model of its own: recall by meaning compares it only
    with vectors of the same `model`."""

    model: str
    vector: list[float]


class Memory(TypedDict):
    """A memory: a text of its own (`kind` text), or an event of a session added to memory
    (`kind` event), whose text, content, author and timestamp are the event's. Its ETag is
    its `revision` (what `if_match` takes)."""

    id: str
    scope: MemoryScope
    """The user's, or the whole app's (every user's agents recall it)."""
    userId: str | None
    kind: MemoryKind
    revision: int
    """1 when made, +1 per change."""
    text: str | None
    """What is recalled: its text parts, joined."""
    content: dict[str, Any]
    """ADK's `Content` of it."""
    author: str | None
    metadata: dict[str, Any]
    topics: list[str]
    expireTime: float | None
    """When it is forgotten (epoch seconds); None: never."""
    source: MemorySource | None
    timestamp: float
    """When it was said: an event's timestamp, else when the memory was made."""
    createTime: float
    updateTime: float
    embedded: bool
    """The server's model has embedded its current revision (until then it is recalled by
    words)."""


class MemoryPage(TypedDict):
    memories: list[Memory]
    """Newest change first."""
    nextPageToken: str | None


class MemoryRevision(TypedDict):
    """One revision of a memory, as it was made (None text and content for an event's)."""

    revision: int
    text: str | None
    content: dict[str, Any] | None
    author: str | None
    metadata: dict[str, Any]
    topics: list[str]
    expireTime: float | None
    createTime: float


class MemoryRevisionPage(TypedDict):
    revisions: list[MemoryRevision]
    """Newest first."""
    nextPageToken: str | None


class RecalledMemory(TypedDict):
    memory: Memory
    score: float
    """Reciprocal rank fusion of its ranks by meaning and by words, over its best possible
    value: 1 is first in every way recall looked."""
    similarity: float | None
    """Cosine similarity to the query; None when not found by meaning."""
    wordScore: float | None
    """How well its words match, in [0, 1); None when no word matched."""


class RecallResult(TypedDict):
    memories: list[RecalledMemory]
    """Best first."""
    recalledBy: Literal["meaning+words", "meaning", "words"]
    note: str | None
    """Why recall by meaning was left out, when it was."""


class Remembered(TypedDict):
    remembered: int
    """Events added to memory by this call (not those added before)."""


class EmbeddingsStatus(TypedDict):
    """How memories are recalled now, and the embedding worker's progress."""

    recall: Literal["meaning+words", "words"]
    note: str | None
    """Why by words alone, when so."""
    pgvector: str | None
    provider: Literal["wordllama", "openai", "none"]
    model: str | None
    pending: int
    """Memories the server's model has not embedded yet."""
    rate: float | None
    """Memories embedded per second lately, by the answering process's worker."""


class AuditRecord(TypedDict):
    """One record of the audit log: who (a key's id) did what (ids and counts, never
    content), when, and how it went."""

    seq: int
    """Its place in the log: later records have larger ones."""
    time: float
    """When (epoch seconds)."""
    action: str
    """`session.delete`, `session.import`, `key.create`, `key.revoke`, `retention.sweep`, …"""
    keyId: str | None
    """The id of the API key that asked (never its secret); None with keys off, and for the
    command line and the sweeper."""
    appName: str | None
    user: str | None
    """The user as a pseudonym: a keyed hash of the app and the user id, never the id."""
    detail: dict[str, Any]
    """Ids (a session as a keyed hash too) and counts."""
    outcome: str
    """`ok`, or how it failed."""


class AuditPage(TypedDict):
    records: list[AuditRecord]
    """Newest first."""
    nextPageToken: str | None


ErasureStatus = Literal["running", "done"]


class Erasure(TypedDict):
    """An erase of a user of an app, running or done: what it has removed so far."""

    id: str
    """The erase's id, as the audit log names it."""
    appName: str
    userId: str
    """The user, as asked for (the server keeps no copy)."""
    status: ErasureStatus
    """`running`: the user's writes are refused (`UserErasingError`) and what is left is being
    deleted; `done`: nothing of the user is left."""
    removed: dict[str, int]
    """Rows removed so far, by kind: `sessions`, `events`, `pendingEvents`, `userStates`,
    `memories`, `memoryRevisions`, `memoryVectors`, `artifacts`, `artifactVersions`,
    `artifactBlobs`, `artifactChunks`, `apiKeys`, and any other table holding users' rows."""
    deletedKeyIds: list[str]
    """The ids of the user's API keys, deleted."""
    createTime: float
    """When the erase started (epoch seconds)."""
    updateTime: float
    """When it last moved (epoch seconds)."""
    finishTime: float | None
    """When it was done; None while it runs."""


class UserImportCounts(TypedDict):
    """What an import of a user's export counted, by kind."""

    sessions: int
    events: int
    """Of the sessions counted."""
    memories: int
    artifactVersions: int
    """Of the user's `user:` artifacts."""


class UserImport(TypedDict):
    """What an import of a user's export did (`import_user`), in one transaction."""

    created: UserImportCounts
    """What was not there and is now."""
    unchanged: UserImportCounts
    """What was there already, the same: the same export again creates nothing."""
    userStateKeys: int
    """Keys of the user's state written."""


class AppErasure(TypedDict):
    """An erase of a whole app, running or done: what it has removed so far."""

    id: str
    """The erase's id, as the audit log names it."""
    appName: str
    status: ErasureStatus
    """`running`: writes that make something of the app are refused (`AppErasingError`) and
    what is left is being deleted; `done`: nothing of the app is left."""
    removed: dict[str, int]
    """Rows removed so far, by kind: those of `Erasure.removed`, for every user, and
    `appStates`."""
    deletedKeyIds: list[str]
    """The ids of the API keys made for the app and its users, deleted."""
    createTime: float
    """When the erase started (epoch seconds)."""
    updateTime: float
    """When it last moved (epoch seconds)."""
    finishTime: float | None
    """When it was done; None while it runs."""


class ScopeState(TypedDict):
    state: State


class Health(TypedDict):
    status: Literal["ok"]


class Readiness(TypedDict):
    status: Literal["ready"]
    schemaRevision: str
    recall: Literal["meaning+words", "words"]
    """How memories are recalled now (`embeddings_status` says why by words alone)."""


@dataclass(frozen=True)
class Appended:
    """What an append did with an event: `stored` it now (201, it has its `seq`), found it
    `replayed` (200: this id was stored before with the same content, a retry; nothing was
    written), or `acknowledged` a `partial` one (202: echoed, never stored)."""

    event: Event
    outcome: Literal["stored", "replayed", "acknowledged"]

    @property
    def stored(self) -> bool:
        """This call wrote the event (not a retry of an earlier write, not a partial one)."""
        return self.outcome == "stored"


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event of a stream: `appended` (`data` the event), `updated`,
    `removed`, `trimmed`, `reset`, `resync`, `child`, `closed`, `deleted` on a session's;
    `created`, `updated`, `closed`, `deleted` on a user's or an app's, and `erased`
    (`data` `{"userId": …}`, None for the whole app) when the user or the app is erased."""

    event: str
    id: int | None
    """The version the change took (for `appended`, the event's seq): where to resume."""
    data: Any
    """The event's JSON: the appended event, the session, or what changed."""
