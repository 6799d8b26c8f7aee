"""The context view, compaction, tool calls and the pending queue on the wire."""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from typing_extensions import TypeAliasType

from app.limits import MAX_LIFETIME
from app.schemas.base import ControlBody, Seq, WireModel
from app.schemas.events import Event, QueuedEvent


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


class HealResult(WireModel):
    healed: int = Field(description="How many orphaned calls were answered (0: none was).")
    version: int = Field(description="The session's version after the heal (its ETag).")
