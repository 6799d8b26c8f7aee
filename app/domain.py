"""Plain values passed between the layers: keys, queries, what is stored, what is read."""

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

# A state, or a delta to one: keys to JSON values.
StateMap = dict[str, Any]


@dataclass(frozen=True)
class ScopedDelta:
    """A delta split by scope, keys unprefixed; `temp:` keys are gone."""

    app: StateMap = field(default_factory=dict)
    user: StateMap = field(default_factory=dict)
    session: StateMap = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.app or self.user or self.session)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the view needs of an event, stored beside it: its token estimate, the ids of its
    function calls and of the calls its function responses answer (one per part)."""

    tokens: int
    calls: tuple[str, ...]
    responses: tuple[str, ...]


@dataclass(frozen=True)
class SessionKey:
    app_name: str
    user_id: str
    session_id: str

    def columns(self) -> dict[str, str]:
        """The key as statements bind it, by column name."""
        return {"app_name": self.app_name, "user_id": self.user_id, "session_id": self.session_id}


class Order(enum.StrEnum):
    """`asc`: oldest first; `desc`: newest first."""

    ASC = "asc"
    DESC = "desc"


@dataclass(frozen=True)
class EventQuery:
    """Which of a session's events a listing returns. A page token is bound to every field,
    so a new filter is a field here, a query parameter, and a clause in the repository."""

    after_seq: int | None = None  # exclusive
    after_timestamp: float | None = None  # inclusive
    before_timestamp: float | None = None  # exclusive
    order: Order = Order.ASC


@dataclass(frozen=True)
class SessionQuery:
    """Which sessions a listing returns: one user's, or (`user_id` None) every user's of an app;
    with `labels`, those with every one of them; with `display_name`, those so named."""

    app_name: str
    user_id: str | None
    order: Order = Order.ASC
    labels: tuple[tuple[str, str], ...] = ()
    display_name: str | None = None


@dataclass(frozen=True)
class Change:
    """A committed write to a session, as every worker hears of it (`app.repositories.live`):
    what happened, to which session, at which version.

    `kind`: created, appended, updated (an event rewritten), removed, trimmed, reset, closed,
    described (name, labels or expiry changed), deleted, or resync (too much to tell: read
    the session again); or erased, of a user (the session id empty) or an app (the user id
    empty too), whose streams end. `detail` is what the kind needs besides: an updated
    event's `seq`, removed `eventIds`, counts of a trim, a close's `outcome`, a new session's
    `kind`.
    """

    kind: str
    key: SessionKey
    version: int
    parent_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Deleted:
    """A session just deleted: its key, last version, and parent (a fork's or child's)."""

    key: SessionKey
    version: int
    parent_id: str | None


@dataclass(frozen=True)
class SearchQuery:
    """A full-text search of an app's events (`websearch_to_tsquery` syntax in `text`), with
    filters. A page token is bound to every field."""

    app_name: str
    text: str
    user_id: str | None = None
    session_id: str | None = None
    author: str | None = None
    after_timestamp: float | None = None  # inclusive
    before_timestamp: float | None = None  # exclusive


@dataclass(frozen=True)
class SearchHit:
    """An event that matches, with its rank and a snippet of its text."""

    user_id: str
    session_id: str
    seq: int
    event_id: str
    author: str | None
    timestamp: float
    rank: float
    snippet: str


@dataclass(frozen=True)
class Descriptor:
    """What a session is called and tagged with, and when it expires (None: never)."""

    display_name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    expire_time: float | None = None  # epoch seconds


UNDESCRIBED = Descriptor()


@dataclass(frozen=True)
class PageRequest:
    size: int
    token: str | None = None  # the previous page's `nextPageToken`


@dataclass(frozen=True)
class Usage:
    """Token counts as ADK's `usageMetadata` reports them (`promptTokenCount`,
    `candidatesTokenCount`, `totalTokenCount`): an event's (None where it reports none), or
    their sums."""

    prompt: int | None = None
    candidates: int | None = None
    total: int | None = None

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            (self.prompt or 0) + (other.prompt or 0),
            (self.candidates or 0) + (other.candidates or 0),
            (self.total or 0) + (other.total or 0),
        )


NO_USAGE = Usage(0, 0, 0)


@dataclass(frozen=True)
class NewEvent:
    """An event ready to store: its JSON document and the columns extracted from it."""

    id: str
    timestamp: float
    request_hash: bytes
    document: dict[str, Any]
    delta: ScopedDelta
    facts: Facts  # what the context view reads instead of the event
    usage: Usage
    text: str | None  # its words, which search indexes (`rules.search.event_text`)


@dataclass(frozen=True)
class Append:
    """One request's events for one session, stored at `expected_version` when it is set
    (`If-Match`)."""

    key: SessionKey
    events: Sequence[NewEvent]
    expected_version: int | None

    @property
    def shares_state(self) -> bool:
        """Whether it writes app or user state, which other sessions share."""
        return any(event.delta.app or event.delta.user for event in self.events)

    @property
    def writes_app_state(self) -> bool:
        """Whether it writes app state, which on Citus is a copy on every node."""
        return any(event.delta.app for event in self.events)


@dataclass(frozen=True)
class ParentLink:
    """Where a fork or a child came from (`app.schemas.Parent`)."""

    session_id: str
    seq: int
    function_call_id: str | None


@dataclass(frozen=True)
class History:
    """Where a session's point-in-time history starts, and what it keeps of events removed
    since: the state at every seq from `base_seq` to the version is `base_state` with the
    session-scoped delta of each event appended after `base_seq` applied in seq order, the
    events since removed included (`removed_deltas`: `{seq, stateDelta}` objects, in seq
    order, as `models.StorageSession` stores them)."""

    base_seq: int
    base_state: dict[str, Any]
    removed_deltas: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Origin:
    """How a new session comes to be: created (`ROOT`), forked, or made as a child.

    `version` is where its seqs go on from. Its history is `history` (a fork's, its parent's
    up to the fork point); None: it starts at `version`, from the state it is created with.
    """

    kind: str = "root"
    parent: ParentLink | None = None
    version: int = 0
    history: History | None = None


ROOT = Origin()


@dataclass(frozen=True)
class SessionRow:
    """A new session's row, every column as an insert writes it: made by a create, a fork or
    a child (`Origin`), or exactly as an export has it. Times in epoch seconds; `history`
    None: it starts at `version`, from `state` itself."""

    key: SessionKey
    state: dict[str, Any]
    version: int
    create_time: float
    update_time: float
    kind: str
    parent: ParentLink | None
    history: History | None
    descriptor: Descriptor
    status: str = "open"
    outcome: str | None = None


@dataclass(frozen=True)
class StoredSession:
    """A session row with the shared state of its app and user, before any events."""

    key: SessionKey
    state: dict[str, Any]
    app_state: dict[str, Any]
    user_state: dict[str, Any]
    version: int
    base_seq: int  # the kept history starts after it (`StorageSession.base_seq`)
    create_time: datetime
    update_time: datetime
    last_event_time: float | None
    kind: str
    parent: ParentLink | None
    status: str
    outcome: str | None
    usage: Usage
    display_name: str | None
    labels: dict[str, str]
    expire_time: datetime | None

    @property
    def last_update_time(self) -> float:
        """ADK's `lastUpdateTime`: its last event's timestamp, exactly as sent; while it has
        none, when it last changed."""
        if self.last_event_time is None:
            return self.update_time.timestamp()
        return self.last_event_time


@dataclass(frozen=True)
class SessionHeader:
    """What a session's export says of it before its events (`schemas.SessionExport`)."""

    session: StoredSession
    history: History
    event_count: int
    artifact_lines: int = 0


@dataclass(frozen=True)
class SharedState:
    """An app's state (`user_id` None) or a user's, in a bulk export."""

    app_name: str
    user_id: str | None
    state: dict[str, Any]


# A line of an export: a header, or an event as the UTF-8 JSON PostgreSQL rendered.
@dataclass(frozen=True)
class SessionRead:
    """A session with the events a read asked for, each the UTF-8 JSON PostgreSQL rendered."""

    session: StoredSession
    events: list[bytes]


@dataclass(frozen=True)
class ContextRead:
    """A context view: its events, each UTF-8 JSON, and what the budget made of them."""

    events: list[bytes]
    estimated_tokens: int
    truncated_before_seq: int | None
    over_budget: bool


Item = TypeVar("Item")


@dataclass(frozen=True)
class Page(Generic[Item]):
    items: list[Item]
    next_page_token: str | None


@dataclass(frozen=True)
class Tally:
    """An app, or a user of an app, as a directory lists it: how many live sessions it has, and
    when one of them last changed."""

    name: str
    sessions: int
    update_time: datetime


@dataclass(frozen=True)
class EventSpan:
    """How many events a session holds, and the seqs of its oldest and newest (None without
    events)."""

    count: int
    first_seq: int | None
    last_seq: int | None


@dataclass(frozen=True)
class ApiKey:
    """An API key, without its secret. `app_name` None: every app; `user_id` None: every user."""

    id: str
    name: str
    app_name: str | None
    user_id: str | None
    read_only: bool
    app_state_write: bool
    create_time: datetime | None = None
    revoke_time: datetime | None = None


@dataclass(frozen=True)
class ArtifactScope:
    """Where an artifact name is asked for: a session (`session_id`), or a user alone (None).
    A `user:` name lives in the user either way; any other needs a session."""

    app_name: str
    user_id: str
    session_id: str | None


@dataclass(frozen=True)
class NewArtifact:
    """What a save says of its version besides the bytes (ADK's `Part` and metadata).

    `kind`: `bytes` (`inline_data`), `text` (`text`, its bytes UTF-8) or `reference`
    (`file_data`: `file_uri`, no bytes)."""

    kind: str = "bytes"
    mime_type: str | None = None
    display_name: str | None = None
    file_uri: str | None = None
    custom_metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredArtifact:
    """A version as stored: ADK's `ArtifactVersion` and what its bytes are; `blob_id`,
    `chunk_size` and `store` say where they are (None for a reference)."""

    name: str
    version: int
    kind: str
    mime_type: str | None
    display_name: str | None
    file_uri: str | None
    content_hash: bytes | None
    size: int
    custom_metadata: dict[str, Any]
    create_time: datetime
    session_id: str | None  # None for a `user:` name
    saved_at: int | None = None
    blob_id: str | None = None
    chunk_size: int = 0
    store: str = "postgres"  # where the bytes are: chunk rows, or the object store ("s3")


@dataclass(frozen=True)
class ArtifactBytes:
    """A piece of an artifact's content, in an export."""

    content_hash: bytes
    data: bytes


@dataclass(frozen=True)
class UserArtifactsHeader:
    """What a user's export says before their `user:` artifacts' lines."""

    app_name: str
    user_id: str
    artifact_lines: int


@dataclass(frozen=True)
class MemoryLine:
    """A memory with its revisions and vectors, as the UTF-8 JSON PostgreSQL rendered."""

    data: bytes


# A line of an export: a header, an event (its JSON), an artifact's version or bytes, a
# memory.
ExportItem = (
    SessionHeader
    | SharedState
    | bytes
    | StoredArtifact
    | ArtifactBytes
    | UserArtifactsHeader
    | MemoryLine
)


@dataclass(frozen=True)
class MemoryOwner:
    """Whose memories: a user's of an app, or the app's own (`user_id` None), facts every
    user of the app shares."""

    app_name: str
    user_id: str | None

    @property
    def stored_user(self) -> str:
        """The `user_id` column: '' for the app's, which no user id can be."""
        return self.user_id or ""


@dataclass(frozen=True)
class MemoryDraft:
    """What a create, an update or a rollback writes as a memory's new revision."""

    text: str | None
    content: dict[str, Any] | None
    author: str | None
    metadata: dict[str, Any]
    topics: list[str]
    expire_time: float | None


@dataclass(frozen=True)
class StoredMemory:
    """A memory as the API answers it; a remembered event's text, content and author are the
    event's as it is now."""

    id: str
    user_id: str | None  # None: the app's
    kind: str  # "text" | "event"
    revision: int
    text: str | None
    content: dict[str, Any] | None
    author: str | None
    metadata: dict[str, Any]
    topics: list[str]
    expire_time: datetime | None
    session_id: str | None
    event_ids: list[str]
    seq: int | None
    create_time: datetime
    update_time: datetime
    timestamp: float | None  # a remembered event's own time
    embedded: bool  # has a vector of the server's model for this revision


@dataclass(frozen=True)
class MemoryRevision:
    revision: int
    draft: MemoryDraft
    create_time: datetime


@dataclass(frozen=True)
class MemoryQuery:
    """A listing's filters."""

    topic: str | None
    session_id: str | None
    kind: str | None


@dataclass(frozen=True)
class RecallQuery:
    """A recall: by words (`text`) and by meaning (`text` embedded by the server, or a
    `vector` the client sent of its `model`), among the owner's memories (and the app's, with
    `with_app`)."""

    text: str | None
    vector: list[float] | None
    model: str | None
    limit: int
    min_score: float
    min_similarity: float
    topics: list[str]
    after: float | None
    before: float | None
    with_app: bool
    mode: str  # "hybrid" | "words" | "meaning"


@dataclass(frozen=True)
class Recalled:
    memory: StoredMemory
    score: float
    similarity: float | None
    word_score: float | None


@dataclass(frozen=True)
class Recall:
    """What a recall found, and how: `by` is "meaning+words", "meaning" or "words"; `note`
    says why meaning was left out, when it was asked for."""

    memories: list[Recalled]
    by: str
    note: str | None


# A position in the primary's write-ahead log as PostgreSQL prints a `pg_lsn` (`0/16B3748`):
# the high and low 32 bits of the 64-bit byte position, each in at most 8 hex digits.
POSITION_PATTERN = r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$"


def position_text(position: int) -> str:
    """A WAL position as PostgreSQL prints it: `0/16B3748`."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def position_value(text: str) -> int:
    """The 64-bit WAL position `text` names, as it matches POSITION_PATTERN."""
    high, _, low = text.partition("/")
    return int(high, 16) << 32 | int(low, 16)
