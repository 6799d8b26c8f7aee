"""Artifact rules without a database: which names are valid (ADK's, and what a URL path
needs), which scope a name lives in, its canonical URI, byte ranges, and ADK's rewind marker."""

import re
from dataclasses import dataclass

from app.errors import InvalidInput
from app.limits import ARTIFACT_NAME_BYTES, MIME_TYPE_LENGTH

USER_PREFIX = "user:"
# ADK's `artifact_util`: segments that would make a path with `/` ambiguous, and the drive
# prefix (`C:`) it refuses.
_RESERVED_SEGMENTS = frozenset({"apps", "users", "sessions", "artifacts", "versions"})
_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A MIME type as RFC 6838 spells one, parameters allowed (`text/plain; charset=utf-8`).
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_MIME_TYPE = re.compile(rf"^{_TOKEN}/{_TOKEN}(\s*;\s*{_TOKEN}=(\"[^\"]*\"|{_TOKEN}))*$")
DEFAULT_MIME_TYPE = "application/octet-stream"
TEXT_MIME_TYPE = "text/plain"
# ADK's rewind marker (`artifact_util._new_rewind_tombstone`): an empty
# `application/octet-stream` version stands for "no such artifact here".
_TOMBSTONE_MIME_TYPE = "application/octet-stream"


def is_user_scoped(name: str) -> bool:
    """A `user:` name belongs to the user, shared by every session of the user (as in ADK)."""
    return name.startswith(USER_PREFIX)


def check_name(name: str) -> None:
    """Refuse what ADK's `validate_path_segment` refuses, with its messages, and what a URL
    path cannot carry: empty or `.` segments, control characters, too many bytes."""
    bare = name.removeprefix(USER_PREFIX)
    field = "filename"
    if not bare.strip():
        raise InvalidInput(f"{field} must not be empty.", field=field)
    if "\x00" in bare:
        raise InvalidInput(f"{field} must not contain null bytes.", field=field)
    if bare.startswith(("/", "\\")):
        raise InvalidInput(
            f"{field} {name!r} must not be an absolute path or start with a slash.", field=field
        )
    if _DRIVE.match(bare):
        raise InvalidInput(f"{field} {name!r} must not be drive-qualified.", field=field)
    segments = bare.replace("\\", "/").split("/")
    if ".." in segments:
        raise InvalidInput(f"{field} {name!r} must not contain traversal segments.", field=field)
    if len(segments) > 1 and not _RESERVED_SEGMENTS.isdisjoint(s.casefold() for s in segments):
        raise InvalidInput(
            f"{field} {name!r} must not contain reserved path segments.", field=field
        )
    if "" in segments or "." in segments:
        raise InvalidInput(
            f"{field} {name!r} must not contain empty or `.` segments (`a//b`, `a/./b`, a "
            "trailing `/`): a URL path cannot carry them.",
            field=field,
        )
    if _CONTROL.search(name):
        raise InvalidInput(f"{field} must not contain control characters.", field=field)
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > ARTIFACT_NAME_BYTES:
        raise InvalidInput(
            f"{field} is {size} bytes long (UTF-8); at most {ARTIFACT_NAME_BYTES} are allowed.",
            field=field,
        )


def check_mime_type(mime_type: str) -> str:
    """A MIME type as given, if it is one."""
    if len(mime_type) > MIME_TYPE_LENGTH or not _MIME_TYPE.match(mime_type):
        raise InvalidInput(
            f"{mime_type[:80]!r} is not a MIME type like `image/png` or `text/plain; "
            f"charset=utf-8` (at most {MIME_TYPE_LENGTH} characters).",
            field="mimeType",
        )
    return mime_type


def canonical_uri(app_name: str, user_id: str, session_id: str | None, name: str, v: int) -> str:
    """ADK's `artifact://` URI of a version (`artifact_util.get_artifact_uri`); a `user:` name's
    names no session."""
    session = "" if session_id is None or is_user_scoped(name) else f"/sessions/{session_id}"
    return f"artifact://apps/{app_name}/users/{user_id}{session}/artifacts/{name}/versions/{v}"


_ARTIFACT_URI = re.compile(
    r"^artifact://apps/(?P<app>[^/]+)/users/(?P<user>[^/]+)(?:/sessions/(?P<session>[^/]+))?"
    r"/artifacts/(?P<name>.+)/versions/(?P<version>\d{1,18})$"
)


@dataclass(frozen=True)
class ArtifactRef:
    """What an `artifact://` URI names."""

    app_name: str
    user_id: str
    session_id: str | None
    name: str
    version: int


def parse_artifact_uri(uri: str) -> ArtifactRef | None:
    """The version an `artifact://` URI names; None for any other URI."""
    match = _ARTIFACT_URI.match(uri)
    if match is None:
        return None
    return ArtifactRef(
        match["app"], match["user"], match["session"], match["name"], int(match["version"])
    )


def check_reference(
    app_name: str, user_id: str, session_id: str | None, uri: str
) -> ArtifactRef | None:
    """The version an `artifact://` URI names, if it names one the caller's scope may follow
    (ADK's `validate_artifact_reference_scope`, with its messages); None for another URI."""
    if not uri.startswith("artifact://"):
        return None
    target = parse_artifact_uri(uri)
    if target is None:
        raise InvalidInput(f"Invalid artifact reference URI: {uri}", field="fileUri")
    if (target.app_name, target.user_id) != (app_name, user_id):
        raise InvalidInput(
            "Artifact references must stay within the same app and user scope.", field="fileUri"
        )
    if target.session_id is not None and target.session_id != session_id:
        raise InvalidInput(
            "Session-scoped artifact references must stay within the same session scope.",
            field="fileUri",
        )
    return target


def is_rewind_tombstone(kind: str, mime_type: str | None, size: int) -> bool:
    """Whether a version is ADK's rewind marker, which every artifact service loads as absent
    (an artifact saved with exactly that content too, as ADK documents)."""
    return kind == "bytes" and mime_type == _TOMBSTONE_MIME_TYPE and size == 0


@dataclass(frozen=True)
class ByteRange:
    """Bytes `start` to `end` inclusive, of a content `size` bytes long."""

    start: int
    end: int
    size: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1


_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d{0,19})\s*-\s*(\d{0,19})\s*$")


class UnsatisfiableRange(Exception):
    """A `Range` that selects no byte of the content (416)."""


def byte_range(header: str | None, size: int) -> ByteRange | None:
    """The one range of a `Range` header (RFC 9110 §14.1.2) within `size` bytes; None to send
    the whole content (no header, or one this does not take: several ranges, other units)."""
    if header is None:
        return None
    match = _RANGE.match(header)
    if match is None or not (match[1] or match[2]):
        return None
    if not match[1]:  # the last N bytes
        last = int(match[2])
        if last == 0 or size == 0:
            raise UnsatisfiableRange
        return ByteRange(max(size - last, 0), size - 1, size)
    start = int(match[1])
    end = int(match[2]) if match[2] else size - 1
    if match[2] and end < start:
        return None  # invalid: ignored, as RFC 9110 says
    if start >= size:
        raise UnsatisfiableRange
    return ByteRange(start, min(end, size - 1), size)
