"""SQL for artifacts: names and their versions, and the bytes the versions point at (blobs,
in chunks, counted by the versions that point at them)."""

from typing import Any

import asyncpg
from sqlalchemy import (
    ARRAY,
    BigInteger,
    Integer,
    LargeBinary,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import UUID, distinct_on
from sqlalchemy.dialects.postgresql import insert as upsert
from sqlalchemy.sql.elements import ColumnElement

from app.db import DriverStatement, execute, fetch, fetchrow, fetchval
from app.domain import NewArtifact, SessionKey, StoredArtifact
from app.models import (
    USER_SCOPE,
    StorageArtifact,
    StorageArtifactBlob,
    StorageArtifactChunk,
    StorageArtifactVersion,
)

Owner = tuple[str, str]  # (app_name, user_id): whose bytes


def _in_scope(table: Any, app_name: str, user_id: str, session_id: str) -> ColumnElement[bool]:
    return and_(
        table.app_name == app_name, table.user_id == user_id, table.session_id == session_id
    )


def _named(table: Any, app_name: str, user_id: str, session_id: str, name: str) -> Any:
    return and_(_in_scope(table, app_name, user_id, session_id), table.name == name)


def _owned(table: Any, owner: Owner) -> ColumnElement[bool]:
    return and_(table.app_name == owner[0], table.user_id == owner[1])


# --- bytes -----------------------------------------------------------------------------------


# The statements of every save and every read, compiled once: building one anew costs a
# small save or read more than PostgreSQL's part (bench/README.md, S18).
_APP, _USER = bindparam("app_name", type_=String), bindparam("user_id", type_=String)
_BLOB = bindparam("blob_id", type_=UUID(as_uuid=False))
_N = bindparam("n", type_=Integer)
WRITE_CHUNK = DriverStatement.compile(
    insert(StorageArtifactChunk).values(
        app_name=_APP, user_id=_USER, blob_id=_BLOB, n=_N, data=bindparam("data", type_=LargeBinary)
    )
)
READ_CHUNK = DriverStatement.compile(
    select(StorageArtifactChunk.data).where(
        StorageArtifactChunk.app_name == _APP,
        StorageArtifactChunk.user_id == _USER,
        StorageArtifactChunk.blob_id == _BLOB,
        StorageArtifactChunk.n == _N,
    )
)


async def write_chunk(
    connection: asyncpg.Connection, owner: Owner, blob_id: str, n: int, data: bytes
) -> None:
    values = {"app_name": owner[0], "user_id": owner[1], "blob_id": blob_id, "n": n, "data": data}
    await connection.execute(WRITE_CHUNK.sql, *WRITE_CHUNK.arguments(values))


ADOPT_BLOB = DriverStatement.compile(
    upsert(StorageArtifactBlob)
    .values(
        app_name=_APP,
        user_id=_USER,
        content_hash=bindparam("content_hash", type_=LargeBinary),
        blob_id=_BLOB,
        size=bindparam("size", type_=BigInteger),
        chunk_size=bindparam("chunk_size", type_=Integer),
        refs=bindparam("refs", type_=BigInteger),
        store=bindparam("store", type_=String),
    )
    .on_conflict_do_update(
        index_elements=["app_name", "user_id", "content_hash"],
        set_={"refs": StorageArtifactBlob.refs + bindparam("refs", type_=BigInteger)},
    )
    .returning(StorageArtifactBlob.blob_id)
)


async def adopt_blob(
    connection: asyncpg.Connection,
    owner: Owner,
    content_hash: bytes,
    *,
    blob_id: str,
    size: int,
    chunk_size: int,
    refs: int,
    store: str,
) -> str:
    """Count `refs` more versions pointing at the bytes with this hash: those just written
    under `blob_id`, or those stored before (their row then held until the transaction ends,
    so that no delete takes them meanwhile). Returns the id the bytes are stored under."""
    values = {
        "app_name": owner[0],
        "user_id": owner[1],
        "content_hash": content_hash,
        "blob_id": blob_id,
        "size": size,
        "chunk_size": chunk_size,
        "refs": refs,
        "store": store,
    }
    stored = await connection.fetchval(ADOPT_BLOB.sql, *ADOPT_BLOB.arguments(values))
    return str(stored)


async def drop_chunks(connection: asyncpg.Connection, owner: Owner, blob_id: str) -> None:
    await execute(
        connection,
        delete(StorageArtifactChunk).where(
            _owned(StorageArtifactChunk, owner), StorageArtifactChunk.blob_id == blob_id
        ),
    )


async def chunk(connection: asyncpg.Connection, owner: Owner, blob_id: str, n: int) -> bytes | None:
    """The `n`th chunk of a blob; None once the blob is gone (deleted while it was read)."""
    values = {"app_name": owner[0], "user_id": owner[1], "blob_id": blob_id, "n": n}
    data: bytes | None = await connection.fetchval(READ_CHUNK.sql, *READ_CHUNK.arguments(values))
    return data


async def retain(connection: asyncpg.Connection, owner: Owner, hashes: list[bytes]) -> None:
    """Count one more version pointing at each hash (once per time it is listed)."""
    await _count(connection, owner, hashes, +1)


async def release(connection: asyncpg.Connection, owner: Owner, hashes: list[bytes]) -> list[str]:
    """Count one version fewer pointing at each hash (once per time it is listed); delete the
    bytes no version points at any more: their chunks, and the ids of those in the object
    store (whose objects the caller deletes once this commits)."""
    where = await _count(connection, owner, hashes, -1)
    if where is None:
        return []
    gone = await fetch(
        connection,
        delete(StorageArtifactBlob)
        .where(where, StorageArtifactBlob.refs <= 0)
        .returning(StorageArtifactBlob.blob_id, StorageArtifactBlob.store),
    )
    chunked = [row[0] for row in gone if row[1] == "postgres"]
    if chunked:
        ids = bindparam("ids", chunked, type_=ARRAY(UUID(as_uuid=False)))
        await execute(
            connection,
            delete(StorageArtifactChunk).where(
                _owned(StorageArtifactChunk, owner), StorageArtifactChunk.blob_id == func.any(ids)
            ),
        )
    return [str(row[0]) for row in gone if row[1] != "postgres"]


async def _count(
    connection: asyncpg.Connection, owner: Owner, hashes: list[bytes], sign: int
) -> ColumnElement[bool] | None:
    """Add `sign` to the count of each hash's blob, once per time it is listed; the blobs'
    filter, None when none is listed. One statement, whatever the number of hashes: they are
    counted first, then joined, a blob to its count."""
    if not hashes:
        return None
    listed = bindparam("hashes", hashes, type_=ARRAY(LargeBinary))
    hash_ = literal_column("h", LargeBinary)
    times = (
        select(hash_.label("h"), func.count().label("n"))
        .select_from(func.unnest(listed).table_valued("h").render_derived())
        .group_by(hash_)
        .subquery("times")
    )
    where = _owned(StorageArtifactBlob, owner)
    step = times.c.n if sign > 0 else -times.c.n
    await execute(
        connection,
        update(StorageArtifactBlob)
        .where(where, StorageArtifactBlob.content_hash == times.c.h)
        .values(refs=StorageArtifactBlob.refs + step),
    )
    return and_(where, StorageArtifactBlob.content_hash == func.any(listed))


# --- names and versions ----------------------------------------------------------------------


NEXT_VERSION = DriverStatement.compile(
    upsert(StorageArtifact)
    .values(
        app_name=_APP,
        user_id=_USER,
        session_id=bindparam("session_id", type_=String),
        name=bindparam("name", type_=String),
        last_version=literal_column("0"),
    )
    .on_conflict_do_update(
        index_elements=["app_name", "user_id", "session_id", "name"],
        set_={"last_version": StorageArtifact.last_version + literal_column("1")},
    )
    .returning(StorageArtifact.last_version)
)


async def next_version(
    connection: asyncpg.Connection, app_name: str, user_id: str, session_id: str, name: str
) -> int:
    """The version a save of `name` takes: 0 for a new name, else one past the last given
    out. Its row stays locked until the transaction ends: saves of one name take turns."""
    values = {"app_name": app_name, "user_id": user_id, "session_id": session_id, "name": name}
    version: int = await connection.fetchval(NEXT_VERSION.sql, *NEXT_VERSION.arguments(values))
    return version


async def insert_version(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    session_id: str,
    name: str,
    version: int,
    new: NewArtifact,
    *,
    content_hash: bytes | None,
    size: int,
    saved_at: int | None,
) -> StoredArtifact:
    statement = (
        insert(StorageArtifactVersion)
        .values(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            name=name,
            version=version,
            kind=new.kind,
            mime_type=new.mime_type,
            display_name=new.display_name,
            file_uri=new.file_uri,
            content_hash=content_hash,
            size=size,
            custom_metadata=new.custom_metadata,
            saved_at=saved_at,
        )
        .returning(*_VERSION_COLUMNS)
    )
    row = await fetchrow(connection, statement)
    assert row is not None
    return stored_artifact(row)


_VERSION_COLUMNS = (
    StorageArtifactVersion.name,
    StorageArtifactVersion.version,
    StorageArtifactVersion.kind,
    StorageArtifactVersion.mime_type,
    StorageArtifactVersion.display_name,
    StorageArtifactVersion.file_uri,
    StorageArtifactVersion.content_hash,
    StorageArtifactVersion.size,
    StorageArtifactVersion.custom_metadata,
    StorageArtifactVersion.create_time,
    StorageArtifactVersion.session_id,
    StorageArtifactVersion.saved_at,
)


def stored_artifact(row: Any) -> StoredArtifact:
    return StoredArtifact(
        name=row["name"],
        version=row["version"],
        kind=row["kind"],
        mime_type=row["mime_type"],
        display_name=row["display_name"],
        file_uri=row["file_uri"],
        content_hash=row["content_hash"],
        size=row["size"],
        custom_metadata=row["custom_metadata"],
        create_time=row["create_time"],
        session_id=row["session_id"] or None,
        saved_at=row["saved_at"],
        blob_id=str(row["blob_id"]) if row.get("blob_id") is not None else None,
        chunk_size=row.get("chunk_size") or 0,
        store=row.get("store") or "postgres",
    )


def _scopes(app_name: str, user_id: str, session_id: str | None) -> ColumnElement[bool]:
    """A session's own names and its user's (`user:`) names; a user's alone without one."""
    sessions = [USER_SCOPE] if session_id is None else [session_id, USER_SCOPE]
    return and_(
        StorageArtifactVersion.app_name == app_name,
        StorageArtifactVersion.user_id == user_id,
        StorageArtifactVersion.session_id
        == func.any(bindparam("sessions", sessions, type_=ARRAY(String))),
    )


def _visible_at(until_seq: int | None) -> ColumnElement[bool]:
    """Versions a read as of `until_seq` sees: saved before the write that took that seq (a
    `user:` name's, which no session's history holds, always)."""
    if until_seq is None:
        return true()
    return or_(
        StorageArtifactVersion.saved_at.is_(None),
        StorageArtifactVersion.saved_at < literal(until_seq, BigInteger),
    )


async def latest_versions(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    session_id: str | None,
    *,
    after_name: str | None,
    limit: int,
    until_seq: int | None,
) -> list[StoredArtifact]:
    """The newest version of each name in the scope (as of `until_seq`), by name."""
    statement = (
        select(*_VERSION_COLUMNS)
        .ext(distinct_on(StorageArtifactVersion.name))
        .where(_scopes(app_name, user_id, session_id), _visible_at(until_seq))
        .order_by(StorageArtifactVersion.name, StorageArtifactVersion.version.desc())
        .limit(limit)
    )
    if after_name is not None:
        statement = statement.where(StorageArtifactVersion.name > after_name)
    return [stored_artifact(row) for row in await fetch(connection, statement)]


async def versions(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    session_id: str,
    name: str,
    *,
    after_version: int | None,
    limit: int,
) -> list[StoredArtifact]:
    statement = (
        select(*_VERSION_COLUMNS)
        .where(_named(StorageArtifactVersion, app_name, user_id, session_id, name))
        .order_by(StorageArtifactVersion.version)
        .limit(limit)
    )
    if after_version is not None:
        statement = statement.where(StorageArtifactVersion.version > after_version)
    return [stored_artifact(row) for row in await fetch(connection, statement)]


def _with_blobs() -> Any:
    """Versions with where their bytes are (none for a reference)."""
    return select(
        *_VERSION_COLUMNS,
        StorageArtifactBlob.blob_id,
        StorageArtifactBlob.chunk_size,
        StorageArtifactBlob.store,
    ).outerjoin(
        StorageArtifactBlob,
        and_(
            StorageArtifactBlob.app_name == StorageArtifactVersion.app_name,
            StorageArtifactBlob.user_id == StorageArtifactVersion.user_id,
            StorageArtifactBlob.content_hash == StorageArtifactVersion.content_hash,
        ),
    )


async def session_versions(connection: asyncpg.Connection, key: SessionKey) -> list[StoredArtifact]:
    """Every version of the session's own names (not its user's), by name and version, with
    where their bytes are: what its export carries."""
    statement = (
        _with_blobs()
        .where(_in_scope(StorageArtifactVersion, key.app_name, key.user_id, key.session_id))
        .order_by(StorageArtifactVersion.name, StorageArtifactVersion.version)
    )
    return [stored_artifact(row) for row in await fetch(connection, statement)]


async def user_scope_owners(
    connection: asyncpg.Connection, app_name: str | None, user_id: str | None
) -> list[Owner]:
    """The users with `user:` artifacts within an export's reach (every app, or every user,
    where None), in order."""
    versions = StorageArtifactVersion
    reach = [versions.session_id == USER_SCOPE]
    if app_name is not None:
        reach.append(versions.app_name == app_name)
    if user_id is not None:
        reach.append(versions.user_id == user_id)
    statement = (
        select(versions.app_name, versions.user_id)
        .distinct()
        .where(*reach)
        .order_by(versions.app_name, versions.user_id)
    )
    return [(row[0], row[1]) for row in await fetch(connection, statement)]


_NAMED = (
    StorageArtifactVersion.app_name == _APP,
    StorageArtifactVersion.user_id == _USER,
    StorageArtifactVersion.session_id == bindparam("session_id", type_=String),
    StorageArtifactVersion.name == bindparam("name", type_=String),
)
FIND_NEWEST = DriverStatement.compile(
    _with_blobs()
    .where(*_NAMED)
    .order_by(StorageArtifactVersion.version.desc())
    .limit(literal_column("1"))
)
FIND_VERSION = DriverStatement.compile(
    _with_blobs().where(
        *_NAMED, StorageArtifactVersion.version == bindparam("version", type_=BigInteger)
    )
)


async def find_version(
    connection: asyncpg.Connection,
    app_name: str,
    user_id: str,
    session_id: str,
    name: str,
    version: int | None,
) -> StoredArtifact | None:
    """One version (the newest when `version` is None), with where its bytes are."""
    values = {"app_name": app_name, "user_id": user_id, "session_id": session_id, "name": name}
    statement = FIND_NEWEST if version is None else FIND_VERSION
    row = await connection.fetchrow(
        statement.sql, *statement.arguments({**values, "version": version})
    )
    return None if row is None else stored_artifact(row)


async def delete_name(
    connection: asyncpg.Connection, app_name: str, user_id: str, session_id: str, name: str
) -> list[str] | None:
    """Delete every version of a name; None if it has none, else the ids of the objects of
    the object store no version points at any more (`release`). Its row goes first, so that
    a save waiting for it numbers from 0 again, and one it waited for is deleted too."""
    named = delete(StorageArtifact).where(
        _named(StorageArtifact, app_name, user_id, session_id, name)
    )
    if await fetchval(connection, named.returning(literal_column("1"))) is None:
        return None
    gone = await fetch(
        connection,
        delete(StorageArtifactVersion)
        .where(_named(StorageArtifactVersion, app_name, user_id, session_id, name))
        .returning(StorageArtifactVersion.content_hash),
    )
    return await release(
        connection, (app_name, user_id), [row[0] for row in gone if row[0] is not None]
    )


async def delete_session_artifacts(connection: asyncpg.Connection, key: SessionKey) -> None:
    """Delete a session's own names (not its user's) and every version of them."""
    scope = (key.app_name, key.user_id, key.session_id)
    await execute(connection, delete(StorageArtifact).where(_in_scope(StorageArtifact, *scope)))
    gone = await fetch(
        connection,
        delete(StorageArtifactVersion)
        .where(_in_scope(StorageArtifactVersion, *scope))
        .returning(StorageArtifactVersion.content_hash),
    )
    await release(
        connection, (key.app_name, key.user_id), [row[0] for row in gone if row[0] is not None]
    )


_VERSION_TABLE = StorageArtifactVersion.__table__


async def copy_session_artifacts(
    connection: asyncpg.Connection,
    source: SessionKey,
    target: SessionKey,
    *,
    before_seq: int | None,
) -> None:
    """Give a new session (a fork, a child) the source's own names with their versions saved
    before the write that took `before_seq` (every version when None): the records, not the
    bytes, which the versions share."""
    chosen = select(
        *(
            literal(target.session_id, String).label(column.name)
            if column.name == "session_id"
            else column
            for column in _VERSION_TABLE.columns
        )
    ).where(_in_scope(StorageArtifactVersion, source.app_name, source.user_id, source.session_id))
    if before_seq is not None:
        chosen = chosen.where(StorageArtifactVersion.saved_at < literal(before_seq, BigInteger))
    copied = await fetch(
        connection,
        insert(StorageArtifactVersion)
        .from_select([column.name for column in _VERSION_TABLE.columns], chosen)
        .returning(StorageArtifactVersion.content_hash),
    )
    if not copied:
        return
    scope = (target.app_name, target.user_id, target.session_id)
    last = (
        select(
            StorageArtifactVersion.app_name,
            StorageArtifactVersion.user_id,
            StorageArtifactVersion.session_id,
            StorageArtifactVersion.name,
            func.max(StorageArtifactVersion.version),
        )
        .where(_in_scope(StorageArtifactVersion, *scope))
        .group_by(
            StorageArtifactVersion.app_name,
            StorageArtifactVersion.user_id,
            StorageArtifactVersion.session_id,
            StorageArtifactVersion.name,
        )
    )
    await execute(
        connection,
        insert(StorageArtifact).from_select(
            ["app_name", "user_id", "session_id", "name", "last_version"], last
        ),
    )
    owner = (target.app_name, target.user_id)
    await retain(connection, owner, [row[0] for row in copied if row[0] is not None])


async def save_again(
    connection: asyncpg.Connection, key: SessionKey, name: str, version: int, *, saved_at: int
) -> int | None:
    """Save a session's version of `name` again, as its next version (a rewind's restore):
    the same record and bytes, saved now. None if there is no such version."""
    source = select(*_VERSION_TABLE.columns).where(
        _named(StorageArtifactVersion, key.app_name, key.user_id, key.session_id, name),
        StorageArtifactVersion.version == version,
    )
    found = await fetchrow(connection, source)
    if found is None:
        return None
    new = await next_version(connection, key.app_name, key.user_id, key.session_id, name)
    record = {**dict(found), "version": new, "saved_at": saved_at}
    del record["create_time"]
    await execute(connection, insert(StorageArtifactVersion).values(**record))
    if found["content_hash"] is not None:
        await retain(connection, (key.app_name, key.user_id), [found["content_hash"]])
    return new


async def import_version(
    connection: asyncpg.Connection, key: SessionKey, stored: StoredArtifact
) -> None:
    """A version of an import, as its export gave it (its bytes counted by the caller)."""
    await execute(
        connection,
        insert(StorageArtifactVersion).values(
            app_name=key.app_name,
            user_id=key.user_id,
            session_id=key.session_id,
            name=stored.name,
            version=stored.version,
            kind=stored.kind,
            mime_type=stored.mime_type,
            display_name=stored.display_name,
            file_uri=stored.file_uri,
            content_hash=stored.content_hash,
            size=stored.size,
            custom_metadata=stored.custom_metadata,
            create_time=stored.create_time,
            saved_at=stored.saved_at,
        ),
    )


async def import_names(
    connection: asyncpg.Connection, key: SessionKey, last: dict[str, int]
) -> None:
    """The names of an import, each with its last version."""
    if last:
        await execute(
            connection,
            insert(StorageArtifact).values(
                [
                    {**key.columns(), "name": name, "last_version": version}
                    for name, version in last.items()
                ]
            ),
        )


async def stored_objects(connection: asyncpg.Connection, blob_ids: list[str]) -> set[str]:
    """Those of `blob_ids` that name a blob of the object store."""
    statement = select(StorageArtifactBlob.blob_id).where(
        StorageArtifactBlob.store == "s3",
        StorageArtifactBlob.blob_id
        == func.any(bindparam("ids", blob_ids, type_=ARRAY(UUID(as_uuid=False)))),
    )
    return {str(row[0]) for row in await fetch(connection, statement)}
