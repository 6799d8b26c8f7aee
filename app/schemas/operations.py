"""Errors (RFC 9457 problem details) and the operations probes on the wire."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypeAliasType

from app.errors import PROBLEM_CODES
from app.schemas.base import WireModel

# Named, so that generators need not make up a name for the union (`…LocInner`).
LocationPart = TypeAliasType(
    "LocationPart",
    Annotated[str | int, Field(description="A field's name, or an item's index in an array.")],
)


class ValidationErrorItem(BaseModel):
    loc: list[LocationPart] = Field(description="Where: `body`, `query` or `path`, then the field.")
    msg: str
    type: str = Field(description="The kind of check that failed, e.g. `missing`.")


class Problem(BaseModel):
    """An error, as RFC 9457 problem details. The fields after `code` are there only where
    they apply, never null."""

    type: str = Field(description="A URN naming the kind of problem.")
    title: str
    status: int
    detail: str = Field(description="What went wrong with this request, for people.")
    code: str = Field(
        description="Stable, machine-readable: what went wrong, for code to act on.",
        json_schema_extra={"enum": list(PROBLEM_CODES)},
    )
    instance: str | SkipJsonSchema[None] = Field(
        default=None,
        description="The request path; absent when the request was refused before its path "
        "was read (`headers_too_large`, `bad_request`).",
    )
    errors: list[ValidationErrorItem] | SkipJsonSchema[None] = Field(
        default=None, description="For `validation_error`: each invalid field."
    )
    current_version: int | SkipJsonSchema[None] = Field(
        default=None,
        alias="currentVersion",
        description="For `stale_session`: the session's version now (reload it, then retry "
        "with this version in `If-Match`).",
    )
    current_revision: int | SkipJsonSchema[None] = Field(
        default=None,
        alias="currentRevision",
        description="For `stale_memory`: the memory's revision now (read it again, then retry "
        "with this revision in `If-Match`).",
    )
    call_ids: list[str] | SkipJsonSchema[None] = Field(
        default=None,
        alias="callIds",
        description="For `tool_calls_pending`: the function calls still unanswered.",
    )


class Health(WireModel):
    status: Literal["ok"]


class Readiness(WireModel):
    status: Literal["ready"]
    schema_revision: str = Field(description="The Alembic revision the database is at.")
    recall: Literal["meaning+words", "words"] = Field(
        description="How memories are recalled now: by words alone without pgvector, a "
        "model, or while the model is down (`GET /embeddings` says why)."
    )
