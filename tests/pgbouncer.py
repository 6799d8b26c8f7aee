"""Debian's PgBouncer for the tests (`bench.pgbouncer`): outside CI a machine without it skips
those tests, saying how to install it; in CI (`CI=true`, where `.ci/run` installs it) its
absence fails them."""

from collections.abc import Iterator
from contextlib import contextmanager

from bench import pgbouncer as bouncer
from tests.helpers import missing_tool


@contextmanager
def pgbouncer(target_dsn: str) -> Iterator[str]:
    """PgBouncer in transaction mode in front of `target_dsn`'s server (`bench.pgbouncer`):
    four server connections for the clients of two workers, `DISCARD ALL` after each
    transaction."""
    if not bouncer.available():
        missing_tool("pgbouncer", "pgbouncer")
    with bouncer.pgbouncer(target_dsn, pool_size=4, strict=True) as url:
        yield url
