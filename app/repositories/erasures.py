"""SQL for erasing a user: the fence their writes meet, and the job's bounded deletes.

Which tables hold a user's rows is read from the catalog (every table of the schema with
`app_name` and `user_id` columns), so that a table added later is erased with the others.

The fence: a running erasure's row holds the user's id. Every write that adds a user's rows
other than through an existing session (a session made or imported, user state, memories,
artifacts, keys) takes a shared transaction lock on the user and then looks for that row;
the erase takes the lock exclusively to fence, so it waits for such writes in flight and
every later one sees the fence. Writes through a session (appends) meet the session's row,
which the fence deletes.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime

import asyncpg
import orjson

from app.errors import UserBeingErased

# The advisory lock of a user of an app (a collision only makes two users wait on each other).
_USER_LOCK = "hashtextextended($1 || '/' || $2, 0)"
# The job's own lock, held by the transaction running its next step.
_JOB_LOCK = "hashtextextended('erasure/' || $1, 0)"


@dataclass(frozen=True)
class Erasure:
    id: str
    app_name: str
    running: bool
    removed: dict[str, int]
    deleted_keys: list[str]
    key_id: str | None
    create_time: datetime
    update_time: datetime
    finish_time: datetime | None


@dataclass(frozen=True)
class UserTable:
    """A table with a user's rows, and its primary key (how a batch names its rows)."""

    name: str
    key: tuple[str, ...]

    def quoted(self, name: str | None = None) -> str:
        return '"' + (name or self.name).replace('"', '""') + '"'


def _erasure(row: asyncpg.Record) -> Erasure:
    return Erasure(
        row["id"],
        row["app_name"],
        row["user_id"] is not None,
        dict(row["removed"]),
        list(row["deleted_keys"]),
        row["key_id"],
        row["create_time"],
        row["update_time"],
        row["finish_time"],
    )


async def refuse_while_erasing(connection: asyncpg.Connection, app_name: str, user_id: str) -> None:
    """In a transaction that writes the user's rows: UserBeingErased while an erase of the
    user runs (after waiting for one that is fencing)."""
    await connection.execute(
        f"SELECT pg_advisory_xact_lock_shared({_USER_LOCK})", app_name, user_id
    )
    fenced = await connection.fetchval(
        "SELECT EXISTS (SELECT FROM erasures WHERE app_name = $1 AND user_id = $2)",
        app_name,
        user_id,
    )
    if fenced:
        raise UserBeingErased(app_name, user_id)


async def fence(
    connection: asyncpg.Connection, app_name: str, user_id: str, user_ref: str, key_id: str | None
) -> tuple[Erasure, bool]:
    """The user's running erasure, started here (True) unless one was running: once this
    transaction commits, the user's writes are refused."""
    await connection.execute(f"SELECT pg_advisory_xact_lock({_USER_LOCK})", app_name, user_id)
    row = await connection.fetchrow(
        """INSERT INTO erasures (id, app_name, user_id, user_ref, key_id)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (app_name, user_id) WHERE user_id IS NOT NULL DO NOTHING
           RETURNING *""",
        uuid.uuid4().hex,
        app_name,
        user_id,
        user_ref,
        key_id,
    )
    if row is not None:
        return _erasure(row), True
    row = await connection.fetchrow(
        "SELECT * FROM erasures WHERE app_name = $1 AND user_id = $2", app_name, user_id
    )
    return _erasure(row), False


async def delete_sessions(
    connection: asyncpg.Connection, app_name: str, user_id: str
) -> list[asyncpg.Record]:
    """Every session of the user (id, version, parent_id): appends to them fail from here."""
    rows: list[asyncpg.Record] = await connection.fetch(
        """DELETE FROM sessions WHERE app_name = $1 AND user_id = $2
           RETURNING id, version, parent_id""",
        app_name,
        user_id,
    )
    return rows


async def delete_keys(
    connection: asyncpg.Connection, app_name: str, user_id: str, erasure_id: str
) -> int:
    """The keys made for the user: deleted, their ids kept in the erasure."""
    return int(
        await connection.fetchval(
            """WITH deleted AS (
                   DELETE FROM api_keys WHERE app_name = $1 AND user_id = $2 RETURNING id)
               UPDATE erasures SET deleted_keys = ARRAY(SELECT id FROM deleted ORDER BY id)
               WHERE id = $3 RETURNING cardinality(deleted_keys)""",
            app_name,
            user_id,
            erasure_id,
        )
    )


async def user_tables(connection: asyncpg.Connection) -> list[UserTable]:
    """Every table of the schema that holds users' rows (but the erasures themselves)."""
    rows = await connection.fetch(
        """SELECT c.relname, array_agg(a.attname::text ORDER BY k.n) AS key
           FROM pg_class c
           JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
           CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
           WHERE c.relnamespace = current_schema()::regnamespace
             AND c.relkind IN ('r', 'p') AND NOT c.relispartition
             AND c.relname <> 'erasures'
             AND (SELECT count(*) FROM pg_attribute u WHERE u.attrelid = c.oid
                  AND u.attname IN ('app_name', 'user_id') AND NOT u.attisdropped) = 2
           GROUP BY c.relname ORDER BY c.relname"""
    )
    return [UserTable(row["relname"], tuple(row["key"])) for row in rows]


async def hold_job(connection: asyncpg.Connection, erasure_id: str) -> bool:
    """Whether this transaction may run the job's next step: it is running and no other
    transaction is running one."""
    held = await connection.fetchval(f"SELECT pg_try_advisory_xact_lock({_JOB_LOCK})", erasure_id)
    if not held:
        return False
    return bool(
        await connection.fetchval(
            "SELECT user_id IS NOT NULL FROM erasures WHERE id = $1", erasure_id
        )
    )


async def delete_batch(
    connection: asyncpg.Connection, table: UserTable, app_name: str, user_id: str, limit: int
) -> int:
    """Delete at most `limit` of the user's rows of `table`; how many."""
    key = ", ".join(table.quoted(column) for column in table.key)
    name = table.quoted()
    status = await connection.execute(
        f"""DELETE FROM {name} WHERE app_name = $1 AND user_id = $2 AND ({key}) IN (
                SELECT {key} FROM {name} WHERE app_name = $1 AND user_id = $2 LIMIT $3)""",
        app_name,
        user_id,
        limit,
    )
    return int(status.rsplit(" ", 1)[1])


async def delete_blobs(
    connection: asyncpg.Connection, app_name: str, user_id: str, limit: int
) -> tuple[int, list[str]]:
    """Delete at most `limit` of the user's artifact blobs: how many, and the ids of those
    whose bytes are in the object store (the caller deletes them once this commits)."""
    rows = await connection.fetch(
        """DELETE FROM artifact_blobs WHERE app_name = $1 AND user_id = $2 AND blob_id IN (
               SELECT blob_id FROM artifact_blobs WHERE app_name = $1 AND user_id = $2
               LIMIT $3)
           RETURNING blob_id, store""",
        app_name,
        user_id,
        limit,
    )
    return len(rows), [str(row["blob_id"]) for row in rows if row["store"] != "postgres"]


async def set_removed(
    connection: asyncpg.Connection, erasure_id: str, removed: dict[str, int]
) -> None:
    await connection.execute(
        "UPDATE erasures SET removed = $2::text::jsonb WHERE id = $1",
        erasure_id,
        orjson.dumps(removed).decode(),
    )


async def count_removed(connection: asyncpg.Connection, erasure_id: str, kind: str, n: int) -> None:
    await connection.execute(
        """UPDATE erasures SET update_time = now(), removed = jsonb_set(removed, ARRAY[$2],
               to_jsonb(coalesce((removed ->> $2)::bigint, 0) + $3))
           WHERE id = $1""",
        erasure_id,
        kind,
        n,
    )


async def finish(connection: asyncpg.Connection, erasure_id: str) -> Erasure:
    """Done: the user's id leaves the erasure (and the fence with it)."""
    row = await connection.fetchrow(
        """UPDATE erasures SET user_id = NULL, finish_time = now(), update_time = now()
           WHERE id = $1 RETURNING *""",
        erasure_id,
    )
    return _erasure(row)


async def read(connection: asyncpg.Connection, erasure_id: str) -> Erasure | None:
    row = await connection.fetchrow("SELECT * FROM erasures WHERE id = $1", erasure_id)
    return None if row is None else _erasure(row)


async def latest(connection: asyncpg.Connection, app_name: str, user_ref: str) -> Erasure | None:
    """The user's latest erasure, found by pseudonym (a finished one has no user id)."""
    row = await connection.fetchrow(
        """SELECT * FROM erasures WHERE app_name = $1 AND user_ref = $2
           ORDER BY create_time DESC LIMIT 1""",
        app_name,
        user_ref,
    )
    return None if row is None else _erasure(row)


async def stalled(
    connection: asyncpg.Connection, idle_seconds: float
) -> list[tuple[str, str, str]]:
    """Running erasures no step has moved for `idle_seconds` (their process stopped):
    (id, app name, user id)."""
    rows = await connection.fetch(
        """SELECT id, app_name, user_id FROM erasures
           WHERE user_id IS NOT NULL AND update_time < now() - make_interval(secs => $1)""",
        idle_seconds,
    )
    return [(row["id"], row["app_name"], row["user_id"]) for row in rows]
