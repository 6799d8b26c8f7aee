"""Sessions on the wire: create, update, the session as read and listed, its usage, and
the apps and users there are to browse."""

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator
from typing_extensions import TypeAliasType

from app.limits import (
    DISPLAY_NAME_LENGTH,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_LENGTH,
    MAX_LABELS,
    MAX_LIFETIME,
    MIN_LIFETIME,
)
from app.schemas.base import (
    ControlBody,
    Count,
    EpochSeconds,
    Id,
    NewSessionId,
    Seq,
    State,
    WireModel,
)
from app.schemas.events import Event, EventIn


def _labels_schema(schema: dict[str, Any]) -> None:
    """A map of strings whose keys match a pattern: `propertyNames`, which generators read as
    a map's keys, rather than `patternProperties`, which they read as any value."""
    ((pattern, values),) = schema.pop("patternProperties").items()
    schema["propertyNames"] = {"pattern": pattern}
    schema["additionalProperties"] = values


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
            json_schema_extra=_labels_schema,
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
    """`ttl` and `expireTime` name one moment two ways: a body gives a number to one of them at
    most. Null in both is no expiry; null beside a number says nothing (generated SDKs send
    every unset nullable field as null)."""

    ttl: Ttl | None = Field(
        default=None,
        description="Seconds from now (at least 1, at most a century) until the session "
        "expires: then it is gone at once (404) and deleted by the sweeper soon after. Null "
        "or left out: the server's default lifetime (`SESSIONARY_DEFAULT_TTL`), else never. "
        "Not with a number in `expireTime`.",
    )
    expire_time: ExpireTime | None = Field(
        default=None,
        description="Epoch seconds when the session expires, at least a second from now. "
        "Null or left out: as for `ttl`. Not with a number in `ttl`.",
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> "Retention":
        if self.ttl is not None and self.expire_time is not None:
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
    display_name: DisplayName | None = Field(default=None, description="null: none.")
    labels: Labels | None = Field(default=None, description="null: none (as `{}`).")


class SessionUpdate(Retention):
    """What to change; fields left out stay as they are. At least one."""

    state_delta: State | None = Field(
        default=None,
        description="Keys to set, recorded as an event authored by `user` (as ADK's server "
        "does); `null` values are stored as null.",
    )
    display_name: DisplayName | None = Field(default=None, description="`null` clears it.")
    labels: Labels | None = Field(
        default=None,
        description="Replaces every label of the session; `{}` or `null` clears them.",
    )
    ttl: Ttl | None = Field(
        default=None,
        description="Seconds from now (at least 1, at most a century) until the session "
        "expires; `null`: never (as `expireTime: null`). Not with a number in `expireTime`.",
    )
    expire_time: ExpireTime | None = Field(
        default=None,
        description="Epoch seconds when the session expires, at least a second from now; "
        "`null`: never. Not with a number in `ttl`.",
    )

    @model_validator(mode="after")
    def _changes_something(self) -> "SessionUpdate":
        if not self.model_fields_set:
            raise ValueError(
                "give at least one of stateDelta, displayName, labels, ttl, expireTime"
            )
        if self.labels is None and "labels" in self.model_fields_set:
            self.labels = {}  # null clears them, as null clears the other fields
        return self


class StateUpdate(ControlBody):
    """Keys to merge into an app's or a user's state."""

    state_delta: State = Field(description="Keys to set; `null` values are stored as null.")


# Named aliases, so the spec has one schema each and generated SDKs one enum each.
Kind = TypeAliasType("Kind", Literal["root", "fork", "child"])


Status = TypeAliasType("Status", Literal["open", "closed"])


Outcome = TypeAliasType("Outcome", Literal["completed", "failed", "canceled"])


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


class ScopeState(WireModel):
    state: State = Field(description="Keys without their `app:`/`user:` prefix.")
