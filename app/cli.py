"""The `sessionary` command: serve, migrate, keys, sweep, erase-user, export, export-user,
import, import-adk, openapi, mcp."""

import argparse
import asyncio
import contextlib
import json
import logging
import logging.config
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from alembic.util import CommandError
from fastapi import FastAPI
from sqlalchemy.exc import SQLAlchemyError

from app import db, sharding, workers
from app.api import render
from app.config import Settings
from app.domain import ApiKey, MemoryLine, SessionHeader, SharedState
from app.embedded import EmbeddedPostgres, EmbeddedPostgresError, running_url
from app.errors import (
    DatabaseUnavailable,
    ErasureNotFound,
    NotFound,
    SchemaBehind,
    SessionaryError,
)
from app.observability import log_config
from app.protocol import capped_protocol
from app.repositories.erasures import ErasureScope
from app.rules import portability as portability_format
from app.services.artifacts import ArtifactService
from app.services.audit import AuditLog
from app.services.auth import AuthService, GrantCache
from app.services.contents import Contents
from app.services.erasures import ErasureService
from app.services.live import listening_connector
from app.services.portability import ImportReport, PortabilityService
from app.services.retention import RetentionService

T = TypeVar("T")
logger = logging.getLogger("sessionary")
OPENAPI_PATH = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"
# What a command fails on that is not a bug (a database down or behind, a missing file, a data
# folder in use): `main` says it in one line, with no traceback.
KNOWN_FAILURES = (SessionaryError, EmbeddedPostgresError, OSError, CommandError)


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def serve(args: argparse.Namespace) -> None:
    settings = Settings()
    try:
        workers.require_free_port(args.host, args.port)
    except workers.PortInUse as error:
        sys.exit(
            f"sessionary serve: {error}; stop it or choose another --port "
            "(a second server on the same port would take half of the first one's connections)."
        )
    # Uvicorn (or the worker supervisor) drains in-flight requests on SIGTERM/SIGINT, then
    # hands the signal to the handler that was there before it: this one, so that `finally`
    # blocks stop the embedded PostgreSQL and the process exits 0. Set before that PostgreSQL
    # starts: a signal while it migrates must stop it too, not leave it orphaned.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_cleanly)
    if settings.database_url is not None:
        connector = db.connector(str(settings.database_url), settings)
        try:
            listening_connector(connector, settings)
        except ValueError as error:
            sys.exit(f"sessionary serve: {error}")
        _require_head(connector)
        _serve(args, settings)
        return
    embedded = EmbeddedPostgres(settings.data_dir)
    dsn = embedded.start()
    # Whatever ends this process from here (a failed migration, a worker that cannot start, a
    # signal), the PostgreSQL it started stops with it and the folder is free again.
    try:
        print(f"sessionary: embedded PostgreSQL in {embedded.pgdata} at {dsn}", file=sys.stderr)
        _upgrade(dsn, db.connector(dsn, settings))
        # Workers are separate processes: they find the database where they find every setting.
        os.environ["DATABASE_URL"] = dsn
        # The embedded database is for development: no keys unless asked for explicitly.
        os.environ.setdefault("SESSIONARY_AUTH", "false")
        _serve(args, settings)
    finally:
        embedded.stop()


def _serve(args: argparse.Namespace, settings: Settings) -> None:
    """Uvicorn, in this process or in `--workers` processes, until a signal ends it."""
    if args.host in LOOPBACK:
        # Only this machine can reach it: it answers for its own names, and a page of another
        # site whose name was made to resolve here (DNS rebinding) gets a 400.
        os.environ.setdefault("SESSIONARY_ALLOWED_HOSTS", ",".join(LOOPBACK_NAMES))
    # Workers count metrics in files here, so a scrape of any worker sees them all.
    metrics_dir = None
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        metrics_dir = tempfile.mkdtemp(prefix="sessionary-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    options = {
        "app": "app.main:create_app",
        "factory": True,
        "host": args.host,
        "port": args.port,
        "http": capped_protocol(settings.max_header_line_bytes, settings.max_header_bytes),
        "timeout_graceful_shutdown": settings.shutdown_timeout,
        "timeout_keep_alive": settings.keep_alive_timeout,
        "log_config": log_config(settings.log_level.upper()),
        "access_log": False,  # ours, in JSON with the request id, replaces uvicorn's
    }
    host = f"[{args.host}]" if ":" in args.host else args.host
    # Said once, in the JSON every other line of the server is written in.
    logging.config.dictConfig(options["log_config"])
    logger.info("serving on http://%s:%d (explorer: /ui)", host, args.port)
    try:
        if args.workers > 1:
            workers.supervise(options, args.workers)
        else:
            workers.serve_one(options)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _revision(connector: db.Connector) -> str | None:
    """The schema's revision, read before a command does anything: a database that cannot be
    used fails here, named, rather than halfway through (a server: in every worker)."""
    try:
        return asyncio.run(db.current_revision(connector))
    except db.DRIVER_ERRORS as error:
        raise DatabaseUnavailable(
            f"cannot use the database at {connector.where()}: {str(error) or type(error).__name__}"
            "; check that it is up and that DATABASE_URL points at it."
        ) from error


def _require_head(connector: db.Connector) -> None:
    current, head = _revision(connector), db.head_revision()
    if current != head:
        raise SchemaBehind(current, head, newer=db.is_newer(current))


def _upgrade(url: str, connector: db.Connector) -> tuple[str | None, list[str]]:
    """Migrate `url` (`connector`'s, as given: its options reach the migrations' connections
    too) to head: the revision it was at, and the tables it distributed on Citus. A
    schema that a later release migrated is refused, as Alembic cannot go on from a revision
    it has no script for."""
    current = _revision(connector)
    if db.is_newer(current):
        raise SchemaBehind(current, db.head_revision(), newer=True)
    return current, db.upgrade(url)


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def migrate(args: argparse.Namespace) -> None:
    url = _database_url("migrate")
    connector, head = db.connector(url, Settings()), db.head_revision()
    current, distributed = _upgrade(url, connector)  # at head, it still shards what Citus has not
    if current == head:
        print(f"{connector.where()} is already at revision {head}")
    else:
        print(
            f"migrated {connector.where()} from {current or 'an empty schema'} to revision {head}"
        )
    if distributed:
        print(f"distributed on Citus by {sharding.SHARD_KEY}: {', '.join(distributed)}")


def _database_url(command: str) -> str:
    """DATABASE_URL, else the embedded PostgreSQL of a server running here (`make run`'s):
    its port is picked at random, and no one should have to copy it."""
    settings = Settings()
    if settings.database_url is not None:
        return str(settings.database_url)
    url = running_url(settings.data_dir)
    if url is None:
        sys.exit(
            f"sessionary {command}: set DATABASE_URL to the PostgreSQL to use, or start "
            f"`sessionary serve` (`make run`) to use its embedded one ({settings.data_dir})."
        )
    print(
        f"sessionary: using the embedded PostgreSQL of the server running here, {url}",
        file=sys.stderr,
    )
    return url


def _connector(command: str) -> db.Connector:
    """The command's database, with its schema at the head this code needs."""
    connector = db.connector(_database_url(command), Settings())
    _require_head(connector)
    return connector


def keys(args: argparse.Namespace) -> None:
    asyncio.run(_keys(args, _connector("keys")))


async def _keys(args: argparse.Namespace, connector: db.Connector) -> None:
    pool = await db.DriverPool.open(connector, size=1)
    try:
        service = AuthService(pool, GrantCache(0), AuditLog(pool, Settings()))
        if args.action == "create":
            if args.admin == (args.app is not None):
                sys.exit("sessionary keys create: give exactly one of --app APP or --admin.")
            app_state_write = args.app_state == "write"
            if app_state_write and args.read_only:
                sys.exit("sessionary keys create: a --read-only key cannot --app-state write.")
            row, key = await service.create(
                args.name, args.app, args.user, args.read_only, app_state_write
            )
            print(key)
            print(f"id {row.id}: {_scope(row)}. Shown once: store it now.", file=sys.stderr)
        elif args.action == "list":
            print(f"{'ID':<14}{'CREATED':<22}{'STATUS':<10}SCOPE")
            for row in await service.list():
                status = "revoked" if row.revoke_time else "active"
                created = f"{row.create_time:%Y-%m-%d %H:%M:%S}"
                print(f"{row.id:<14}{created:<22}{status:<10}{_scope(row)}")
        else:
            try:
                await service.revoke(args.key_id)
            except NotFound as error:
                sys.exit(f"sessionary keys revoke: {error.detail}")
            print(f"revoked {args.key_id}", file=sys.stderr)
    finally:
        await pool.close()


def sweep(args: argparse.Namespace) -> None:
    asyncio.run(_sweep(_connector("sweep")))


async def _sweep(connector: db.Connector) -> None:
    pool = await db.DriverPool.open(connector, size=1)
    try:
        settings = Settings()
        contents = Contents(pool, settings)
        swept = await RetentionService(pool, settings, contents, AuditLog(pool, settings)).sweep()
        await contents.close()
    finally:
        await pool.close()
    if swept is None:
        print("another sweeper is at work (a server's); it deletes the expired sessions")
    else:
        print(f"swept {swept} expired sessions")


def erase(args: argparse.Namespace) -> None:
    """`erase-user`, and `erase-app` (whose `args.user` is None)."""
    scope = ErasureScope(args.app, args.user)
    asyncio.run(_erase(scope, _connector(f"erase-{scope.name}")))


async def _erase(scope: ErasureScope, connector: db.Connector) -> None:
    pool = await db.DriverPool.open(connector, size=2)
    try:
        settings = Settings()
        contents = Contents(pool, settings)
        service = ErasureService(pool, settings, contents, AuditLog(pool, settings))
        progress = Progress()
        erasing = asyncio.create_task(service.erase(scope, wait=None))
        while not erasing.done():
            await asyncio.wait([erasing], timeout=1)
            with contextlib.suppress(ErasureNotFound):
                shown = await service.status(scope)
                progress.show(_removed(shown.erasure.removed))
        done = erasing.result()
        await contents.close()
    finally:
        await pool.close()
    erased = f"app {scope.app_name!r}"
    if scope.user_id is not None:
        erased = f"user {scope.user_id!r} of {erased}"
    progress.done(f"erased {erased}: {_removed(done.erasure.removed)}")


def _removed(removed: dict[str, int]) -> str:
    return (
        ", ".join(f"{count:,} {kind}" for kind, count in sorted(removed.items()) if count)
        or "nothing"
    )


def export(args: argparse.Namespace) -> None:
    asyncio.run(_export(args, _connector("export")))


def export_user(args: argparse.Namespace) -> None:
    asyncio.run(_export(args, _connector("export-user")))


async def _export(args: argparse.Namespace, connector: db.Connector) -> None:
    progress = Progress()
    sessions = events = shared = memories = 0
    async with _portability(connector) as service:
        with _output(args.output) as out:
            if args.run is export_user:
                items = service.export_user(args.app, args.user)
            else:
                items = service.export_all(args.app, args.user)
            async for item in items:
                out.write(render.export_line(item))
                if isinstance(item, bytes):
                    events += 1
                elif isinstance(item, SessionHeader):
                    sessions += 1
                elif isinstance(item, SharedState):
                    shared += 1
                elif isinstance(item, MemoryLine):
                    memories += 1
                progress.show(f"{sessions:,} sessions, {events:,} events")
    progress.done(
        f"exported {sessions:,} sessions, {events:,} events, {shared:,} app or user states "
        f"and {memories:,} memories"
    )


def import_(args: argparse.Namespace) -> None:
    report = asyncio.run(_import(args, _connector("import")))
    if report.refused:
        sys.exit(1)


async def _import(args: argparse.Namespace, connector: db.Connector) -> ImportReport:
    progress = Progress()

    def tell(report: ImportReport) -> None:
        done = report.created + report.unchanged
        progress.show(f"{done:,} sessions, {report.events:,} events")

    with _input(args.file) as source:
        chunks = iter(lambda: source.read(1 << 16), b"")
        async with _portability(connector) as service:
            report = await service.import_all(_async(portability_format.numbered(chunks)), tell)
    _summarise(progress, report)
    return report


def import_adk(args: argparse.Namespace) -> None:
    if args.source.partition("://")[0].split("+")[0] not in ("postgres", "postgresql"):
        sys.exit(
            "sessionary import-adk: only a PostgreSQL source is read (postgresql://…, a "
            f"google-adk DatabaseSessionService database), not {db.redacted(args.source)}; "
            "ADK's SQLite stores (`adk web`'s .adk/session.db) cannot be imported."
        )
    report = asyncio.run(_import_adk(args, _connector("import-adk")))
    if report.refused:
        sys.exit(1)


async def _import_adk(args: argparse.Namespace, connector: db.Connector) -> ImportReport:
    try:  # ADK is read by ADK itself, through the client's adapter: its one dependant here
        from sessionary_client.adk import read_adk_database
    except ImportError:
        sys.exit(
            "sessionary import-adk: needs google-adk: "
            "pip install './clients/python[adk]' (from a checkout)"
        )
    progress = Progress()

    def tell(report: ImportReport) -> None:
        done = report.created + report.unchanged + len(report.refused)
        progress.show(f"{done:,} sessions, {report.events:,} events")

    async with _portability(connector) as service:
        try:
            report = await service.import_records(read_adk_database(args.source), tell)
        except (ValueError, OSError, SQLAlchemyError) as error:
            sys.exit(f"sessionary import-adk: cannot read {db.redacted(args.source)}: {error}")
    _summarise(progress, report)
    return report


def _summarise(progress: "Progress", report: ImportReport) -> None:
    progress.done(
        f"imported {report.created:,} sessions ({report.events:,} events), "
        f"{report.unchanged:,} already there, {report.shared_states:,} app or user states, "
        f"{report.memories:,} memories, {report.artifact_versions:,} user artifact versions; "
        f"{len(report.refused):,} refused"
    )
    for refusal in report.refused:
        print(f"  {refusal}", file=sys.stderr)


@contextlib.asynccontextmanager
async def _portability(connector: db.Connector) -> AsyncIterator[PortabilityService]:
    pool = await db.DriverPool.open(connector, size=1)
    try:
        settings = Settings()
        contents = Contents(pool, settings)
        try:
            # No stream listens to a command: nothing to tell of what it saves.
            artifacts = ArtifactService(pool, settings, contents, lambda change: None)
            yield PortabilityService(pool, settings, artifacts, AuditLog(pool, settings))
        finally:
            await contents.close()
    finally:
        await pool.close()


@contextlib.contextmanager
def _output(path: str) -> Iterator[BinaryIO]:
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
    else:
        with open(path, "wb") as file:
            yield file


@contextlib.contextmanager
def _input(path: str) -> Iterator[BinaryIO]:
    if path == "-":
        yield sys.stdin.buffer
    else:
        with open(path, "rb") as file:
            yield file


async def _async(items: Iterator[T]) -> AsyncIterator[T]:
    for item in items:
        yield item


class Progress:
    """A line on stderr rewritten at most ten times a second, when stderr is a terminal."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.shown = 0.0
        self.live = sys.stderr.isatty()

    def show(self, text: str) -> None:
        now = time.monotonic()
        if self.live and now - self.shown >= 0.1:
            elapsed = now - self.start
            print(f"\r{text} ({elapsed:.0f} s)", end="", file=sys.stderr, flush=True)
            self.shown = now

    def done(self, text: str) -> None:
        if self.live:
            print("\r\033[K", end="", file=sys.stderr)
        print(f"{text} in {time.monotonic() - self.start:.1f} s", file=sys.stderr)


def _scope(row: ApiKey) -> str:
    scope = "every app" if row.app_name is None else f"app {row.app_name!r}"
    if row.user_id is not None:
        scope += f", user {row.user_id!r}"
        if row.app_state_write:
            scope += ", writes app state"
    if row.read_only:
        scope += ", read-only"
    return scope + (f" ({row.name})" if row.name else "")


def openapi(args: argparse.Namespace) -> None:
    from app.main import create_app

    args.output.write_text(openapi_json(create_app(Settings())))
    print(f"wrote {args.output}", file=sys.stderr)


def openapi_json(app: FastAPI) -> str:
    """The spec exactly as committed in openapi/openapi.json."""
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"


def mcp(args: argparse.Namespace) -> None:
    try:  # the SDK is an extra, imported by this command alone: the service never loads it
        from app import mcp as mcp_server
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
            raise
        sys.exit("sessionary mcp: needs the MCP SDK: pip install '.[mcp]' (from a checkout)")
    url = args.url or os.environ.get("SESSIONARY_URL") or mcp_server.DEFAULT_URL
    key = args.api_key or os.environ.get("SESSIONARY_API_KEY") or None
    mcp_server.serve(url, key, args.transport, args.host, args.port, args.app, args.user)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sessionary", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND", dest="command")

    serve_parser = commands.add_parser(
        "serve", help="serve the API (an embedded PostgreSQL when DATABASE_URL is unset)"
    )
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=int, default=8000)
    serve_parser.add_argument("--workers", type=int, default=1)
    serve_parser.set_defaults(run=serve)

    migrate_parser = commands.add_parser("migrate", help="upgrade DATABASE_URL's schema to head")
    migrate_parser.set_defaults(run=migrate)

    keys_parser = commands.add_parser("keys", help="create, list and revoke API keys")
    key_actions = keys_parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create_parser = key_actions.add_parser("create", help="make a key and print it (once)")
    create_parser.add_argument("--app", help="the app the key is for")
    create_parser.add_argument("--admin", action="store_true", help="a key for every app")
    create_parser.add_argument("--user", help="restrict the key to one user id of the app")
    create_parser.add_argument("--read-only", action="store_true", help="GET requests only")
    create_parser.add_argument(
        "--app-state",
        choices=("read", "write"),
        default="read",
        help="with --user: whether the key may write app state (`app:` keys, which every user "
        "of the app sees); app-wide and admin keys always may",
    )
    create_parser.add_argument("--name", default="", help="a note saying who holds the key")
    key_actions.add_parser("list", help="every key, without secrets")
    revoke_parser = key_actions.add_parser("revoke", help="revoke a key by its id")
    revoke_parser.add_argument("key_id")
    keys_parser.set_defaults(run=keys)

    sweep_parser = commands.add_parser(
        "sweep", help="delete every expired session now (servers also do it, periodically)"
    )
    sweep_parser.set_defaults(run=sweep)

    erase_parser = commands.add_parser(
        "erase-user", help="erase everything of a user of an app (as DELETE /apps/…/users/…)"
    )
    erase_parser.add_argument("--app", required=True, help="the app")
    erase_parser.add_argument("--user", required=True, help="the user to erase")
    erase_parser.set_defaults(run=erase)

    erase_app_parser = commands.add_parser(
        "erase-app", help="erase everything of an app, every user's (as DELETE /apps/…)"
    )
    erase_app_parser.add_argument("--app", required=True, help="the app to erase")
    erase_app_parser.set_defaults(run=erase, user=None)

    export_parser = commands.add_parser(
        "export",
        help="write sessions as NDJSON, with app and user state, users' artifacts and memories",
    )
    export_parser.add_argument("--app", help="only this app's (default: every app's)")
    export_parser.add_argument("--user", help="only this user's (default: every user's)")
    export_parser.add_argument("--output", "-o", default="-", help="a file (default: stdout)")
    export_parser.set_defaults(run=export)

    export_user_parser = commands.add_parser(
        "export-user",
        help="write everything of a user of an app as NDJSON (as GET /apps/…/users/…:export)",
    )
    export_user_parser.add_argument("--app", required=True, help="the app")
    export_user_parser.add_argument("--user", required=True, help="the user")
    export_user_parser.add_argument("--output", "-o", default="-", help="a file (default: stdout)")
    export_user_parser.set_defaults(run=export_user)

    import_parser = commands.add_parser(
        "import",
        help="store what an export holds (`export` or `export-user`); what is stored already "
        "is skipped",
    )
    import_parser.add_argument("file", nargs="?", default="-", help="default: stdin")
    import_parser.set_defaults(run=import_)

    adk_parser = commands.add_parser(
        "import-adk",
        help="store every session of a google-adk DatabaseSessionService database; those "
        "stored already are skipped, so it may be run again to resume",
    )
    adk_parser.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="DSN",
        help="the ADK database's URL (postgresql://…; its SQLite stores are not read)",
    )
    adk_parser.set_defaults(run=import_adk)

    openapi_parser = commands.add_parser("openapi", help="write the OpenAPI spec")
    openapi_parser.add_argument("--output", type=Path, default=OPENAPI_PATH)
    openapi_parser.set_defaults(run=openapi)

    mcp_parser = commands.add_parser(
        "mcp", help="serve MCP tools over a running server's API: an agent's own history"
    )
    mcp_parser.add_argument(
        "--url", help="the API (default: SESSIONARY_URL, else http://127.0.0.1:8000)"
    )
    mcp_parser.add_argument("--api-key", help="its key (default: SESSIONARY_API_KEY)")
    mcp_parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (a host starts it; the default) or streamable HTTP at /mcp",
    )
    mcp_parser.add_argument("--host", default="127.0.0.1", help="for http (default: 127.0.0.1)")
    mcp_parser.add_argument("--port", type=int, default=8001, help="for http (default: 8001)")
    mcp_parser.add_argument("--app", help="the app the tools use: a model is not asked for it")
    mcp_parser.add_argument("--user", help="the user the tools use: a model is not asked for it")
    mcp_parser.set_defaults(run=mcp)

    args = parser.parse_args(argv)
    try:
        args.run(args)
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)  # Ctrl-C: what a shell reports, with no traceback
    except BrokenPipeError:
        # Whoever read the output left (`sessionary export | head`): end quietly, with the
        # status of a Unix tool that SIGPIPE ended. Python ignores SIGPIPE, so this is how a
        # write to a closed pipe shows; stdout goes to /dev/null, or Python's own flush of it
        # at exit would fail again, out loud.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + signal.SIGPIPE)
    except KNOWN_FAILURES as error:
        sys.exit(f"sessionary {args.command}: {error}")
