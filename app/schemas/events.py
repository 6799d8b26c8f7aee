"""Events on the wire: ADK's event JSON as appended, stored and paged."""

from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypeAliasType

from app.schemas.base import (
    Content,
    ControlBody,
    Count,
    EpochSeconds,
    Id,
    OpenRecord,
    Seq,
    State,
    WireModel,
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


class EventPage(WireModel):
    events: list[Event]
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class EventCount(WireModel):
    count: Count = Field(description="How many events the session holds.")
    first_seq: Seq | None = Field(description="The seq of its oldest event; null without events.")
    last_seq: Seq | None = Field(description="The seq of its newest event; null without events.")


# What an append's first success (200) is described as: openapi-generator's Go client decodes
# every 2xx with the schema of the lowest, and a 202's partial event has no `seq`. `anyOf`, in
# this order: a stored event is read as an `Event`, a partial one (which has no `seq`) as a
# `PartialEvent`; it reads as both, which a `oneOf` would refuse.
AppendedEvent = TypeAliasType(
    "AppendedEvent",
    Annotated[
        Event | PartialEvent,
        Field(
            description="What an append answers: the event stored (200, 201) or, for a "
            "`partial` one, the event as sent (202)."
        ),
    ],
)
AppendedEventList = TypeAliasType(
    "AppendedEventList",
    Annotated[
        EventList | PartialEventList,
        Field(
            description="What a batch append answers: the events stored (200, 201) or, when "
            "every one is `partial`, the events as sent (202)."
        ),
    ],
)
