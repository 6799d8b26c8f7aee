"""Artifacts' bytes: written as they arrive and hashed on the way, stored once per hash within
an app and user, read back a piece at a time. In PostgreSQL's chunk rows, in the writer's
transaction; or, with an object store configured (`SESSIONARY_ARTIFACT_STORE`), each content
one object, sent as a multipart upload as it arrives, while PostgreSQL keeps everything else.

An object no blob row points at (a save that failed after its upload, a content whose last
version went) is deleted where that is known, and else by the sweeper once it is older than
`SESSIONARY_ARTIFACT_ORPHAN_GRACE`.
"""

import hashlib
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx

from app.config import Settings
from app.db import DriverPool
from app.domain import StoredArtifact
from app.errors import PayloadTooLarge
from app.objects import ObjectStore, ObjectStoreError
from app.repositories import artifacts as rows
from app.rules.artifacts import ByteRange

logger = logging.getLogger("sessionary.artifacts")

POSTGRES, S3 = "postgres", "s3"
# The smallest part S3 takes but the last, and what an upload holds in memory at once.
PART_BYTES = 8 * 1024 * 1024


class ContentGone(Exception):
    """The bytes of a version went away while they were being read (its name was deleted):
    the read is cut short rather than completed with other bytes."""


class Writer:
    """A content written as it comes, in the caller's transaction. Bytes stored before under
    the same hash are kept instead, and the new ones dropped. `dry`: hashed only."""

    def __init__(self, contents: "Contents", connection: asyncpg.Connection, owner: rows.Owner):
        self.contents, self.connection, self.owner = contents, connection, owner
        self.dry = False
        self.blob_id = str(uuid.uuid4())
        self.digest = hashlib.sha256()
        self.pending = bytearray()
        self.size = 0

    async def write(self, piece: bytes) -> None:
        limit = self.contents.settings.max_artifact_bytes
        self.size += len(piece)
        if self.size > limit:
            raise PayloadTooLarge(
                f"The artifact exceeds {limit} bytes (SESSIONARY_MAX_ARTIFACT_BYTES); "
                "nothing was stored."
            )
        self.digest.update(piece)
        if self.dry:
            return
        self.pending += piece
        while len(self.pending) >= self.piece_size:
            await self._send(_taken(self.pending, self.piece_size))

    @property
    def piece_size(self) -> int:
        return self.contents.settings.artifact_chunk_bytes

    async def _send(self, piece: bytes) -> None:
        """Store the next piece."""
        raise NotImplementedError

    async def _finish(self) -> str:
        """Store what is pending; where the content is (its `store`)."""
        raise NotImplementedError

    async def close(self, *, refs: int) -> tuple[bytes, int]:
        """The content's sha256 and size, its bytes counted for `refs` more versions."""
        content_hash = self.digest.digest()
        if self.dry:
            return content_hash, self.size
        store = await self._finish() if self.size else POSTGRES  # nothing to store
        kept = await rows.adopt_blob(
            self.connection,
            self.owner,
            content_hash,
            blob_id=self.blob_id,
            size=self.size,
            chunk_size=self.piece_size,
            refs=refs,
            store=store,
        )
        if kept != self.blob_id:
            await self._drop()
        return content_hash, self.size

    async def _drop(self) -> None:
        """Drop what was stored: the same bytes were stored before."""

    async def abort(self) -> None:
        """The save failed: leave nothing of it (its transaction rolls back the rest)."""


class ChunkWriter(Writer):
    """A content into chunk rows, in the caller's transaction (which a failure rolls back)."""

    written = 0

    async def _send(self, piece: bytes) -> None:
        await rows.write_chunk(self.connection, self.owner, self.blob_id, self.written, piece)
        self.written += 1

    async def _finish(self) -> str:
        if self.pending:
            await self._send(_taken(self.pending, len(self.pending)))
        return POSTGRES

    async def _drop(self) -> None:
        if self.written:
            await rows.drop_chunks(self.connection, self.owner, self.blob_id)


class ObjectWriter(Writer):
    """A content into one object: one PUT if it ends within its first part, else a multipart
    upload, a part sent as soon as it is whole."""

    upload_id: str | None = None
    stored = False  # the object exists (and is this writer's to delete)

    def __init__(self, contents: "Contents", connection: asyncpg.Connection, owner: rows.Owner):
        super().__init__(contents, connection, owner)
        assert contents.objects is not None
        self.objects = contents.objects
        self.key = self.objects.key(self.blob_id)
        self.etags: list[str] = []

    @property
    def piece_size(self) -> int:
        return max(PART_BYTES, self.contents.settings.artifact_chunk_bytes)

    async def _send(self, piece: bytes) -> None:
        if self.upload_id is None:
            self.upload_id = await self.objects.start_upload(self.key)
        number = len(self.etags) + 1
        self.etags.append(await self.objects.put_part(self.key, self.upload_id, number, piece))

    async def _finish(self) -> str:
        if self.upload_id is None:
            await self.objects.put(self.key, _taken(self.pending, len(self.pending)))
        else:
            if self.pending:
                await self._send(_taken(self.pending, len(self.pending)))
            await self.objects.complete_upload(self.key, self.upload_id, self.etags)
            self.upload_id = None
        self.stored = True
        return S3

    async def _drop(self) -> None:
        await self.abort()

    async def abort(self) -> None:
        try:
            if self.upload_id is not None:
                await self.objects.abort_upload(self.key, self.upload_id)
                self.upload_id = None
            if self.stored:
                await self.objects.delete(self.key)
                self.stored = False
        except ObjectStoreError:  # the sweeper deletes it later
            logger.warning("could not clean up an object of a failed save", exc_info=True)


class Contents:
    """Where artifacts' bytes are: PostgreSQL's chunk rows, or an object store."""

    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings
        self.objects: ObjectStore | None = None
        if settings.artifact_store is not None:
            bucket, _, prefix = settings.artifact_store.removeprefix("s3://").partition("/")
            self.objects = ObjectStore(
                httpx.AsyncClient(timeout=httpx.Timeout(60, connect=10)),
                endpoint=settings.s3_endpoint,
                bucket=bucket,
                prefix=prefix,
                region=settings.s3_region,
                access_key_id=settings.s3_access_key_id,
                secret_access_key=settings.s3_secret_access_key,
            )

    async def close(self) -> None:
        if self.objects is not None:
            await self.objects.http.aclose()

    def writer(
        self, connection: asyncpg.Connection, owner: rows.Owner, *, dry: bool = False
    ) -> Writer:
        made: Writer = (
            ObjectWriter(self, connection, owner)
            if self.objects is not None and not dry
            else ChunkWriter(self, connection, owner)
        )
        made.dry = dry
        return made

    async def read(
        self,
        owner: rows.Owner,
        found: StoredArtifact,
        part: ByteRange | None,
        connection: asyncpg.Connection | None = None,
    ) -> AsyncIterator[bytes]:
        """The bytes of a version (of `part` of them) as they come; on `connection` (an
        export's snapshot) or, chunk by chunk, on connections held only for a chunk each.
        ContentGone if they are deleted meanwhile (never other bytes: a content never
        changes)."""
        if found.blob_id is None or found.size == 0:
            return
        start, end = (0, found.size - 1) if part is None else (part.start, part.end)
        if found.store == S3:
            if self.objects is None:
                raise ContentGone(f"{found.name}: its bytes are in an object store not configured")
            try:
                async with self.objects.read(self.objects.key(found.blob_id), start, end) as got:
                    async for data in got:
                        yield data
            except ObjectStoreError as error:
                raise ContentGone(found.name) from error
            return
        for n in range(start // found.chunk_size, end // found.chunk_size + 1):
            if connection is None:
                async with self.pool.connection() as held:
                    data_or_none = await rows.chunk(held, owner, found.blob_id, n)
            else:
                data_or_none = await rows.chunk(connection, owner, found.blob_id, n)
            if data_or_none is None:
                raise ContentGone(found.name)
            offset = n * found.chunk_size
            yield data_or_none[max(start - offset, 0) : end - offset + 1]

    async def pieces(
        self, connection: asyncpg.Connection, owner: rows.Owner, found: StoredArtifact
    ) -> AsyncIterator[bytes]:
        """A version's bytes in pieces of its `chunk_size` (the last shorter): an export's
        lines."""
        pending = bytearray()
        async for data in self.read(owner, found, None, connection):
            if not pending and len(data) == found.chunk_size:
                yield data  # a chunk row as it is: no copy
                continue
            pending += data
            while len(pending) >= found.chunk_size:
                yield _taken(pending, found.chunk_size)
        if pending:
            yield bytes(pending)

    async def forget(self, blob_ids: list[str]) -> None:
        """Delete the objects of blobs whose rows a committed transaction deleted (best
        effort: the sweeper deletes what is left)."""
        if self.objects is None:
            return
        for blob_id in blob_ids:
            try:
                await self.objects.delete(self.objects.key(blob_id))
            except ObjectStoreError:
                logger.warning("could not delete a released object; the sweeper will")

    async def sweep(self) -> int:
        """Delete the objects no blob row points at, older than the grace period; how many."""
        if self.objects is None:
            return 0
        grace = timedelta(seconds=self.settings.artifact_orphan_grace)
        before = datetime.now(UTC) - grace
        swept, after = 0, None
        while True:
            listed, after = await self.objects.list(after)
            old = {
                blob_id: item.key
                for item in listed
                if item.last_modified < before
                and (blob_id := _blob_id(item.key.removeprefix(self.objects.prefix)))
            }
            if old:
                async with self.pool.connection() as connection:
                    kept = await rows.stored_objects(connection, list(old))
                for blob_id, key in old.items():
                    if blob_id not in kept:
                        await self.objects.delete(key)
                        swept += 1
            if after is None:
                return swept


def _blob_id(name: str) -> str | None:
    """The blob id an object's name is, if it is one (other objects are not the sweeper's)."""
    try:
        return str(uuid.UUID(name)) if len(name) == 36 else None
    except ValueError:
        return None


def _taken(pending: bytearray, size: int) -> bytes:
    """The first `size` bytes of `pending`, copied once, and removed from it."""
    with memoryview(pending) as view:
        taken = bytes(view[:size])
    del pending[:size]
    return taken
