"""Memories on the wire: a memory and its revisions, what creates and changes one, a recall and
what it found, and the embedding worker's status."""

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from app.limits import ID_LENGTH, INT64_MAX, MEMORY_VERB
from app.schemas.base import ControlBody, EpochSeconds, Id, WireModel
from app.schemas.genai import JsonObject

MemoryKind = Literal["text", "event"]
# A memory's text: long enough for a paragraph of facts, short enough to embed whole.
TEXT_LENGTH = 32_768

Topic = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]+$"),
    Field(description="A label to filter by, 1 to 100 characters."),
]
Topics = Annotated[list[Topic], Field(max_length=50, description="Up to 50 topic labels.")]
MemoryText = Annotated[str, StringConstraints(min_length=1, max_length=TEXT_LENGTH)]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=256)]


def _finite(vector: list[float]) -> list[float]:
    if not all(math.isfinite(value) for value in vector):
        raise ValueError("a vector's values must be finite numbers")
    if not any(vector):
        raise ValueError("a vector of zeros has no direction")
    return vector


Vector = Annotated[list[float], Field(min_length=1, max_length=16_000), AfterValidator(_finite)]


def _not_the_verb(memory_id: str) -> str:
    if memory_id.endswith(f":{MEMORY_VERB}"):
        raise ValueError(f"a memory id must not end in `:{MEMORY_VERB}`, the verb of its path")
    return memory_id


class Embedding(ControlBody):
    """A vector the client computed, by a model of its own: recall by meaning compares it only
    with vectors of the same `model`."""

    model: ModelName = Field(description="The model's name, as the client calls it.")
    vector: Vector


class MemorySource(WireModel):
    """Where a memory came from."""

    session_id: Id = Field(description="The session it was learnt in.")
    event_ids: Annotated[list[Id], Field(max_length=1000)] = Field(
        default=[], description="The events it was learnt from."
    )


class _Expiry(ControlBody):
    expire_time: EpochSeconds | None = Field(
        default=None,
        description="When it is forgotten (epoch seconds): past it, it reads as absent and is "
        "never recalled. Null: never.",
    )
    ttl: float | None = Field(
        default=None,
        gt=0,
        le=100 * 365 * 86400,
        description="Seconds from now until it is forgotten; instead of `expireTime`.",
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> "_Expiry":
        if self.ttl is not None and self.expire_time is not None:
            raise ValueError("give `expireTime` or `ttl`, not both")
        return self


class MemoryCreate(_Expiry):
    """A memory of its own: a `text`, or ADK's `content` (whose text parts are what is
    recalled)."""

    id: Annotated[Id, AfterValidator(_not_the_verb)] | None = Field(
        default=None, description=f"Its id, not ending in `:{MEMORY_VERB}`; generated when absent."
    )
    text: MemoryText | None = Field(default=None, description="What to remember.")
    content: JsonObject | None = Field(
        default=None,
        description="What to remember as ADK's (google-genai's) `Content`, as a `MemoryEntry` "
        "holds it; its text parts are indexed and embedded.",
    )
    author: Annotated[str, StringConstraints(min_length=1, max_length=ID_LENGTH)] | None = Field(
        default=None, description="Who said it (ADK's `MemoryEntry.author`)."
    )
    metadata: JsonObject = Field(default={}, description="Anything to keep with it.")
    topics: Topics = Field(default=[])
    source: MemorySource | None = Field(default=None, description="Where it was learnt.")
    embedding: Embedding | None = Field(
        default=None, description="Its vector by a model of the client's, besides the server's."
    )

    @model_validator(mode="after")
    def _text_or_content(self) -> "MemoryCreate":
        if (self.text is None) == (self.content is None):
            raise ValueError("give the memory's `text` or its `content`, one of them")
        return self


class MemoryUpdate(_Expiry):
    """The fields to change; those left out stay as they are. Each update is a new revision."""

    text: MemoryText | None = Field(
        default=None, description="Its new text (`null`: unchanged, as it keeps one)."
    )
    content: JsonObject | None = Field(
        default=None, description="Its new `Content` (`null`: unchanged)."
    )
    author: Annotated[str, StringConstraints(min_length=1, max_length=ID_LENGTH)] | None = Field(
        default=None, description="Who said it."
    )
    metadata: JsonObject | None = Field(default=None, description="Its metadata, whole.")
    topics: Topics | None = Field(default=None, description="Its topics, all of them.")
    embedding: Embedding | None = Field(default=None, description="Its new vector (client's).")


class MemoryRollback(ControlBody):
    revision: int = Field(ge=1, le=INT64_MAX, description="The revision to restore.")


class Remember(ControlBody):
    """Which of the session's events to add to memory."""

    event_ids: Annotated[list[Id], Field(min_length=1, max_length=1000)] | None = Field(
        default=None,
        description="These events (any author); absent, every event with text that "
        "`SESSIONARY_MEMORY_FROM` takes (by default, the user's).",
    )


class RememberResult(WireModel):
    remembered: int = Field(ge=0, description="Events added to memory now (not before).")


class RecallRequest(ControlBody):
    """What to recall: a question in words, or a vector of the client's, or both."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=1000)] | None = Field(
        default=None,
        description="The question or topic, in natural language: embedded by the server for "
        "recall by meaning, and its words matched for recall by words.",
    )
    embedding: Embedding | None = Field(
        default=None,
        description="The question's vector by a model of the client's: compared with the "
        "memories' vectors of that model (instead of the server's embedding of `query`).",
    )
    limit: int = Field(default=10, ge=1, le=100, description="The most memories to answer.")
    min_score: float = Field(
        default=0.0, ge=0, le=1, description="Leave out memories that score below it."
    )
    min_similarity: float = Field(
        default=0.0,
        ge=-1,
        le=1,
        description="Found by meaning only at or above this cosine similarity to the query "
        "(0: no memory whose vector points away from the query's). What is close depends on "
        "the model: measure yours (`similarity` of each answer) before raising it.",
    )
    topics: Topics = Field(default=[], description="Only memories with one of these topics.")
    after_timestamp: EpochSeconds | None = Field(
        default=None, description="Only memories changed at or after it (epoch seconds)."
    )
    before_timestamp: EpochSeconds | None = Field(
        default=None, description="Only memories changed before it (epoch seconds)."
    )
    include_app: bool = Field(
        default=True, description="Recall the app's memories too, besides the user's."
    )
    mode: Literal["hybrid", "meaning", "words"] = Field(
        default="hybrid",
        description="`hybrid`: by meaning and by words, fused; `meaning` or `words`: one.",
    )

    @model_validator(mode="after")
    def _something(self) -> "RecallRequest":
        if self.query is None and self.embedding is None:
            raise ValueError("give a `query`, an `embedding`, or both")
        if self.mode == "words" and self.query is None:
            raise ValueError("recall by words needs a `query`")
        return self


class Memory(WireModel):
    """A memory: a text of its own (`kind` text), or an event of a session added to memory
    (`kind` event), whose text, content, author and timestamp are the event's."""

    id: str
    scope: Literal["user", "app"] = Field(description="The user's, or the whole app's.")
    user_id: str | None = Field(description="Whose; null for the app's.")
    kind: MemoryKind
    revision: int = Field(ge=1, description="Its revision: 1 when made, +1 per change.")
    text: str | None = Field(description="What is recalled: its text parts, joined.")
    content: JsonObject = Field(description="ADK's `Content` of it.")
    author: str | None
    metadata: JsonObject
    topics: list[str]
    expire_time: float | None = Field(description="When it is forgotten (epoch seconds).")
    source: MemorySource | None = Field(description="Where it was learnt.")
    timestamp: float = Field(
        description="When it was said: an event's timestamp, else when the memory was made."
    )
    create_time: float
    update_time: float
    embedded: bool = Field(
        description="Whether the server's model has embedded its current revision: until "
        "then it is recalled by words (and by a client's vector)."
    )


class MemoryPage(WireModel):
    memories: list[Memory] = Field(description="Newest change first.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class MemoryRevisionEntry(WireModel):
    revision: int
    text: str | None
    content: JsonObject | None
    author: str | None
    metadata: JsonObject
    topics: list[str]
    expire_time: float | None
    create_time: float = Field(description="When the revision was made (epoch seconds).")


class MemoryRevisionPage(WireModel):
    revisions: list[MemoryRevisionEntry] = Field(description="Newest first.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class RecalledMemory(WireModel):
    memory: Memory
    score: float = Field(
        description="Reciprocal rank fusion of its ranks by meaning and by words, over its "
        "best possible value: 1 is first in every way recall looked."
    )
    similarity: float | None = Field(
        description="Cosine similarity of its vector to the query's; null when not found by "
        "meaning."
    )
    word_score: float | None = Field(
        description="How well its words match (PostgreSQL's `ts_rank_cd`, in [0, 1)); null "
        "when no word matched."
    )


class RecallResult(WireModel):
    memories: list[RecalledMemory] = Field(description="Best first.")
    recalled_by: Literal["meaning+words", "meaning", "words"] = Field(
        description="How they were found."
    )
    note: str | None = Field(description="Why recall by meaning was left out, when it was.")


class EmbeddingsStatus(WireModel):
    recall: Literal["meaning+words", "words"] = Field(description="How memories are recalled now.")
    note: str | None = Field(description="Why by words alone, when so.")
    pgvector: str | None = Field(description="pgvector's version; null without it.")
    provider: Literal["wordllama", "openai", "none"]
    model: str | None = Field(description="The model each vector the server makes records.")
    pending: int = Field(
        ge=0, description="Memories its model has not embedded yet (new, changed, or older)."
    )
    rate: float | None = Field(
        description="Memories embedded per second lately, by the worker of this process."
    )
