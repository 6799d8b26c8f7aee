"""SQL for erasing a user, or a whole app: the fence writes meet, and the job's bounded
deletes.

Which tables hold a user's rows is read from the catalog (every table of the schema with
`app_name` and `user_id` columns; for an app, every one with `app_name`, but the audit log),
so that a table added later is erased with the others.

The fence: a running erasure's row holds the user's id, or '' for the whole app (`APP_WIDE`).
Every write that adds a user's rows other than through an existing session (a session made or
imported, user state, memories, artifacts, keys) takes a shared transaction lock on the app
and one on the user, and then looks for either row; a write of the app's own rows (its state,
its memories) takes the app's. An erase takes its own lock exclusively to fence, so it waits
for such writes in flight and every later one sees the fence. Writes through a session
(appends) meet the session's row: a user's erase deletes them all in its fence, an app's in
batches (an append to one not yet deleted lands, and a later pass takes it).
"""

import uuid
from dataclasses import dataclass
from datetime import datetime

import asyncpg
import orjson

from app.errors import AppBeingErased, UserBeingErased

# The user id a running erase of a whole app holds, and the pseudonym it names: no user has it
# (the app's own memories are kept under it).
APP_WIDE = ""
# The advisory lock of a user of an app, or with `APP_WIDE` of the app (a collision only makes
# two of them wait on each other).
_LOCK = "hashtextextended($1 || '/' || $2, 0)"
# The job's own lock, held by the transaction running its next step.
_JOB_LOCK = "hashtextextended('erasure/' || $1, 0)"


@dataclass(frozen=True)
class ErasureScope:
    """What an erase erases: one user of an app, or (`user_id` None) the whole app."""

    app_name: str
    user_id: str | None = None

    @property
    def name(self) -> str:
        return "app" if self.user_id is None else "user"

    @property
    def fenced_id(self) -> str:
        """The user id its running erasure holds."""
        return APP_WIDE if self.user_id is None else self.user_id

    @property
    def where(self) -> str:
        """Its rows, as an SQL condition on `$1` (the app) and `$2` (the user): `args`."""
        return "app_name = $1" if self.user_id is None else "app_name = $1 AND user_id = $2"

    @property
    def args(self) -> tuple[str, ...]:
        return (self.app_name,) if self.user_id is None else (self.app_name, self.user_id)


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
class ErasedTable:
    """A table an erase empties, and its primary key (how a batch names its rows)."""

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
    user runs, AppBeingErased while one of the app runs (after waiting for one that is
    fencing)."""
    await _refuse_while_erasing(connection, app_name, user_id)


async def refuse_while_erasing_app(connection: asyncpg.Connection, app_name: str) -> None:
    """In a transaction that writes the app's own rows (its state, its memories):
    AppBeingErased while an erase of the app runs (after waiting for one that is fencing)."""
    await _refuse_while_erasing(connection, app_name, APP_WIDE)


async def _refuse_while_erasing(
    connection: asyncpg.Connection, app_name: str, fenced_id: str
) -> None:
    # The app's lock first, then the user's (for the app's own rows, the same one again);
    # the fence looked for once they are held, in a statement of its own (a later snapshot).
    await connection.execute(
        f"SELECT pg_advisory_xact_lock_shared(hashtextextended($1 || '/', 0)), "
        f"pg_advisory_xact_lock_shared({_LOCK})",
        app_name,
        fenced_id,
    )
    fenced = await connection.fetchval(
        """SELECT user_id FROM erasures WHERE app_name = $1 AND user_id IN ($3, $2)
           ORDER BY user_id LIMIT 1""",
        app_name,
        fenced_id,
        APP_WIDE,
    )
    if fenced == APP_WIDE:
        raise AppBeingErased(app_name)
    if fenced is not None:
        raise UserBeingErased(app_name, fenced_id)


async def fence(
    connection: asyncpg.Connection, scope: ErasureScope, user_ref: str, key_id: str | None
) -> tuple[Erasure, bool]:
    """The scope's running erasure, started here (True) unless one was running: once this
    transaction commits, the scope's writes are refused."""
    await connection.execute(
        f"SELECT pg_advisory_xact_lock({_LOCK})", scope.app_name, scope.fenced_id
    )
    row = await connection.fetchrow(
        """INSERT INTO erasures (id, app_name, user_id, user_ref, key_id, scope)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (app_name, user_id) WHERE user_id IS NOT NULL DO NOTHING
           RETURNING *""",
        uuid.uuid4().hex,
        scope.app_name,
        scope.fenced_id,
        user_ref,
        key_id,
        scope.name,
    )
    if row is not None:
        return _erasure(row), True
    row = await connection.fetchrow(
        "SELECT * FROM erasures WHERE app_name = $1 AND user_id = $2",
        scope.app_name,
        scope.fenced_id,
    )
    return _erasure(row), False


async def delete_keys(connection: asyncpg.Connection, scope: ErasureScope, erasure_id: str) -> int:
    """The keys made for the scope (for an app, its users' too): deleted, their ids kept in
    the erasure."""
    erasure_at = f"${len(scope.args) + 1}"
    return int(
        await connection.fetchval(
            f"""WITH deleted AS (DELETE FROM api_keys WHERE {scope.where} RETURNING id)
                UPDATE erasures SET deleted_keys = ARRAY(SELECT id FROM deleted ORDER BY id)
                WHERE id = {erasure_at} RETURNING cardinality(deleted_keys)""",
            *scope.args,
            erasure_id,
        )
    )


async def tables_of(connection: asyncpg.Connection, scope: ErasureScope) -> list[ErasedTable]:
    """Every table of the schema that holds the scope's rows (but the erasures themselves and
    the audit log), sessions first: a session goes from view whole before its events do."""
    columns = ["app_name"] if scope.user_id is None else ["app_name", "user_id"]
    rows = await connection.fetch(
        """SELECT c.relname, array_agg(a.attname::text ORDER BY k.n) AS key
           FROM pg_class c
           JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
           CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
           JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
           WHERE c.relnamespace = current_schema()::regnamespace
             AND c.relkind IN ('r', 'p') AND NOT c.relispartition
             AND c.relname NOT IN ('erasures', 'audit_log')
             AND (SELECT count(*) FROM pg_attribute u WHERE u.attrelid = c.oid
                  AND u.attname = ANY($1::text[]) AND NOT u.attisdropped) = cardinality($1)
           GROUP BY c.relname ORDER BY c.relname <> 'sessions', c.relname""",
        columns,
    )
    return [ErasedTable(row["relname"], tuple(row["key"])) for row in rows]


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


def _batch(table: ErasedTable, scope: ErasureScope, returning: str = "") -> str:
    """Deleting at most `$n` (the parameter after the scope's; NULL: every one) of the
    scope's rows of `table`."""
    key = ", ".join(table.quoted(column) for column in table.key)
    name = table.quoted()
    limit_at = f"${len(scope.args) + 1}"
    return f"""DELETE FROM {name} WHERE {scope.where} AND ({key}) IN (
                   SELECT {key} FROM {name} WHERE {scope.where} LIMIT {limit_at}) {returning}"""


async def delete_batch(
    connection: asyncpg.Connection, table: ErasedTable, scope: ErasureScope, limit: int
) -> int:
    """Delete at most `limit` of the scope's rows of `table`; how many."""
    status = await connection.execute(_batch(table, scope), *scope.args, limit)
    return int(status.rsplit(" ", 1)[1])


async def delete_sessions(
    connection: asyncpg.Connection, sessions: ErasedTable, scope: ErasureScope, limit: int | None
) -> list[asyncpg.Record]:
    """Delete at most `limit` (None: every one) of the scope's sessions: their user_id, id,
    version and parent_id. Appends to them fail from here."""
    returning = "RETURNING user_id, id, version, parent_id"
    rows: list[asyncpg.Record] = await connection.fetch(
        _batch(sessions, scope, returning), *scope.args, limit
    )
    return rows


async def delete_blobs(
    connection: asyncpg.Connection, blobs: ErasedTable, scope: ErasureScope, limit: int
) -> tuple[int, list[str]]:
    """Delete at most `limit` of the scope's artifact blobs: how many, and the ids of those
    whose bytes are in the object store (the caller deletes them once this commits)."""
    rows = await connection.fetch(
        _batch(blobs, scope, "RETURNING blob_id, store"), *scope.args, limit
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
    """The latest erasure of a user, found by pseudonym (a finished one has no user id), or
    with `APP_WIDE` of the app."""
    row = await connection.fetchrow(
        """SELECT * FROM erasures WHERE app_name = $1 AND user_ref = $2
           ORDER BY create_time DESC LIMIT 1""",
        app_name,
        user_ref,
    )
    return None if row is None else _erasure(row)


async def stalled(
    connection: asyncpg.Connection, idle_seconds: float
) -> list[tuple[str, ErasureScope]]:
    """Running erasures no step has moved for `idle_seconds` (their process stopped)."""
    rows = await connection.fetch(
        """SELECT id, app_name, user_id, scope FROM erasures
           WHERE user_id IS NOT NULL AND update_time < now() - make_interval(secs => $1)""",
        idle_seconds,
    )
    return [
        (
            row["id"],
            ErasureScope(row["app_name"], None if row["scope"] == "app" else row["user_id"]),
        )
        for row in rows
    ]
