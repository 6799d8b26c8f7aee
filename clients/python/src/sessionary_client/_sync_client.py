# Generated from _async_client.py by scripts/unasync.py: do not edit. Regenerate with
# `.venv/bin/python clients/python/scripts/unasync.py`, from the repository root.
"""`SessionaryClient`: the blocking twin of `AsyncSessionaryClient`, generated from it."""

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Concatenate, Literal, ParamSpec, Self, TypeVar, Unpack, cast

import httpx

from sessionary_client._core import (
    DEFAULT_TIMEOUT,
    STREAM_READ_TIMEOUT,
    UNSET,
    UPLOAD_CHUNK,
    Chunks,
    IfMatch,
    Params,
    Readable,
    RequestOptions,
    RetryPolicy,
    Unset,
    Upload,
    UploadContent,
    WrittenVersions,
    artifacts_path,
    base_url_or_default,
    call_headers,
    default_headers,
    ends_app_stream,
    ends_session_stream,
    ends_user_stream,
    if_match_header,
    json_content,
    label_filters,
    memories_path,
    metadata_header,
    query,
    quoted_path,
    range_header,
    sessions_path,
    stream_event,
    with_id,
)
from sessionary_client._transport import default_transport
from sessionary_client.errors import ArtifactIsReferenceError, connection_error, error_for
from sessionary_client.models import (
    Appended,
    AppErasure,
    AppPage,
    AppSummary,
    AppUsage,
    ArtifactPage,
    ArtifactPart,
    ArtifactVersion,
    ArtifactVersionPage,
    AuditPage,
    AuditRecord,
    CompactionStrategy,
    ContextView,
    Embedding,
    EmbeddingsStatus,
    Erasure,
    Event,
    EventCount,
    EventList,
    EventPage,
    EventsRemoved,
    Healed,
    Health,
    Inherit,
    KeyScope,
    Memory,
    MemoryKind,
    MemoryPage,
    MemoryRevision,
    MemoryRevisionPage,
    MemorySource,
    Order,
    Outcome,
    Readiness,
    RecallMode,
    RecallResult,
    Remembered,
    ScopeState,
    SearchPage,
    Session,
    SessionList,
    SessionPage,
    State,
    StreamEvent,
    ToolCall,
    ToolCallStatus,
    Trimmed,
    UserImport,
    UserPage,
    UserSummary,
)

_APPEND_OUTCOMES: dict[int, Literal["stored", "replayed", "acknowledged"]] = {
    201: "stored",
    200: "replayed",
    202: "acknowledged",
}


def _present(**fields: object) -> dict[str, object]:
    """A request body of the fields given (not None)."""
    return {name: value for name, value in fields.items() if value is not None}


def _memory_create(
    text: str | None,
    content: dict[str, Any] | None,
    memory_id: str | None,
    author: str | None,
    metadata: dict[str, Any] | None,
    topics: list[str] | None,
    source: MemorySource | None,
    ttl: float | None,
    expire_time: float | None,
    embedding: Embedding | None,
) -> dict[str, object]:
    """A `MemoryCreate` body."""
    return _present(
        id=memory_id,
        text=text,
        content=content,
        author=author,
        metadata=metadata,
        topics=topics,
        source=source,
        ttl=ttl,
        expireTime=expire_time,
        embedding=embedding,
    )


def _memory_update(
    text: str | None,
    content: dict[str, Any] | None,
    author: str | None,
    metadata: dict[str, Any] | None,
    topics: list[str] | None,
    ttl: float | None,
    expire_time: float | Unset | None,
    embedding: Embedding | None,
) -> dict[str, object]:
    """A `MemoryUpdate` body: what is given; `expire_time=None` clears the expiry."""
    body = _present(
        text=text,
        content=content,
        author=author,
        metadata=metadata,
        topics=topics,
        ttl=ttl,
        embedding=embedding,
    )
    if not isinstance(expire_time, Unset):
        body["expireTime"] = expire_time
    return body


class SessionaryClient:
    """Every Sessionary endpoint, one method each.

    `base_url` defaults to SESSIONARY_URL, else http://127.0.0.1:8000; `api_key` to
    SESSIONARY_API_KEY. Errors are `sessionary_client.errors` exceptions, keyed by `code`; a
    request that gets no answer raises `APIConnectionError`. `if_match` takes a session's
    `version`, its `ETag` as read, or `*`.

    Retries: requests that never reached the server are resent; reads, appends (each event
    carries its id) and app/user state merges are also resent after a lost answer, a 429 or a
    502-504, after the wait its `Retry-After` asks (at most 60 s), else the backoff.

    Every method also takes `timeout`, `extra_headers` and `max_retries` for that call alone
    (`RequestOptions`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        backoff: float = 0.25,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`transport` sends the requests (by default the leanest installed: see the README's
        "Transports"); `http` replaces the whole httpx client (its own base URL, transport,
        timeouts, auth)."""
        self._retry = RetryPolicy(retries=retries, backoff=backoff)
        self._written = WrittenVersions()
        self._http = http or httpx.Client(
            base_url=base_url_or_default(base_url),
            timeout=timeout,
            headers=default_headers(api_key, headers),
            transport=transport or default_transport(),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: object = None,
        content: bytes | Upload[UploadContent] | None = None,
        headers: dict[str, str] | None = None,
        idempotent: bool = False,
        stream: bool = False,
        **options: Unpack[RequestOptions],
    ) -> httpx.Response:
        """The successful answer, after the resends `RetryPolicy` allows; errors are raised.

        `body` is sent as JSON, `content` as it is (with its Content-Type in `headers`).
        `idempotent`: sending the request twice has the effect of sending it once. `stream`:
        the answer's body is left to read (an error's is read here).
        """
        if body is not None:
            content = json_content(body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        sent = call_headers(options, headers)
        timeout = options.get("timeout", httpx.USE_CLIENT_DEFAULT)
        retry = self._retry.of_call(options)
        attempt = 0
        while True:
            request = self._http.build_request(
                method,
                path,
                params=params,
                content=_attempt(content),
                headers=sent,
                timeout=timeout,
            )
            outcome: httpx.Response | Exception
            try:
                outcome = self._http.send(request, stream=stream)
                if outcome.is_error:
                    outcome.read()
            except httpx.TransportError as error:
                outcome = error
            delay = retry.delay(idempotent, attempt, outcome)
            if delay is None:
                if isinstance(outcome, httpx.TransportError):
                    raise connection_error(outcome, request.headers) from outcome
                if outcome.is_error:
                    raise error_for(outcome)
                self._written.saw(method, path, outcome)
                return outcome
            time.sleep(delay)
            attempt += 1

    def create_session(
        self,
        app_name: str,
        user_id: str,
        *,
        session_id: str | None = None,
        state: State | None = None,
        events: list[Event] | None = None,
        display_name: str | None = None,
        labels: dict[str, str] | None = None,
        ttl: float | None = None,
        expire_time: float | None = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """A new session; with `ttl` (seconds) or `expire_time` (epoch seconds), one that
        expires."""
        body = _present(
            sessionId=session_id,
            state=state,
            events=None if events is None else [with_id(event) for event in events],
            displayName=display_name,
            labels=labels,
            ttl=ttl,
            expireTime=expire_time,
        )
        response = self._send("POST", sessions_path(app_name, user_id), body=body, **options)
        return cast(Session, response.json())

    def get_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
        until_seq: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """The session; with `until_seq`, as it was at that seq (events and session state).
        It holds every write this client made to it, even from a lagging read replica."""
        read = self.get_session_json(
            app_name,
            user_id,
            session_id,
            num_recent_events=num_recent_events,
            after_timestamp=after_timestamp,
            until_seq=until_seq,
            **options,
        )
        return cast(Session, json.loads(read))

    def get_session_json(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
        until_seq: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> bytes:
        """As `get_session`, the session's JSON as the server sent it: for a caller that
        decodes it into models of its own in one pass (the ADK adapter does)."""
        path = sessions_path(app_name, user_id, session_id)
        params = query(
            numRecentEvents=num_recent_events,
            afterTimestamp=after_timestamp,
            untilSeq=until_seq,
            minVersion=self._written.of(app_name, user_id, session_id),
            minPosition=self._written.position_of(app_name, user_id, session_id),
        )
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return response.content

    def list_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        order: Order = "asc",
        labels: dict[str, str] | None = None,
        display_name: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> SessionPage:
        """One page of sessions (without events); `user_id=None` lists every user's; with
        `labels`, those that have all of them; with `display_name`, those so named."""
        if user_id is None:
            path = quoted_path("apps", app_name, "sessions")
        else:
            path = sessions_path(app_name, user_id)
        params = query(
            pageSize=page_size,
            pageToken=page_token,
            order=order,
            label=label_filters(labels),
            displayName=display_name,
        )
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(SessionPage, response.json())

    def iter_sessions(
        self,
        app_name: str,
        user_id: str | None = None,
        *,
        page_size: int = 100,
        order: Order = "asc",
        labels: dict[str, str] | None = None,
        display_name: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> Iterator[Session]:
        """Every session (with the filters of `list_sessions`), fetching pages as the
        iteration reaches them."""
        page_token: str | None = None
        while True:
            page = self.list_sessions(
                app_name,
                user_id,
                page_size=page_size,
                page_token=page_token,
                order=order,
                labels=labels,
                display_name=display_name,
                **options,
            )
            yield from page["sessions"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def list_apps(
        self,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AppPage:
        """One page of the apps that have sessions (a key of one app sees it alone), by name."""
        params = query(pageSize=page_size, pageToken=page_token)
        response = self._send("GET", "/apps", params=params, idempotent=True, **options)
        return cast(AppPage, response.json())

    def iter_apps(
        self, *, page_size: int = 100, **options: Unpack[RequestOptions]
    ) -> Iterator[AppSummary]:
        """Every app that has sessions, fetching pages as the iteration reaches them."""
        page_token: str | None = None
        while True:
            page = self.list_apps(page_size=page_size, page_token=page_token, **options)
            yield from page["apps"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def list_users(
        self,
        app_name: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> UserPage:
        """One page of the app's users that have sessions (a key of one user sees it alone)."""
        params = query(pageSize=page_size, pageToken=page_token)
        path = quoted_path("apps", app_name, "users")
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(UserPage, response.json())

    def iter_users(
        self, app_name: str, *, page_size: int = 100, **options: Unpack[RequestOptions]
    ) -> Iterator[UserSummary]:
        """Every user of the app that has sessions, fetching pages as needed."""
        page_token: str | None = None
        while True:
            page = self.list_users(app_name, page_size=page_size, page_token=page_token, **options)
            yield from page["users"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def fork_session(
        self,
        app_name: str,
        user_id: str,
        parent_id: str,
        /,
        *,
        session_id: str | None = None,
        at_seq: int | None = None,
        before_invocation_id: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """A new session (`session_id`, else one the server makes) with the parent's events
        up to `at_seq`, or before the first event of `before_invocation_id`, or (with
        neither) all of them, and its session state then."""
        body = _present(sessionId=session_id, atSeq=at_seq, beforeInvocationId=before_invocation_id)
        path = sessions_path(app_name, user_id, parent_id) + ":fork"
        response = self._send("POST", path, body=body, **options)
        return cast(Session, response.json())

    def create_child_session(
        self,
        app_name: str,
        user_id: str,
        parent_id: str,
        /,
        *,
        session_id: str | None = None,
        state: State | None = None,
        function_call_id: str | None = None,
        inherit: Inherit = "none",
        **options: Unpack[RequestOptions],
    ) -> Session:
        """A child session (`session_id`, else one the server makes) for a sub-agent; with
        `function_call_id`, closing it answers that call of the parent."""
        body = _present(
            sessionId=session_id,
            state=state,
            functionCallId=function_call_id,
            inherit=inherit,
        )
        path = sessions_path(app_name, user_id, parent_id, "children")
        response = self._send("POST", path, body=body, **options)
        return cast(Session, response.json())

    def close_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        outcome: Outcome,
        *,
        result: object = None,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """Close the session to writes; a child made for a function call answers it with
        `{outcome, result}`."""
        # Not resent after a lost answer: the resend would fail with SessionClosedError.
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":close",
            body=_present(outcome=outcome, result=result),
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Session, response.json())

    def get_lineage(
        self, app_name: str, user_id: str, session_id: str, **options: Unpack[RequestOptions]
    ) -> list[Session]:
        """The session's ancestors (without events), root first."""
        path = sessions_path(app_name, user_id, session_id, "lineage")
        response = self._send("GET", path, idempotent=True, **options)
        return cast(SessionList, response.json())["sessions"]

    def list_children(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> SessionPage:
        """One page of the session's forks and children (without events), oldest first."""
        path = sessions_path(app_name, user_id, session_id, "children")
        params = query(pageSize=page_size, pageToken=page_token)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(SessionPage, response.json())

    def rewind_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        before_invocation_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Event:
        """ADK's rewind: appends the event that undoes `before_invocation_id` and everything
        after it (state included); returns that event."""
        # Not resent after a lost answer: a second rewind event would be appended.
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":rewind",
            body={"beforeInvocationId": before_invocation_id},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Event, response.json())

    def trim_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        keep_last: int,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Trimmed:
        """Remove all but the newest `keep_last` events (and answers to removed calls)."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":trim",
            body={"keepLast": keep_last},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Trimmed, response.json())

    def reset_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Trimmed:
        """Remove every event and the session's own state."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":reset",
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Trimmed, response.json())

    def remove_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> EventsRemoved:
        """Remove an event and the events answering its function calls."""
        response = self._send(
            "DELETE",
            sessions_path(app_name, user_id, session_id, "events", event_id),
            headers=if_match_header(if_match),
            **options,
        )
        return cast(EventsRemoved, response.json())

    def rewrite_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event_id: str,
        content: dict[str, object],
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Event:
        """Replace an event's `content` (a redaction, say); returns the event as stored."""
        response = self._send(
            "PATCH",
            sessions_path(app_name, user_id, session_id, "events", event_id),
            body={"content": content},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Event, response.json())

    def get_context(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        token_budget: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> ContextView:
        """What a model should see next: the live events, compactions applied, the newest
        that fit `token_budget` (all without one), tool calls whole with their answers."""
        path = sessions_path(app_name, user_id, session_id) + "/context"
        params = query(tokenBudget=token_budget)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(ContextView, response.json())

    def compact_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        strategy: CompactionStrategy,
        *,
        keep_last: int = 0,
        summary: str | None = None,
        tool_output_max_chars: int | None = None,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Event:
        """Append one compaction event over the live events older than the newest
        `keep_last`: `summary` (your text replaces them), `truncate`, or `observationMask`
        (tool outputs longer than `tool_output_max_chars` masked); returns that event."""
        # Not resent after a lost answer: a second compaction event would be appended.
        body = _present(
            strategy=strategy,
            keepLast=keep_last,
            summary=summary,
            toolOutputMaxChars=tool_output_max_chars,
        )
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":compact",
            body=body,
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Event, response.json())

    def list_tool_calls(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        status: ToolCallStatus | None = None,
        timeout_seconds: float | None = None,
        **options: Unpack[RequestOptions],
    ) -> list[ToolCall]:
        """The session's function calls, in order: answered, pending or orphaned (unanswered
        past `timeout_seconds`; the server's default without it)."""
        path = sessions_path(app_name, user_id, session_id) + "/toolCalls"
        params = query(status=status, timeoutSeconds=timeout_seconds)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(list[ToolCall], response.json()["toolCalls"])

    def heal_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        timeout_seconds: float | None = None,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Healed:
        """Answer each orphaned call with an error response. A second heal answers nothing,
        so it is resent after a lost answer (but for one with `if_match`, which would be a
        412 the second time)."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":heal",
            body=_present(timeoutSeconds=timeout_seconds),
            headers=if_match_header(if_match),
            idempotent=if_match is None,
            **options,
        )
        return cast(Healed, response.json())

    def queue_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event: Event,
        **options: Unpack[RequestOptions],
    ) -> Event:
        """Queue an event apart from the log (a user typing while a turn runs); returns it as
        queued. An id is given to it here, so a resend after a lost answer queues it once."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + "/pending",
            body=with_id(event),
            idempotent=True,
            **options,
        )
        return cast(Event, response.json())

    def list_pending(
        self, app_name: str, user_id: str, session_id: str, **options: Unpack[RequestOptions]
    ) -> list[Event]:
        """The queued events, in the order they came."""
        path = sessions_path(app_name, user_id, session_id) + "/pending"
        response = self._send("GET", path, idempotent=True, **options)
        return cast(list[Event], response.json()["events"])

    def clear_pending(
        self, app_name: str, user_id: str, session_id: str, **options: Unpack[RequestOptions]
    ) -> None:
        """Empty the queue without appending it."""
        path = sessions_path(app_name, user_id, session_id) + "/pending"
        self._send("DELETE", path, idempotent=True, **options)

    def promote_pending(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        force: bool = False,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> list[Event]:
        """Append every queued event, in order, in one transaction; the events as stored
        (empty when none was queued). `ToolCallsPendingError` while a function call is
        unanswered, unless `force`."""
        # Not resent after a lost answer: the queue may have filled again meanwhile.
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + "/pending:promote",
            body={"force": force},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(list[Event], response.json()["events"])

    def delete_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> None:
        """Delete the session and its events; with `if_match`, only at that version."""
        # Not resent after a lost answer: for the caller, the resend would answer 404.
        response = self._send(
            "DELETE",
            sessions_path(app_name, user_id, session_id),
            headers=if_match_header(if_match),
            **options,
        )
        # A new one may take the id; the reads that follow ask for the delete's position.
        self._written.forget(app_name, user_id, session_id, response)

    def update_session_state(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: State,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """Record `state_delta` as an event authored by `user`; returns the session."""
        # Not resent after a lost answer: each PATCH records an event with a server-chosen id.
        response = self._send(
            "PATCH",
            sessions_path(app_name, user_id, session_id),
            body={"stateDelta": state_delta},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Session, response.json())

    def update_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        state_delta: State | None = None,
        display_name: str | Unset | None = UNSET,
        labels: dict[str, str] | None = None,
        ttl: float | None = None,
        expire_time: float | Unset | None = UNSET,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Session:
        """Change what is given, in one write: `state_delta` (recorded as an event, like
        `update_session_state`), the display name (None clears it), every label (`{}` clears
        them), the expiry (`ttl` seconds from now, or `expire_time`; None: never)."""
        cleared = {"displayName": display_name, "expireTime": expire_time}
        body = _present(stateDelta=state_delta, labels=labels, ttl=ttl) | {
            name: value for name, value in cleared.items() if not isinstance(value, Unset)
        }
        # Not resent after a lost answer: a state delta records an event with a new id.
        response = self._send(
            "PATCH",
            sessions_path(app_name, user_id, session_id),
            body=body,
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Session, response.json())

    def append_event(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event: Event,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Event:
        """Store `event` (given an `id` if it has none); returns it as stored, with `seq`.

        `if_match` is a session `version`: the append fails with `StaleSessionError` if another
        event was appended since. A `partial` event is echoed back without `seq`, not stored.
        `append_event_outcome` tells, besides, whether this call stored it.
        """
        appended = self.append_event_outcome(
            app_name, user_id, session_id, event, if_match=if_match, **options
        )
        return appended.event

    def append_event_outcome(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        event: Event,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Appended:
        """As `append_event`, and whether the event was stored now, or was stored before
        (a retry, after an answer was lost: nothing written), or is a partial one."""
        # Safe to resend because the event carries its id: the server answers a resend of a
        # stored event with that event (200), even when If-Match has moved on since.
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id, "events"),
            body=with_id(event),
            headers=if_match_header(if_match),
            idempotent=True,
            **options,
        )
        outcome = _APPEND_OUTCOMES[response.status_code]
        return Appended(cast(Event, response.json()), outcome)

    def append_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: list[Event],
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> list[Event]:
        """Store `events` at consecutive seqs, all or none; `partial` ones are skipped."""
        # Safe to resend for the same reason as one append: every event carries its id.
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id, "events") + ":batch",
            body={"events": [with_id(event) for event in events]},
            headers=if_match_header(if_match),
            idempotent=True,
            **options,
        )
        return cast(EventList, response.json())["events"]

    def list_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
        **options: Unpack[RequestOptions],
    ) -> EventPage:
        path = sessions_path(app_name, user_id, session_id, "events")
        params = query(
            pageSize=page_size,
            pageToken=page_token,
            afterSeq=after_seq,
            afterTimestamp=after_timestamp,
            beforeTimestamp=before_timestamp,
            order=order,
            minVersion=self._written.of(app_name, user_id, session_id),
            minPosition=self._written.position_of(app_name, user_id, session_id),
        )
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(EventPage, response.json())

    def iter_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        page_size: int = 100,
        after_seq: int | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        order: Order = "asc",
        **options: Unpack[RequestOptions],
    ) -> Iterator[Event]:
        """Every event, fetching pages as the iteration reaches them."""
        page_token: str | None = None
        while True:
            page = self.list_events(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                page_token=page_token,
                after_seq=after_seq,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                order=order,
                **options,
            )
            yield from page["events"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def count_events(
        self, app_name: str, user_id: str, session_id: str, **options: Unpack[RequestOptions]
    ) -> EventCount:
        """How many events the session holds, without reading them."""
        path = sessions_path(app_name, user_id, session_id, "events:count")
        response = self._send("GET", path, idempotent=True, **options)
        return cast(EventCount, response.json())

    def export_session(
        self, app_name: str, user_id: str, session_id: str, **options: Unpack[RequestOptions]
    ) -> bytes:
        """The session as NDJSON (its header line, then a line an event), for
        `import_session`. NDJSON is asked for: `Accept: application/json` gets one document."""
        path = sessions_path(app_name, user_id, f"{session_id}:export")
        headers = {"Accept": "application/x-ndjson"}
        response = self._send("GET", path, headers=headers, idempotent=True, **options)
        return response.content

    def import_session(
        self, app_name: str, user_id: str, export: bytes, **options: Unpack[RequestOptions]
    ) -> Session:
        """An export stored under this app and user as it was, all or nothing; the same export
        again writes nothing (so it is resent safely). The session, without events."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id) + ":import",
            content=export,
            headers={"Content-Type": "application/x-ndjson"},
            idempotent=True,
            **options,
        )
        return cast(Session, response.json())

    def export_user(
        self, app_name: str, user_id: str, **options: Unpack[RequestOptions]
    ) -> Iterator[bytes]:
        """Everything of the user of the app as NDJSON, from one snapshot, for `import_user`:
        their state, each session as `export_session` gives it, their `user:` artifacts,
        their memories (nothing at all for a user with nothing stored). Streamed: the bytes a
        chunk at a time as they arrive, never held whole (an export may be larger than
        memory), to write to a file or give to `import_user` as they come. Sent when the
        iteration begins; a connection lost midway raises `APIConnectionError`."""
        path = quoted_path("apps", app_name, "users", user_id) + ":export"
        headers = {"Accept": "application/x-ndjson"}
        response = self._send("GET", path, headers=headers, idempotent=True, stream=True, **options)
        try:
            yield from response.iter_bytes()
        except httpx.TransportError as error:
            raise connection_error(error, response.request.headers) from error
        finally:
            response.close()

    def import_user(
        self,
        app_name: str,
        user_id: str,
        export: UploadContent,
        **options: Unpack[RequestOptions],
    ) -> UserImport:
        """A user's export (`export_user`'s NDJSON) stored under this app and user as it was,
        all or nothing, in one transaction: its sessions, state (merged: its keys win),
        `user:` artifacts and memories. Streamed: bytes, a file opened in binary mode, or the
        chunks an iterator yields (`export_user`'s, as they arrive). What it created and what
        was there already the same (`UserImport`): the same export again creates nothing, so
        bytes or a seekable file are resent after a lost answer; an iterator is sent once.
        Anything stored under the same id and different is a 409, and nothing is imported:
        `SessionAlreadyExistsError`, `MemoryAlreadyExistsError`, `ConflictError` (a `user:`
        artifact)."""
        upload = Upload(export)
        if not upload.replayable:
            options = {**options, "max_retries": 0}
        response = self._send(
            "POST",
            quoted_path("apps", app_name, "users", user_id) + ":import",
            content=upload,
            headers={"Content-Type": "application/x-ndjson"},
            idempotent=True,
            **options,
        )
        return cast(UserImport, response.json())

    def list_artifacts(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        until_seq: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> ArtifactPage:
        """One page of the newest version of each artifact name, by name: a session's names
        and its user's `user:` ones, or (`session_id=None`) the user's alone; with
        `until_seq`, as the session was at that seq."""
        path = artifacts_path(app_name, user_id, session_id)
        params = query(pageSize=page_size, pageToken=page_token, untilSeq=until_seq)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(ArtifactPage, response.json())

    def iter_artifacts(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        *,
        page_size: int = 100,
        until_seq: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> Iterator[ArtifactVersion]:
        """Every name's newest version (as `list_artifacts`), fetching pages as needed."""
        page_token: str | None = None
        while True:
            page = self.list_artifacts(
                app_name,
                user_id,
                session_id,
                page_size=page_size,
                page_token=page_token,
                until_seq=until_seq,
                **options,
            )
            yield from page["artifacts"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def save_artifact(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        artifact: ArtifactPart,
        *,
        custom_metadata: dict[str, object] | None = None,
        **options: Unpack[RequestOptions],
    ) -> ArtifactVersion:
        """Save the next version of `name` (of the session, or with `session_id=None` a
        `user:` name of the user) from ADK's JSON `Part`: `{"text": …}`, `{"fileData":
        {"fileUri": …}}` (a reference) or `{"inlineData": {"data": <base64>, "mimeType": …}}`.
        It is sent whole: `upload_artifact` streams bytes, without base64."""
        # Not resent after a lost answer: the resend would save another version.
        body = _present(filename=name, artifact=artifact, customMetadata=custom_metadata)
        path = artifacts_path(app_name, user_id, session_id)
        response = self._send("POST", path, body=body, **options)
        return cast(ArtifactVersion, response.json())

    def upload_artifact(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        content: UploadContent,
        *,
        mime_type: str | None = None,
        display_name: str | None = None,
        custom_metadata: dict[str, object] | None = None,
        **options: Unpack[RequestOptions],
    ) -> ArtifactVersion:
        """Save the next version of `name` from `content`, streamed: bytes, a file opened in
        binary mode (read from where it is, a chunk at a time), or an iterator (or async
        iterator) of bytes. Without `mime_type` it is `application/octet-stream`;
        `custom_metadata` is a JSON object (sent in a header: keep it small).

        Resent only when the request never reached the server (after a lost answer, the
        resend would save a second version), and only when its body can be sent again:
        bytes, or a seekable file (rewound to where it was). An iterator is sent once."""
        upload = Upload(content)
        if not upload.replayable:
            options = {**options, "max_retries": 0}
        headers = metadata_header(custom_metadata)
        if mime_type is not None:
            headers["Content-Type"] = mime_type
        response = self._send(
            "POST",
            artifacts_path(app_name, user_id, session_id, name),
            params=query(displayName=display_name),
            content=upload,
            headers=headers,
            **options,
        )
        return cast(ArtifactVersion, response.json())

    def download_artifact(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        *,
        version: int | None = None,
        offset: int = 0,
        length: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> bytes:
        """The content of the newest version of `name` (or of `version`), whole, or `length`
        bytes of it from `offset` (a negative one counts from the end, as in a slice).
        `RangeNotSatisfiableError` when the range starts past the end;
        `ArtifactIsReferenceError` for a reference to content stored elsewhere. For large
        content, `stream_artifact` reads it a chunk at a time."""
        with self.stream_artifact(
            app_name,
            user_id,
            session_id,
            name,
            version=version,
            offset=offset,
            length=length,
            **options,
        ) as download:
            return download.read()

    @contextmanager
    def stream_artifact(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        *,
        version: int | None = None,
        offset: int = 0,
        length: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> Iterator["ArtifactDownload"]:
        """`download_artifact`, its content read as it arrives: `with
        client.stream_artifact(…) as download`, then `for chunk in
        download.iter_bytes()`. The connection is released when the block ends."""
        response = self._send(
            "GET",
            artifacts_path(app_name, user_id, session_id, name),
            params=query(version=version),
            headers=range_header(offset, length),
            idempotent=True,
            stream=True,
            **options,
        )
        try:
            if response.status_code == 303:
                served = int(response.headers["artifact-version"])
                raise ArtifactIsReferenceError(response.headers["location"], served)
            yield ArtifactDownload(response)
        finally:
            response.close()

    def list_artifact_versions(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> ArtifactVersionPage:
        """One page of the versions of `name`, oldest first; `ArtifactNotFoundError` for a
        name with none."""
        path = artifacts_path(app_name, user_id, session_id, name, "versions")
        params = query(pageSize=page_size, pageToken=page_token)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(ArtifactVersionPage, response.json())

    def iter_artifact_versions(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        *,
        page_size: int = 100,
        **options: Unpack[RequestOptions],
    ) -> Iterator[ArtifactVersion]:
        """Every version of `name`, oldest first, fetching pages as needed."""
        page_token: str | None = None
        while True:
            page = self.list_artifact_versions(
                app_name,
                user_id,
                session_id,
                name,
                page_size=page_size,
                page_token=page_token,
                **options,
            )
            yield from page["versions"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def get_artifact_version(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        version: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> ArtifactVersion:
        """The record of a version of `name` (the newest without `version`), not its
        content."""
        which = "latest" if version is None else str(version)
        path = artifacts_path(app_name, user_id, session_id, name, "versions", which)
        response = self._send("GET", path, idempotent=True, **options)
        return cast(ArtifactVersion, response.json())

    def delete_artifact(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        name: str,
        **options: Unpack[RequestOptions],
    ) -> None:
        """Delete every version of `name`; `ArtifactNotFoundError` for a name with none. A
        later save of it starts again at version 0."""
        # Not resent after a lost answer: for the caller, the resend would answer 404.
        path = artifacts_path(app_name, user_id, session_id, name)
        self._send("DELETE", path, **options)

    def create_memory(
        self,
        app_name: str,
        user_id: str,
        text: str | None = None,
        *,
        content: dict[str, Any] | None = None,
        memory_id: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        topics: list[str] | None = None,
        source: MemorySource | None = None,
        ttl: float | None = None,
        expire_time: float | None = None,
        embedding: Embedding | None = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """A new memory of the user (`memory_id`, else one the server makes): its `text`, or
        ADK's `content` (a genai `Content` as JSON), with metadata, topics, where it was
        learnt (`source`) and an expiry (`ttl` seconds, or `expire_time`). Recalled by words
        at once, by meaning once the server has embedded it. `MemoryAlreadyExistsError` when
        the id is taken."""
        body = _memory_create(
            text, content, memory_id, author, metadata, topics, source, ttl, expire_time, embedding
        )
        return self._create_memory(app_name, user_id, body, **options)

    def create_app_memory(
        self,
        app_name: str,
        text: str | None = None,
        *,
        content: dict[str, Any] | None = None,
        memory_id: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        topics: list[str] | None = None,
        source: MemorySource | None = None,
        ttl: float | None = None,
        expire_time: float | None = None,
        embedding: Embedding | None = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """As `create_memory`, a memory of the app, which every user's recall finds."""
        body = _memory_create(
            text, content, memory_id, author, metadata, topics, source, ttl, expire_time, embedding
        )
        return self._create_memory(app_name, None, body, **options)

    def _create_memory(
        self,
        app_name: str,
        user_id: str | None,
        body: dict[str, object],
        **options: Unpack[RequestOptions],
    ) -> Memory:
        # Not resent after a lost answer: the resend would answer 409 (or, without an id,
        # make a second memory).
        response = self._send("POST", memories_path(app_name, user_id), body=body, **options)
        return cast(Memory, response.json())

    def list_memories(
        self,
        app_name: str,
        user_id: str,
        *,
        topic: str | None = None,
        session_id: str | None = None,
        kind: MemoryKind | None = None,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> MemoryPage:
        """One page of the user's memories, newest change first; with `topic`, `session_id`
        (learnt in that session) or `kind`, those alone."""
        return self._list_memories(
            app_name, user_id, topic, session_id, kind, page_size, page_token, **options
        )

    def list_app_memories(
        self,
        app_name: str,
        *,
        topic: str | None = None,
        session_id: str | None = None,
        kind: MemoryKind | None = None,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> MemoryPage:
        """One page of the app's memories, as `list_memories`."""
        return self._list_memories(
            app_name, None, topic, session_id, kind, page_size, page_token, **options
        )

    def _list_memories(
        self,
        app_name: str,
        user_id: str | None,
        topic: str | None,
        session_id: str | None,
        kind: MemoryKind | None,
        page_size: int,
        page_token: str | None,
        **options: Unpack[RequestOptions],
    ) -> MemoryPage:
        params = query(
            topic=topic,
            sessionId=session_id,
            kind=kind,
            pageSize=page_size,
            pageToken=page_token,
        )
        path = memories_path(app_name, user_id)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(MemoryPage, response.json())

    def iter_memories(
        self,
        app_name: str,
        user_id: str | None,
        *,
        topic: str | None = None,
        session_id: str | None = None,
        kind: MemoryKind | None = None,
        page_size: int = 100,
        **options: Unpack[RequestOptions],
    ) -> Iterator[Memory]:
        """Every memory of the user (`user_id=None`: of the app), with the filters of
        `list_memories`, fetching pages as the iteration reaches them."""
        page_token: str | None = None
        while True:
            page = self._list_memories(
                app_name, user_id, topic, session_id, kind, page_size, page_token, **options
            )
            yield from page["memories"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def recall_memories(
        self,
        app_name: str,
        user_id: str,
        query: str | None = None,
        *,
        embedding: Embedding | None = None,
        limit: int | None = None,
        min_score: float | None = None,
        min_similarity: float | None = None,
        topics: list[str] | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        include_app: bool | None = None,
        mode: RecallMode | None = None,
        **options: Unpack[RequestOptions],
    ) -> RecallResult:
        """The user's memories (and the app's, unless `include_app=False`) that best answer
        `query`, best first: by meaning (the server embeds `query`, or `embedding` is yours)
        and by words, fused into one ranking (`mode` "meaning" or "words": one alone). At
        most `limit` (10 by default), each scoring `min_score` at least; found by meaning
        at `min_similarity` at least. Without pgvector or a model, by words (`note` says
        why)."""
        body = _present(
            query=query,
            embedding=embedding,
            limit=limit,
            minScore=min_score,
            minSimilarity=min_similarity,
            topics=topics,
            afterTimestamp=after_timestamp,
            beforeTimestamp=before_timestamp,
            includeApp=include_app,
            mode=mode,
        )
        return self._recall(app_name, user_id, body, **options)

    def recall_app_memories(
        self,
        app_name: str,
        query: str | None = None,
        *,
        embedding: Embedding | None = None,
        limit: int | None = None,
        min_score: float | None = None,
        min_similarity: float | None = None,
        topics: list[str] | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        mode: RecallMode | None = None,
        **options: Unpack[RequestOptions],
    ) -> RecallResult:
        """The app's memories that best answer `query`, as `recall_memories`."""
        body = _present(
            query=query,
            embedding=embedding,
            limit=limit,
            minScore=min_score,
            minSimilarity=min_similarity,
            topics=topics,
            afterTimestamp=after_timestamp,
            beforeTimestamp=before_timestamp,
            mode=mode,
        )
        return self._recall(app_name, None, body, **options)

    def _recall(
        self,
        app_name: str,
        user_id: str | None,
        body: dict[str, object],
        **options: Unpack[RequestOptions],
    ) -> RecallResult:
        # A read, though a POST (the question is a body): safe to resend.
        path = memories_path(app_name, user_id) + ":recall"
        response = self._send("POST", path, body=body, idempotent=True, **options)
        return cast(RecallResult, response.json())

    def get_memory(
        self, app_name: str, user_id: str, memory_id: str, **options: Unpack[RequestOptions]
    ) -> Memory:
        """A memory of the user as it is now; `MemoryNotFoundError` when there is none."""
        path = memories_path(app_name, user_id, memory_id)
        response = self._send("GET", path, idempotent=True, **options)
        return cast(Memory, response.json())

    def get_app_memory(
        self, app_name: str, memory_id: str, **options: Unpack[RequestOptions]
    ) -> Memory:
        """A memory of the app as it is now."""
        path = memories_path(app_name, None, memory_id)
        response = self._send("GET", path, idempotent=True, **options)
        return cast(Memory, response.json())

    def update_memory(
        self,
        app_name: str,
        user_id: str,
        memory_id: str,
        *,
        text: str | None = None,
        content: dict[str, Any] | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        topics: list[str] | None = None,
        ttl: float | None = None,
        expire_time: float | Unset | None = UNSET,
        embedding: Embedding | None = None,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """Change what is given (the rest stays; `expire_time=None`: never forgotten), as
        the memory's next revision; with `if_match` (a `revision`), only if it is still
        that one, else `StaleMemoryError`. A memory of an event takes its text from the
        event: change its metadata, topics or expiry."""
        body = _memory_update(text, content, author, metadata, topics, ttl, expire_time, embedding)
        return self._update_memory(app_name, user_id, memory_id, body, if_match, **options)

    def update_app_memory(
        self,
        app_name: str,
        memory_id: str,
        *,
        text: str | None = None,
        content: dict[str, Any] | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        topics: list[str] | None = None,
        ttl: float | None = None,
        expire_time: float | Unset | None = UNSET,
        embedding: Embedding | None = None,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """As `update_memory`, a memory of the app."""
        body = _memory_update(text, content, author, metadata, topics, ttl, expire_time, embedding)
        return self._update_memory(app_name, None, memory_id, body, if_match, **options)

    def _update_memory(
        self,
        app_name: str,
        user_id: str | None,
        memory_id: str,
        body: dict[str, object],
        if_match: IfMatch,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        # Not resent after a lost answer: each change is a revision of its own.
        response = self._send(
            "PATCH",
            memories_path(app_name, user_id, memory_id),
            body=body,
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Memory, response.json())

    def delete_memory(
        self,
        app_name: str,
        user_id: str,
        memory_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> None:
        """Forget a memory of the user: it, its revisions and its vectors;
        `MemoryNotFoundError` when there is none."""
        # Not resent after a lost answer: for the caller, the resend would answer 404.
        path = memories_path(app_name, user_id, memory_id)
        self._send("DELETE", path, headers=if_match_header(if_match), **options)

    def delete_app_memory(
        self,
        app_name: str,
        memory_id: str,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> None:
        """Forget a memory of the app, as `delete_memory`."""
        path = memories_path(app_name, None, memory_id)
        self._send("DELETE", path, headers=if_match_header(if_match), **options)

    def list_memory_revisions(
        self,
        app_name: str,
        user_id: str,
        memory_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> MemoryRevisionPage:
        """One page of a memory's revisions, newest (the current one) first."""
        return self._list_revisions(app_name, user_id, memory_id, page_size, page_token, **options)

    def list_app_memory_revisions(
        self,
        app_name: str,
        memory_id: str,
        *,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> MemoryRevisionPage:
        """One page of the revisions of a memory of the app, newest first."""
        return self._list_revisions(app_name, None, memory_id, page_size, page_token, **options)

    def _list_revisions(
        self,
        app_name: str,
        user_id: str | None,
        memory_id: str,
        page_size: int,
        page_token: str | None,
        **options: Unpack[RequestOptions],
    ) -> MemoryRevisionPage:
        path = memories_path(app_name, user_id, memory_id, "revisions")
        params = query(pageSize=page_size, pageToken=page_token)
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(MemoryRevisionPage, response.json())

    def iter_memory_revisions(
        self,
        app_name: str,
        user_id: str | None,
        memory_id: str,
        *,
        page_size: int = 100,
        **options: Unpack[RequestOptions],
    ) -> Iterator[MemoryRevision]:
        """Every revision of a memory of the user (`user_id=None`: of the app), newest
        first, fetching pages as needed."""
        page_token: str | None = None
        while True:
            page = self._list_revisions(
                app_name, user_id, memory_id, page_size, page_token, **options
            )
            yield from page["revisions"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def roll_back_memory(
        self,
        app_name: str,
        user_id: str,
        memory_id: str,
        revision: int,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """Restore `revision` of a memory of the user, as its next revision (nothing is
        lost)."""
        return self._roll_back(app_name, user_id, memory_id, revision, if_match, **options)

    def roll_back_app_memory(
        self,
        app_name: str,
        memory_id: str,
        revision: int,
        *,
        if_match: IfMatch = None,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        """Restore `revision` of a memory of the app, as `roll_back_memory`."""
        return self._roll_back(app_name, None, memory_id, revision, if_match, **options)

    def _roll_back(
        self,
        app_name: str,
        user_id: str | None,
        memory_id: str,
        revision: int,
        if_match: IfMatch,
        **options: Unpack[RequestOptions],
    ) -> Memory:
        # Not resent after a lost answer: a second rollback would be a revision of its own.
        response = self._send(
            "POST",
            memories_path(app_name, user_id, memory_id) + ":rollback",
            body={"revision": revision},
            headers=if_match_header(if_match),
            **options,
        )
        return cast(Memory, response.json())

    def remember_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        event_ids: list[str] | None = None,
        **options: Unpack[RequestOptions],
    ) -> Remembered:
        """Add the session's events to its user's memory, without copying their text (each
        is forgotten with the session): those of `event_ids` (at most 1000, each an event
        of the session, else `InvalidRequestError` and nothing added), or every event with
        text that the server's SESSIONARY_MEMORY_FROM takes (by default, the user's). Each
        event is added once, so it is resent after a lost answer (which then counts 0)."""
        response = self._send(
            "POST",
            sessions_path(app_name, user_id, session_id) + ":remember",
            body=_present(eventIds=event_ids),
            idempotent=True,
            **options,
        )
        return cast(Remembered, response.json())

    def embeddings_status(self, **options: Unpack[RequestOptions]) -> EmbeddingsStatus:
        """How memories are recalled now (by meaning and words, or by words alone, and why),
        the server's model, and how many memories wait to be embedded."""
        response = self._send("GET", "/embeddings", idempotent=True, **options)
        return cast(EmbeddingsStatus, response.json())

    def get_app_usage(
        self,
        app_name: str,
        *,
        user_id: str | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        **options: Unpack[RequestOptions],
    ) -> AppUsage:
        """The app's token usage (its events' `usageMetadata`), by user and in all, over
        events with timestamp ≥ `after_timestamp` and < `before_timestamp`."""
        params = query(
            userId=user_id, afterTimestamp=after_timestamp, beforeTimestamp=before_timestamp
        )
        path = quoted_path("apps", app_name, "usage")
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(AppUsage, response.json())

    def stream_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        *,
        after_seq: int | None = None,
        **options: Unpack[RequestOptions],
    ) -> Iterator[StreamEvent]:
        """The session's changes as they are committed: after `after_seq` first (read back
        from the log; 0: the whole session), else from now. Resumes by itself after a lost
        connection, after the last event received, losing and repeating nothing; ends after
        `closed` or `deleted`."""
        path = sessions_path(app_name, user_id, session_id) + "/events:stream"
        yield from self._stream(path, after_seq, ends=ends_session_stream, **options)

    def stream_sessions(
        self, app_name: str, user_id: str | None = None, **options: Unpack[RequestOptions]
    ) -> Iterator[StreamEvent]:
        """An app's sessions (one user's, with `user_id`) as they are created, updated,
        closed and deleted, from now; reconnects by itself after a lost connection (what
        happened meanwhile is not sent again: list the sessions to catch up). `erased`
        (`data["userId"]`) tells that the user was erased, after their sessions' `deleted`,
        and ends a user's stream; on an app's stream it ends the stream only when the whole
        app was erased (`userId` None)."""
        if user_id is None:
            path = quoted_path("apps", app_name, "sessions:stream")
            ends = ends_app_stream
        else:
            path = sessions_path(app_name, user_id) + ":stream"
            ends = ends_user_stream
        yield from self._stream(path, None, ends=ends, **options)

    def _stream(
        self,
        path: str,
        after: int | None,
        *,
        ends: Callable[[StreamEvent], bool],
        **options: Unpack[RequestOptions],
    ) -> Iterator[StreamEvent]:
        """A stream's events until one that `ends` says is its last, reconnecting after a
        lost connection (as the retry policy allows between two events, with `Last-Event-ID`
        once there is one)."""
        attempt = 0
        timeout = httpx.Timeout(options.get("timeout", self._http.timeout))
        timeout = httpx.Timeout(timeout.connect, read=STREAM_READ_TIMEOUT, write=timeout.write)
        retry = self._retry.of_call(options)
        while True:
            headers = call_headers(
                options, None if after is None else {"Last-Event-ID": str(after)}
            )
            try:
                with self._http.stream("GET", path, headers=headers, timeout=timeout) as response:
                    if response.is_error:
                        response.read()
                        raise error_for(response)
                    lines: list[str] = []
                    for line in response.iter_lines():
                        if line:
                            lines.append(line)
                            continue
                        event = stream_event(lines)
                        lines = []
                        if event is not None:
                            attempt = 0
                            after = event.id if event.id is not None else after
                            yield event
                            if ends(event):
                                return
            except httpx.TransportError as error:
                delay = retry.delay(True, attempt, error)
                if delay is None:
                    sent = httpx.Headers(self._http.headers)
                    sent.update(headers)
                    raise connection_error(error, sent) from error
                time.sleep(delay)
                attempt += 1

    def search(
        self,
        app_name: str,
        q: str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        author: str | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> SearchPage:
        """One page of the app's events matching `q` (web-search syntax: `refund order`,
        `"full refund"`, `refund or return`, `refund -partial`), best first."""
        params = query(
            q=q,
            userId=user_id,
            sessionId=session_id,
            author=author,
            afterTimestamp=after_timestamp,
            beforeTimestamp=before_timestamp,
            pageSize=page_size,
            pageToken=page_token,
        )
        path = quoted_path("apps", app_name, "search")
        response = self._send("GET", path, params=params, idempotent=True, **options)
        return cast(SearchPage, response.json())

    def get_app_state(self, app_name: str, **options: Unpack[RequestOptions]) -> State:
        response = self._send(
            "GET", quoted_path("apps", app_name, "state"), idempotent=True, **options
        )
        return cast(ScopeState, response.json())["state"]

    def update_app_state(
        self, app_name: str, state_delta: State, **options: Unpack[RequestOptions]
    ) -> State:
        # Safe to resend: a top-level merge of the same keys twice leaves what merging once does.
        response = self._send(
            "PATCH",
            quoted_path("apps", app_name, "state"),
            body={"stateDelta": state_delta},
            idempotent=True,
            **options,
        )
        return cast(ScopeState, response.json())["state"]

    def get_user_state(
        self, app_name: str, user_id: str, **options: Unpack[RequestOptions]
    ) -> State:
        path = quoted_path("apps", app_name, "users", user_id, "state")
        response = self._send("GET", path, idempotent=True, **options)
        return cast(ScopeState, response.json())["state"]

    def update_user_state(
        self, app_name: str, user_id: str, state_delta: State, **options: Unpack[RequestOptions]
    ) -> State:
        # Safe to resend, as for app state.
        response = self._send(
            "PATCH",
            quoted_path("apps", app_name, "users", user_id, "state"),
            body={"stateDelta": state_delta},
            idempotent=True,
            **options,
        )
        return cast(ScopeState, response.json())["state"]

    def list_audit_records(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        action: str | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        page_size: int = 100,
        page_token: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AuditPage:
        """One page of the audit log, newest first (an admin key only): session deletes,
        imports, keys made and revoked, retention sweeps; those of an app, of a user of it
        (`user_id` needs `app_name`), of an `action` (`session.delete`), with `time` ≥
        `after_timestamp` and < `before_timestamp`."""
        params = query(
            app=app_name,
            userId=user_id,
            action=action,
            afterTimestamp=after_timestamp,
            beforeTimestamp=before_timestamp,
            pageSize=page_size,
            pageToken=page_token,
        )
        response = self._send("GET", "/audit", params=params, idempotent=True, **options)
        return cast(AuditPage, response.json())

    def iter_audit_records(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        action: str | None = None,
        after_timestamp: float | None = None,
        before_timestamp: float | None = None,
        page_size: int = 100,
        **options: Unpack[RequestOptions],
    ) -> Iterator[AuditRecord]:
        """Every audit record (with the filters of `list_audit_records`), newest first,
        fetching pages as the iteration reaches them."""
        page_token: str | None = None
        while True:
            page = self.list_audit_records(
                app_name=app_name,
                user_id=user_id,
                action=action,
                after_timestamp=after_timestamp,
                before_timestamp=before_timestamp,
                page_size=page_size,
                page_token=page_token,
                **options,
            )
            yield from page["records"]
            page_token = page["nextPageToken"]
            if page_token is None:
                return

    def erase_user(self, app_name: str, user_id: str, **options: Unpack[RequestOptions]) -> Erasure:
        """Erase everything of a user of an app: sessions (with their events, forks and
        children), state, memories, artifacts, the keys made for the user. From the start the
        user's writes raise `UserErasingError`. The erase as the server answered it: `done`
        (200), or still `running` (202, past the server's SESSIONARY_ERASE_WAIT; it runs on,
        `get_erasure` shows its progress). Erasing again is safe: it erases what was written
        since (nothing, usually)."""
        # Not resent after a lost answer, as other deletes: once the first is done, a resend
        # would be a second erase, answered with its counts (nothing) instead of the first's.
        path = quoted_path("apps", app_name, "users", user_id)
        response = self._send("DELETE", path, **options)
        # New sessions may take the ids; the reads that follow ask for the erase's position.
        self._written.forget_user(app_name, user_id, response)
        return cast(Erasure, response.json())

    def get_erasure(
        self, app_name: str, user_id: str, **options: Unpack[RequestOptions]
    ) -> Erasure:
        """The user's latest erase: running (its progress so far) or done (what it removed);
        `ErasureNotFoundError` if the user was never erased."""
        path = quoted_path("apps", app_name, "users", user_id, "erasure")
        response = self._send("GET", path, idempotent=True, **options)
        return cast(Erasure, response.json())

    def erase_app(self, app_name: str, **options: Unpack[RequestOptions]) -> AppErasure:
        """Erase everything of an app (an admin key only): every user's sessions, state,
        memories, artifacts and keys, and the app's state, memories and keys. From the start
        writes that make something of the app raise `AppErasingError`. The erase as the
        server answered it: `done` (200), or still `running` (202, past the server's
        SESSIONARY_ERASE_WAIT; it runs on, `get_app_erasure` shows its progress). Erasing
        again is safe: it erases what was written since."""
        # Not resent after a lost answer, as `erase_user`.
        response = self._send("DELETE", quoted_path("apps", app_name), **options)
        self._written.forget_app(app_name)  # new sessions may take the ids
        return cast(AppErasure, response.json())

    def get_app_erasure(self, app_name: str, **options: Unpack[RequestOptions]) -> AppErasure:
        """The app's latest erase (an admin key only): running (its progress so far) or done
        (what it removed); `ErasureNotFoundError` if the app was never erased."""
        path = quoted_path("apps", app_name, "erasure")
        response = self._send("GET", path, idempotent=True, **options)
        return cast(AppErasure, response.json())

    def health(self, **options: Unpack[RequestOptions]) -> Health:
        """The process answers (`/healthz`); says nothing about the database."""
        response = self._send("GET", "/healthz", idempotent=True, **options)
        return cast(Health, response.json())

    def readiness(self, **options: Unpack[RequestOptions]) -> Readiness:
        """The database answers, at the expected schema (`/readyz`); else a 503 error."""
        response = self._send("GET", "/readyz", idempotent=True, **options)
        return cast(Readiness, response.json())

    def get_key_scope(self, **options: Unpack[RequestOptions]) -> KeyScope:
        """What the client's API key may reach (`/auth/key`)."""
        response = self._send("GET", "/auth/key", idempotent=True, **options)
        return cast(KeyScope, response.json())

    def metrics(self, **options: Unpack[RequestOptions]) -> str:
        """The server's Prometheus metrics (`/metrics`), as text."""
        response = self._send("GET", "/metrics", idempotent=True, **options)
        return response.text

    def session(self, app_name: str, user_id: str, session_id: str) -> "SessionHandle":
        """One session's methods without its app, user and id: `session.append_event(e)`."""
        return SessionHandle(self, app_name, user_id, session_id)


class ArtifactDownload:
    """An artifact's content as it arrives (`stream_artifact`), and what the answer says of
    it: `version`, `mime_type`, `sha256` (its `ETag`) and `content_length` (the bytes this
    answer carries: the range's, with one)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.version = int(response.headers["artifact-version"])
        self.mime_type: str = response.headers["content-type"]
        self.sha256: str = response.headers["etag"].strip('"')
        self.content_length = int(response.headers["content-length"])

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        """The content, a chunk at a time; a connection lost meanwhile raises
        `APIConnectionError`."""
        try:
            yield from self.response.iter_bytes(chunk_size)
        except httpx.TransportError as error:
            raise connection_error(error, self.response.request.headers) from error

    def read(self) -> bytes:
        """The content, whole."""
        content = bytearray()
        for chunk in self.iter_bytes():
            content += chunk
        return bytes(content)


def _attempt(
    content: bytes | Upload[UploadContent] | None,
) -> bytes | Iterator[bytes] | None:
    """What one attempt sends of a request's content: an upload from its start again."""
    if not isinstance(content, Upload):
        return content
    if isinstance(content.content, bytes):
        return content.content
    content.rewind()
    return _chunks(content.content)


def _chunks(content: Chunks) -> Iterator[bytes]:
    """An upload's bytes as they are sent: a file's read a chunk at a time (by the asyncio
    client in a thread, off the event loop), an iterator's as it yields them."""
    if isinstance(content, Readable):
        while chunk := content.read(UPLOAD_CHUNK):
            yield chunk
    else:
        yield from content


P = ParamSpec("P")
R = TypeVar("R")


def _bound(
    method: Callable[Concatenate[SessionaryClient, str, str, str, P], R],
) -> Callable[Concatenate["SessionHandle", P], R]:
    """The client's method, called with the handle's app, user and session id."""

    def call(handle: "SessionHandle", /, *args: P.args, **kwargs: P.kwargs) -> R:
        key = (handle.app_name, handle.user_id, handle.session_id)
        return method(handle.client, *key, *args, **kwargs)

    call.__doc__ = method.__doc__
    return call


class SessionHandle:
    """A session of `client`, so that calls stop repeating its app, user and id. Each method
    is the client's of the same meaning (`get` is `get_session`, `append_event` is
    `append_event`), with the same arguments after those three."""

    def __init__(
        self, client: SessionaryClient, app_name: str, user_id: str, session_id: str
    ) -> None:
        self.client = client
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"<session {self.session_id!r} of {self.user_id!r} in {self.app_name!r}>"

    get = _bound(SessionaryClient.get_session)
    update = _bound(SessionaryClient.update_session)
    update_state = _bound(SessionaryClient.update_session_state)
    delete = _bound(SessionaryClient.delete_session)
    append_event = _bound(SessionaryClient.append_event)
    append_event_outcome = _bound(SessionaryClient.append_event_outcome)
    append_events = _bound(SessionaryClient.append_events)
    list_events = _bound(SessionaryClient.list_events)
    count_events = _bound(SessionaryClient.count_events)
    export = _bound(SessionaryClient.export_session)
    iter_events = _bound(SessionaryClient.iter_events)
    stream_events = _bound(SessionaryClient.stream_events)
    fork = _bound(SessionaryClient.fork_session)
    create_child = _bound(SessionaryClient.create_child_session)
    close = _bound(SessionaryClient.close_session)
    get_lineage = _bound(SessionaryClient.get_lineage)
    list_children = _bound(SessionaryClient.list_children)
    rewind = _bound(SessionaryClient.rewind_session)
    trim = _bound(SessionaryClient.trim_session)
    reset = _bound(SessionaryClient.reset_session)
    remove_event = _bound(SessionaryClient.remove_event)
    rewrite_event = _bound(SessionaryClient.rewrite_event)
    get_context = _bound(SessionaryClient.get_context)
    compact = _bound(SessionaryClient.compact_session)
    list_tool_calls = _bound(SessionaryClient.list_tool_calls)
    heal = _bound(SessionaryClient.heal_session)
    queue_event = _bound(SessionaryClient.queue_event)
    list_pending = _bound(SessionaryClient.list_pending)
    clear_pending = _bound(SessionaryClient.clear_pending)
    promote_pending = _bound(SessionaryClient.promote_pending)
    list_artifacts = _bound(SessionaryClient.list_artifacts)
    iter_artifacts = _bound(SessionaryClient.iter_artifacts)
    save_artifact = _bound(SessionaryClient.save_artifact)
    upload_artifact = _bound(SessionaryClient.upload_artifact)
    download_artifact = _bound(SessionaryClient.download_artifact)
    stream_artifact = _bound(SessionaryClient.stream_artifact)
    list_artifact_versions = _bound(SessionaryClient.list_artifact_versions)
    iter_artifact_versions = _bound(SessionaryClient.iter_artifact_versions)
    get_artifact_version = _bound(SessionaryClient.get_artifact_version)
    delete_artifact = _bound(SessionaryClient.delete_artifact)
    remember = _bound(SessionaryClient.remember_session)
