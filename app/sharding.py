"""Sharding on Citus: where each table lives when the database has the `citus` extension.

`sessionary migrate` (every Alembic upgrade, in its transaction) distributes what is not yet
distributed, so a new cluster and a single-node database that gained Citus later take the same
step; a database without Citus is left as it is.

The shard key is `user_id`: every per-session statement names it, and every session of a user
(its forks, its children, its user state, a search within the user) lives on one worker, so that
lineage and `user:` state never cross nodes. Hashing `user_id` alone, not `(app_name, user_id)`,
means one user id shared by many apps (a placeholder such as "user") lands every such session on
one shard; SCALING.md says how to isolate such a hot id on a shard of its own.
"""

import asyncpg
from sqlalchemy import Connection, text

from app.repositories import events

SHARD_KEY = "user_id"
# Distributed by the shard key and co-located: a session, its events and its pending events,
# and its user's state share a shard, so the statements joining them run on one worker.
# The first is the one the others are co-located with.
CO_LOCATED = ("sessions", "events", "pending_events", "user_states")
# Small and read by everyone: a copy on every node.
REFERENCE = ("app_states", "api_keys")


HAS_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"


def has_citus(connection: Connection) -> bool:
    return bool(connection.scalar(text(HAS_CITUS)))


def one_shard_at_a_time(connection: Connection) -> None:
    """For a migration that changes every shard of a table: on Citus, change them one after
    another. A command run on shards in parallel makes Citus refuse, for the rest of the
    transaction, what later migrations in it do (creating functions)."""
    if has_citus(connection):
        connection.execute(text("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"))


async def on_citus(connection: asyncpg.Connection) -> bool:
    """`has_citus`, on a running app's connection."""
    return bool(await connection.fetchval(HAS_CITUS))


async def routes_appends(connection: asyncpg.Connection) -> bool:
    """Whether this Citus database has the append routed to the user's worker that this code
    calls (`events.APPEND_ROUTED`): `sessionary migrate` makes it, and a cluster it has not
    run on since an upgrade has another or none."""
    return bool(
        await connection.fetchval("SELECT to_regprocedure($1) IS NOT NULL", events.ROUTED_SIGNATURE)
    )


def distribute(connection: Connection) -> list[str]:
    """Distribute the tables that are not yet; returns their names (none without Citus).
    Rows already in a table move into its shards."""
    if not has_citus(connection):
        return []
    # The statements call these on the workers. Made after Citus, Citus copied them there;
    # made before, they are copied now (again is harmless).
    for function in connection.scalars(
        text(
            "SELECT p.oid::regprocedure::text FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.proname LIKE 'sessionary\\_%'"
            " AND p.proname <> :routed"
        ),
        {"routed": events.ROUTED_FUNCTION},
    ).all():
        connection.execute(text("SELECT create_distributed_function(:f)"), {"f": function})
    done = set(
        connection.scalars(text("SELECT logicalrelid::regclass::text FROM pg_dist_partition"))
    )
    distributed = []
    for table in REFERENCE:
        if table not in done:
            connection.execute(text("SELECT create_reference_table(:table)"), {"table": table})
            distributed.append(table)
    for table in CO_LOCATED:
        if table not in done:
            group = "none" if table == CO_LOCATED[0] else CO_LOCATED[0]  # "none": a new group
            connection.execute(
                text("SELECT create_distributed_table(:table, :key, colocate_with => :group)"),
                {"table": table, "key": SHARD_KEY, "group": group},
            )
            distributed.append(table)
    _route_appends(connection)
    return distributed


def _route_appends(connection: Connection) -> None:
    """The append as a function Citus delegates whole to the user's worker
    (`events.APPEND_ROUTED`), made anew from this code's SQL on every migration, and placed
    with the sessions: a call is routed by its user to the worker holding that user's shard."""
    connection.exec_driver_sql(events.CREATE_ROUTED)
    connection.execute(
        text(
            "SELECT create_distributed_function(CAST(:function AS regprocedure), :by,"
            " colocate_with => :group)"
        ),
        {"function": events.ROUTED_SIGNATURE, "by": events.ROUTED_BY, "group": CO_LOCATED[0]},
    )
