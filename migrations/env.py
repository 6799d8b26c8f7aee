"""Alembic environment: runs migrations over the service's own async engine settings."""

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from app.config import Settings
from app.db import connector, migration_engine
from app.models import Base
from app.sharding import distribute
from app.vectors import enable as enable_vectors
from app.vectors import in_the_models

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection, target_metadata=target_metadata, include_object=in_the_models
    )
    with context.begin_transaction():
        context.run_migrations()
        if context.config.attributes.get("shard"):  # an upgrade by `app.db.upgrade`
            context.config.attributes["vectors"] = enable_vectors(connection)
            context.config.attributes["distributed"] = distribute(connection)


async def _run_online() -> None:
    settings = Settings()  # not the cached one: `serve` sets DATABASE_URL after migrating
    url = context.config.attributes.get("database_url") or settings.database_url
    if url is None:
        raise SystemExit("DATABASE_URL is not set: there is no database to migrate.")
    engine = migration_engine(connector(str(url), settings))
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("Offline (SQL script) migrations are not supported; run against a database.")
asyncio.run(_run_online())
