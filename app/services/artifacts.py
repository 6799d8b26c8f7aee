"""Artifacts, ADK's `ArtifactService` over the session's store: save a version from a stream
of bytes, read one back a chunk at a time, list names and versions, delete a name.

A save is one transaction: its bytes go into chunk rows as they arrive (hashed on the way),
then the version is numbered and recorded, so a save that fails half way leaves nothing. Bytes
already stored under the same hash (for the same app and user) are kept once: the new chunks
are dropped and the version points at the old ones.
"""

import hashlib
import uuid
from collections.abc import AsyncIterable, AsyncIterator

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import (
    ArtifactScope,
    Change,
    NewArtifact,
    Page,
    PageRequest,
    SessionKey,
    StoredArtifact,
)
from app.errors import ArtifactNotFound, InvalidInput, PayloadTooLarge, SessionNotFound
from app.models import USER_SCOPE
from app.repositories import artifacts as rows
from app.repositories import sessions as session_rows
from app.repositories.live import announce
from app.rules.artifacts import (
    ByteRange,
    check_name,
    check_reference,
    is_rewind_tombstone,
    is_user_scoped,
)
from app.services.preconditions import require_session

# ADK's marker of an artifact a rewind removed (`artifact_util._new_rewind_tombstone`): an
# empty `application/octet-stream` version.
REWIND_MARKER = NewArtifact("bytes", "application/octet-stream")
# How many `artifact://` references a read follows before it gives up: ADK's
# `_MAX_ARTIFACT_REFERENCE_DEPTH`.
MAX_REFERENCE_DEPTH = 5


class ArtifactGone(Exception):
    """The bytes of a version went away while they were being read (its name was deleted):
    the download is cut short rather than completed with other bytes."""


class ArtifactService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings

    async def save(
        self, scope: ArtifactScope, name: str, content: AsyncIterable[bytes], new: NewArtifact
    ) -> StoredArtifact:
        """Store the next version of `name` from `content`, which is read to its end here."""
        check_name(name)
        session_id = _rows_scope(scope, name)
        key = _session_key(scope)
        if new.file_uri is not None:
            check_reference(scope.app_name, scope.user_id, scope.session_id, new.file_uri)
        async with self.pool.transaction() as connection:
            if key is not None:  # a missing or closed session is refused before any byte
                await require_session(connection, key, writable=True)
            content_hash, size = None, 0
            if new.kind != "reference":
                content_hash, size = await self._store(connection, scope, content)
            saved_at = None
            if key is not None:
                held = await session_rows.hold_version(connection, key)
                if held is None:  # deleted while the bytes came in
                    raise SessionNotFound(key.app_name, key.user_id, key.session_id)
                saved_at = None if session_id == USER_SCOPE else held
            version = await rows.next_version(
                connection, scope.app_name, scope.user_id, session_id, name
            )
            stored = await rows.insert_version(
                connection,
                scope.app_name,
                scope.user_id,
                session_id,
                name,
                version,
                new,
                content_hash=content_hash,
                size=size,
                saved_at=saved_at,
            )
            if key is not None:
                detail = {"name": name, "version": version}
                await announce(connection, Change("artifact", key, 0, detail=detail))
        return stored

    async def _store(
        self, connection: asyncpg.Connection, scope: ArtifactScope, content: AsyncIterable[bytes]
    ) -> tuple[bytes, int]:
        """Write `content` into chunk rows as it comes; its sha256 and size. Bytes stored
        before under the same hash are kept instead, and the new rows dropped."""
        owner = (scope.app_name, scope.user_id)
        limit, chunk_size = self.settings.max_artifact_bytes, self.settings.artifact_chunk_bytes
        blob_id = str(uuid.uuid4())
        digest = hashlib.sha256()
        pending = bytearray()
        size = written = 0
        async for piece in content:
            size += len(piece)
            if size > limit:
                raise PayloadTooLarge(
                    f"The artifact exceeds {limit} bytes (SESSIONARY_MAX_ARTIFACT_BYTES); "
                    "nothing was stored."
                )
            digest.update(piece)
            pending += piece
            while len(pending) >= chunk_size:
                await rows.write_chunk(
                    connection, owner, blob_id, written, bytes(pending[:chunk_size])
                )
                del pending[:chunk_size]
                written += 1
        if pending:
            await rows.write_chunk(connection, owner, blob_id, written, bytes(pending))
            written += 1
        content_hash = digest.digest()
        kept = await rows.adopt_blob(
            connection, owner, content_hash, blob_id=blob_id, size=size, chunk_size=chunk_size
        )
        if kept != blob_id and written:
            await rows.drop_chunks(connection, owner, blob_id)
        return content_hash, size

    async def restore(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        restoring: dict[str, int | None],
        *,
        saved_at: int,
    ) -> dict[str, int]:
        """In the caller's transaction (a rewind's): save each name's given version again as
        its next one, or, for None or a version no longer stored, ADK's marker of a removed
        artifact; the new version of each name."""
        restored = {}
        for name, version in restoring.items():
            new = None
            if version is not None:
                new = await rows.save_again(connection, key, name, version, saved_at=saved_at)
            if new is None:
                scope = ArtifactScope(key.app_name, key.user_id, key.session_id)
                content_hash, size = await self._store(connection, scope, _nothing())
                new = await rows.next_version(
                    connection, key.app_name, key.user_id, key.session_id, name
                )
                await rows.insert_version(
                    connection,
                    key.app_name,
                    key.user_id,
                    key.session_id,
                    name,
                    new,
                    REWIND_MARKER,
                    content_hash=content_hash,
                    size=size,
                    saved_at=saved_at,
                )
            restored[name] = new
        return restored

    async def find(
        self, scope: ArtifactScope, name: str, version: int | None = None
    ) -> StoredArtifact:
        """A version's record (the newest when `version` is None), with where its bytes are."""
        check_name(name)
        session_id = _rows_scope(scope, name)
        key = _session_key(scope)
        async with self.pool.connection() as connection:
            if key is not None:
                await require_session(connection, key)
            found = await rows.find_version(
                connection, scope.app_name, scope.user_id, session_id, name, version
            )
        if found is None:
            raise ArtifactNotFound(name, version)
        return found

    async def find_content(
        self, scope: ArtifactScope, name: str, version: int | None = None
    ) -> StoredArtifact:
        """The version whose bytes a read of `name` returns: `find`'s, or the one its
        `artifact://` reference names (followed as ADK follows them). ADK's rewind marker
        reads as absent."""
        found = await self.find(scope, name, version)
        for hop in range(MAX_REFERENCE_DEPTH + 1):
            target = check_reference(
                scope.app_name, scope.user_id, scope.session_id, found.file_uri or ""
            )
            if found.kind != "reference" or target is None:
                break
            if hop == MAX_REFERENCE_DEPTH:
                raise InvalidInput(
                    "Exceeded maximum recursion depth resolving artifact reference: "
                    f"{found.file_uri}"
                )
            found = await self.find(scope, target.name, target.version)
        if is_rewind_tombstone(found.kind, found.mime_type, found.size):
            raise ArtifactNotFound(name, version, why=" (a rewind removed it)")
        return found

    async def read(
        self, scope: ArtifactScope, found: StoredArtifact, part: ByteRange | None
    ) -> AsyncIterator[bytes]:
        """The bytes of a version `find_content` returned (of `part` of them), a chunk at a
        time, each read on a connection held only for it. ArtifactGone if they are deleted
        meanwhile (never other bytes: a blob's chunks never change)."""
        if found.blob_id is None or found.size == 0:
            return
        start, end = (0, found.size - 1) if part is None else (part.start, part.end)
        owner = (scope.app_name, scope.user_id)
        for n in range(start // found.chunk_size, end // found.chunk_size + 1):
            async with self.pool.connection() as connection:
                data = await rows.chunk(connection, owner, found.blob_id, n)
            if data is None:
                raise ArtifactGone(found.name)
            offset = n * found.chunk_size
            yield data[max(start - offset, 0) : end - offset + 1]

    async def latest(
        self, scope: ArtifactScope, page: PageRequest, *, until_seq: int | None = None
    ) -> Page[StoredArtifact]:
        """The newest version of each name the scope sees, by name: a session's own names and
        its user's (`user:`) ones; with `until_seq`, as the session was at that seq."""
        listing = paging.listing("artifacts", scope, until_seq)
        after = None
        if page.token is not None:
            (after,) = paging.decode(page.token, listing, (paging.Name,))
        key = _session_key(scope)
        async with self.pool.connection() as connection:
            if key is not None:
                version = await require_session(connection, key)
                if until_seq is not None and until_seq > version:
                    raise InvalidInput(
                        f"untilSeq {until_seq} is past the end: the session is at version "
                        f"{version}.",
                        field="untilSeq",
                    )
            found = await rows.latest_versions(
                connection,
                scope.app_name,
                scope.user_id,
                scope.session_id,
                after_name=after,
                limit=page.size + 1,
                until_seq=until_seq,
            )
        items, token = paging.cut(found, page.size, listing, lambda last: [last.name])
        return Page(items, token)

    async def versions(
        self, scope: ArtifactScope, name: str, page: PageRequest
    ) -> Page[StoredArtifact]:
        """Every version of a name, oldest first; 404 for a name with none."""
        check_name(name)
        session_id = _rows_scope(scope, name)
        listing = paging.listing("artifact versions", scope, name)
        after = None
        if page.token is not None:
            (after,) = paging.decode(page.token, listing, (int,))
        key = _session_key(scope)
        async with self.pool.connection() as connection:
            if key is not None:
                await require_session(connection, key)
            found = await rows.versions(
                connection,
                scope.app_name,
                scope.user_id,
                session_id,
                name,
                after_version=after,
                limit=page.size + 1,
            )
        if not found and after is None:
            raise ArtifactNotFound(name)
        items, token = paging.cut(found, page.size, listing, lambda last: [last.version])
        return Page(items, token)

    async def delete(self, scope: ArtifactScope, name: str) -> None:
        """Delete every version of a name (its bytes too, where no other version points at
        them); 404 for a name with none."""
        check_name(name)
        session_id = _rows_scope(scope, name)
        key = _session_key(scope)
        async with self.pool.transaction() as connection:
            if key is not None:
                await require_session(connection, key, writable=True)
            if not await rows.delete_name(
                connection, scope.app_name, scope.user_id, session_id, name
            ):
                raise ArtifactNotFound(name)
            if key is not None:
                detail = {"name": name, "deleted": True}
                await announce(connection, Change("artifact", key, 0, detail=detail))


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield


def _session_key(scope: ArtifactScope) -> SessionKey | None:
    if scope.session_id is None:
        return None
    return SessionKey(scope.app_name, scope.user_id, scope.session_id)


def _rows_scope(scope: ArtifactScope, name: str) -> str:
    """The `session_id` of the rows of `name` asked for in `scope`: the user's ('') for a
    `user:` name; else the session's, which a user's own paths do not name (422)."""
    if is_user_scoped(name):
        return USER_SCOPE
    if scope.session_id is None:
        raise InvalidInput(
            f"{name!r} is not a user-scoped name: only names that start with `user:` belong "
            "to a user; any other belongs to a session (use the session's path).",
            field="filename",
        )
    return scope.session_id
