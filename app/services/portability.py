"""Sessions out and back in as NDJSON (`app.rules.portability`): one session over HTTP, or
every session of an app, a user or the whole store from the command line, in constant memory.
"""

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
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
    MemoryDraft,
    MemoryLine,
    MemoryOwner,
    NewEvent,
    ParentLink,
    SessionHeader,
    SessionKey,
    SessionRead,
    SessionRow,
    SharedState,
    StoredArtifact,
    Usage,
    UserArtifactsHeader,
)
from app.errors import (
    Conflict,
    InvalidInput,
    MemoryAlreadyExists,
    PayloadTooLarge,
    SessionAlreadyExists,
    SessionaryError,
    SessionNotFound,
)
from app.models import USER_SCOPE
from app.observability import EVENTS_APPENDED
from app.repositories import artifacts as artifact_rows
from app.repositories import memories as memory_rows
from app.repositories import portability as rows
from app.repositories import sessions as session_rows
from app.repositories import shared_state as state_rows
from app.repositories.erasures import refuse_while_erasing, refuse_while_erasing_app
from app.repositories.live import announce
from app.rules import portability as format
from app.rules.events import canonical_json, prepare
from app.rules.scopes import split_delta
from app.schemas import (
    AppStateExport,
    Event,
    ExportedArtifact,
    ExportedMemoryRevision,
    MemoryExport,
    SessionExport,
    UserArtifactsExport,
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
    memories: int = 0  # created
    artifact_versions: int = 0  # of users' `user:` artifacts, created
    refused: list[str] = field(default_factory=list)  # what, and why, in a line each


@dataclass
class Counts:
    sessions: int = 0
    events: int = 0
    memories: int = 0
    artifact_versions: int = 0


@dataclass
class UserImported:
    """What an import of a user's export did (`schemas.UserImport`)."""

    created: Counts = field(default_factory=Counts)
    unchanged: Counts = field(default_factory=Counts)
    user_state_keys: int = 0


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
        self, app_name: str | None = None, user_id: str | None = None, *, app_state: bool = True
    ) -> AsyncIterator[ExportItem]:
        """Everything of one app (or all) and one user (or all), from one snapshot: app states
        (with `app_state`) and user states, every live session with its events and artifacts,
        each user's `user:` artifacts, then the memories (an app's own among them, when no
        user is named)."""
        async with (
            self.pool.connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            apps, users = await rows.shared_states(connection, app_name, user_id)
            for app, state in apps if app_state else []:
                yield SharedState(app, None, state)
            for app, user, state in users:
                yield SharedState(app, user, state)
            async for key in rows.session_keys(connection, app_name, user_id, BATCH):
                async for item in self._session_lines(connection, key):
                    yield item
            for owner in await artifact_rows.user_scope_owners(connection, app_name, user_id):
                scope = SessionKey(*owner, USER_SCOPE)
                versions = await artifact_rows.session_versions(connection, scope)
                yield UserArtifactsHeader(*owner, format.artifact_line_count(versions))
                async for item in self._artifact_lines(connection, owner, versions):
                    yield item
            for app, stored_user in await memory_rows.owners(connection, app_name, user_id):
                memories = MemoryOwner(app, stored_user or None)
                async for line in memory_rows.export_lines(connection, memories, BATCH):
                    yield MemoryLine(line)

    async def export_user(self, app_name: str, user_id: str) -> AsyncIterator[ExportItem]:
        """Everything of the user's (not their app's state), from one snapshot, once the
        audit log holds that it was taken."""
        async with self.pool.transaction() as connection:
            await self.audit.record(connection, "user.export", app_name=app_name, user_id=user_id)
        async for item in self.export_all(app_name, user_id, app_state=False):
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
        async for item in self._artifact_lines(connection, (key.app_name, key.user_id), versions):
            yield item

    async def _artifact_lines(
        self,
        connection: asyncpg.Connection,
        owner: tuple[str, str],
        versions: list[StoredArtifact],
    ) -> AsyncIterator[ExportItem]:
        """Each version, after the pieces of its content where no earlier one holds it."""
        given: set[bytes] = set()
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
        async with self.pool.transaction() as connection:
            await refuse_while_erasing(connection, key.app_name, key.user_id)
            imported = await self._import_session(
                connection, key, header, events, artifacts, app_state_writable=app_state_writable
            )
            if imported.created:
                await self.audit.record(
                    connection,
                    "session.import",
                    app_name=key.app_name,
                    user_id=key.user_id,
                    detail={
                        "session": await self.audit.session_ref(connection, key),
                        "events": header.event_count,
                        "artifactLines": header.artifact_lines,
                    },
                )
        if imported.created:
            EVENTS_APPENDED.inc(header.event_count)
        return imported

    async def _import_session(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        header: SessionExport,
        events: AsyncIterator[list[tuple[int, dict[str, Any]]]],
        artifacts: AsyncIterator[tuple[int, Any]] | None,
        *,
        app_state_writable: bool,
    ) -> Imported:
        """`import_session` in the caller's transaction, fenced already."""
        now = time.time()
        if header.expire_time is not None and header.expire_time <= now:
            raise InvalidInput(
                f"Session {header.id!r} expired at {header.expire_time}.", field="expireTime"
            )
        delta = split_delta(header.state)
        require_app_state_write(app_state_writable, [delta])
        limit = self.settings.max_state_bytes
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
        return Imported(created, read)

    async def import_all(
        self,
        numbered: AsyncIterator[tuple[int, bytes]],
        progress: Callable[[ImportReport], None],
    ) -> ImportReport:
        """Import a bulk export, each session (and each other record) in a transaction of
        its own; one refused (a conflict, a bad line) is reported and skipped, the others go
        on. `progress` is told after each record. `numbered` holds the file's lines, each
        with its number."""
        report = ImportReport()
        records = _Records(numbered, self.settings.max_json_depth)
        while True:
            try:
                found = await anext(records, None)
            except InvalidInput as error:
                report.refused.append(error.detail)  # which names the line
                continue
            if found is None:
                return report
            number, record = found
            if isinstance(record, SessionExport):
                batches = records.batches(record.event_count)
                await self._import_one(
                    report, record, batches, records.lines(record.artifact_lines)
                )
            else:
                try:
                    async with self.pool.transaction() as connection:
                        await self._import_record(connection, report, record, records, number)
                except SessionaryError as error:
                    user = getattr(record, "user_id", None)
                    where = record.app_name if user is None else f"{record.app_name}/{user}"
                    report.refused.append(f"line {number} ({where}): {error.detail}")
            progress(report)

    async def _import_record(
        self,
        connection: asyncpg.Connection,
        report: ImportReport,
        record: "Record",
        records: "_Records",
        number: int,
    ) -> None:
        """A bulk import's record other than a session, in the caller's transaction, fenced
        against an erase of its app or user: state merged (its keys win), a user's artifacts
        or a memory stored as they were."""
        limit = self.settings.max_state_bytes
        if isinstance(record, AppStateExport) or record.user_id is None:
            await refuse_while_erasing_app(connection, record.app_name)
        else:
            await refuse_while_erasing(connection, record.app_name, record.user_id)
        if isinstance(record, AppStateExport):
            await state_rows.merge_app(connection, record.app_name, record.state, limit)
            report.shared_states += 1
        elif isinstance(record, UserStateExport):
            await state_rows.merge_user(
                connection, record.app_name, record.user_id, record.state, limit
            )
            report.shared_states += 1
        elif isinstance(record, UserArtifactsExport):
            lines = records.lines(record.artifact_lines)
            versions, created = await self._import_user_artifacts(
                connection, (record.app_name, record.user_id), lines, record
            )
            report.artifact_versions += versions if created else 0
        elif isinstance(record, MemoryExport):
            memories = MemoryOwner(record.app_name, record.user_id)
            report.memories += await self._import_memory(connection, memories, record, number)

    async def import_user(
        self,
        app_name: str,
        user_id: str,
        numbered: AsyncIterator[tuple[int, bytes]],
        *,
        app_state_writable: bool,
    ) -> UserImported:
        """Store a user's export (`export_user`) under this app and user (the lines' own app
        and user aside), all or nothing, in one transaction: each session, the user's state
        (merged: its keys win), their `user:` artifacts and memories, as they were. What is
        stored already the same is counted unchanged; anything different is a 409."""
        done = UserImported()
        records = _Records(numbered, self.settings.max_json_depth)
        limit = self.settings.max_state_bytes
        async with self.pool.transaction() as connection:
            await refuse_while_erasing(connection, app_name, user_id)
            async for number, record in records:
                if isinstance(record, SessionExport):
                    imported = await self._import_session(
                        connection,
                        SessionKey(app_name, user_id, record.id),
                        record,
                        records.batches(record.event_count),
                        records.lines(record.artifact_lines),
                        app_state_writable=app_state_writable,
                    )
                    tally = done.created if imported.created else done.unchanged
                    tally.sessions += 1
                    tally.events += record.event_count
                elif isinstance(record, UserStateExport):
                    await state_rows.merge_user(connection, app_name, user_id, record.state, limit)
                    done.user_state_keys += len(record.state)
                elif isinstance(record, UserArtifactsExport):
                    versions, created = await self._import_user_artifacts(
                        connection,
                        (app_name, user_id),
                        records.lines(record.artifact_lines),
                        record,
                    )
                    (done.created if created else done.unchanged).artifact_versions += versions
                elif isinstance(record, MemoryExport) and record.user_id is not None:
                    owner = MemoryOwner(app_name, user_id)
                    created = await self._import_memory(connection, owner, record, number)
                    (done.created if created else done.unchanged).memories += 1
                else:
                    raise InvalidInput(
                        f"Line {number} is the app's, not a user's: a user's import holds "
                        "their sessions, state, artifacts and memories alone.",
                        field=f"line {number}",
                    )
            await self.audit.record(
                connection,
                "user.import",
                app_name=app_name,
                user_id=user_id,
                detail={"created": asdict(done.created), "unchanged": asdict(done.unchanged)},
            )
        EVENTS_APPENDED.inc(done.created.events)
        return done

    async def _import_user_artifacts(
        self,
        connection: asyncpg.Connection,
        owner: tuple[str, str],
        lines: AsyncIterator[tuple[int, Any]],
        record: UserArtifactsExport,
    ) -> tuple[int, bool]:
        """The user's `user:` artifacts as an export gave them: how many versions, and
        whether they were stored (the user had none) or found the same. The user holding
        others is a 409."""
        scope = SessionKey(*owner, USER_SCOPE)
        stored = await artifact_rows.session_versions(connection, scope)
        counted = _counted(_artifact_lines(lines))
        given = await self.artifacts.import_lines(
            connection, scope, counted, version_limit=0, write=not stored
        )
        if counted.count != record.artifact_lines:
            raise InvalidInput(
                f"The user's artifacts line announces {record.artifact_lines} artifact lines; "
                f"{counted.count} follow it.",
                field="artifactLines",
            )
        if stored and _artifact_records(given) != _artifact_records(stored):
            raise Conflict(
                f"User {owner[1]!r} has `user:` artifacts other than the export's: an import "
                "stores a user's artifacts where they have none, and finds the same ones there."
            )
        return len(given), not stored

    async def _import_memory(
        self, connection: asyncpg.Connection, owner: MemoryOwner, given: MemoryExport, number: int
    ) -> bool:
        """The memory as its export gave it: True stored, False the same there already (its
        vectors aside); a different one under its id is a 409."""
        where = f"line {number}"
        if given.expire_time is not None and given.expire_time <= time.time():
            raise InvalidInput(
                f"Line {number}: memory {given.id!r} expired at {given.expire_time}.", field=where
            )
        memory = {
            "id": given.id,
            "kind": given.kind,
            "revision": given.revision,
            "draft": _draft(given),
            "event_ids": given.event_ids,
            "create_time": _moment(given.create_time),
            "update_time": _moment(given.update_time),
            "embedded_model": given.embedded_model,
            "session_id": given.session_id,
            "seq": given.seq,
        }
        revisions = [
            (revision.revision, _draft(revision), _moment(revision.create_time))
            for revision in given.revisions
        ]
        vectors = [(vector.model, vector.vector) for vector in given.vectors]
        config = self.settings.search_config
        if await memory_rows.import_memory(connection, owner, memory, revisions, vectors, config):
            return True
        stored = await memory_rows.export_line(connection, owner, given.id)
        if stored is None:
            raise InvalidInput(
                f"Line {number}: memory {given.id!r} remembers the event at seq {given.seq} of "
                f"session {given.session_id!r}, which is not stored (in an export, the "
                "session comes before its memories).",
                field=where,
            )
        # Its vectors are not compared: each side's worker embeds it in its own time.
        found = MemoryExport.model_validate_json(stored).model_copy(
            update={
                "app_name": given.app_name,
                "user_id": given.user_id,
                "embedded_model": given.embedded_model,
                "vectors": given.vectors,
            }
        )
        if found != given:
            error = MemoryAlreadyExists(given.id)
            error.detail = (
                f"Memory {given.id!r} already exists with different content; an import of the "
                "same export again changes nothing, a different one under a taken id is refused."
            )
            raise error
        return False

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


Record = SessionExport | AppStateExport | UserStateExport | UserArtifactsExport | MemoryExport
RECORDS: dict[str, type[Record]] = {
    format.SESSION_FORMAT: SessionExport,
    format.APP_STATE_FORMAT: AppStateExport,
    format.USER_STATE_FORMAT: UserStateExport,
    format.USER_ARTIFACTS_FORMAT: UserArtifactsExport,
    format.MEMORY_FORMAT: MemoryExport,
}


class _Records:
    """An import's records in order, each with its line number; after each, the lines it
    says follow it (`lines`, `batches`), decoded as they are read. What a record's import
    left unread (it was refused) is passed over."""

    def __init__(self, numbered: AsyncIterator[tuple[int, bytes]], max_depth: int) -> None:
        self.numbered = numbered
        self.max_depth = max_depth
        self.unread = 0

    def __aiter__(self) -> "_Records":
        return self

    async def __anext__(self) -> tuple[int, Record]:
        while self.unread > 0 and await anext(self.numbered, None) is not None:
            self.unread -= 1
        number, text = await anext(self.numbered)
        record = read_record(format.decode(text, number, self.max_depth), number)
        if isinstance(record, SessionExport):
            self.unread = record.event_count + record.artifact_lines
        elif isinstance(record, UserArtifactsExport):
            self.unread = record.artifact_lines
        else:
            self.unread = 0
        return number, record

    async def lines(self, count: int) -> AsyncIterator[tuple[int, Any]]:
        """The next `count` lines (fewer where the stream ends: the counts' checks say so)."""
        for _ in range(count):
            found = await anext(self.numbered, None)
            if found is None:
                return
            self.unread -= 1
            yield found[0], format.decode(found[1], found[0], self.max_depth)

    async def batches(self, count: int) -> AsyncIterator[list[tuple[int, Any]]]:
        """The next `count` lines, `BATCH` at a time."""
        batch: list[tuple[int, Any]] = []
        async for line in self.lines(count):
            batch.append(line)
            if len(batch) == BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


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


def _draft(given: MemoryExport | ExportedMemoryRevision) -> MemoryDraft:
    return MemoryDraft(
        given.text, given.content, given.author, given.metadata, given.topics, given.expire_time
    )


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


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
