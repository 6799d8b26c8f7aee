"""A real Citus cluster on this machine: a coordinator and workers, each a PostgreSQL 15
server with Citus preloaded, started from Debian's PostgreSQL (Citus loads into it, not into
the embedded wheel's server, another major version). S15 measures the service on one, and
the cluster suite runs the tests on one.

`make test-tools` (.ci/test-tools) unpacks that PostgreSQL into the venv and installs Citus
into it; SESSIONARY_CITUS_PG_BIN names another, such as one with Citus from its own packages.
Every database made here exists on every node with the extension created and the workers
registered, as an operator would set one up.
"""

import asyncio
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg

from app.embedded import EmbeddedPostgres

# Debian's PostgreSQL 15, as `make test-tools` unpacks it into the venv (or another one).
PG_BIN = Path(
    os.environ.get("SESSIONARY_CITUS_PG_BIN")
    or Path(__file__).resolve().parent.parent / ".venv/postgresql-15/usr/lib/postgresql/15/bin"
)
# A node's settings: Citus preloaded, the nodes reaching each other over loopback without
# TLS (under root, libpq would look for a client certificate in root's home, which `nobody`,
# the servers' user, may not read).
NODE_OPTIONS = {
    "shared_preload_libraries": "citus",
    "citus.node_conninfo": "sslmode=disable",
    "max_connections": "200",
}
# The tests': small and throwaway, as four servers share the machine with the tests.
TEST_OPTIONS = {
    **NODE_OPTIONS,
    "shared_buffers": "64MB",
    "fsync": "off",  # a crash loses nothing anyone keeps
    "citus.shard_count": "8",  # 32 by default: a test would spread 32 shards over 2 workers
    "wal_level": "logical",  # the rebalancer moves shards by logical replication
}


def citus_missing() -> str | None:
    """Why a cluster cannot start here (None when it can)."""
    pg_config = PG_BIN / "pg_config"
    if not pg_config.exists():
        return f"PostgreSQL 15 is not installed at {PG_BIN}"
    libdir = subprocess.run(
        [str(pg_config), "--pkglibdir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not (Path(libdir) / "citus.so").exists():
        return f"Citus is not installed into {libdir} (`make test-tools` installs it)"
    return None


def run(dsn: str, *statements: str) -> list[asyncpg.Record]:
    """Run statements on one connection; the last one's rows."""

    async def go() -> list[asyncpg.Record]:
        connection = await asyncpg.connect(dsn)
        try:
            rows: list[asyncpg.Record] = []
            for statement in statements:
                rows = await connection.fetch(statement)
            return rows
        finally:
            await connection.close()

    return asyncio.run(go())


class Cluster:
    """A coordinator and its workers, each on a free loopback port."""

    def __init__(self, folder: Path, options: dict[str, str]) -> None:
        self.folder = folder
        self.options = options
        self.coordinator = self._node("coordinator")
        self.workers: list[EmbeddedPostgres] = []
        self.databases: list[str] = []

    def _node(self, name: str) -> EmbeddedPostgres:
        node = EmbeddedPostgres(self.folder / name, bin_dir=PG_BIN, options=self.options)
        node.start()
        return node

    @property
    def nodes(self) -> list[EmbeddedPostgres]:
        return [self.coordinator, *self.workers]

    def add_worker(self) -> EmbeddedPostgres:
        """A new worker, with every database of the cluster made on it and registered in
        the coordinator's metadata (it holds no shards until they are moved to it)."""
        worker = self._node(f"worker{len(self.workers) + 1}")
        self.workers.append(worker)
        for name in self.databases:
            self._prepare(worker, name)
            run(self.coordinator.dsn(name), f"SELECT citus_add_node('127.0.0.1', {worker.port})")
        return worker

    def _prepare(self, node: EmbeddedPostgres, name: str) -> None:
        run(node.dsn(), f'CREATE DATABASE "{name}"')
        run(node.dsn(name), "CREATE EXTENSION citus")

    def create_database(self, *, sharded: bool = True) -> str:
        """A new database on every node, Citus in it; returns the coordinator's DSN of it.
        Not `sharded`, the coordinator's is a plain PostgreSQL database until `shard()`."""
        name = f"sessionary_test_{uuid.uuid4().hex[:12]}"
        run(self.coordinator.dsn(), f'CREATE DATABASE "{name}"')
        for worker in self.workers:
            self._prepare(worker, name)
        self.databases.append(name)
        if sharded:
            self.shard(name)
        return self.coordinator.dsn(name)

    def shard(self, name: str) -> None:
        """Make the coordinator's database a Citus coordinator of the workers, as an operator
        does to a database that outgrew one server."""
        run(
            self.coordinator.dsn(name),
            "CREATE EXTENSION citus",
            f"SELECT citus_set_coordinator_host('127.0.0.1', {self.coordinator.port})",
            *(f"SELECT citus_add_node('127.0.0.1', {w.port})" for w in self.workers),
        )

    def postmasters(self) -> dict[int, str]:
        """Each node's name by its postmaster's pid, for the CPU split per node."""
        names = ["coordinator", *(f"worker {n}" for n in range(1, len(self.workers) + 1))]
        return {
            int((node.pgdata / "postmaster.pid").read_text().split()[0]): name
            for node, name in zip(self.nodes, names, strict=True)
        }

    def drop_database(self, name: str) -> None:
        for node in self.nodes:
            run(node.dsn(), f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.databases.remove(name)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop("immediate")


@contextmanager
def citus_cluster(workers: int = 2, options: dict[str, str] = TEST_OPTIONS) -> Iterator[Cluster]:
    """A running cluster of a coordinator and `workers` workers, each node started with
    `options`, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="sessionary-citus-"))
    folder.chmod(0o755)  # under root the servers run as `nobody`, which must reach their data
    cluster: Cluster | None = None
    try:
        cluster = Cluster(folder, options)
        for _ in range(workers):
            cluster.add_worker()
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
