"""Sessions out and back in as NDJSON (`app.rules.portability`): one session over HTTP, or
every session of an app, a user or the whole store from the command line, in constant memory.
"""

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import asyncpg
from pydantic import ValidationError

from app.config import Settings
from app.db import DriverPool
from app.domain import (
    NO_USAGE,
    ArtifactBytes,
    Change,
    Descriptor,
    ExportItem,
    History,
    NewEvent,
    ParentLink,
    SessionHeader,
    SessionKey,
    SessionRead,
    SessionRow,
    SharedState,
    StoredArtifact,
    Usage,
)
from app.errors import (
    InvalidInput,
    PayloadTooLarge,
    SessionAlreadyExists,
    SessionaryError,
    SessionNotFound,
)
from app.observability import EVENTS_APPENDED
from app.repositories import artifacts as artifact_rows
from app.repositories import portability as rows
from app.repositories import sessions as session_rows
from app.repositories import shared_state as state_rows
from app.repositories.erasures import refuse_while_erasing
from app.repositories.live import announce
from app.rules import portability as format
from app.rules.events import canonical_json, prepare
from app.rules.scopes import split_delta
from app.schemas import (
    AppStateExport,
    Event,
    ExportedArtifact,
    SessionExport,
    UserStateExport,
)
from app.services.artifacts import ArtifactService
from app.services.audit import AuditLog
from app.services.preconditions import read_session, require_app_state_write

# Events read per round trip by an export, and written per statement by an import.
BATCH = 1000


@dataclass(frozen=True)
class Imported:
    """What an import did: `created`, or found the same session stored (`unchanged`)."""

    created: bool
    session: SessionRead


@dataclass
class ImportReport:
    """What a bulk import has done so far."""

    created: int = 0
    unchanged: int = 0
    events: int = 0  # of the sessions created
    shared_states: int = 0
    refused: list[str] = field(default_factory=list)  # what, and why, in a line each


class PortabilityService:
    def __init__(
        self, pool: DriverPool, settings: Settings, artifacts: ArtifactService, audit: AuditLog
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.artifacts = artifacts  # a session's artifacts travel with it
        self.audit = audit

    async def export(self, key: SessionKey) -> AsyncIterator[ExportItem]:
        """The session's export from one snapshot: its header first (or 404 before anything
        is sent), then its events, each the UTF-8 JSON PostgreSQL renders."""
        async with (
            self.pool.connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            async for item in self._session_lines(connection, key):
                yield item

    async def export_all(
        self, app_name: str | None = None, user_id: str | None = None
    ) -> AsyncIterator[ExportItem]:
        """Every app and user state, then every live session with its events, of one app
        (or all), one user (or all), from one snapshot."""
        async with (
            self.pool.connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            apps, users = await rows.shared_states(connection, app_name, user_id)
            for app, state in apps:
                yield SharedState(app, None, state)
            for app, user, state in users:
                yield SharedState(app, user, state)
            async for key in rows.session_keys(connection, app_name, user_id, BATCH):
                async for item in self._session_lines(connection, key):
                    yield item

    async def _session_lines(
        self, connection: asyncpg.Connection, key: SessionKey
    ) -> AsyncIterator[ExportItem]:
        found = await rows.header(connection, key)
        if found is None:
            raise SessionNotFound(key.app_name, key.user_id, key.session_id)
        versions = await artifact_rows.session_versions(connection, key)
        yield replace(found, artifact_lines=format.artifact_line_count(versions))
        async for event in rows.events(connection, key, BATCH):
            yield event
        given: set[bytes] = set()
        owner = (key.app_name, key.user_id)
        for version in versions:
            content_hash = version.content_hash
            if content_hash is not None and content_hash not in given:
                async for data in self.artifacts.contents.pieces(connection, owner, version):
                    yield ArtifactBytes(content_hash, data)
                given.add(content_hash)
            yield version

    async def import_session(
        self,
        header: SessionExport,
        events: AsyncIterator[list[tuple[int, dict[str, Any]]]],
        artifacts: AsyncIterator[tuple[int, Any]] | None = None,
        *,
        key: SessionKey | None = None,
        app_state_writable: bool,
    ) -> Imported:
        """Store the session of `header` (under `key`, else the header's own) with its events
        and its artifacts, all or nothing: `events` yields them in batches, `artifacts` its
        artifact lines, each with its line number. The same session stored already is no
        write at all (`created` False); a different one under the id is a 409."""
        key = key or SessionKey(header.app_name, header.user_id, header.id)
        now = time.time()
        if header.expire_time is not None and header.expire_time <= now:
            raise InvalidInput(
                f"Session {header.id!r} expired at {header.expire_time}.", field="expireTime"
            )
        delta = split_delta(header.state)
        require_app_state_write(app_state_writable, [delta])
        limit = self.settings.max_state_bytes
        async with self.pool.transaction() as connection:
            await refuse_while_erasing(connection, key.app_name, key.user_id)
            created = await session_rows.insert(connection, _row(key, header, delta.session), limit)
            replay = format.Replay(_history(header))
            if created:
                count, used = await self._store(connection, key, header, events, replay)
                removed = replay.removed_deltas(delta.session, header.version)
                if removed != replay.history.removed_deltas:
                    await rows.set_history(connection, key, removed)
                await rows.set_usage(connection, key, used)
                if delta.app:
                    await state_rows.merge_app(connection, key.app_name, delta.app, limit)
                if delta.user:
                    await state_rows.merge_user(
                        connection, key.app_name, key.user_id, delta.user, limit
                    )
                parent = None if header.parent is None else header.parent.session_id
                await announce(
                    connection,
                    Change("created", key, header.version, parent, {"kind": header.kind}),
                )
            else:
                count, used = await self._compare(
                    connection, key, header, delta.session, events, replay
                )
            lines = _counted(_artifact_lines(artifacts or _none()))
            given = await self.artifacts.import_lines(
                connection, key, lines, version_limit=header.version, write=created
            )
            if lines.count != header.artifact_lines:
                raise InvalidInput(
                    f"The header announces {header.artifact_lines} artifact lines; "
                    f"{lines.count} follow its events.",
                    field="artifactLines",
                )
            if not created and _artifact_records(given) != _artifact_records(
                await artifact_rows.session_versions(connection, key)
            ):
                raise _different(key)
            if count != header.event_count:
                raise InvalidInput(
                    f"The header announces {header.event_count} events; {count} follow it.",
                    field="eventCount",
                )
            usage = header.usage
            announced = None
            if usage is not None:
                announced = (
                    usage.prompt_token_count,
                    usage.candidates_token_count,
                    usage.total_token_count,
                )
            format.check_usage(announced, used)
            read = await read_session(connection, key, num_recent_events=0)
            if created:
                await self.audit.record(
                    connection,
                    "session.import",
                    app_name=key.app_name,
                    user_id=key.user_id,
                    detail={
                        "session": await self.audit.session_ref(connection, key),
                        "events": count,
                        "artifactLines": lines.count,
                    },
                )
        if created:
            EVENTS_APPENDED.inc(count)
        return Imported(created, read)

    async def import_all(
        self,
        numbered: AsyncIterator[tuple[int, bytes]],
        progress: Callable[[ImportReport], None],
    ) -> ImportReport:
        """Import a bulk export, each session in a transaction of its own; a session refused
        (a conflict, a bad line) is reported and skipped, the others go on. `progress` is told
        after each record. `numbered` holds the file's lines, each with its number."""
        report = ImportReport()
        max_depth = self.settings.max_json_depth
        async for number, text in numbered:
            try:
                record = read_record(format.decode(text, number, max_depth), number)
            except InvalidInput as error:
                report.refused.append(error.detail)  # which names the line
                continue
            if not isinstance(record, SessionExport):
                await self.import_shared(record)
                report.shared_states += 1
                progress(report)
                continue
            left = record.event_count

            async def batches() -> AsyncIterator[list[tuple[int, Any]]]:
                nonlocal left
                while left:
                    batch = []
                    async for number, text in numbered:
                        batch.append((number, format.decode(text, number, max_depth)))
                        left -= 1
                        if not left or len(batch) == BATCH:
                            break
                    if not batch:
                        return  # the file ended early: the count check says so
                    yield batch

            artifacts_left = record.artifact_lines

            async def artifact_lines() -> AsyncIterator[tuple[int, Any]]:
                nonlocal artifacts_left
                while artifacts_left:
                    found = await anext(numbered, None)
                    if found is None:
                        return  # the file ended early: the count check says so
                    artifacts_left -= 1
                    yield found[0], format.decode(found[1], found[0], max_depth)

            await self._import_one(report, record, batches(), artifact_lines())
            left += artifacts_left
            while left > 0 and await anext(numbered, None) is not None:
                left -= 1  # what a refused session left unread
            progress(report)
        return report

    async def import_records(
        self,
        sessions: AsyncIterator[tuple[dict[str, Any], list[dict[str, Any]]]],
        progress: Callable[[ImportReport], None],
    ) -> ImportReport:
        """As `import_all`, from records already decoded: each session's header and events
        (`sessionary import-adk`). A record's "line" in an error is its place in the session's
        export: 1 for the header, 2 for its first event."""
        report = ImportReport()
        async for header, events in sessions:
            try:
                record = read_record(header, 1)
            except InvalidInput as error:
                report.refused.append(f"session {header.get('id')!r}: {error.detail}")
                continue
            assert isinstance(record, SessionExport)

            async def batches(
                events: list[dict[str, Any]] = events,
            ) -> AsyncIterator[list[tuple[int, Any]]]:
                for start in range(0, len(events), BATCH):
                    chunk = events[start : start + BATCH]
                    yield [(start + offset + 2, event) for offset, event in enumerate(chunk)]

            await self._import_one(report, record, batches())
            progress(report)
        return report

    async def _import_one(
        self,
        report: ImportReport,
        record: SessionExport,
        batches: AsyncIterator[list[tuple[int, Any]]],
        artifacts: AsyncIterator[tuple[int, Any]] | None = None,
    ) -> None:
        """Import one session of a bulk import, counting it in `report` as created, found
        there already, or refused (and why)."""
        try:
            imported = await self.import_session(
                record, batches, artifacts, app_state_writable=True
            )
        except SessionaryError as error:
            where = f"{record.app_name}/{record.user_id}/{record.id}"
            report.refused.append(f"session {where}: {error.detail}")
        else:
            if imported.created:
                report.created += 1
                report.events += record.event_count
            else:
                report.unchanged += 1

    async def import_shared(self, record: AppStateExport | UserStateExport) -> None:
        """Merge a bulk export's app or user state into what is stored (its keys win)."""
        limit = self.settings.max_state_bytes
        async with self.pool.transaction() as connection:
            if isinstance(record, AppStateExport):
                await state_rows.merge_app(connection, record.app_name, record.state, limit)
            else:
                await state_rows.merge_user(
                    connection, record.app_name, record.user_id, record.state, limit
                )

    async def _store(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        header: SessionExport,
        events: AsyncIterator[list[tuple[int, dict[str, Any]]]],
        replay: format.Replay,
    ) -> tuple[int, Usage]:
        """The events stored (and replayed), and the sum of their token counts."""
        count, previous, used = 0, 0, NO_USAGE
        async for batch in events:
            prepared = [self._prepared(event, number) for number, event in batch]
            previous = format.check_seqs(
                header.version, previous, [seq for seq, _ in prepared], batch[0][0]
            )
            for (seq, new), (line, _) in zip(prepared, batch, strict=True):
                replay.event(seq, new.document, line)
            await rows.store_events(connection, key, prepared, self.settings.search_config)
            count += len(batch)
            used = sum((new.usage for _, new in prepared), used)
        return count, used

    def _prepared(self, event: dict[str, Any], number: int) -> tuple[int, NewEvent]:
        """An event line as an append would store it, at its seq; refused as an append
        would refuse it, naming the line."""
        stored = _event(event, number)
        try:
            return stored.seq, prepare(stored.as_document(), self.settings.event_limits)
        except (InvalidInput, PayloadTooLarge) as error:
            error.detail = f"Line {number}: {error.detail}"
            error.extra["field"] = f"line {number}"
            raise

    async def _compare(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        header: SessionExport,
        state: dict[str, Any],
        events: AsyncIterator[list[tuple[int, dict[str, Any]]]],
        replay: format.Replay,
    ) -> tuple[int, Usage]:
        """The events, once each is found as stored, and the sum of their token counts; 409
        at the first difference (the session's own state counts, not the shared keys of the
        time; its history as an import of `header` would store it)."""
        found = await rows.header(connection, key)
        assert found is not None  # the insert found it, in this transaction
        if not _same_session(header, state, found):
            raise _different(key)
        count, used = 0, NO_USAGE
        async for batch in events:
            given = [self._prepared(event, number) for number, event in batch]
            kept = await rows.events_between(connection, key, given[0][0], given[-1][0])
            if [(seq, canonical_json(event)) for seq, event in kept] != [
                (seq, canonical_json({**new.document, "seq": seq})) for seq, new in given
            ]:
                raise _different(key)
            for (seq, new), (line, _) in zip(given, batch, strict=True):
                replay.event(seq, new.document, line)
            count += len(batch)
            used = sum((new.usage for _, new in given), used)
        removed = replay.removed_deltas(state, header.version)
        if canonical_json(removed) != canonical_json(found.history.removed_deltas):
            raise _different(key)
        return count, used


def _different(key: SessionKey) -> SessionAlreadyExists:
    error = SessionAlreadyExists(key.session_id)
    error.detail = (
        f"Session {key.session_id!r} already exists with different content; an import of "
        "the same export again changes nothing, a different one under a taken id is refused."
    )
    return error


async def _none() -> AsyncIterator[tuple[int, Any]]:
    return
    yield


class _counted:
    """An async iterator's items, counted as they pass."""

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self.items, self.count = items, 0

    def __aiter__(self) -> "_counted":
        return self

    async def __anext__(self) -> Any:
        item = await anext(self.items)
        self.count += 1
        return item


async def _artifact_lines(
    lines: AsyncIterator[tuple[int, Any]],
) -> AsyncIterator[tuple[int, ExportedArtifact]]:
    async for number, value in lines:
        try:
            yield number, ExportedArtifact.model_validate(value)
        except ValidationError as error:
            raise _invalid(number, "artifact line", error) from None


def _artifact_records(versions: list[StoredArtifact]) -> list[bytes]:
    """What an import compares of a session's artifact versions: all that its export says."""
    return [
        canonical_json(
            [
                version.name,
                version.version,
                version.kind,
                version.mime_type,
                version.display_name,
                version.file_uri,
                None if version.content_hash is None else version.content_hash.hex(),
                version.size,
                version.custom_metadata,
                round(version.create_time.timestamp(), 6),
                version.saved_at,
            ]
        )
        for version in versions
    ]


Record = SessionExport | AppStateExport | UserStateExport
RECORDS: dict[str, type[Record]] = {
    format.SESSION_FORMAT: SessionExport,
    format.APP_STATE_FORMAT: AppStateExport,
    format.USER_STATE_FORMAT: UserStateExport,
}


def read_record(value: Any, number: int) -> Record:
    """A header line: a session's, or (in a bulk export) an app's or a user's state."""
    kind = value.get("format") if isinstance(value, dict) else None
    model = RECORDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InvalidInput(
            f"Line {number} is not a header: its `format` must be one of {', '.join(RECORDS)}.",
            field=f"line {number}",
        )
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise _invalid(number, "header", error) from None


def _event(value: Any, number: int) -> Event:
    """An event line: an event as stored, `id`, `timestamp` and `seq` included."""
    try:
        return Event.model_validate(value)
    except ValidationError as error:
        raise _invalid(number, "stored event", error) from None


def _invalid(number: int, what: str, error: ValidationError) -> InvalidInput:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return InvalidInput(
        f"Line {number} is not a valid {what}: {where + ': ' if where else ''}{problem['msg']}",
        field=f"line {number}",
    )


def _row(key: SessionKey, header: SessionExport, state: dict[str, Any]) -> SessionRow:
    """The row of the session `header` describes, every column as it has it (`state`, its
    session-scoped keys)."""
    parent = header.parent
    return SessionRow(
        key=key,
        state=state,
        version=header.version,
        create_time=header.create_time,
        update_time=header.last_update_time,
        kind=header.kind,
        parent=None
        if parent is None
        else ParentLink(parent.session_id, parent.seq, parent.function_call_id),
        history=_history(header),
        descriptor=Descriptor(header.display_name, header.labels, header.expire_time),
        status=header.status,
        outcome=header.outcome,
    )


def _history(header: SessionExport) -> History:
    removed = [
        {"seq": delta.seq, "stateDelta": delta.state_delta} for delta in header.removed_deltas
    ]
    return History(header.base_seq, header.base_state, removed)


def _same_session(header: SessionExport, state: dict[str, Any], stored: SessionHeader) -> bool:
    """Whether `header`, with `state` its session-scoped keys, describes the stored session
    (its events and removed deltas aside: they are compared as they are read). Times are
    compared to the microsecond PostgreSQL keeps."""
    session, parent = stored.session, header.parent
    return (
        canonical_json([state, header.base_state, header.labels])
        == canonical_json([session.state, stored.history.base_state, session.labels])
        and (header.version, header.base_seq, header.kind, header.status, header.outcome)
        == (session.version, session.base_seq, session.kind, session.status, session.outcome)
        and (parent and (parent.session_id, parent.seq, parent.function_call_id))
        == (
            session.parent
            and (session.parent.session_id, session.parent.seq, session.parent.function_call_id)
        )
        and header.display_name == session.display_name
        and _same_time(header.create_time, session.create_time)
        and round(header.last_update_time, 6) == round(session.last_update_time, 6)
        and _same_time(header.expire_time, session.expire_time)
    )


def _same_time(seconds: float | None, moment: datetime | None) -> bool:
    if seconds is None or moment is None:
        return seconds is None and moment is None
    return round(seconds, 6) == round(moment.timestamp(), 6)
