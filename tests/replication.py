"""Real PostgreSQL replication for the tests: a primary of their own and a streaming standby
made from it with `pg_basebackup`, both from the embedded PostgreSQL's binaries."""

import asyncio
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from app.embedded import EmbeddedPostgres
from bench.citus import run
from tests.helpers import session_url


class Standby(EmbeddedPostgres):
    """A server whose data folder starts as a base backup of `primary_port`'s, following it
    (`-R`: `standby.signal` and `primary_conninfo` written); `bin_dir` and `options` as the
    primary's, when it is not the embedded server (a Citus worker's)."""

    def __init__(
        self,
        data_dir: Path,
        primary_port: int,
        bin_dir: Path | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir, bin_dir, options)
        self.primary_port = primary_port

    def _init(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        self._new_pgdata()
        self._run(
            "pg_basebackup",
            *("-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres"),
            *("-D", str(self.pgdata), "-R", "-X", "stream", "--checkpoint=fast"),
        )

    def promote(self) -> None:
        """Make it the primary, as an HA manager would: it inherited the old primary's
        `synchronous_standby_names` with the base backup, and alone it must not wait for a
        standby it does not have (every commit would hang)."""
        self._run("pg_ctl", "promote", "-D", str(self.pgdata), "-w", "-t", "60")
        run(
            self.dsn(),
            "ALTER SYSTEM RESET synchronous_standby_names",
            "SELECT pg_reload_conf()",
        )


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="sessionary-replication-"))
    folder.chmod(0o755)  # under root the servers run as `nobody`, which must reach their data
    return folder


@contextmanager
def primary_and_standby(*, synchronous: bool = False) -> Iterator[tuple[EmbeddedPostgres, Standby]]:
    """Two servers on free loopback ports; with `synchronous`, a commit on the primary waits
    until the standby has it on disk (`synchronous_standby_names`)."""
    folder = _folder()
    primary = EmbeddedPostgres(folder / "primary")
    standby: Standby | None = None
    try:
        primary.start()
        assert primary.port is not None
        if synchronous:
            run(primary.dsn(), "ALTER SYSTEM SET synchronous_standby_names = '*'")
            run(primary.dsn(), "SELECT pg_reload_conf()")
        standby = Standby(folder / "standby", primary.port)
        standby.start()
        yield primary, standby
    finally:
        if standby is not None:
            standby.stop("immediate")
        primary.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def wait_caught_up(primary_dsn: str, standby_dsn: str, timeout: float = 30) -> None:
    """Until the standby has replayed everything the primary had written when this began."""
    (target,) = run(primary_dsn, "SELECT pg_current_wal_lsn()::text")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (caught_up,) = run(standby_dsn, f"SELECT pg_last_wal_replay_lsn() >= '{target[0]}'::pg_lsn")
        if caught_up[0]:
            return
        time.sleep(0.05)
    raise TimeoutError("the standby did not catch up")


WRITERS = 8


async def write_until(base_url: str, stop: asyncio.Event, acknowledged: set[str]) -> int:
    """Each writer appends events with ids of its own, resending one until it is stored (a
    resend of a stored event is answered 200), as a client does through a failover; any other
    answer must be a 503. Returns how many 503s there were."""
    refused = 0
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:

        async def writer(number: int) -> None:
            nonlocal refused
            for count in range(1_000_000):
                if stop.is_set():
                    return
                event = {"id": f"w{number}-{count}", "author": "user"}
                while True:
                    try:
                        response = await http.post(f"{session_url('s')}/events", json=event)
                    except httpx.TransportError:
                        response = None
                    if response is not None and response.status_code in (200, 201):
                        acknowledged.add(event["id"])
                        break
                    assert response is None or response.status_code == 503, response.text
                    refused += response is not None
                    await asyncio.sleep(0.05)

        await asyncio.gather(*(writer(number) for number in range(WRITERS)))
    return refused
