"""What both clients share that does no I/O: paths, query strings, headers, the retry rule."""

import itertools
import json
import os
import random
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from importlib.metadata import version
from typing import Generic, Protocol, TypedDict, TypeVar, runtime_checkable
from urllib.parse import quote, unquote

import httpx

from sessionary_client.errors import InvalidRequestError
from sessionary_client.models import Event, StreamEvent

DEFAULT_TIMEOUT = 10.0

Params = dict[str, str | int | float | list[str]]


DEFAULT_URL = "http://127.0.0.1:8000"


def base_url_or_default(base_url: str | None) -> str:
    """The base URL given, else SESSIONARY_URL, else a local server's."""
    return base_url or os.environ.get("SESSIONARY_URL") or DEFAULT_URL


USER_AGENT = f"sessionary-python/{version('sessionary-client')}"


def default_headers(api_key: str | None, headers: dict[str, str] | None) -> httpx.Headers:
    """This client's User-Agent, and the key given, else SESSIONARY_API_KEY, as a bearer
    token; then `headers`, which replace either whatever the case of their names."""
    key = api_key if api_key is not None else os.environ.get("SESSIONARY_API_KEY")
    credentials = {"Authorization": f"Bearer {key}"} if key else {}
    merged = httpx.Headers({"User-Agent": USER_AGENT, **credentials})
    merged.update(headers or {})
    return merged


def quoted_segment(segment: str) -> str:
    """A path segment percent-encoded: ids may hold `/`, `?`, `#` or spaces. A dot segment
    (`.`, `..`) is encoded too, or httpx would resolve it: removing event `..` would delete
    the session; encoded, it reaches the server as an id, which refuses it."""
    quoted = quote(segment, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def refused(why: str, *loc: str) -> InvalidRequestError:
    """The error of a request this client does not send, since the server would refuse it: a
    422 as the server's, `loc` naming what is wrong ("path", "session_id")."""
    problem = {
        "type": "urn:sessionary:problem:validation_error",
        "title": "Invalid input",
        "status": 422,
        "detail": f"{'.'.join(loc)}: {why} (not sent)",
        "code": "validation_error",
        "errors": [{"loc": list(loc), "msg": why, "type": "value_error"}],
    }
    return InvalidRequestError(422, problem)


# What an id of a path is, by the segment before it (`/apps/{app_name}/users/{user_id}/…`).
ID_NAMES = {
    "apps": "app_name",
    "users": "user_id",
    "sessions": "session_id",
    "events": "event_id",
    "artifacts": "name",
    "memories": "memory_id",
}


def quoted_path(*segments: str) -> str:
    """`/a/b/…`, each segment percent-encoded (`quoted_segment`). An id that UTF-8 cannot
    encode (a lone surrogate, as `surrogateescape` decodes a byte that is not UTF-8) is
    refused, as the server would refuse it."""
    quoted = []
    for before, segment in itertools.pairwise(("", *segments)):
        try:
            quoted.append(quoted_segment(segment))
        except UnicodeEncodeError:
            raise refused("an id must be valid UTF-8", "path", ID_NAMES.get(before, "id")) from None
    return "/" + "/".join(quoted)


def json_content(body: object) -> bytes:
    """`body` as httpx sends `json=`, made once for all the resends; one with a str that UTF-8
    cannot encode is refused, as the server would refuse it."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise refused("strings must be valid UTF-8", "body") from None


def sessions_path(app_name: str, user_id: str, *rest: str) -> str:
    return quoted_path("apps", app_name, "users", user_id, "sessions", *rest)


def artifacts_path(
    app_name: str, user_id: str, session_id: str | None, name: str | None = None, *rest: str
) -> str:
    """A session's artifacts (its names and its user's `user:` ones), or, without a session
    id, the user's own (`user:` names); then an artifact's `name`, its `/` kept as the
    separator of the path's segments, as the server reads it (it refuses `%2F`)."""
    named = () if name is None else (*name.split("/"), *rest)
    if session_id is None:
        return quoted_path("apps", app_name, "users", user_id, "artifacts", *named)
    return sessions_path(app_name, user_id, session_id, "artifacts", *named)


def memories_path(app_name: str, user_id: str | None, *rest: str) -> str:
    """A user's memories, or (`user_id=None`) the app's own, which every user shares."""
    if user_id is None:
        return quoted_path("apps", app_name, "memories", *rest)
    return quoted_path("apps", app_name, "users", user_id, "memories", *rest)


def range_header(offset: int, length: int | None) -> dict[str, str] | None:
    """The `Range` of `length` bytes from `offset` (to the end without a length); a negative
    `offset` counts from the end, as a slice's does. None for the whole content."""
    if length is not None and length < 1:
        raise ValueError(f"length must be at least 1, not {length}")
    if offset < 0:
        if length is not None:
            raise ValueError("a negative offset reads to the end: give no length")
        return {"Range": f"bytes={offset}"}
    if offset == 0 and length is None:
        return None
    end = "" if length is None else str(offset + length - 1)
    return {"Range": f"bytes={offset}-{end}"}


def metadata_header(metadata: dict[str, object] | None) -> dict[str, str]:
    """An upload's custom metadata as its `Artifact-Metadata` header: JSON, non-ASCII escaped
    (a header carries Latin-1 alone)."""
    if metadata is None:
        return {}
    return {"Artifact-Metadata": json.dumps(metadata, separators=(",", ":"), allow_nan=False)}


@runtime_checkable
class Readable(Protocol):
    """A file opened in binary mode, or anything else that reads bytes as one does."""

    def read(self, size: int, /) -> bytes: ...


@runtime_checkable
class Seekable(Readable, Protocol):
    def seekable(self) -> bool: ...

    def tell(self) -> int: ...

    def seek(self, offset: int, /) -> int: ...


# What an upload takes: its bytes, or a file, or its chunks as an iterator yields them.
Chunks = Readable | Iterable[bytes]
AsyncChunks = Chunks | AsyncIterable[bytes]
UploadContent = bytes | Chunks
AsyncUploadContent = bytes | AsyncChunks
# A file is read this much at a time: in the asyncio client each read is a hop to a thread,
# which costs nothing next to a chunk this large.
UPLOAD_CHUNK = 1 << 20


Content = TypeVar("Content", bound=AsyncUploadContent)


class Upload(Generic[Content]):
    """An upload's content, sent again from where it began for a resend when it can be:
    bytes, or a seekable file (rewound to where it was when given). An iterator is sent once."""

    def __init__(self, content: Content) -> None:
        self.content = content
        self._start = None
        if isinstance(content, Seekable) and content.seekable():
            self._start = content.tell()

    @property
    def replayable(self) -> bool:
        return isinstance(self.content, bytes) or self._start is not None

    def rewind(self) -> None:
        if self._start is not None:
            assert isinstance(self.content, Seekable)
            self.content.seek(self._start)


def query(**values: str | int | float | list[str] | None) -> Params:
    """The query parameters that were given: None means "leave it to the server"."""
    return {name: value for name, value in values.items() if value is not None}


def label_filters(labels: dict[str, str] | None) -> list[str] | None:
    """`labels` as the lists' repeated `label=key:value`."""
    return None if not labels else [f"{key}:{value}" for key, value in labels.items()]


class Unset:
    """The default of an argument whose `None` means something (clear it): left unchanged."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()


# A stream waits this long for a byte (a heartbeat comes every 15 s by default) before it
# takes the connection for lost and resumes.
STREAM_READ_TIMEOUT = 60.0
# The events after which a session's stream ends: nothing more will happen to it.
FINAL_EVENTS = frozenset({"closed", "deleted"})


def ends_session_stream(event: StreamEvent) -> bool:
    """A session's stream ends after `closed` or `deleted`."""
    return event.event in FINAL_EVENTS


def ends_user_stream(event: StreamEvent) -> bool:
    """A user's stream ends after `erased`: the user (or the whole app) was erased, and the
    server has ended the stream."""
    return event.event == "erased"


def ends_app_stream(event: StreamEvent) -> bool:
    """An app's stream ends after the app's `erased` (`userId` null); one of its users'
    (`userId` that user) is told and the stream goes on."""
    data = event.data if isinstance(event.data, dict) else {}
    return event.event == "erased" and data.get("userId") is None


def stream_event(lines: list[str]) -> StreamEvent | None:
    """One server-sent event from its lines; None for a comment (a heartbeat)."""
    fields = dict(line.split(": ", 1) for line in lines if line and not line.startswith(":"))
    if "event" not in fields:
        return None
    position = fields.get("id")
    return StreamEvent(
        event=fields["event"],
        id=None if position is None else int(position),
        data=json.loads(fields.get("data", "null")),
    )


SessionKey = tuple[str, str, str]
# The verbs a session's path may end in (`…/sessions/{id}:fork`).
SESSION_VERBS = frozenset(
    {"fork", "close", "rewind", "trim", "reset", "compact", "heal", "export", "remember"}
)


def session_of(path: str) -> SessionKey | None:
    """The session a path is about, if any: `/apps/{app}/users/{user}/sessions/{id}…`."""
    segments = [unquote(segment) for segment in path.split("/")[1:]]
    if len(segments) < 6 or segments[0:5:2] != ["apps", "users", "sessions"]:
        return None
    head, colon, verb = segments[5].rpartition(":")
    return segments[1], segments[3], head if colon and verb in SESSION_VERBS else segments[5]


# A position in the primary's write-ahead log as the server sends it (`0/16B3748`).
_POSITION = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


def _position_value(text: str) -> int | None:
    found = _POSITION.match(text.strip())
    return None if found is None else int(found[1], 16) << 32 | int(found[2], 16)


class WrittenVersions:
    """The version each session was at after this client's last write to it (its ETag), so
    that a read can ask for it (`minVersion`): with a read replica, the server then answers
    from the primary until the replica has the write. A delete leaves no version: for a
    session this client deleted, or any session of a user it erased, a read asks instead for
    the primary's position the delete answered with (`Sessionary-Position`, sent back as
    `minPosition`), so that a lagging replica does not show what was deleted. The most
    recent `size` sessions, and as many deletes and erases."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._versions: OrderedDict[SessionKey, int] = OrderedDict()
        # By session (deleted) or by (app, user) (erased): the WAL position, as a number.
        self._positions: OrderedDict[tuple[str, ...], int] = OrderedDict()
        self._lock = threading.Lock()  # a client serves many threads, or their loops

    def of(self, app_name: str, user_id: str, session_id: str) -> int | None:
        return self._versions.get((app_name, user_id, session_id))

    def position_of(self, app_name: str, user_id: str, session_id: str) -> str | None:
        """The position a read of the session asks for (`minPosition`): the latest of its
        own delete's and its user's erase's, when this client made one."""
        found = [
            self._positions.get(key, 0)
            for key in ((app_name, user_id, session_id), (app_name, user_id))
        ]
        latest = max(found)
        return f"{latest >> 32:X}/{latest & 0xFFFFFFFF:X}" if latest else None

    def saw(self, method: str, path: str, response: httpx.Response) -> None:
        """Note the version a successful write answered with. The session is the one of the
        path, or the new one the answer is (a create, an import, a fork, a child)."""
        etag = response.headers.get("etag", "").strip('"')
        if method in ("GET", "HEAD") or not etag.isdecimal():
            return
        key = session_of(path)
        if key is None and not path.endswith(("/sessions", "/sessions:import")):
            return  # not a session's version (a memory's ETag is its revision)
        if key is None or path.endswith((":fork", "/children")):  # a new session: the body's
            body = response.json()
            key = (body["appName"], body["userId"], body["id"])
        with self._lock:
            self._versions[key] = max(int(etag), self._versions.get(key, 0))
            self._versions.move_to_end(key)
            while len(self._versions) > self.size:
                self._versions.popitem(last=False)

    def forget(
        self, app_name: str, user_id: str, session_id: str, response: httpx.Response
    ) -> None:
        """The session is deleted: its version forgotten (a new one may take the id), the
        position its delete answered with kept."""
        key = (app_name, user_id, session_id)
        with self._lock:
            self._versions.pop(key, None)
            self._keep_position(key, response)

    def forget_user(self, app_name: str, user_id: str, response: httpx.Response) -> None:
        """Forget every session of the user (erased: new ones may take their ids); keep the
        position its erase answered with."""
        with self._lock:
            for key in [key for key in self._versions if key[:2] == (app_name, user_id)]:
                del self._versions[key]
            self._keep_position((app_name, user_id), response)

    def _keep_position(self, key: tuple[str, ...], response: httpx.Response) -> None:
        position = _position_value(response.headers.get("sessionary-position", ""))
        if position is None:  # a server without it
            return
        self._positions[key] = max(position, self._positions.get(key, 0))
        self._positions.move_to_end(key)
        while len(self._positions) > self.size:
            self._positions.popitem(last=False)

    def forget_app(self, app_name: str) -> None:
        """Forget every session of the app (erased: new ones may take their ids)."""
        with self._lock:
            for key in [key for key in self._versions if key[0] == app_name]:
                del self._versions[key]


Kept = TypeVar("Kept")


class SessionReads(Generic[Kept]):
    """What was read of each session, up to `limit` in all as `size` counts it, the least
    recently used dropped first. A lock keeps it whole under the threads (each with its own
    event loop) that share the client it serves."""

    def __init__(self, limit: int, size: Callable[[Kept], int]) -> None:
        self.limit, self._size = limit, size
        self._sessions: OrderedDict[SessionKey, Kept] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: SessionKey) -> Kept | None:
        with self._lock:
            found = self._sessions.get(key)
            if found is not None:
                self._sessions.move_to_end(key)
            return found

    def put(self, key: SessionKey, kept: Kept | None) -> None:
        """Keep `kept` for the session (None: keep nothing of it), unless it is larger than
        the limit alone."""
        with self._lock:
            dropped = self._sessions.pop(key, None)
            self._total -= self._size(dropped) if dropped is not None else 0
            if kept is None or self._size(kept) > self.limit:
                return
            self._sessions[key] = kept
            self._total += self._size(kept)
            while self._total > self.limit:
                _, evicted = self._sessions.popitem(last=False)
                self._total -= self._size(evicted)


# What `if_match` takes: a session's `version`, or its `ETag` as read (`'"7"'`), or `*`
# (any version, but the session must exist).
IfMatch = int | str | None


def if_match_header(version: IfMatch) -> dict[str, str] | None:
    if version is None:
        return None
    tag = str(version).strip()
    if tag.isdecimal():
        tag = f'"{tag}"'
    if tag != "*" and not re.fullmatch(r'"\d+"', tag):
        raise ValueError(f"if_match takes a version, its ETag ('\"7\"') or '*', not {version!r}")
    return {"If-Match": tag}


def with_id(event: Event) -> Event:
    """The event with an `id`, so that resending it is recognised as the same event."""
    return event if event.get("id") else {**event, "id": str(uuid.uuid4())}


class RequestOptions(TypedDict, total=False):
    """What one call changes of the client's, as keyword arguments of every method (named as
    openai-python's): `timeout` (seconds, or an `httpx.Timeout`) replaces the client's;
    `extra_headers` go over the client's headers (a `User-Agent` among them replaces the
    client's), the operation's own (`Content-Type`, `If-Match`) over them; `max_retries`
    replaces `retries`, and for a stream is how many reconnects in a row it makes."""

    timeout: float | httpx.Timeout
    extra_headers: dict[str, str]
    max_retries: int


def call_headers(options: RequestOptions, own: dict[str, str] | None) -> httpx.Headers:
    """A call's `extra_headers` with the operation's `own` over them, whatever their case."""
    headers = httpx.Headers(options.get("extra_headers"))
    headers.update(own or {})
    return headers


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how soon to resend a request whose answer was lost or was a transient error."""

    retries: int = 2
    backoff: float = 0.25
    max_backoff: float = 5.0

    # The request never reached the server: resending cannot duplicate anything.
    _NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
    # The server, or a proxy in front of it, could not serve the request right now.
    _TRANSIENT = frozenset({429, 502, 503, 504})
    # 503s that the same request again would meet again: a search too costly for the server's
    # time limit (narrow it instead).
    _LASTING = frozenset({"search_timeout"})

    def of_call(self, options: RequestOptions) -> "RetryPolicy":
        """This policy with the call's `max_retries`, if it gives one."""
        retries = options.get("max_retries")
        return self if retries is None else replace(self, retries=retries)

    def delay(
        self, idempotent: bool, attempt: int, outcome: httpx.Response | Exception
    ) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None to give up with this outcome.

        `idempotent`: sending the request twice has the effect of sending it once, so it may
        be resent after a lost answer too, not only when it never left.
        """
        if attempt >= self.retries:
            return None
        if isinstance(outcome, httpx.Response):
            retry = (
                idempotent
                and outcome.status_code in self._TRANSIENT
                and _problem_code(outcome) not in self._LASTING
            )
        else:
            retry = isinstance(outcome, self._NOT_SENT) or (
                idempotent and isinstance(outcome, httpx.TransportError)
            )
        if not retry:
            return None
        if isinstance(outcome, httpx.Response):
            asked = retry_after(outcome.headers)
            if asked is not None:
                return asked
        # Full jitter, so clients that failed together do not come back together.
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


# The longest wait a Retry-After may ask: a longer one is cut to it (not ignored), rather than
# keep a caller waiting for the hour a proxy asked.
MAX_RETRY_AFTER = 60.0


def retry_after(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """The seconds an answer's `Retry-After` asks to wait (seconds, or an HTTP date: one
    past is 0), at most `MAX_RETRY_AFTER`; None when it asks none that can be read."""
    value = headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        try:
            date = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        date = date if date.tzinfo else date.replace(tzinfo=UTC)  # "-0000": UTC too
        seconds = max((date - (now or datetime.now(UTC))).total_seconds(), 0.0)
    if not seconds >= 0:  # negative, or NaN
        return None
    return min(seconds, MAX_RETRY_AFTER)


def _problem_code(response: httpx.Response) -> str | None:
    """The `code` of a problem+json answer; None for any other body."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None
