"""An SDK generated from openapi/openapi.json by openapi-python-client, used on a live server."""

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SPEC = Path(__file__).parents[3] / "openapi" / "openapi.json"
SDK = "sessionary_sdk"  # not `sessionary_client`, the name the spec's title would give


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, str]]:
    """The generated package, and what the generator printed."""
    folder = tmp_path_factory.mktemp("sdk")
    config = folder / "config.yaml"
    # NDJSON (an export) is read and sent as bytes: the generator knows no such content type.
    config.write_text(
        f"project_name_override: sessionary-sdk\npackage_name_override: {SDK}\n"
        "content_type_overrides:\n  application/x-ndjson: application/octet-stream\n"
    )
    tools = Path(sys.executable).parent  # the generator formats its output with ruff from here
    result = subprocess.run(
        [
            str(tools / "openapi-python-client"),
            "generate",
            *("--path", str(SPEC), "--output-path", str(folder / SDK)),
            *("--config", str(config), "--meta", "none"),
        ],
        capture_output=True,
        text=True,
        env={"PATH": str(tools), "HOME": str(folder)},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(SDK), result.stdout + result.stderr
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == SDK]:
            del sys.modules[name]


def operation(sdk: ModuleType, tag: str, name: str) -> Any:
    """The module of one operation, named after its operationId."""
    return importlib.import_module(f"{sdk.__name__}.api.{tag}.{name}")


def test_the_generated_sdk_creates_a_session_appends_an_event_and_reads_it_back(
    generated: tuple[ModuleType, str], live_server: str, app_name: str
) -> None:
    sdk, output = generated
    assert "Warning" not in output, output
    models = importlib.import_module(f"{SDK}.models")
    with sdk.Client(base_url=live_server, raise_on_unexpected_status=True) as client:
        created = operation(sdk, "sessions", "create_session").sync(
            app_name,
            "ada",
            client=client,
            body=models.SessionCreate.from_dict({"sessionId": "s1", "state": {"user:u": 1}}),
        )
        assert isinstance(created, models.Session) and created.version == 0

        event = {
            "id": "e1",
            "author": "user",
            "invocationId": "inv-1",
            "timestamp": 1700000000.5,
            "content": {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
            "actions": {"stateDelta": {"city": "Oslo"}},
        }
        stored = operation(sdk, "events", "append_event").sync(
            app_name,
            "ada",
            "s1",
            client=client,
            body=models.EventIn.from_dict(event),
            if_match='"0"',
        )
        assert isinstance(stored, models.Event) and stored.seq == 1
        assert stored.to_dict() == {**event, "seq": 1}

        session = operation(sdk, "sessions", "get_session").sync(
            app_name, "ada", "s1", client=client
        )
        assert isinstance(session, models.Session) and session.version == 1
        assert session.state.to_dict() == {"city": "Oslo", "user:u": 1}
        assert [e.to_dict() for e in session.events] == [{**event, "seq": 1}]

        page = operation(sdk, "events", "list_events").sync(app_name, "ada", "s1", client=client)
        assert [e.id for e in page.events] == ["e1"] and page.next_page_token is None

        missing = operation(sdk, "sessions", "get_session").sync(
            app_name, "ada", "no", client=client
        )
        assert isinstance(missing, models.Problem) and missing.code == "session_not_found"


def test_the_spec_generates_named_operations_and_named_schemas(
    generated: tuple[ModuleType, str],
) -> None:
    """Operations named after the routes, one class per schema, none made up from a path."""
    sdk, _ = generated
    root = Path(sdk.__file__).parent
    operations = {
        f"{path.parent.name}.{path.stem}"
        for path in (root / "api").glob("*/*.py")
        if path.stem != "__init__"
    }
    assert operations == {
        "sessions.create_session",
        "sessions.get_session",
        "sessions.list_sessions",
        "sessions.list_apps",
        "sessions.list_users",
        "sessions.list_app_sessions",
        "sessions.delete_session",
        "sessions.update_session_state",
        "events.append_event",
        "events.append_events",
        "events.list_events",
        "events.count_events",
        "lineage.fork_session",
        "lineage.create_child_session",
        "lineage.close_session",
        "lineage.get_lineage",
        "lineage.list_children",
        "history.rewind_session",
        "history.trim_session",
        "history.reset_session",
        "history.remove_event",
        "history.rewrite_event",
        "context.get_context",
        "context.compact_session",
        "context.list_tool_calls",
        "context.heal_session",
        "context.queue_event",
        "context.list_pending",
        "context.clear_pending",
        "context.promote_pending",
        "context.get_app_usage",
        "search.search_events",
        "portability.export_session",
        "portability.import_session",
        "live.stream_events",
        "live.stream_user_sessions",
        "live.stream_app_sessions",
        "state.get_app_state",
        "state.update_app_state",
        "state.get_user_state",
        "state.update_user_state",
        "operations.healthz",
        "operations.readyz",
        "operations.metrics",
        "keys.get_key_scope",
    }
    models = {path.stem for path in (root / "models").glob("*.py")} - {"__init__"}
    assert models == {
        "app_page",
        "app_summary",
        "app_usage",
        "child_create",
        "compaction_strategy",
        "content",
        "context_view",
        "event",
        "event_actions",
        "event_batch",
        "event_compaction",
        "event_count",
        "event_in",
        "event_list",
        "event_page",
        "event_rewrite",
        "events_removed",
        "healed",
        "health",
        "inherit",
        "key_scope",
        "kind",
        "labels",
        "order",
        "outcome",
        "parent",
        "partial_event",
        "partial_event_list",
        "pending_list",
        "pending_promote",
        "problem",
        "problem_code",
        "queued_event",
        "readiness",
        "removed_delta",
        "scope_state",
        "search_hit",
        "search_page",
        "session",
        "session_close",
        "session_compact",
        "session_create",
        "session_export",
        "session_fork",
        "session_heal",
        "session_list",
        "session_page",
        "session_reset",
        "session_rewind",
        "session_trim",
        "session_update",
        "state",
        "state_delta",
        "status",
        "tool_call",
        "total_usage",
        "tool_call_list",
        "tool_call_status",
        "trimmed",
        "usage",
        "user_page",
        "user_summary",
        "user_usage",
        "validation_error_item",
    }
