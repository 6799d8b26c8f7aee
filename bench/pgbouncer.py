"""A real PgBouncer (Debian's `pgbouncer`) in front of a PostgreSQL, on a free loopback port:
S13 measures the service through it, and the tests check its guarantees through it."""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

from bench.server import free_port


def available() -> bool:
    return bool(shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/sbin"))


@contextmanager
def pgbouncer(target_dsn: str, *, pool_size: int, strict: bool) -> Iterator[str]:
    """PgBouncer in transaction mode on a free loopback port, pooling every database of
    `target_dsn`'s server with `pool_size` server connections each; yields `target_dsn` with
    the host and port swapped for PgBouncer's.

    `strict` (the tests'): `DISCARD ALL` after every transaction
    (`server_reset_query_always`), so a statement that outlives its transaction is caught at
    once rather than by chance; PgBouncer's default otherwise, as deployed.
    """
    program = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/sbin")
    if program is None:
        raise FileNotFoundError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
    target = make_url(target_dsn)
    folder = Path(tempfile.mkdtemp(prefix="sessionary-pgbouncer-"))
    folder.chmod(0o755)
    port = free_port()
    (folder / "pgbouncer.ini").write_text(
        f"""[databases]
* = host={target.host} port={target.port or 5432} user={target.username}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 1000
server_reset_query = DISCARD ALL
server_reset_query_always = {int(strict)}
ignore_startup_parameters = extra_float_digits
"""
    )
    # PgBouncer refuses to run as root: then it runs as `nobody`.
    user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
    log = (folder / "pgbouncer.log").open("wb")
    process = subprocess.Popen(
        [program, str(folder / "pgbouncer.ini")],
        stdout=log,
        stderr=subprocess.STDOUT,
        user=None if user is None else user.pw_uid,
        group=None if user is None else user.pw_gid,
        extra_groups=None if user is None else [],
    )
    try:
        _wait_for_port(port, process, folder / "pgbouncer.log")
        yield target.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited at start:\n{log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"pgbouncer did not listen within 10 s:\n{log.read_text()[-2000:]}")
