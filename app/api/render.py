"""Every response body, built from what the services return: JSON today, and the pieces that
SSE frames, NDJSON lines and HTML pages will reuse.

A read never decodes an event: the events' UTF-8 JSON, as PostgreSQL rendered it from the
stored JSONB, is spliced between the parts Python renders itself. A body is built by one join,
one copy: a second copy of a large body costs more than the join itself, in fresh pages.
"""

import base64
import json
from functools import cache
from typing import Any

from pydantic import BaseModel

from app import schemas, strict_json
from app.domain import (
    NO_USAGE,
    ArtifactBytes,
    ContextRead,
    EventSpan,
    ExportItem,
    MemoryLine,
    MemoryRevision,
    Page,
    Recall,
    SearchHit,
    SessionHeader,
    SessionRead,
    StoredArtifact,
    StoredMemory,
    StoredSession,
    Tally,
    Usage,
    UserArtifactsHeader,
)
from app.repositories.audit import AuditRecord
from app.rules import portability
from app.rules.artifacts import canonical_uri
from app.rules.scopes import merged_state
from app.rules.search import as_html, event_text
from app.rules.tool_calls import ToolCall
from app.services.erasures import ErasureStatus
from app.services.portability import Counts, UserImported


def dumps(value: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, as Starlette's JSONResponse renders it."""
    return strict_json.dumps(value)


@cache
def _wire_fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    return tuple((name, field.alias or name) for name, field in model.model_fields.items())


def wire(value: object, model: type[BaseModel]) -> dict[str, Any]:
    """A value whose attributes are named as `model`'s fields (snake_case) as the JSON of
    `model`: its fields alone, camelCase. A field added to both needs nothing here."""
    return {alias: getattr(value, name) for name, alias in _wire_fields(model)}


def with_array(
    before: dict[str, Any], field: str, items: list[bytes], after: dict[str, Any]
) -> bytes:
    """The JSON object of `before`'s keys, then `field` as the array of `items` (each already
    JSON), then `after`'s keys."""
    head = (dumps(before)[:-1] + b"," if before else b"{") + dumps({field: []})[1:-3] + b"["
    tail = b"]" + (b"," + dumps(after)[1:] if after else b"}")
    if not items:
        return head + tail
    parts = [b","] * (2 * len(items) + 1)  # head, item, ",", item, …, item, tail
    parts[1::2] = items
    parts[0], parts[-1] = head, tail
    return b"".join(parts)


def _identity(session: StoredSession) -> dict[str, Any]:
    return {
        "id": session.key.session_id,
        "appName": session.key.app_name,
        "userId": session.key.user_id,
        "state": merged_state(session.state, session.app_state, session.user_state),
    }


def _after_events(session: StoredSession) -> dict[str, Any]:
    return {
        "lastUpdateTime": session.last_update_time,
        "createTime": session.create_time.timestamp(),
        "version": session.version,
        "kind": session.kind,
        "parent": session.parent
        and {
            "sessionId": session.parent.session_id,
            "seq": session.parent.seq,
            "functionCallId": session.parent.function_call_id,
        },
        "status": session.status,
        "outcome": session.outcome,
        "usage": usage(session.usage),
        "displayName": session.display_name,
        "labels": session.labels,
        "expireTime": session.expire_time and session.expire_time.timestamp(),
    }


def export_line(item: ExportItem) -> bytes:
    """A line of an export (`app.rules.portability`): a header, an event as stored, or an
    artifact's version or a piece of its bytes."""
    if isinstance(item, bytes):
        return item + b"\n"
    if isinstance(item, MemoryLine):
        return item.data + b"\n"
    if isinstance(item, UserArtifactsHeader):
        record = {
            "format": portability.USER_ARTIFACTS_FORMAT,
            "appName": item.app_name,
            "userId": item.user_id,
            "artifactLines": item.artifact_lines,
        }
    elif isinstance(item, SessionHeader):
        session = item.session
        record = {
            "format": portability.SESSION_FORMAT,
            **_identity(session),
            **_after_events(session),
            "baseSeq": session.base_seq,
            "baseState": item.history.base_state,
            "removedDeltas": item.history.removed_deltas,
            "eventCount": item.event_count,
            "artifactLines": item.artifact_lines,
        }
    elif isinstance(item, ArtifactBytes):
        data = base64.b64encode(item.data).decode()
        record = {"artifactBytes": {"sha256": item.content_hash.hex(), "data": data}}
    elif isinstance(item, StoredArtifact):
        record = {
            "artifact": {
                "name": item.name,
                "version": item.version,
                "kind": item.kind,
                "mimeType": item.mime_type,
                "displayName": item.display_name,
                "fileUri": item.file_uri,
                "sha256": None if item.content_hash is None else item.content_hash.hex(),
                "size": item.size,
                "customMetadata": item.custom_metadata,
                "createTime": item.create_time.timestamp(),
                "savedAt": item.saved_at,
            }
        }
    elif item.user_id is None:
        record = {
            "format": portability.APP_STATE_FORMAT,
            "appName": item.app_name,
            "state": item.state,
        }
    else:
        record = {
            "format": portability.USER_STATE_FORMAT,
            "appName": item.app_name,
            "userId": item.user_id,
            "state": item.state,
        }
    return dumps(record) + b"\n"


def search_page(page: Page[SearchHit]) -> bytes:
    """A `SearchPage`."""
    hits = [{**wire(hit, schemas.SearchHit), "snippet": as_html(hit.snippet)} for hit in page.items]
    return dumps({"hits": hits, "nextPageToken": page.next_page_token})


def app_usage(found: list[tuple[str, int, Usage]]) -> bytes:
    """An `AppUsage`."""
    users = [{"userId": user, "events": events, **usage(used)} for user, events, used in found]
    total = sum((used for _, _, used in found), NO_USAGE)
    count = sum(events for _, events, _ in found)
    return dumps({"users": users, "total": {"events": count, **usage(total)}})


def usage(counts: Usage) -> dict[str, int | None]:
    """A `Usage`."""
    return {
        "promptTokenCount": counts.prompt,
        "candidatesTokenCount": counts.candidates,
        "totalTokenCount": counts.total,
    }


def session(read: SessionRead) -> bytes:
    """A `Session` with its events."""
    return with_array(_identity(read.session), "events", read.events, _after_events(read.session))


def _listed(session: StoredSession) -> dict[str, Any]:
    """A session as listings show it, without events."""
    return {**_identity(session), "events": [], **_after_events(session)}


def session_page(page: Page[StoredSession]) -> bytes:
    """A `SessionPage`."""
    sessions = [_listed(item) for item in page.items]
    return dumps({"sessions": sessions, "nextPageToken": page.next_page_token})


def tally_page(page: Page[Tally], field: str, name: str) -> bytes:
    """An `AppPage` (`apps`, `appName`) or a `UserPage` (`users`, `userId`)."""
    items = [
        {
            name: item.name,
            "sessionCount": item.sessions,
            "lastUpdateTime": item.update_time.timestamp(),
        }
        for item in page.items
    ]
    return dumps({field: items, "nextPageToken": page.next_page_token})


def session_list(sessions: list[StoredSession]) -> bytes:
    """A `SessionList`."""
    return dumps({"sessions": [_listed(item) for item in sessions]})


def adk_session(read: SessionRead) -> bytes:
    """A session as ADK's own API server answers: ADK's fields only (its `Session` model
    refuses any other), and events without their `seq` (ADK's `Event` has none)."""
    events = [dumps(_without_seq(json.loads(item))) for item in read.events]
    return with_array(
        _identity(read.session), "events", events, {"lastUpdateTime": read.session.last_update_time}
    )


def _without_seq(document: dict[str, Any]) -> dict[str, Any]:
    document.pop("seq", None)
    return document


def adk_session_list(sessions: list[StoredSession]) -> bytes:
    """Sessions as ADK's own API server lists them: a bare array, without events."""
    listed = [
        {**_identity(item), "events": [], "lastUpdateTime": item.last_update_time}
        for item in sessions
    ]
    return strict_json.dumps(listed)


def event(document: dict[str, Any]) -> bytes:
    """An `Event` as the service stored it (or, for a partial one, as it was sent)."""
    return dumps(document)


def event_list(documents: list[dict[str, Any]]) -> bytes:
    """An `EventList`: the events of a batch."""
    return dumps({"events": documents})


def event_page(page: Page[bytes]) -> bytes:
    """An `EventPage`: events as PostgreSQL rendered them."""
    return with_array({}, "events", page.items, {"nextPageToken": page.next_page_token})


def event_count(found: EventSpan) -> bytes:
    """An `EventCount`."""
    return dumps(wire(found, schemas.EventCount))


def key_scope(
    auth_enabled: bool,
    key_id: str | None = None,
    app_name: str | None = None,
    user_id: str | None = None,
    read_only: bool = False,
    writes_app_state: bool = True,
) -> bytes:
    """A `KeyScope`; with keys off, one that reaches everything."""
    return dumps(
        {
            "authEnabled": auth_enabled,
            "keyId": key_id,
            "appName": app_name,
            "userId": user_id,
            "readOnly": read_only,
            "writesAppState": writes_app_state,
        }
    )


def scope_state(state: dict[str, Any]) -> bytes:
    """A `ScopeState`: the app's or a user's shared state."""
    return dumps({"state": state})


def trimmed(removed: int, kept: int, version: int) -> bytes:
    """A `Trimmed`."""
    return dumps({"removedEvents": removed, "keptEvents": kept, "version": version})


def context_view(view: ContextRead) -> bytes:
    """A `ContextView`."""
    after = {
        "estimatedTokens": view.estimated_tokens,
        "truncatedBeforeSeq": view.truncated_before_seq,
        "overBudget": view.over_budget,
    }
    return with_array({}, "events", view.events, after)


def tool_calls(calls: list[ToolCall]) -> bytes:
    """A `ToolCallList`."""
    return dumps({"toolCalls": [wire(call, schemas.ToolCall) for call in calls]})


def healed(count: int, version: int) -> bytes:
    """A `HealResult`."""
    return dumps({"healed": count, "version": version})


def events_removed(ids: list[str], version: int) -> bytes:
    """An `EventsRemoved`."""
    return dumps({"removedEventIds": ids, "version": version})


def artifact_version(stored: StoredArtifact, app_name: str, user_id: str) -> dict[str, Any]:
    """An `ArtifactVersion`."""
    return {
        "name": stored.name,
        "version": stored.version,
        "canonicalUri": canonical_uri(
            app_name, user_id, stored.session_id, stored.name, stored.version
        ),
        "customMetadata": stored.custom_metadata,
        "createTime": stored.create_time.timestamp(),
        "mimeType": stored.mime_type,
        "kind": stored.kind,
        "size": stored.size,
        "sha256": None if stored.content_hash is None else stored.content_hash.hex(),
        "displayName": stored.display_name,
        "fileUri": stored.file_uri,
    }


def artifact_page(page: Page[StoredArtifact], field: str, app_name: str, user_id: str) -> bytes:
    """An `ArtifactPage` (`field` "artifacts") or `ArtifactVersionPage` ("versions")."""
    found = [artifact_version(stored, app_name, user_id) for stored in page.items]
    return dumps({field: found, "nextPageToken": page.next_page_token})


def content_text(content: dict[str, Any]) -> str | None:
    """The words of a `Content`, as a memory of it is indexed and embedded."""
    return event_text({"content": content})


def memory(stored: StoredMemory) -> dict[str, Any]:
    """A `Memory`."""
    content = stored.content
    if content is None:
        content = {"role": "user", "parts": [{"text": stored.text or ""}]}
    source = None
    if stored.session_id is not None:
        source = {"sessionId": stored.session_id, "eventIds": stored.event_ids}
    created = stored.create_time.timestamp()
    return {
        "id": stored.id,
        "scope": "app" if stored.user_id is None else "user",
        "userId": stored.user_id,
        "kind": stored.kind,
        "revision": stored.revision,
        "text": stored.text,
        "content": content,
        "author": stored.author,
        "metadata": stored.metadata,
        "topics": stored.topics,
        "expireTime": None if stored.expire_time is None else stored.expire_time.timestamp(),
        "source": source,
        "timestamp": created if stored.timestamp is None else stored.timestamp,
        "createTime": created,
        "updateTime": stored.update_time.timestamp(),
        "embedded": stored.embedded,
    }


def memory_page(page: Page[StoredMemory]) -> bytes:
    return dumps(
        {"memories": [memory(m) for m in page.items], "nextPageToken": page.next_page_token}
    )


def memory_revision_page(page: Page[MemoryRevision]) -> bytes:
    return dumps(
        {
            "revisions": [
                {
                    "revision": found.revision,
                    "text": found.draft.text,
                    "content": found.draft.content,
                    "author": found.draft.author,
                    "metadata": found.draft.metadata,
                    "topics": found.draft.topics,
                    "expireTime": found.draft.expire_time,
                    "createTime": found.create_time.timestamp(),
                }
                for found in page.items
            ],
            "nextPageToken": page.next_page_token,
        }
    )


def recall(found: Recall) -> bytes:
    return dumps(
        {
            "memories": [
                {
                    "memory": memory(hit.memory),
                    "score": hit.score,
                    "similarity": hit.similarity,
                    "wordScore": hit.word_score,
                }
                for hit in found.memories
            ],
            "recalledBy": found.by,
            "note": found.note,
        }
    )


def audit_page(page: Page[AuditRecord]) -> bytes:
    return dumps(
        {
            "records": [
                {
                    "seq": record.seq,
                    "time": record.time.timestamp(),
                    "action": record.action,
                    "keyId": record.key_id,
                    "appName": record.app_name,
                    "user": record.user_ref,
                    "detail": record.detail,
                    "outcome": record.outcome,
                }
                for record in page.items
            ],
            "nextPageToken": page.next_page_token,
        }
    )


def erasure(status: ErasureStatus) -> bytes:
    """A user's erase (`Erasure`), or an app's (`AppErasure`, which names no user)."""
    found = status.erasure
    return dumps(
        {
            "id": found.id,
            "appName": found.app_name,
            **({} if status.user_id is None else {"userId": status.user_id}),
            "status": "running" if found.running else "done",
            "removed": found.removed,
            "deletedKeyIds": found.deleted_keys,
            "createTime": found.create_time.timestamp(),
            "updateTime": found.update_time.timestamp(),
            "finishTime": None if found.finish_time is None else found.finish_time.timestamp(),
        }
    )


def user_import(done: UserImported) -> bytes:
    """A `UserImport`."""

    def counts(tally: Counts) -> dict[str, int]:
        return {
            "sessions": tally.sessions,
            "events": tally.events,
            "memories": tally.memories,
            "artifactVersions": tally.artifact_versions,
        }

    return dumps(
        {
            "created": counts(done.created),
            "unchanged": counts(done.unchanged),
            "userStateKeys": done.user_state_keys,
        }
    )
