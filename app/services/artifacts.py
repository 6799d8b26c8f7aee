"""Artifacts, ADK's `ArtifactService` over the session's store: save a version from a stream
of bytes, read one back a chunk at a time, list names and versions, delete a name.

A save is one transaction: its bytes go into chunk rows as they arrive (hashed on the way),
then the version is numbered and recorded, so a save that fails half way leaves nothing. Bytes
already stored under the same hash (for the same app and user) are kept once: the new chunks
are dropped and the version points at the old ones.
"""

import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import UTC, datetime

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
from app.errors import ArtifactNotFound, InvalidInput, SessionNotFound
from app.models import USER_SCOPE
from app.repositories import artifacts as rows
from app.repositories import sessions as session_rows
from app.repositories.erasures import refuse_while_erasing
from app.rules.artifacts import (
    ByteRange,
    check_name,
    check_reference,
    is_rewind_tombstone,
    is_user_scoped,
)
from app.schemas import ExportedArtifact, ExportedArtifactVersion
from app.services.contents import Contents, Writer
from app.services.preconditions import require_session

EMPTY_SHA256 = hashlib.sha256(b"").digest()
# ADK's marker of an artifact a rewind removed (`artifact_util._new_rewind_tombstone`): an
# empty `application/octet-stream` version.
REWIND_MARKER = NewArtifact("bytes", "application/octet-stream")
# How many `artifact://` references a read follows before it gives up: ADK's
# `_MAX_ARTIFACT_REFERENCE_DEPTH`.
MAX_REFERENCE_DEPTH = 5


class ArtifactService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(
        self,
        pool: DriverPool,
        settings: Settings,
        contents: Contents,
        announce_later: Callable[[Change], None],
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.contents = contents
        # Streams hear of a save or a delete once it has committed: a transaction that
        # notifies commits alone (PostgreSQL's notification lock), so saves would not share a
        # disk flush if each notified.
        self.announce_later = announce_later

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
            await refuse_while_erasing(connection, scope.app_name, scope.user_id)
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
            self.announce_later(Change("artifact", key, 0, detail=detail))
        return stored

    async def _store(
        self, connection: asyncpg.Connection, scope: ArtifactScope, content: AsyncIterable[bytes]
    ) -> tuple[bytes, int]:
        """Store `content` as it comes; its sha256 and size, the bytes counted for one
        version. A failure leaves nothing of it."""
        writer = self.contents.writer(connection, (scope.app_name, scope.user_id))
        try:
            async for piece in content:
                await writer.write(piece)
            return await writer.close(refs=1)
        except BaseException:
            await writer.abort()
            raise

    async def import_lines(
        self,
        connection: asyncpg.Connection,
        key: SessionKey,
        lines: AsyncIterator[tuple[int, ExportedArtifact]],
        *,
        version_limit: int,
        write: bool,
    ) -> list[StoredArtifact]:
        """In the caller's transaction (an import's): an export's artifact lines of the
        session (or of the user, with `key.session_id` USER_SCOPE), each with its line number,
        checked (each content's pieces hash to the sha256 given, each
        version holds a content given before it) and, with `write`, stored as they were:
        versions, times and `savedAt` included. The versions, as given."""
        owner = (key.app_name, key.user_id)
        sizes: dict[bytes, int] = {}  # each content given so far: sha256 → size
        unclaimed: set[bytes] = set()  # those no version has held yet
        reading: tuple[bytes, Writer, int] | None = None  # the content being given
        versions: list[StoredArtifact] = []
        last: dict[str, int] = {}

        def writer() -> Writer:
            return self.contents.writer(connection, owner, dry=not write)

        async def content_ends() -> None:
            nonlocal reading
            if reading is not None:
                declared, pieces, number = reading
                content_hash, sizes[declared] = await pieces.close(refs=0)
                if content_hash != declared:
                    raise _line(number, "the pieces of this content do not hash to its sha256")
                unclaimed.add(declared)
                reading = None

        async for number, line in lines:
            if line.artifact_bytes is not None:
                declared = bytes.fromhex(line.artifact_bytes.sha256)
                if reading is None or reading[0] != declared:
                    await content_ends()
                    if declared in sizes:
                        raise _line(number, "the pieces of one content come on consecutive lines")
                    reading = (declared, writer(), number)
                await reading[1].write(line.artifact_bytes.data)
                continue
            await content_ends()
            assert line.artifact is not None  # a line holds one or the other
            stored = _imported(line.artifact, number, key, version_limit, last)
            if stored.content_hash == EMPTY_SHA256 and EMPTY_SHA256 not in sizes:
                _, sizes[EMPTY_SHA256] = await writer().close(refs=0)  # it has no piece
            if stored.content_hash is not None:
                if sizes.get(stored.content_hash) != stored.size:
                    raise _line(number, "no content of its sha256 and size comes before it")
                unclaimed.discard(stored.content_hash)
            last[stored.name] = stored.version
            versions.append(stored)
            if write:
                await rows.import_version(connection, key, stored)
        await content_ends()
        if unclaimed:
            raise InvalidInput(f"The export gives {len(unclaimed)} content(s) no version holds.")
        if write:
            await rows.import_names(connection, key, last)
            held = [version.content_hash for version in versions if version.content_hash]
            await rows.retain(connection, owner, held)
        return versions

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

    def read(
        self, scope: ArtifactScope, found: StoredArtifact, part: ByteRange | None
    ) -> AsyncIterator[bytes]:
        """The bytes of a version `find_content` returned (of `part` of them), as they come."""
        return self.contents.read((scope.app_name, scope.user_id), found, part)

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
            released = await rows.delete_name(
                connection, scope.app_name, scope.user_id, session_id, name
            )
            if released is None:
                raise ArtifactNotFound(name)
        if key is not None:
            self.announce_later(Change("artifact", key, 0, detail={"name": name, "deleted": True}))
        await self.contents.forget(released)


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield


def _line(number: int, why: str) -> InvalidInput:
    return InvalidInput(f"Line {number}: {why}.", field=f"line {number}")


def _imported(
    given: ExportedArtifactVersion,
    number: int,
    key: SessionKey,
    version_limit: int,
    last: dict[str, int],
) -> StoredArtifact:
    """An export's version line as it is stored, if its scope may hold it: a session's own
    name (a user's `user:` name), versions of a name rising, saved no later than the
    session's version."""
    try:
        check_name(given.name)
    except InvalidInput as error:
        raise _line(number, error.detail.rstrip(".")) from None
    if key.session_id == USER_SCOPE and not is_user_scoped(given.name):
        raise _line(number, "a user's artifacts are `user:` names; a session's come with it")
    if key.session_id != USER_SCOPE and is_user_scoped(given.name):
        raise _line(number, "a session's export holds its own artifacts, not its user's")
    if given.version <= last.get(given.name, -1):
        raise _line(number, "the versions of a name come in rising order, each once")
    if given.saved_at is not None and given.saved_at > version_limit:
        raise _line(number, "savedAt is past the session's version")
    return StoredArtifact(
        name=given.name,
        version=given.version,
        kind=given.kind,
        mime_type=given.mime_type,
        display_name=given.display_name,
        file_uri=given.file_uri,
        content_hash=None if given.sha256 is None else bytes.fromhex(given.sha256),
        size=given.size,
        custom_metadata=given.custom_metadata,
        create_time=datetime.fromtimestamp(given.create_time, UTC),
        session_id=None,
        saved_at=given.saved_at,
    )


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
