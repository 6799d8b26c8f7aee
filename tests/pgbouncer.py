"""Debian's PgBouncer for the tests (`bench.pgbouncer`): outside CI a machine without it skips
those tests, saying how to install it; in CI (`CI=true`, where `.ci/run` installs it) its
absence fails them."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench import pgbouncer as bouncer


@contextmanager
def pgbouncer(target_dsn: str) -> Iterator[str]:
    """PgBouncer in transaction mode in front of `target_dsn`'s server (`bench.pgbouncer`):
    four server connections for the clients of two workers, `DISCARD ALL` after each
    transaction."""
    if not bouncer.available():
        message = "pgbouncer is not installed (Debian: apt-get install pgbouncer)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with bouncer.pgbouncer(target_dsn, pool_size=4, strict=True) as url:
        yield url
