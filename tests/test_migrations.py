"""Alembic: every revision upgrades and downgrades cleanly on a real database."""

import asyncio
from collections.abc import Callable

from sqlalchemy import inspect

from app import db

TABLES = {"sessions", "events", "pending_events", "app_states", "user_states", "api_keys"}


def tables(url: str) -> set[str]:
    async def read() -> set[str]:
        engine = db.migration_engine(db.Connector.of(url))
        try:
            async with engine.connect() as connection:
                names = await connection.run_sync(lambda c: inspect(c).get_table_names())
                return set(names) - {"alembic_version"}
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_upgrade_downgrade_upgrade(new_database: Callable[[], str]) -> None:
    url = new_database()
    db.upgrade(url)
    assert tables(url) == TABLES
    db.downgrade(url, "base")
    assert tables(url) == set()
    db.upgrade(url)
    assert tables(url) == TABLES


def test_models_match_the_migrations(database_url: str) -> None:
    """Nothing in app/models.py that a migration does not create (what `alembic check` does)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from app.models import Base

    async def diff() -> list[object]:
        engine = db.migration_engine(db.Connector.of(database_url))
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(
                    lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata)
                )
        finally:
            await engine.dispose()

    assert asyncio.run(diff()) == []
