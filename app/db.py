"""The database boundary: one connection type (asyncpg's), from one pool per worker, for every
unit of work; SQLAlchemy Core statements compiled once for it; the schema's migrations (the
only user of SQLAlchemy's engine)."""

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import asyncpg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import ClauseElement
from sqlalchemy import types as sa_types
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.compiler import SQLCompiler

from app import strict_json
from app.config import Settings
from app.errors import DatabaseUnavailable, InvalidInput, SessionaryError, VersionExhausted
from app.limits import MAX_VERSION
from app.models import VERSION_CONSTRAINT

logger = logging.getLogger("sessionary")

# The migration scripts: a wheel carries them inside the package, as app/migrations
# (pyproject.toml maps the checkout's top-level migrations/ there), while an editable install
# runs them from the checkout, beside app/. Alembic is configured in code, not by alembic.ini:
# the ini stays at the checkout's top level for developers' `alembic` commands, where no wheel
# can ship it, and all the service needs of it is where the scripts are.
_PACKAGE = Path(__file__).resolve().parent
MIGRATIONS = (
    _PACKAGE / "migrations"
    if (_PACKAGE / "migrations").is_dir()
    else _PACKAGE.parent / "migrations"
)

# What "the database cannot be reached right now" looks like, as opposed to a bad request.
DISCONNECTED = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.OperatorInterventionError,
    # No host of a multi-host URL takes writes (`target_session_attrs=read-write`): during a
    # failover, before the standby is promoted.
    asyncpg.exceptions.TargetServerAttributeNotMatched,
    # A connection whose server process was ended (`pg_terminate_backend`, a restart) gets the
    # server's last error while idle, before its socket closes: asyncpg is then waiting for a
    # ReadyForQuery that never comes, and the next statement on it fails so ("cannot switch to
    # state 12; another operation is in progress") before anything is sent.
    asyncpg.InternalClientError,
)
# Every error the driver raises: what `translated` looks at.
DRIVER_ERRORS = (asyncpg.PostgresError, *DISCONNECTED)
# SQLSTATE classes of a server that cannot serve now, whatever the request: 08 connection
# exception, 53 insufficient resources (too many connections, out of memory or disk), 57
# operator intervention (starting up, shutting down, restarted, query canceled).
UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")
# SQLSTATE class 22, data exception: a value PostgreSQL cannot store. Input is checked before
# it reaches PostgreSQL, so one that still fails there is the request's fault, not a 500.
DATA_EXCEPTION = "22"


def sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of a driver error, if it has one."""
    code = getattr(error, "sqlstate", None)
    return code if isinstance(code, str) else None


# On Citus a unique violation comes from a shard: its constraint carries the shard's number
# ("uq_events_…_102019"). Run on the shard's own node, the driver names it so; through the
# coordinator the driver's `constraint_name` is empty, and a write Citus ran in steps reports it
# as an internal error (XX000) with the worker's message.
_SHARD_NUMBER = re.compile(r"_\d+$")  # no constraint of the schema ends in digits


def _violated(
    error: BaseException, kind: type[asyncpg.PostgresError], code: str, message: str
) -> str | None:
    """The schema's name of the constraint of `kind` (SQLSTATE `code`) a write violated; None
    for other errors. On Citus the error may come from a worker as a generic XX000 that names
    the constraint only in its message (`message`, a pattern), and a shard's constraint name
    ends in the shard's number."""
    if isinstance(error, kind) and getattr(error, "constraint_name", None):
        name = str(error.constraint_name)
    elif sqlstate(error) in (code, "XX000") and (match := re.search(message, str(error))):
        name = match[1]
    else:
        return None
    return _SHARD_NUMBER.sub("", name)


def violated_unique(error: BaseException) -> str | None:
    return _violated(
        error,
        asyncpg.UniqueViolationError,
        "23505",
        r'^duplicate key value violates unique constraint "(.+?)"',
    )


def violated_check(error: BaseException) -> str | None:
    return _violated(
        error, asyncpg.CheckViolationError, "23514", r'violates check constraint "(.+?)"'
    )


def is_unavailable(error: BaseException) -> bool:
    """The database cannot serve right now (a 503 worth retrying), not a fault of the request."""
    code = sqlstate(error)
    return isinstance(error, DISCONNECTED) or (
        code is not None and code.startswith(UNAVAILABLE_SQLSTATE_CLASSES)
    )


def refused_value(error: BaseException) -> bool:
    """PostgreSQL cannot store a value of the request (SQLSTATE class 22)."""
    code = sqlstate(error)
    return code is not None and code.startswith(DATA_EXCEPTION)


def translated(error: BaseException) -> SessionaryError | None:
    """Sessionary's own error for a driver's where the database, not the code, is why: a
    write past the last version (409: the check of migration 0021, whichever statement took
    the version), a value it cannot store (422), a database that cannot serve now (503); None
    for the rest (a bug, for the 500 handler). Logged by kind and SQLSTATE only: PostgreSQL's
    messages may quote the values refused."""
    code = sqlstate(error)
    if violated_check(error) == VERSION_CONSTRAINT:
        return VersionExhausted(MAX_VERSION)
    if refused_value(error):
        logger.warning("database refused a value (SQLSTATE %s)", code)
        return InvalidInput("PostgreSQL cannot store a value of this request.")
    if is_unavailable(error):
        logger.warning("database unavailable: %s (SQLSTATE %s)", type(error).__name__, code)
        return DatabaseUnavailable("The database cannot be reached; retry shortly.")
    return None


# Each connection's session (`Connector`), in one round trip.
_NO_JIT = "SET jit = off"
_NO_JIT_CUSTOM_PLANS_ON_CITUS = """
SET jit = off;
SELECT set_config('plan_cache_mode', 'force_custom_plan', false)
FROM pg_extension WHERE extname = 'citus'
"""


@dataclass(frozen=True)
class Connector:
    """How to open a connection to one PostgreSQL; every connection, the engine's too, is
    opened here, by asyncpg from the DSN as given, so whatever libpq-style URL asyncpg takes
    works: several hosts with `target_session_attrs=read-write` for failover, `sslmode`, ….

    Behind a transaction pooler (PgBouncer with `pool_mode = transaction`), consecutive
    transactions of one client connection run on different server connections, so a prepared
    statement must not outlive its own exchange: `transaction_pooling` turns asyncpg's
    statement cache off (each statement is parsed, bound and run in one round trip, unnamed)
    and so SQLAlchemy's. It costs a parse per statement; straight to PostgreSQL, leave it off.

    Each connection turns PostgreSQL's JIT compilation off for its session: planned for
    analytics, it compiled every statement over a long session's events (a fork's copy of
    10,000 events: 300 ms with it, 140 ms without; bench/README.md). With
    `custom_plans_on_citus`, on Citus it also plans every statement for its own values
    (`plan_cache_mode = force_custom_plan`): Citus 13.2.2 plans a prepared statement run
    again on a node that holds its shard anew each time and keeps every plan, so such a
    connection's memory grew by ~230 kB an append (SCALING.md). Not behind a transaction
    pooler, where a session's settings do not follow the client: there they belong to the
    database role (`ALTER ROLE … SET jit = off`).
    """

    dsn: str
    transaction_pooling: bool = False
    connect_timeout: float = 5.0
    command_timeout: float = 30.0
    custom_plans_on_citus: bool = True

    @classmethod
    def of(cls, url: str, **options: Any) -> "Connector":
        """Accept any PostgreSQL URL (postgres://, postgresql+asyncpg://, …) as asyncpg's DSN.
        `statement_cache_size=0` in it, asyncpg's own switch for PgBouncer, turns
        `transaction_pooling` on."""
        scheme, colon, rest = url.partition("://")
        if not colon or scheme.split("+")[0] not in ("postgres", "postgresql"):
            raise ValueError(f"Sessionary needs a postgresql:// URL, got {scheme!r}")
        base, _, query = rest.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)
        cache = [value for name, value in pairs if name == "statement_cache_size"]
        if cache:
            if cache != ["0"]:
                raise ValueError("statement_cache_size may only be 0 (for a transaction pooler)")
            options["transaction_pooling"] = True
            query = urlencode([pair for pair in pairs if pair[0] != "statement_cache_size"])
        return cls(f"postgresql://{base}" + (f"?{query}" if query else ""), **options)

    async def connect(self, **server_settings: str) -> asyncpg.Connection:
        connection = await asyncpg.connect(
            self.dsn,
            timeout=self.connect_timeout,
            command_timeout=self.command_timeout,
            statement_cache_size=0 if self.transaction_pooling else 100,
            server_settings=server_settings or None,
        )
        if not self.transaction_pooling:
            # SETs, not startup parameters: poolers in session mode refuse unknown ones.
            try:
                await connection.execute(
                    _NO_JIT_CUSTOM_PLANS_ON_CITUS if self.custom_plans_on_citus else _NO_JIT
                )
            except BaseException:
                connection.terminate()
                raise
        return connection

    def at(self, host: str, port: int) -> "Connector":
        """This connector's database, role and options on another server (a Citus worker)."""
        scheme, _, rest = self.dsn.partition("://")
        server, slash, database = rest.partition("/")
        role, at, _ = server.rpartition("@")
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        return replace(self, dsn=f"{scheme}://{role}{at}{host}:{port}{slash}{database}")

    def where(self) -> str:
        return redacted(self.dsn)


def redacted(dsn: str) -> str:
    """A DSN without its password, for messages."""
    return re.sub(r":[^:@/]*@", ":***@", dsn, count=1)


def connector(url: str, settings: Settings) -> Connector:
    """The connector to `url` with the settings' pooling mode and timeouts."""
    return Connector.of(
        url,
        transaction_pooling=settings.db_transaction_pooling,
        connect_timeout=settings.db_connect_timeout,
        command_timeout=settings.db_command_timeout,
        custom_plans_on_citus=settings.citus_custom_plans,
    )


async def _decode_json(connection: asyncpg.Connection) -> None:
    """JSON parameters go in as JSON text, JSON results come out decoded: as on the engine's
    connections, so a repository reads the same values on either."""
    for json_type in ("json", "jsonb"):
        await connection.set_type_codec(
            json_type, schema="pg_catalog", encoder=str, decoder=json.loads, format="text"
        )


async def _keep_session(connection: asyncpg.Connection) -> None:
    """Nothing to reset on release: no request sets session state (no SET, LISTEN, advisory
    lock or cursor), and asyncpg rolls back any open transaction itself. Its default reset
    would add a round trip to every request."""


class DriverPool:
    """Every unit of work's connection: asyncpg's own pool, without SQLAlchemy's around it
    (its checkout, greenlet hand-offs and connection wrapper cost an append a good part of
    its CPU: bench/README.md). The pool keeps at most `size` connections and never opens one
    per request: past `size`, a request waits for a connection, up to `acquire_timeout`
    (then 503). A broken connection is closed on release and replaced.
    """

    def __init__(self, pool: asyncpg.Pool, connector: Connector) -> None:
        self._pool = pool
        self.connector = connector
        self.acquire_timeout = connector.connect_timeout

    @classmethod
    async def open(cls, connector: Connector, *, size: int, min_size: int = 1) -> "DriverPool":
        pool = await asyncpg.create_pool(
            min_size=min_size,
            max_size=size,
            connect=lambda *_, **__: connector.connect(),
            init=_decode_json,
            reset=_keep_session,
        )
        return cls(pool, connector)

    def connection(self) -> "_Acquired":
        """A connection of the pool for the block; a driver error raised in it that is the
        database's doing comes out as Sessionary's own (`translated`), so that nothing above
        this module handles a driver's errors."""
        return _Acquired(self._pool.acquire(timeout=self.acquire_timeout))

    @asynccontextmanager
    async def transaction(self, **options: Any) -> AsyncIterator[asyncpg.Connection]:
        """A connection in a transaction (asyncpg's `options`: isolation, readonly), committed
        when the block ends, rolled back when it raises: a unit of work."""
        async with self.connection() as connection, connection.transaction(**options):
            yield connection

    def idle_count(self) -> int:
        return int(self._pool.get_idle_size())

    def in_use_count(self) -> int:
        return int(self._pool.get_size() - self._pool.get_idle_size())

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self._pool.close(), self.acquire_timeout)
        except TimeoutError:
            self._pool.terminate()


class _Acquired:
    """asyncpg's acquisition of a pooled connection, its driver errors translated; a class
    rather than a generator, as every request takes one."""

    __slots__ = ("_acquisition", "_connection")

    def __init__(self, acquisition: Any) -> None:
        self._acquisition = acquisition

    async def __aenter__(self) -> asyncpg.Connection:
        try:
            self._connection: asyncpg.Connection = await self._acquisition.__aenter__()
        except DRIVER_ERRORS as error:
            _raise_translated(error)
            raise
        return self._connection

    async def __aexit__(self, kind: Any, error: BaseException | None, trace: Any) -> None:
        if isinstance(error, asyncpg.InternalClientError):
            # Its protocol is stuck mid-exchange: closed, so that the pool opens a new one
            # rather than handing this one to the next request.
            self._connection.terminate()
        try:
            await self._acquisition.__aexit__(kind, error, trace)
        except DRIVER_ERRORS as released:  # the connection broke as it was given back
            _raise_translated(released)
            raise
        if isinstance(error, DRIVER_ERRORS):
            _raise_translated(error)  # else the driver's own error goes on: a bug, a 500


def _raise_translated(error: BaseException) -> None:
    ours = translated(error)
    if ours is not None:
        raise ours from error


def migration_engine(connector: Connector) -> AsyncEngine:
    """SQLAlchemy's engine, for what runs on it: Alembic (the migrations, and comparing the
    models with them). One connection at a time, opened by `connector` and closed after use.
    `hide_parameters`: a logged database error must not carry state. Behind a transaction
    pooler, SQLAlchemy prepares each statement unnamed, uncached."""
    unprepared = {
        "prepared_statement_cache_size": 0,
        "prepared_statement_name_func": lambda: "",  # "": the unnamed statement
    }
    return create_async_engine(
        "postgresql+asyncpg://",
        async_creator=lambda: connector.connect(),
        connect_args=unprepared if connector.transaction_pooling else {},
        hide_parameters=True,
        poolclass=NullPool,
    )


@dataclass(frozen=True)
class DriverStatement:
    """SQL with named parameters, compiled once into asyncpg's positional `$n` form.

    Written in SQLAlchemy Core or as text. Constants are written into the SQL
    (`literal_column("1")`, not `.limit(1)`): a value Core would bind is refused here, as the
    call names every parameter, and a constant the planner can see plans better.
    """

    sql: str
    names: tuple[str, ...]

    @classmethod
    def compile(cls, statement: ClauseElement) -> "DriverStatement":
        compiled = statement.compile(dialect=_DIALECT)
        assert isinstance(compiled, SQLCompiler)
        bound = sorted(name for bind, name in compiled.bind_names.items() if not bind.required)
        if bound:
            raise ValueError(f"write these constants into the SQL, not as parameters: {bound}")
        return cls(compiled.string, tuple(compiled.positiontup or ()))

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        return [values[name] for name in self.names]


_DIALECT = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
# Each shape of statement compiled once, as SQLAlchemy's own engine caches it: by the cache
# key SQLAlchemy derives from the statement's structure, its values left out. Shapes are
# finite (the repositories' statements and their optional filters); the bound is a guard.
_COMPILED: dict[Any, tuple[SQLCompiler, frozenset[str]]] = {}
_MAX_COMPILED = 2000


def _compiled(statement: ClauseElement) -> tuple[str, list[Any]]:
    """A Core statement built for this call, compiled for asyncpg (from the cache when its
    shape was seen before): the SQL and its positional arguments, JSON values as JSON text
    (what the connections' codec takes)."""
    key = statement._generate_cache_key()
    cached = _COMPILED.get(key.key) if key is not None else None
    if cached is None:
        compiled = statement.compile(dialect=_DIALECT, cache_key=key)
        assert isinstance(compiled, SQLCompiler)
        json = frozenset(
            name for name, bind in compiled.binds.items() if isinstance(bind.type, sa_types.JSON)
        )
        cached = compiled, json
        if key is not None and len(_COMPILED) < _MAX_COMPILED:
            _COMPILED[key.key] = cached
    compiled, json = cached
    values = compiled.construct_params(
        extracted_parameters=key.bindparams if key is not None else None, escape_names=False
    )
    arguments = []
    for name in compiled.positiontup or ():
        value = values[name]
        if name in json:
            value = strict_json.dumps(value).decode()
        arguments.append(value)
    return compiled.string, arguments


async def fetch(connection: asyncpg.Connection, statement: ClauseElement) -> list[asyncpg.Record]:
    """The rows of a Core statement, run on the unit of work's connection."""
    sql, arguments = _compiled(statement)
    return await connection.fetch(sql, *arguments)  # type: ignore[no-any-return]


async def fetchrow(
    connection: asyncpg.Connection, statement: ClauseElement
) -> asyncpg.Record | None:
    """The first row of a Core statement, or None."""
    sql, arguments = _compiled(statement)
    return await connection.fetchrow(sql, *arguments)


async def fetchval(connection: asyncpg.Connection, statement: ClauseElement) -> Any:
    """The first column of the first row of a Core statement, or None."""
    sql, arguments = _compiled(statement)
    return await connection.fetchval(sql, *arguments)


async def execute(connection: asyncpg.Connection, statement: ClauseElement) -> None:
    sql, arguments = _compiled(statement)
    await connection.execute(sql, *arguments)


def alembic_config(dsn: str | None = None) -> Config:
    """Alembic's configuration for the packaged scripts, on `dsn` (migrations/env.py reads it)."""
    config = Config()
    # A ConfigParser value: a `%` in the path would be taken for interpolation.
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.attributes["database_url"] = dsn
    return config


def upgrade(dsn: str, revision: str = "head") -> list[str]:
    """Run Alembic migrations, then shard on Citus what is not yet (`app.sharding`); returns
    the tables it distributed. Blocking: call it outside the event loop."""
    config = alembic_config(dsn)
    config.attributes["shard"] = True
    command.upgrade(config, revision)
    distributed: list[str] = config.attributes.get("distributed", [])
    return distributed


def downgrade(dsn: str, revision: str) -> None:
    command.downgrade(alembic_config(dsn), revision)


@cache
def head_revision() -> str | None:
    """The migration head this code needs; read once, as the scripts ship with the code."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


@cache
def _revisions() -> frozenset[str]:
    return frozenset(
        script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()
    )


def is_newer(revision: str | None) -> bool:
    """Whether the schema is at a revision this code has no script for: a later release's."""
    return revision is not None and revision not in _revisions()


async def current_revision(connector: Connector) -> str | None:
    """The schema's Alembic revision (None for a database never migrated), on a connection of
    its own."""
    connection = await connector.connect()
    try:
        revision: str | None = await connection.fetchval("SELECT version_num FROM alembic_version")
    except asyncpg.UndefinedTableError:
        return None
    finally:
        await connection.close()
    return revision
