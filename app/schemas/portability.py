"""The export format: the header lines of an NDJSON export (the events follow as stored)."""

from typing import Literal

from pydantic import Field, model_validator

from app.limits import MAX_VERSION
from app.schemas.artifacts import ArtifactKind, Base64Bytes, MimeType
from app.schemas.base import ControlBody, EpochSeconds, Id, Seq, SessionId, State, WireModel
from app.schemas.events import Event
from app.schemas.genai import JsonObject
from app.schemas.memories import MemoryKind, MemoryText, ModelName, Topics, Vector
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


class UserArtifactsExport(ControlBody):
    """The line before a user's `user:` artifacts, in a user's export: `artifactLines` lines
    follow it, as a session's export gives its own (`ExportedArtifact`)."""

    format: Literal["sessionary.userArtifacts.v1"]
    app_name: Id
    user_id: Id
    artifact_lines: Seq = Field(description="How many artifact lines follow.")


class ExportedMemoryRevision(ControlBody):
    """A revision of a memory, as its history keeps it."""

    revision: Seq
    text: MemoryText | None
    content: JsonObject | None
    author: str | None
    metadata: JsonObject
    topics: Topics
    expire_time: EpochSeconds | None
    create_time: EpochSeconds


class ExportedVector(ControlBody):
    """One of a memory's vectors: the server's model's, or one a client sent."""

    model: ModelName
    vector: Vector


class MemoryExport(ControlBody):
    """A memory in an export, on one line: as stored, with every revision and vector, so
    that an import reads, lists and recalls as the source did. A remembered event's memory
    (`kind` event) holds no text of its own: it names its event (`sessionId`, `seq`), which
    an earlier line of the export imports; a text's `sessionId` is where it was learnt."""

    format: Literal["sessionary.memory.v1"]
    app_name: Id
    user_id: Id | None = Field(description="Null: the app's own memory.")
    id: Id
    kind: MemoryKind
    revision: Seq
    text: MemoryText | None
    content: JsonObject | None
    author: str | None
    metadata: JsonObject
    topics: Topics
    expire_time: EpochSeconds | None
    session_id: Id | None
    seq: Seq | None
    event_ids: list[Id]
    create_time: EpochSeconds
    update_time: EpochSeconds
    embedded_model: ModelName | None = Field(
        description="The server's model that embedded its current revision; null: not yet."
    )
    revisions: list[ExportedMemoryRevision] = Field(min_length=1, description="Oldest first.")
    vectors: list[ExportedVector]

    @model_validator(mode="after")
    def _consistent(self) -> "MemoryExport":
        if (self.kind == "event") != (self.seq is not None) or (
            self.kind == "event" and self.session_id is None
        ):
            raise ValueError("a remembered event names its sessionId and seq, a text no seq")
        numbers = [revision.revision for revision in self.revisions]
        if numbers != sorted(set(numbers)) or numbers[-1] != self.revision:
            raise ValueError("revisions rise, each once, up to the memory's revision")
        last = self.revisions[-1]
        if (last.text, last.content, last.author, last.metadata, last.topics) != (
            self.text,
            self.content,
            self.author,
            self.metadata,
            self.topics,
        ) or last.expire_time != self.expire_time:
            raise ValueError("the last revision is the memory as it is")
        models = [vector.model for vector in self.vectors]
        if len(set(models)) != len(models):
            raise ValueError("a memory has one vector per model")
        if self.embedded_model is not None and self.embedded_model not in models:
            raise ValueError("embeddedModel names a model none of its vectors has")
        return self


class UserImportCounts(WireModel):
    sessions: int = Field(ge=0)
    events: int = Field(ge=0, description="Of the sessions counted.")
    memories: int = Field(ge=0)
    artifact_versions: int = Field(ge=0, description="Of the user's `user:` artifacts.")


class UserImport(WireModel):
    """What an import of a user's export did, in one transaction."""

    created: UserImportCounts = Field(description="What was not there and is now.")
    unchanged: UserImportCounts = Field(
        description="What was there already, the same: an import of the same export again "
        "creates nothing."
    )
    user_state_keys: int = Field(ge=0, description="Keys of the user's state written.")


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
