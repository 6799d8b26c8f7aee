"""The export format: the header lines of an NDJSON export (the events follow as stored)."""

from typing import Literal

from pydantic import Field, model_validator

from app.schemas.base import ControlBody, EpochSeconds, Id, Seq, SessionId, State
from app.schemas.sessions import DisplayName, Kind, Labels, Outcome, Parent, Status, Usage


class SessionExport(ControlBody):
    """The first line of a session's export (`…:export`, `…/sessions:import`): the session as
    a read shows it, without its events, which follow it one per line, as many as
    `eventCount`. With `baseSeq` and `baseState`, the import keeps every earlier state
    (`untilSeq`, forks at a seq) as the source had it."""

    format: Literal["sessionary.session.v1"]
    id: SessionId
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
