"""A pytest plugin that runs the OpenAI Agents SDK's own session tests on `SessionarySession`.

Loaded into a pytest run of the SDK's sdist (`test_openai_agents_suite.py` does that, against
the server at SESSIONARY_URL): each session those tests make, `SQLiteSession`,
`AsyncSQLiteSession` or `SQLAlchemySession`, is a `SessionarySession` instead, made from the
same arguments. What the tests assert of it is then what the SDK expects of any session.
"""

import hashlib
import uuid
from pathlib import Path
from typing import Any, Self

import pytest
from sessionary_client.openai_agents import SessionarySession

FILES = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_sqlalchemy_session.py",
    "tests/extensions/memory/test_async_sqlite_session.py",
]

# The SDK's tests that cannot apply to a session that is not the SDK's, and why: each reaches
# into the SDK class's own machinery, or checks the class's own error message.
_SQLITE = "reaches into SQLiteSession's own connections, locks or tables"
_SQLALCHEMY = "reaches into SQLAlchemySession's own engine, tables or statements"
_AIOSQLITE = "reaches into AsyncSQLiteSession's own connection (to write rows, or to break it)"
_CORRUPT = "writes rows that are not JSON into the SDK's table (Sessionary keeps JSON alone)"
_CLOSED = (
    "expects the SDK class's own message ('… is closed'); a closed SessionarySession's client "
    "raises httpx's RuntimeError, and `add_items([])` sends nothing, open or closed"
)
_SESSION = "tests/memory/test_session.py::"
_ALCHEMY = "tests/extensions/memory/test_sqlalchemy_session.py::"
_ASYNC = "tests/extensions/memory/test_async_sqlite_session.py::"
NOT_APPLICABLE = {
    **{
        _SESSION + name: _SQLITE
        for name in [
            "test_sqlite_session_close_closes_worker_thread_connections",
            "test_sqlite_session_reaps_connections_from_exited_worker_threads",
            "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
            "test_sqlite_session_keeps_connections_of_live_worker_threads",
            "test_sqlite_session_file_lock_is_shared_across_instances",
            "test_sqlite_session_failed_add_items_releases_write_lock",
            "test_sqlite_session_failed_clear_session_rolls_back",
            "test_sqlite_session_failed_pop_item_releases_write_lock",
            "test_sqlite_session_rollback_failure_evicts_connection",
            "test_sqlite_session_close_retries_quarantined_connection",
            *(
                f"test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome[{op}]"
                for op in ("add", "pop", "clear")
            ),
        ]
    },
    **{
        _SESSION + name: _CORRUPT
        for name in [
            "test_sqlite_session_pop_item_skips_corrupt_most_recent",
            "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
            "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
            "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
        ]
    },
    _SESSION + "test_sqlite_session_closed_rejects_empty_add_items": _CLOSED,
    **{
        _ALCHEMY + name: _SQLALCHEMY
        for name in [
            "test_sqlalchemy_session_defaults_to_escaped_non_ascii_storage",
            "test_sqlalchemy_session_can_store_non_ascii_without_escaping",
            "test_sqlite_fallback_reserves_writer_before_tail_claim",
            "test_pop_item_supports_unknown_delete_rowcount",
            "test_pop_item_retries_returning_claim_lost_to_concurrent_delete",
            *(
                f"test_mutation_cancellation_waits_for_transaction_exit[{op}]"
                for op in ("add", "pop", "clear")
            ),
            "test_add_items_waits_for_transient_sqlite_write_lock",
            "test_add_items_cancelled_waiter_does_not_strand_table_init_lock",
            "test_create_tables_false_does_not_allocate_shared_init_lock",
            "test_get_items_same_timestamp_consistent_order",
            "test_pop_item_same_timestamp_returns_latest",
            "test_get_items_orders_by_id_for_ties",
            "test_engine_property_from_url",
            "test_engine_property_from_external_engine",
            "test_engine_property_is_read_only",
            "test_sqlite_configuration_registry_releases_collected_engines",
            "test_sqlite_configuration_registry_does_not_grow_unbounded",
        ]
    },
    **{
        _ALCHEMY + name: _CORRUPT
        for name in [
            "test_pop_item_skips_corrupt_most_recent",
            "test_get_items_limit_skips_corrupt_newest_rows",
            "test_pop_item_returns_none_after_dropping_only_corrupt_rows",
        ]
    },
    **{
        _ASYNC + name: _AIOSQLITE
        for name in [
            "test_async_sqlite_session_get_items_same_timestamp_consistent_order",
            "test_async_sqlite_session_pop_item_same_timestamp_returns_latest",
            "test_cancelled_close_finishes_cleanup_and_propagates_cancellation",
            *(
                f"test_post_commit_cancellation_propagates_after_known_mutation_outcome[{op}]"
                for op in ("add", "pop", "clear")
            ),
            "test_failed_add_items_rolls_back_and_reuses_connection",
            "test_failed_clear_session_rolls_back",
            "test_failed_pop_item_releases_write_lock",
            "test_failed_initialization_closes_candidate_connection",
            "test_initialization_retries_transient_wal_lock",
            *(
                f"test_initialization_does_not_retry_unrecoverable_wal_errors[{case}]"
                for case in ("busy-timeout-disabled", "busy-timeout-elapsed", "unrelated-error")
            ),
            "test_cancelled_wal_retry_closes_startup_connection",
            "test_cancelled_add_items_rolls_back_write_transaction",
            "test_operation_failure_then_cancellation_during_rollback",
            "test_rollback_failure_closes_and_evicts_connection",
            "test_close_retries_connection_quarantined_after_rollback_failure",
            "test_close_retries_quarantined_failed_initialization_candidate",
            "test_cancelled_initialization_finishes_candidate_close",
            "test_initialization_failure_then_cancellation_during_candidate_close",
            "test_cancelled_connect_closes_eventually_acquired_connection",
        ]
    },
    **{
        _ASYNC + name: _CORRUPT
        for name in [
            "test_async_sqlite_session_pop_item_skips_corrupt_most_recent",
            "test_async_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
            "test_async_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
        ]
    },
    **{
        _ASYNC + name: _CLOSED
        for name in [
            "test_async_sqlite_session_closed_operations_raise_runtime_error",
            "test_async_sqlite_session_closed_rejects_empty_add_items",
            "test_async_sqlite_session_close_before_use_is_terminal",
            "test_async_sqlite_session_close_is_idempotent",
        ]
    },
}


def _database(where: object) -> str:
    """The user that stands for one database: every session made on one file shares its
    sessions, and an in-memory database is a new one each time, as SQLite's is."""
    named = str(where)
    if ":memory:" in named:
        return f"memory-{uuid.uuid4().hex}"
    return hashlib.sha256(named.encode()).hexdigest()[:24]


class _Test:
    """The app of the running test: each test's sessions are its own."""

    app = ""


class AsyncSQLiteStandIn(SessionarySession):
    """`AsyncSQLiteSession(session_id, db_path, …, session_settings=…)`."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        super().__init__(
            session_id,
            app_name=_Test.app,
            user_id=_database(db_path),
            session_settings=session_settings,
        )


class SQLiteStandIn(AsyncSQLiteStandIn):
    """`SQLiteSession`: the same arguments, and a `close()` that is not awaited."""

    def close(self) -> None:  # type: ignore[override]
        """Nothing to do at once: the client's connections close with their event loop."""


class SQLAlchemyStandIn(SessionarySession):
    """`SQLAlchemySession(session_id, engine=…)` and `SQLAlchemySession.from_url(…)`."""

    def __init__(
        self, session_id: str, *, engine: Any, session_settings: Any = None, **options: Any
    ) -> None:
        super().__init__(
            session_id,
            app_name=_Test.app,
            user_id=_database(engine.url),
            session_settings=session_settings,
        )
        self.engine = engine

    @classmethod
    def from_url(
        cls, session_id: str, *, url: str, session_settings: Any = None, **options: Any
    ) -> Self:
        engine = _Engine(url)
        session = cls(session_id, engine=engine, session_settings=session_settings)
        engine.sessions.append(session)
        return session


class _Engine:
    """The engine `from_url` makes, as the tests use it: its URL, and `dispose()`, which
    releases the connections of its session."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sessions: list[SessionarySession] = []

    async def dispose(self) -> None:
        for session in self.sessions:
            await session.close()


STAND_INS = {
    "SQLiteSession": SQLiteStandIn,
    "AsyncSQLiteSession": AsyncSQLiteStandIn,
    "SQLAlchemySession": SQLAlchemyStandIn,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        reason = NOT_APPLICABLE.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))


@pytest.fixture(autouse=True)
def sessions_on_sessionary(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test module's session classes are the stand-ins, in an app of the test's own."""
    _Test.app = f"openai-agents-suite-{uuid.uuid4().hex[:12]}"
    for name, stand_in in STAND_INS.items():
        if hasattr(request.module, name):
            monkeypatch.setattr(request.module, name, stand_in)
