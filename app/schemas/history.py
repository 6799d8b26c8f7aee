"""History surgery on the wire: rewind, trim, reset, removing and rewriting an event."""

from typing import Annotated

from pydantic import Field, StringConstraints

from app.schemas.base import Content, ControlBody, Seq, WireModel


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
