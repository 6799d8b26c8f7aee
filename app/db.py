"""The database handles (the request path's asyncpg pool, SQLAlchemy's engine for the rest),
the driver statements, and the schema's migration state."""

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import asyncpg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import ClauseElement, Connection
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.compiler import SQLCompiler

from app.config import Settings

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"

# What "the database cannot be reached right now" looks like, as opposed to a bad request:
# through SQLAlchemy, or straight from asyncpg on the driver path.
DISCONNECTED = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.OperatorInterventionError,
    # No host of a multi-host URL takes writes (`target_session_attrs=read-write`): during a
    # failover, before the standby is promoted.
    asyncpg.exceptions.TargetServerAttributeNotMatched,
)
UNAVAILABLE = (
    *DISCONNECTED,
    sa_exc.TimeoutError,
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
)
# SQLSTATE classes of a server that cannot serve now, whatever the request: 08 connection
# exception, 53 insufficient resources (too many connections, out of memory or disk), 57
# operator intervention (starting up, shutting down, restarted, query canceled). SQLAlchemy
# wraps some of them, 57P03 "starting up / shutting down" among them, in a plain DBAPIError.
UNAVAILABLE_SQLSTATE_CLASSES = ("08", "53", "57")


def sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of a driver error, whether asyncpg's own or wrapped by SQLAlchemy."""
    code = getattr(error, "sqlstate", None) or getattr(
        getattr(error, "orig", None), "sqlstate", None
    )
    return code if isinstance(code, str) else None


def is_unavailable(error: BaseException) -> bool:
    """The database cannot serve right now (a 503 worth retrying), not a fault of the request."""
    if isinstance(error, UNAVAILABLE) or getattr(error, "connection_invalidated", False):
        return True
    code = sqlstate(error)
    return code is not None and code.startswith(UNAVAILABLE_SQLSTATE_CLASSES)


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
    """

    dsn: str
    transaction_pooling: bool = False
    connect_timeout: float = 5.0
    command_timeout: float = 30.0

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
        return await asyncpg.connect(
            self.dsn,
            timeout=self.connect_timeout,
            command_timeout=self.command_timeout,
            statement_cache_size=0 if self.transaction_pooling else 100,
            server_settings=server_settings or None,
        )

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
    """The request path's connections: asyncpg's own pool, without SQLAlchemy's around it.

    SQLAlchemy's checkout, greenlet hand-offs and connection wrapper were ~200 µs of an
    append's ~1,300 µs of CPU (bench/README.md). The pool keeps at most `size` connections
    and never opens one per request: past `size`, a request waits for a connection, up to
    `acquire_timeout` (then 503). A broken connection is closed on release and replaced.
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

    def connection(self) -> AbstractAsyncContextManager[asyncpg.Connection]:
        return self._pool.acquire(timeout=self.acquire_timeout)  # type: ignore[no-any-return]

    def idle_count(self) -> int:
        return int(self._pool.get_idle_size())

    def in_use_count(self) -> int:
        return int(self._pool.get_size() - self._pool.get_idle_size())

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self._pool.close(), self.acquire_timeout)
        except TimeoutError:
            self._pool.terminate()


def engine_pool_size(request_path_pool_size: int) -> int:
    """The engine serves the routes off the request path (create, list, delete, shared state,
    key checks): a quarter of the request path's connections, at least one."""
    return max(1, request_path_pool_size // 4)


def create_engine(
    connector: Connector, *, pool_size: int = 10, max_overflow: int = 10
) -> AsyncEngine:
    """Every wait is bounded: a database that is down or stuck is a 503, never a hang.

    `hide_parameters`: a logged database error must not carry event bodies or state.
    `pool_use_lifo`: the connection used last is used next, so a quiet period is served by a
    few connections whose prepared statements and plans are warm, not by every connection in
    turn (a 20-event read took 2.4 ms instead of 1.3 ms after a burst had opened 16).
    Behind a transaction pooler, SQLAlchemy prepares each statement unnamed, uncached.
    """
    unprepared = {
        "prepared_statement_cache_size": 0,
        "prepared_statement_name_func": lambda: "",  # "": the unnamed statement
    }
    return create_async_engine(
        "postgresql+asyncpg://",
        async_creator=lambda: connector.connect(),
        connect_args=unprepared if connector.transaction_pooling else {},
        hide_parameters=True,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=connector.connect_timeout,
        pool_use_lifo=True,
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
        compiled = statement.compile(dialect=PGDialect_asyncpg())  # type: ignore[no-untyped-call]
        assert isinstance(compiled, SQLCompiler)
        bound = sorted(name for bind, name in compiled.bind_names.items() if not bind.required)
        if bound:
            raise ValueError(f"write these constants into the SQL, not as parameters: {bound}")
        return cls(compiled.string, tuple(compiled.positiontup or ()))

    def arguments(self, values: Mapping[str, Any]) -> list[Any]:
        return [values[name] for name in self.names]


def driver_call(statement: ClauseElement) -> tuple[str, list[Any]]:
    """A Core statement whose shape varies from call to call (its filters), with its values,
    compiled for asyncpg: the SQL and the positional arguments."""
    compiled = statement.compile(dialect=PGDialect_asyncpg())  # type: ignore[no-untyped-call]
    assert isinstance(compiled, SQLCompiler)
    values = compiled.construct_params()
    return compiled.string, [values[name] for name in compiled.positiontup or ()]


@asynccontextmanager
async def driver(db: AsyncConnection) -> AsyncIterator[asyncpg.Connection]:
    """The asyncpg connection under `db`, for the statements on the hot path.

    A statement sent this way skips SQLAlchemy's execution machinery, a quarter of an append's
    CPU (bench/README.md), yet runs on the same pooled connection and inside the transaction
    SQLAlchemy has begun on it, if a statement of its own began one; otherwise it is its own
    transaction, as a lone statement is. JSONB parameters go in as JSON text and come out
    decoded (SQLAlchemy's codecs on this connection). A connection found broken is
    invalidated, so the pool replaces it.
    """
    pooled = await db.get_raw_connection()
    try:
        yield pooled.driver_connection
    except DISCONNECTED:
        await db.invalidate()
        raise


def alembic_config(dsn: str) -> Config:
    config = Config(ALEMBIC_INI)
    config.attributes["database_url"] = dsn
    return config


def upgrade(dsn: str, revision: str = "head") -> None:
    """Run Alembic migrations (blocking; call it outside the event loop)."""
    command.upgrade(alembic_config(dsn), revision)


def downgrade(dsn: str, revision: str) -> None:
    command.downgrade(alembic_config(dsn), revision)


@cache
def head_revision() -> str | None:
    """The migration head this code needs; read once, as the scripts ship with the code."""
    return ScriptDirectory.from_config(Config(ALEMBIC_INI)).get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    def read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(read)
