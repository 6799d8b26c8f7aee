"""The export format: the header lines of an NDJSON export (the events follow as stored)."""

from typing import Literal

from pydantic import Field, model_validator

from app.limits import MAX_VERSION
from app.schemas.artifacts import ArtifactKind, Base64Bytes, MimeType
from app.schemas.base import ControlBody, EpochSeconds, Id, Seq, SessionId, State, WireModel
from app.schemas.events import Event
from app.schemas.genai import JsonObject
from app.schemas.sessions import DisplayName, Kind, Labels, Outcome, Parent, Status, Usage

# The highest version an import may set, which no later write passes either: past 2^53 - 1 a
# JavaScript client (or any JSON reader that reads numbers as doubles) misreads seqs.
MAX_IMPORTED_VERSION = MAX_VERSION
SHA256 = "^[0-9a-f]{64}$"


class RemovedDelta(ControlBody):
    """The state change of an event since removed, which the session's history keeps."""

    seq: Seq = Field(description="The removed event's seq.")
    state_delta: State = Field(description="Its session-scoped `stateDelta`.")


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
    base_seq: Seq = Field(
        description="Where the session's history starts: a point-in-time read or a fork may "
        "name any seq from it to `version`. Events at or before it are ones a child inherited."
    )
    base_state: State = Field(description="The session's own state at `baseSeq`.")
    removed_deltas: list[RemovedDelta] = Field(
        default_factory=list,
        description="The session-scoped state changes of events removed after `baseSeq`, in "
        "seq order: the state at every seq counts them, as it did before the removal. Left "
        "out: none.",
    )
    event_count: Seq = Field(description="How many event lines follow.")
    artifact_lines: Seq = Field(
        default=0,
        description="How many artifact lines follow the events (`ExportedArtifactBytes` and "
        "`ExportedArtifact`). Left out: none.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "SessionExport":
        if self.version > MAX_IMPORTED_VERSION:
            raise ValueError(
                f"version is past {MAX_IMPORTED_VERSION} (2^53 - 1), the largest seq every "
                "JSON reader holds exactly"
            )
        if self.base_seq > self.version:
            raise ValueError("baseSeq is past version")
        if (self.kind == "root") != (self.parent is None):
            raise ValueError("a root session has no parent, a fork or a child has one")
        if (self.status == "closed") != (self.outcome is not None):
            raise ValueError("a closed session has an outcome, an open one none")
        if self.event_count > self.version:
            raise ValueError("more events than seqs up to version")
        seqs = [delta.seq for delta in self.removed_deltas]
        if seqs != sorted(set(seqs)) or not all(
            self.base_seq < seq <= self.version for seq in seqs
        ):
            raise ValueError("removedDeltas' seqs must rise, after baseSeq, up to version")
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


class ExportedArtifactBytes(ControlBody):
    """A piece of an artifact's content in an export: the pieces of one content come in
    order, on consecutive lines, before the first version that holds it."""

    sha256: str = Field(pattern=SHA256, description="The content's SHA-256, in hex.")
    data: Base64Bytes = Field(description="The piece, base64.")


class ExportedArtifactVersion(ControlBody):
    """A version of one of the session's artifacts in an export, as stored."""

    name: str
    version: Seq
    kind: ArtifactKind
    mime_type: MimeType | None
    display_name: str | None
    file_uri: str | None
    sha256: str | None = Field(pattern=SHA256, description="Null for a reference.")
    size: Seq
    custom_metadata: JsonObject
    create_time: EpochSeconds
    saved_at: Seq | None = Field(
        description="The session's version when it was saved: a read as of a seq after it sees it."
    )

    @model_validator(mode="after")
    def _content(self) -> "ExportedArtifactVersion":
        if (self.kind == "reference") != (self.sha256 is None):
            raise ValueError("a reference has no sha256, any other version has one")
        return self


class ExportedArtifact(ControlBody):
    """An artifact line of an export: a piece of content, or a version."""

    artifact_bytes: ExportedArtifactBytes | None = None
    artifact: ExportedArtifactVersion | None = None

    @model_validator(mode="after")
    def _one(self) -> "ExportedArtifact":
        if (self.artifact_bytes is None) == (self.artifact is None):
            raise ValueError("an artifact line holds one of `artifactBytes` or `artifact`")
        return self


class ExportedSession(WireModel):
    """A session's export as one JSON document (`Accept: application/json` on `…:export`,
    `Content-Type: application/json` on `…/sessions:import`): what the NDJSON form holds, its
    header and its events, for the clients that read no NDJSON."""

    header: SessionExport = Field(description="The NDJSON form's first line.")
    events: list[Event] = Field(
        description="The NDJSON form's other lines: `eventCount` events as stored, in seq order."
    )
    artifacts: list[ExportedArtifact] = Field(
        default_factory=list,
        description="Its artifact lines, `artifactLines` of them, in order. Left out: none.",
    )
