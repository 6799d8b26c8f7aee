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

import asyncio
import logging
from bisect import bisect_right
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import asyncpg
from sqlalchemy import Connection, text

from app.db import DriverPool
from app.errors import DatabaseUnavailable
from app.repositories import events

logger = logging.getLogger(__name__)

SHARD_KEY = "user_id"
# Distributed by the shard key and co-located: a session, its events and its pending events,
# its user's state, artifacts and memories share a shard, so the statements joining them run on one
# worker. The first is the one the others are co-located with.
CO_LOCATED = (
    "sessions",
    "events",
    "pending_events",
    "user_states",
    "artifacts",
    "artifact_versions",
    "artifact_blobs",
    "artifact_chunks",
    "memories",
    "memory_revisions",
    "memory_vectors",
)
# Small or seldom written, read by everyone: a copy on every node.
REFERENCE = ("app_states", "api_keys", "audit_log", "server_secrets", "erasures")


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
    # Not yet: a table a later revision makes, when an upgrade stops before it.
    absent = set(
        connection.scalars(
            text("SELECT t FROM unnest(CAST(:tables AS text[])) AS t WHERE to_regclass(t) IS NULL"),
            {"tables": [*REFERENCE, *CO_LOCATED]},
        )
    )
    skipped = done | absent
    distributed = []
    for table in REFERENCE:
        if table not in skipped:
            connection.execute(text("SELECT create_reference_table(:table)"), {"table": table})
            distributed.append(table)
    for table in CO_LOCATED:
        if table not in skipped:
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


# --- appends straight to the user's worker -----------------------------------------------------
#
# A call of `sessionary_append` sent to the coordinator costs it a fifth of the append's CPU
# only to pass the call on (SCALING.md). Citus plans a statement on any node, so the service
# sends each routed append to the worker holding its user's shard itself, over a pool of its
# own to that worker, found from Citus's metadata: the coordinator then serves reads, streams
# and metadata only. Which worker is never a matter of correctness: a call that reaches
# another node is passed on by it, as by the coordinator.

_MASK = 0xFFFFFFFF


def _rotated(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def shard_hash(value: str) -> int:
    """The hash Citus places a text shard key's row by (PostgreSQL's `hashtext`, Bob Jenkins's
    lookup3 over the UTF-8 bytes, as an int4), so that finding a user's worker asks no node.

    Each round of lookup3's mix and final steps changes one of its three words by another;
    the next round does the same to the next word, so the loops turn the names round."""
    key = value.encode()
    a = b = c = (0x9E3779B9 + len(key) + 3923095) & _MASK
    whole = len(key) - len(key) % 12
    for at in range(0, whole, 12):
        a = (a + int.from_bytes(key[at : at + 4], "little")) & _MASK
        b = (b + int.from_bytes(key[at + 4 : at + 8], "little")) & _MASK
        c = (c + int.from_bytes(key[at + 8 : at + 12], "little")) & _MASK
        for bits in (4, 6, 8, 16, 19, 4):  # mix: six rounds, the names back where they were
            a = (a - c) & _MASK ^ _rotated(c, bits)
            c = (c + b) & _MASK
            a, b, c = b, c, a
    rest = key[whole:]
    a = (a + int.from_bytes(rest[:4], "little")) & _MASK
    b = (b + int.from_bytes(rest[4:8], "little")) & _MASK
    c = (c + (int.from_bytes(rest[8:], "little") << 8)) & _MASK  # its low byte: the length's
    for bits in (14, 11, 25, 16, 4, 14, 24):  # final: seven rounds, c ends named b
        c = (c ^ b) - _rotated(b, bits) & _MASK
        a, b, c = b, c, a
    return b - (1 << 32) if b >> 31 else b


Node = tuple[str, int]  # a node's host and port, as Citus's metadata names it
# A worker that will not take the service's connection: down, unreachable, or refusing it (its
# `pg_hba.conf` or the role), which would otherwise fail every append of its users.
_REFUSED = (DatabaseUnavailable, asyncpg.PostgresError)

# Where each shard of `sessions` (and so of every table co-located with it) is: its lowest
# hash, and its node; none for the coordinator's own shards, which the service reaches anyway.
_PLACEMENTS = """
SELECT DISTINCT ON (shard.shardminvalue::integer)
       shard.shardminvalue::integer AS low, node.nodename AS host, node.nodeport AS port,
       node.groupid = 0 AS coordinator
FROM pg_dist_shard shard
JOIN pg_dist_placement placement USING (shardid)
JOIN pg_dist_node node USING (groupid)
WHERE shard.logicalrelid = 'sessions'::regclass AND node.noderole = 'primary' AND node.isactive
ORDER BY shard.shardminvalue::integer, node.nodeid
"""


@dataclass(frozen=True)
class ShardMap:
    """The node of each shard, by the shard's lowest hash, in order."""

    lows: tuple[int, ...] = ()
    nodes: tuple[Node | None, ...] = ()

    @classmethod
    def of(cls, rows: list[asyncpg.Record]) -> "ShardMap":
        return cls(
            tuple(row["low"] for row in rows),
            tuple(None if row["coordinator"] else (row["host"], row["port"]) for row in rows),
        )

    def node_of(self, user_id: str) -> Node | None:
        """The worker holding `user_id`'s shard, None for the coordinator or none known."""
        index = bisect_right(self.lows, shard_hash(user_id)) - 1
        return self.nodes[index] if index >= 0 else None


class WorkerPools:
    """A pool of connections to each worker holding shards, for the appends of its users.

    The map of shards is read from the coordinator at start and again every `every` seconds,
    so that a worker swapped in by a failover (`citus_update_node`) or shards moved by the
    rebalancer are followed within that time. A worker that cannot be reached (its connection
    refused or timed out before anything was sent) is left to the coordinator until a later
    reading finds it answering again: nothing is lost, and every append still goes through.
    """

    def __init__(self, coordinator: DriverPool, size: int, every: float = 1.0) -> None:
        self.coordinator = coordinator
        self.size = size
        self.every = every
        self.map = ShardMap()
        self.pools: dict[Node, DriverPool] = {}
        self.unreachable: set[Node] = set()

    async def follow(self) -> None:
        """Read the map again every `every` seconds, for as long as the app runs."""
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.refresh()
            except Exception as error:  # the coordinator down: the map stays as it was
                logger.warning("could not read where Citus's shards are: %s", type(error).__name__)

    async def refresh(self) -> None:
        async with self.coordinator.connection() as connection:
            shards = ShardMap.of(await connection.fetch(_PLACEMENTS))
        nodes = {node for node in shards.nodes if node is not None}
        for node in nodes - self.pools.keys():
            at = self.coordinator.connector.at(*node)
            self.pools[node] = await DriverPool.open(at, size=self.size, min_size=0)
        for node in self.pools.keys() - nodes:
            await self.pools.pop(node).close()
        self.unreachable &= nodes
        for node in list(self.unreachable):
            try:
                async with self.pools[node].connection():
                    self.unreachable.discard(node)
            except _REFUSED:
                pass
        self.map = shards

    @asynccontextmanager
    async def connection(self, user_id: str) -> AsyncIterator[asyncpg.Connection]:
        """A connection to the worker holding `user_id`'s shard; the coordinator's when that
        worker is not known, or cannot be reached now (then before anything was sent)."""
        node = self.map.node_of(user_id)
        async with AsyncExitStack() as stack:
            connection = None
            if node in self.pools and node not in self.unreachable:
                try:
                    connection = await stack.enter_async_context(self.pools[node].connection())
                except _REFUSED:
                    logger.warning("worker %s:%s unreachable: appends go by the coordinator", *node)
                    self.unreachable.add(node)
            if connection is None:
                connection = await stack.enter_async_context(self.coordinator.connection())
            yield connection

    async def close(self) -> None:
        for pool in self.pools.values():
            await pool.close()
        self.pools.clear()
