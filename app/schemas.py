"""The wire format: ADK's camelCase JSON, accepting snake_case on input."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from pydantic.alias_generators import to_camel
from typing_extensions import TypeAliasType

from app.errors import PROBLEM_CODES
from app.limits import (
    DISPLAY_NAME_LENGTH,
    ID_LENGTH,
    ID_PATTERN,
    INT64_MAX,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_LENGTH,
    MAX_LABELS,
    MAX_LIFETIME,
    MAX_TIMESTAMP,
    MIN_LIFETIME,
    MIN_TIMESTAMP,
    SESSION_VERBS,
)

ID_DESCRIPTION = f"1 to {ID_LENGTH} characters, no `/` and no control characters."

Id = Annotated[
    str,
    StringConstraints(min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN),
    Field(description=ID_DESCRIPTION),
]


def _not_a_verb(session_id: str) -> str:
    verb = session_id.rpartition(":")[2]
    if ":" in session_id and verb in SESSION_VERBS:
        raise ValueError(f"a session id must not end in `:{verb}`, which names a verb on its path")
    return session_id


NewSessionId = Annotated[
    Id,
    AfterValidator(_not_a_verb),
    Field(
        description=f"{ID_DESCRIPTION} Not ending in a verb of the session paths "
        f"({', '.join(f'`:{verb}`' for verb in SESSION_VERBS)}). Generated (a UUID) when absent."
    ),
]
Seq = Annotated[int, Field(ge=0, le=INT64_MAX)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
# Epoch seconds, years 1 to 9999: every time the wire takes.
EpochSeconds = Annotated[float, Field(ge=MIN_TIMESTAMP, le=MAX_TIMESTAMP, allow_inf_nan=False)]
# A named alias, so the spec has one `State` schema and generated SDKs one State class.
State = TypeAliasType(
    "State",
    Annotated[
        dict[str, Any],
        Field(
            description="Key-value state. In a delta, `app:` and `user:` keys address the app's "
            "and the user's shared state and `temp:` keys are dropped; values are any JSON."
        ),
    ],
)


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, strict=True
    )


class ControlBody(WireModel):
    """A request body the service interprets itself: unknown fields are mistakes, refused."""

    model_config = ConfigDict(extra="forbid")


def _never_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """The spec of an `OpenRecord`: its read fields may be left out but are not null."""
    nullable = {to_camel(name) for name in getattr(model, "NULLABLE", ())}
    for name, prop in schema.get("properties", {}).items():
        options = prop.get("anyOf")
        if options is not None and name not in nullable:
            del prop["anyOf"]
            prop.update(next(option for option in options if option.get("type") != "null"))
            if prop.get("default", ...) is None:
                del prop["default"]


class OpenRecord(WireModel):
    """An ADK record kept verbatim: every field the service does not read is stored exactly
    as sent. The fields it reads are accepted in snake_case too and stored camelCase; they
    may be left out, but not sent as null where ADK's own models refuse null (`NULLABLE`: the
    fields where they take it)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_never_null)
    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _camel_case_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        aliases = {name: field.alias for name, field in cls.model_fields.items() if field.alias}
        renamed = {aliases.get(key, key): value for key, value in data.items()}
        if len(renamed) != len(data):
            raise ValueError("the same field is given both in camelCase and snake_case")
        nulls = [
            alias
            for name, alias in aliases.items()
            if renamed.get(alias, ...) is None and name not in cls.NULLABLE
        ]
        if nulls:
            raise ValueError(f"`{nulls[0]}` must not be null; leave it out instead")
        return renamed


Content = TypeAliasType(
    "Content",
    Annotated[
        dict[str, Any],
        Field(description="An event's `content`, ADK's (google-genai's): `role` and `parts`."),
    ],
)


class EventCompaction(OpenRecord):
    """ADK's compaction: the events with timestamps in the range are replaced, in the context
    view (and in ADK's own context assembly), by the compacted content."""

    start_timestamp: float
    end_timestamp: float
    compacted_content: Content


class EventActions(OpenRecord):
    state_delta: State | None = Field(
        default=None,
        description="State changes made by this event. `app:` and `user:` keys update the app's "
        "and the user's shared state, `temp:` keys are dropped, other keys update the session.",
    )
    rewind_before_invocation_id: str | None = Field(
        default=None,
        description="Marks ADK's rewind: this event and the events since the invocation's "
        "first one are left out of the context view.",
    )
    compaction: EventCompaction | None = None


class EventIn(OpenRecord):
    """An ADK event. Fields not listed here are stored and returned unchanged."""

    NULLABLE = frozenset({"partial"})

    id: Id | None = Field(
        default=None, description="Unique within the session; generated when absent."
    )
    author: str | None = Field(default=None, description="`user` or the name of an agent.")
    invocation_id: str | None = None
    timestamp: EpochSeconds | None = Field(
        default=None, description="Epoch seconds (years 1 to 9999); the server's clock when absent."
    )
    partial: bool | None = Field(
        default=None, description="A streaming fragment: acknowledged (202) but not stored."
    )
    actions: EventActions | None = None

    def as_document(self) -> dict[str, Any]:
        """The event as sent, camelCase, for the rules that prepare it (`app.rules.events`)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class Event(EventIn):
    """A stored event: what was appended, plus the server-assigned fields."""

    id: Id
    timestamp: EpochSeconds
    seq: Seq = Field(
        description="Position in the session's log: 1, 2, 3, … as events are appended; a "
        "close, trim, reset, removal or rewrite takes a version too, so seqs can skip, never "
        "repeat."
    )


Labels = TypeAliasType(
    "Labels",
    Annotated[
        dict[
            Annotated[str, StringConstraints(pattern=LABEL_KEY_PATTERN)],
            Annotated[str, StringConstraints(max_length=LABEL_VALUE_LENGTH)],
        ],
        Field(
            max_length=MAX_LABELS,
            description=f"Tags to find sessions by (`label=key:value` in the lists): at most "
            f"{MAX_LABELS}, keys of 1 to 63 characters without `:`, values of at most "
            f"{LABEL_VALUE_LENGTH}.",
        ),
    ],
)
DisplayName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=DISPLAY_NAME_LENGTH),
    Field(description="A name for people; not unique."),
]
Ttl = Annotated[
    float,
    Field(
        ge=MIN_LIFETIME,
        le=MAX_LIFETIME,
        allow_inf_nan=False,
        description="Seconds from now (at least 1, at most a century) until the session "
        "expires: then it is gone "
        "at once (404) and deleted by the sweeper soon after.",
    ),
]
ExpireTime = Annotated[
    EpochSeconds,
    Field(
        description="Epoch seconds when the session expires, at least a second from now.",
    ),
]


class Retention(ControlBody):
    """`ttl` and `expireTime` name one moment two ways: a body gives one of them at most."""

    ttl: Ttl | None = None
    expire_time: ExpireTime | None = None

    @model_validator(mode="after")
    def _one_expiry(self) -> "Retention":
        if {"ttl", "expire_time"} <= self.model_fields_set:
            raise ValueError("give ttl or expireTime, not both")
        return self


class SessionCreate(Retention):
    session_id: NewSessionId | None = None
    state: State | None = Field(
        default=None,
        description="Initial state. `app:` and `user:` keys merge into shared state; "
        "`temp:` keys are dropped.",
    )
    events: list[EventIn] | None = Field(
        default=None, description="Events to append, in order, as the session is created."
    )
    display_name: DisplayName | None = None
    labels: Labels | None = None


class SessionUpdate(Retention):
    """What to change; fields left out stay as they are. At least one."""

    state_delta: State | None = Field(
        default=None,
        description="Keys to set, recorded as an event authored by `user` (as ADK's server "
        "does); `null` values are stored as null.",
    )
    display_name: DisplayName | None = Field(default=None, description="`null` clears it.")
    labels: Labels | None = Field(
        default=None, description="Replaces every label of the session (`{}` clears them)."
    )
    ttl: Ttl | None = Field(
        default=None,
        description="Seconds from now (at least 1, at most a century) until the session "
        "expires; `null`: never (as `expireTime: null`).",
    )
    expire_time: ExpireTime | None = Field(
        default=None,
        description="Epoch seconds when the session expires, at least a second from now; "
        "`null`: never.",
    )

    @model_validator(mode="after")
    def _changes_something(self) -> "SessionUpdate":
        if not self.model_fields_set:
            raise ValueError(
                "give at least one of stateDelta, displayName, labels, ttl, expireTime"
            )
        if self.labels is None and "labels" in self.model_fields_set:
            raise ValueError("labels must not be null; send {} to clear them")
        return self


class EventBatch(ControlBody):
    events: list[EventIn] = Field(
        min_length=1,
        description="Appended in order at consecutive seqs, all or nothing; `partial` events "
        "are skipped, and events whose id is already stored with the same content are not "
        "stored again.",
    )


class EventList(WireModel):
    events: list[Event]


class PartialEvent(EventIn):
    """A `partial` event (a streaming fragment), echoed as it was sent: acknowledged, never
    stored, so without `seq` (and without `id` or `timestamp` unless it was sent with them)."""


class PartialEventList(WireModel):
    events: list[PartialEvent]


class QueuedEvent(EventIn):
    """An event waiting in a session's queue, apart from its log: its `id` is set; its
    `timestamp` only if it was sent with one (else it is set when the event is promoted)."""

    id: str


class StateDelta(ControlBody):
    state_delta: State = Field(description="Keys to set; `null` values are stored as null.")


# Named aliases, so the spec has one schema each and generated SDKs one enum each.
Kind = TypeAliasType("Kind", Literal["root", "fork", "child"])
Status = TypeAliasType("Status", Literal["open", "closed"])
Outcome = TypeAliasType("Outcome", Literal["completed", "failed", "canceled"])
Inherit = TypeAliasType("Inherit", Literal["none", "all", "context"])


class Parent(WireModel):
    """Where a fork or a child came from: a session of the same user, which may since have
    been deleted (the fork or child stays whole)."""

    session_id: Id
    seq: Seq = Field(
        description="The parent's version when it was made; a fork holds the parent's events "
        "up to this seq."
    )
    function_call_id: str | None = Field(
        description="For a child made for one of the parent's function calls: closing the "
        "child appends the call's `functionResponse` to the parent."
    )


class Usage(WireModel):
    """Token counts, as ADK's `usageMetadata` reports them, summed."""

    prompt_token_count: Count
    candidates_token_count: Count
    total_token_count: Count


class UserUsage(Usage):
    user_id: str
    events: int = Field(description="How many of the user's events report usage.")


class TotalUsage(Usage):
    events: int = Field(description="How many events report usage.")


class AppUsage(WireModel):
    users: list[UserUsage] = Field(description="By user id; users with no usage left out.")
    total: TotalUsage


class Session(WireModel):
    id: str
    app_name: str
    user_id: str
    state: State = Field(
        description="Session keys as stored, app keys prefixed `app:`, user keys `user:`."
    )
    events: list[Event] = Field(description="In append order; empty in listings.")
    last_update_time: float = Field(
        description="Epoch seconds: the timestamp of the last event, or the creation time."
    )
    create_time: float = Field(description="Epoch seconds.")
    version: int = Field(
        description="Counts the session's writes (0 when new): an append's event takes the "
        "next one as its `seq`; a removal, trim, reset or close takes one too. The ETag, "
        "for If-Match."
    )
    kind: Kind = Field(
        description="`root`: created; `fork`: made by `:fork`, with another session's "
        "history up to a seq; `child`: made for a sub-agent by `POST …/children`."
    )
    parent: Parent | None = Field(description="null for a `root` session.")
    status: Status = Field(
        description="A `closed` session refuses every write (409 `session_closed`)."
    )
    outcome: Outcome | None = Field(description="How a closed session ended; null while open.")
    usage: Usage = Field(
        description="The sums of its events' `usageMetadata` counts (events that report none "
        "count 0); removing events takes theirs off."
    )
    display_name: str | None
    labels: Labels
    expire_time: float | None = Field(
        description="Epoch seconds when it expires (then it is gone: 404); null: never."
    )


class SessionExport(ControlBody):
    """The first line of a session's export (`…:export`, `…/sessions:import`): the session as
    a read shows it, without its events, which follow it one per line, as many as
    `eventCount`. With `baseSeq` and `baseState`, the import keeps every earlier state
    (`untilSeq`, forks at a seq) as the source had it."""

    format: Literal["sessionary.session.v1"]
    id: Annotated[Id, AfterValidator(_not_a_verb)]
    app_name: Id
    user_id: Id
    state: State = Field(
        description="As a read shows it: `app:` and `user:` keys are the shared state of the "
        "export's time, written into the importing side's shared state as a create does."
    )
    last_update_time: EpochSeconds
    create_time: EpochSeconds
    version: Seq
    kind: Kind
    parent: Parent | None
    status: Status
    outcome: Outcome | None
    usage: Usage | None = Field(
        default=None, description="Left out: summed from the events' `usageMetadata`."
    )
    display_name: DisplayName | None
    labels: Labels
    expire_time: EpochSeconds | None
    base_seq: Seq = Field(description="The kept history starts after this seq.")
    base_state: State = Field(description="The session's own state at `baseSeq`.")
    event_count: Seq = Field(description="How many event lines follow.")

    @model_validator(mode="after")
    def _consistent(self) -> "SessionExport":
        if self.base_seq > self.version:
            raise ValueError("baseSeq is past version")
        if (self.kind == "root") != (self.parent is None):
            raise ValueError("a root session has no parent, a fork or a child has one")
        if (self.status == "closed") != (self.outcome is not None):
            raise ValueError("a closed session has an outcome, an open one none")
        if self.event_count > self.version - self.base_seq:
            raise ValueError("more events than seqs between baseSeq and version")
        return self


class AppStateExport(ControlBody):
    """An app's shared state, in a bulk export (`sessionary export`)."""

    format: Literal["sessionary.appState.v1"]
    app_name: Id
    state: State


class UserStateExport(ControlBody):
    """A user's shared state, in a bulk export (`sessionary export`)."""

    format: Literal["sessionary.userState.v1"]
    app_name: Id
    user_id: Id
    state: State


class SessionFork(ControlBody):
    """Where to fork; with neither `atSeq` nor `beforeInvocationId`, at the end."""

    session_id: NewSessionId | None = None
    at_seq: Seq | None = Field(
        default=None, description="The fork holds the events with `seq` ≤ this (0: none)."
    )
    before_invocation_id: str | None = Field(
        default=None,
        description="The fork holds the events before the first event of this invocation.",
    )

    @model_validator(mode="after")
    def _one_point(self) -> "SessionFork":
        if self.at_seq is not None and self.before_invocation_id is not None:
            raise ValueError("give atSeq or beforeInvocationId, not both")
        return self


class ChildCreate(ControlBody):
    session_id: NewSessionId | None = None
    state: State | None = Field(
        default=None,
        description="Initial state, over what `inherit` brings. `app:` and `user:` keys merge "
        "into shared state; `temp:` keys are dropped.",
    )
    function_call_id: (
        Annotated[str, StringConstraints(min_length=1, max_length=ID_LENGTH)] | None
    ) = Field(
        default=None,
        description="A `functionCall` of the parent, not yet answered, that this child "
        "works on: closing the child appends the call's `functionResponse` to the parent.",
    )
    inherit: Inherit = Field(
        default="none",
        description="What the child starts with: `none`, nothing; `all`, the parent's events "
        "(same ids and seqs) and session state; `context`, the parent's live events (rewound "
        "ones left out, as ADK's `_apply_rewinds` does) and session state.",
    )


class SessionClose(ControlBody):
    outcome: Outcome
    result: Any = Field(
        default=None,
        description="Any JSON: for a child made for a function call, the call's result.",
    )


class SessionRewind(ControlBody):
    before_invocation_id: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Undo this invocation and everything after it."
    )


class SessionTrim(ControlBody):
    keep_last: Seq = Field(description="How many of the newest events to keep.")


class SessionReset(ControlBody):
    """A reset takes no options: send no body, or `{}`."""


class Trimmed(WireModel):
    removed_events: int
    kept_events: int
    version: int = Field(description="The session's version after the change (its ETag).")


class EventRewrite(ControlBody):
    content: Content = Field(description="Replaces the event's `content` whole.")


class EventsRemoved(WireModel):
    removed_event_ids: list[str] = Field(
        description="The event asked for, then the events that answered its function calls, "
        "in seq order."
    )
    version: int = Field(description="The session's version after the change (its ETag).")


class ContextView(WireModel):
    """What a model should see next: the live events, compactions applied, within the budget."""

    events: list[Event] = Field(
        description="In order: rewound events left out, each standing compaction's summary in "
        "place of its range, function responses to no earlier call dropped, the oldest left "
        "out until the rest fits the budget, never a call without its responses."
    )
    estimated_tokens: int = Field(description="The token estimate of `events`.")
    truncated_before_seq: int | None = Field(
        description="The seq of the first event shown when older live events were left out "
        "for the budget; null when none was."
    )
    over_budget: bool = Field(
        description="Even the newest event with the calls it answers does not fit the budget: "
        "they are shown anyway."
    )


CompactionStrategy = TypeAliasType(
    "CompactionStrategy", Literal["summary", "truncate", "observationMask"]
)


class SessionCompact(ControlBody):
    """One compaction of the live events older than the newest `keepLast`."""

    strategy: CompactionStrategy = Field(
        description="`summary`: replaced by the text you send (the server calls no model); "
        "`truncate`: replaced by a note of how many were left out; `observationMask`: function "
        "responses longer than `toolOutputMaxChars` replaced by a note of their size."
    )
    keep_last: Seq = Field(default=0, description="How many of the newest live events to keep.")
    summary: Annotated[str, StringConstraints(min_length=1)] | None = Field(
        default=None, description="The summary's text: with `summary`, and only with it."
    )
    tool_output_max_chars: Seq | None = Field(
        default=None,
        description="With `observationMask`, and only with it: the longest tool output (its "
        "JSON, in characters) kept as is. Default 1000.",
    )

    @model_validator(mode="after")
    def _options_of_strategy(self) -> "SessionCompact":
        if (self.summary is not None) != (self.strategy == "summary"):
            raise ValueError("`summary` is required with strategy summary, and only there")
        if self.tool_output_max_chars is not None and self.strategy != "observationMask":
            raise ValueError("`toolOutputMaxChars` goes only with strategy observationMask")
        return self


class PendingList(WireModel):
    events: list[QueuedEvent] = Field(description="Queued, in the order they came.")


class PendingPromote(ControlBody):
    force: bool = Field(
        default=False,
        description="Promote even while function calls are unanswered (their responses will "
        "then come after the queued events).",
    )


ToolCallStatus = TypeAliasType("ToolCallStatus", Literal["pending", "orphaned", "answered"])


class ToolCall(WireModel):
    """A function call of the session's live events."""

    id: str = Field(description="The call's id, which its `functionResponse` carries.")
    name: str | None = Field(description="The function called.")
    event_id: str
    seq: int
    timestamp: float = Field(description="The calling event's, epoch seconds.")
    status: ToolCallStatus = Field(
        description="`answered`: a live event holds its response; `pending`: not yet, and "
        "long-running or not past its deadline; `orphaned`: past its deadline unanswered."
    )
    deadline: float | None = Field(
        description="Epoch seconds: when, unanswered, it becomes orphaned; null for one of "
        "ADK's `longRunningToolIds`, which is never orphaned."
    )
    long_running: bool


class ToolCallList(WireModel):
    tool_calls: list[ToolCall] = Field(description="In the order they were made.")


TimeoutSeconds = Annotated[float, Field(ge=0, le=MAX_LIFETIME, allow_inf_nan=False)]


class SessionHeal(ControlBody):
    timeout_seconds: TimeoutSeconds | None = Field(
        default=None,
        description="A call unanswered for longer than this (seconds, 0 to a century) is "
        "orphaned. Default: `SESSIONARY_TOOL_CALL_TIMEOUT` (300).",
    )


class Healed(WireModel):
    healed: int = Field(description="How many orphaned calls were answered (0: none was).")
    version: int = Field(description="The session's version after the heal (its ETag).")


class SearchHit(WireModel):
    user_id: str
    session_id: str
    seq: int
    event_id: str
    author: str | None
    timestamp: float
    rank: float = Field(description="How well the event matches (`ts_rank`): higher is better.")
    snippet: str = Field(
        description="Up to two fragments of the event's text around the matches: HTML-escaped, "
        "each match in `<mark>…</mark>`."
    )


class SearchPage(WireModel):
    hits: list[SearchHit] = Field(description="Best match first.")
    next_page_token: str | None


class SessionList(WireModel):
    sessions: list[Session]


class SessionPage(WireModel):
    sessions: list[Session]
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class AppSummary(WireModel):
    app_name: str
    session_count: int = Field(description="Its live sessions, every user's.")
    last_update_time: float = Field(description="When one of them last changed (epoch seconds).")


class AppPage(WireModel):
    apps: list[AppSummary] = Field(description="By name.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class UserSummary(WireModel):
    user_id: str
    session_count: int = Field(description="The user's live sessions in this app.")
    last_update_time: float = Field(description="When one of them last changed (epoch seconds).")


class UserPage(WireModel):
    users: list[UserSummary] = Field(description="By id.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class EventPage(WireModel):
    events: list[Event]
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class ScopeState(WireModel):
    state: State = Field(description="Keys without their `app:`/`user:` prefix.")


class ValidationErrorItem(BaseModel):
    loc: list[str | int] = Field(description="Where: `body`, `query` or `path`, then the field.")
    msg: str
    type: str = Field(description="The kind of check that failed, e.g. `missing`.")


class Problem(BaseModel):
    """An error, as RFC 9457 problem details."""

    type: str = Field(description="A URN naming the kind of problem.")
    title: str
    status: int
    detail: str = Field(description="What went wrong with this request, for people.")
    code: str = Field(
        description="Stable, machine-readable: what went wrong, for code to act on.",
        json_schema_extra={"enum": list(PROBLEM_CODES)},
    )
    instance: str | None = Field(
        default=None,
        description="The request path; absent when the request was refused before its path "
        "was read (`headers_too_large`, `bad_request`).",
    )
    errors: list[ValidationErrorItem] | None = Field(
        default=None, description="For `validation_error`: each invalid field."
    )
    current_version: int | None = Field(
        default=None,
        alias="currentVersion",
        description="For `stale_session`: the session's version now (reload it, then retry "
        "with this version in `If-Match`).",
    )
    call_ids: list[str] | None = Field(
        default=None,
        alias="callIds",
        description="For `tool_calls_pending`: the function calls still unanswered.",
    )


class Health(WireModel):
    status: Literal["ok"]


class Readiness(WireModel):
    status: Literal["ready"]
    schema_revision: str = Field(description="The Alembic revision the database is at.")
