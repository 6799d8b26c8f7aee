"""The database handle: engine, sessionmaker, and the migration state of the schema."""

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"

# What "the database cannot be reached right now" looks like, as opposed to a bad request.
UNAVAILABLE = (
    OSError,
    TimeoutError,
    sa_exc.TimeoutError,
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
)


def async_url(dsn: str) -> str:
    """Accept any PostgreSQL DSN (postgres://, postgresql://, …) and speak asyncpg."""
    url = make_url(dsn.replace("postgres://", "postgresql://", 1))
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"Sessionary needs PostgreSQL, got a {url.get_backend_name()!r} URL")
    return url.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def create_engine(
    dsn: str,
    *,
    pool_size: int = 10,
    max_overflow: int = 10,
    connect_timeout: float = 5.0,
    command_timeout: float = 30.0,
) -> AsyncEngine:
    """Every wait is bounded: a database that is down or stuck is a 503, never a hang.

    `hide_parameters`: a logged database error must not carry event bodies or state.
    """
    return create_async_engine(
        async_url(dsn),
        hide_parameters=True,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=connect_timeout,
        connect_args={"timeout": connect_timeout, "command_timeout": command_timeout},
    )


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


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
