"""Artifacts on the wire: ADK's `ArtifactVersion` (and what this service adds to it), pages of
them, and ADK's JSON save request (`SaveArtifactRequest`, an artifact as a genai `Part`)."""

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from app.limits import INT64_MAX
from app.rules.artifacts import check_mime_type
from app.schemas.base import ControlBody, WireModel
from app.schemas.genai import JsonObject

ArtifactKind = Literal["bytes", "text", "reference"]


class ArtifactVersion(WireModel):
    """One saved version of an artifact: ADK's `ArtifactVersion` (`version`, `canonicalUri`,
    `customMetadata`, `createTime`, `mimeType`), and what its bytes are."""

    name: str = Field(description="The artifact's name (`user:` names belong to the user).")
    version: int = Field(ge=0, le=INT64_MAX, description="0 for the first save of the name.")
    canonical_uri: str = Field(
        description="ADK's `artifact://` URI of this version: an artifact whose `fileData` "
        "holds it reads as this version's content."
    )
    custom_metadata: JsonObject = Field(description="What the save attached, as sent.")
    create_time: float = Field(description="When it was saved (epoch seconds).")
    mime_type: str | None = Field(
        description="Its media type, the `Content-Type` its content is served with; null for "
        "a reference saved without one."
    )
    kind: ArtifactKind = Field(
        description="How it was saved: `bytes` (ADK's `inlineData`, or an upload), `text` "
        "(a `Part`'s `text`, stored as UTF-8), `reference` (`fileData`: a URI, no bytes here)."
    )
    size: int = Field(
        ge=0, le=INT64_MAX, description="Its content's length in bytes (0 for a reference)."
    )
    sha256: str | None = Field(
        description="The SHA-256 of its content, in hex: its download's `ETag`, and what two "
        "saves of the same bytes share (stored once). Null for a reference."
    )
    display_name: str | None = Field(description="ADK's `displayName` of the part, if given.")
    file_uri: str | None = Field(description="A reference's URI (`fileData.fileUri`).")


class ArtifactPage(WireModel):
    artifacts: list[ArtifactVersion] = Field(
        description="The newest version of each name, by name."
    )
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


class ArtifactVersionPage(WireModel):
    versions: list[ArtifactVersion] = Field(description="Oldest first.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")


def _bytes_of_base64(value: Any) -> Any:
    """Standard or URL-safe base64 (pydantic writes bytes URL-safe), padded or not."""
    if not isinstance(value, str):
        return value
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("`data` is not base64") from None


Base64Bytes = Annotated[bytes, BeforeValidator(_bytes_of_base64)]


MimeType = Annotated[str, AfterValidator(check_mime_type)]


class InlineArtifact(ControlBody):
    """Bytes carried in the request, base64-encoded (a genai `Blob`)."""

    data: Base64Bytes = Field(description="The bytes, base64 (standard or URL-safe).")
    mime_type: MimeType = Field(description="Their media type, e.g. `image/png`.")
    display_name: str | None = None


class ArtifactReference(ControlBody):
    """Content stored elsewhere, by URI (a genai `FileData`): kept as the URI, no bytes. An
    `artifact://` URI names another version of this app and user, which reads follow."""

    file_uri: str = Field(
        min_length=1,
        max_length=8192,
        pattern=r"^[^\x00-\x20\x7f]+$",
        description="Where the content is: a URI, without spaces or control characters.",
    )
    mime_type: MimeType | None = None
    display_name: str | None = None


class ArtifactPart(ControlBody):
    """An artifact as ADK hands it over: a genai `Part` with exactly one of `inlineData`,
    `text` or `fileData`."""

    inline_data: InlineArtifact | None = None
    text: str | None = None
    file_data: ArtifactReference | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "ArtifactPart":
        given = [f for f in (self.inline_data, self.text, self.file_data) if f is not None]
        if len(given) != 1:
            raise ValueError("Artifact must have exactly one of inline_data, text or file_data.")
        return self


class ArtifactSave(ControlBody):
    """ADK's `SaveArtifactRequest`: save the next version of `filename` from a `Part`."""

    filename: str = Field(
        description="The artifact's name; one that starts with `user:` belongs to the user."
    )
    artifact: ArtifactPart
    custom_metadata: JsonObject | None = Field(
        default=None, description="Any JSON object, kept with the version."
    )
