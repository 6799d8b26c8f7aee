"""Alembic: every revision upgrades and downgrades cleanly on a real database."""

import asyncio
import json
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from sqlalchemy import inspect

from app import db

TABLES = {
    "sessions",
    "events",
    "pending_events",
    "app_states",
    "user_states",
    "api_keys",
    "artifacts",
    "artifact_versions",
    "artifact_blobs",
    "artifact_chunks",
    "memories",
    "memory_revisions",
    "memory_vectors",
    "audit_log",
    "server_secrets",
    "erasures",
}


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
    from app.vectors import in_the_models

    async def diff() -> list[object]:
        engine = db.migration_engine(db.Connector.of(database_url))
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(
                    lambda c: compare_metadata(
                        MigrationContext.configure(c, opts={"include_object": in_the_models}),
                        Base.metadata,
                    )
                )
        finally:
            await engine.dispose()

    assert asyncio.run(diff()) == []


def run(url: str, *statements: str) -> Any:
    """Each statement on one connection to `url`; the last one's first value."""

    async def statements_run() -> Any:
        connection = await asyncpg.connect(url)
        try:
            for statement in statements:
                result = await connection.fetchval(statement)
            return result
        finally:
            await connection.close()

    return asyncio.run(statements_run())


def test_0019_keeps_every_read_of_a_session_an_event_was_removed_from(
    new_database: Callable[[], str],
) -> None:
    """Before it, a session an event was removed from showed the removed delta in its state
    but not at earlier seqs; after it, both read as they did, the difference now a removed
    delta at the version."""
    url = new_database()
    db.upgrade(url, "0018")
    run(
        url,
        "INSERT INTO sessions (app_name, user_id, id, state, version, update_second, "
        """replayable) VALUES ('a', 'u', 's', '{"x": 1, "y": 0}', 3, 0, false)""",
        "INSERT INTO events (app_name, user_id, session_id, seq, id, timestamp, request_hash,"
        """ event) VALUES ('a', 'u', 's', 2, 'e2', 0, '\\x00', """
        """'{"actions": {"stateDelta": {"y": 0, "user:z": 1}}}')""",
    )
    db.upgrade(url)
    removed = run(url, "SELECT removed_deltas FROM sessions")
    assert json.loads(removed) == [{"seq": 3, "stateDelta": {"x": 1}}]


def test_0021_refuses_the_next_write_of_a_session_past_the_last_version(
    new_database: Callable[[], str],
) -> None:
    """A session already past 2^53 - 1 does not stop the migration: the check is then left
    unvalidated, and that session refuses its next write; elsewhere it is validated."""
    past, fresh = new_database(), new_database()
    db.upgrade(past, "0020")
    db.upgrade(fresh)
    over = 2**53
    run(
        past,
        "INSERT INTO sessions (app_name, user_id, id, version, update_second) "
        f"VALUES ('a', 'u', 'over', {over}, 0), ('a', 'u', 'under', 1, 0)",
    )
    db.upgrade(past)
    validated = "SELECT convalidated FROM pg_constraint WHERE conname = 'ck_sessions_version_max'"
    assert run(past, validated) is False
    assert run(fresh, validated) is True
    bump = "UPDATE sessions SET version = version + 1 WHERE id = '{}' RETURNING version"
    assert run(past, bump.format("under")) == 2
    with pytest.raises(asyncpg.CheckViolationError):
        run(past, bump.format("over"))


def test_0023_counts_what_was_stored_past_2_to_the_31(new_database: Callable[[], str]) -> None:
    """Events stored with a count past 2^31 - 1 were counted 0; after it, as an append counts
    them now, and their session's sums with them."""
    url = new_database()
    db.upgrade(url, "0022")
    usage = '{"promptTokenCount": 3000000000, "candidatesTokenCount": 2.5, "totalTokenCount": 7}'
    run(
        url,
        "INSERT INTO sessions (app_name, user_id, id, version, update_second, total_tokens) "
        "VALUES ('a', 'u', 's', 2, 0, 7), ('a', 'u', 'other', 0, 0, 0)",
        "INSERT INTO events (app_name, user_id, session_id, seq, id, timestamp, request_hash, "
        "event, total_tokens) VALUES ('a', 'u', 's', 1, 'e1', 0, '\\x00', "
        f"""'{{"usageMetadata": {usage}}}', 7), """
        """('a', 'u', 's', 2, 'e2', 0, '\\x00', '{}', NULL)""",
    )
    db.upgrade(url)
    counted = "SELECT array[prompt_tokens, candidates_tokens, total_tokens] FROM {} WHERE {}"
    assert run(url, counted.format("events", "seq = 1")) == [3_000_000_000, None, 7]
    assert run(url, counted.format("sessions", "id = 's'")) == [3_000_000_000, 0, 7]
    assert run(url, counted.format("sessions", "id = 'other'")) == [0, 0, 0]
