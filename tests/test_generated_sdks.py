"""SDKs generated from openapi/openapi.json, as a new user would make them, type-check and work
against a live server: openapi-python-client (checked by mypy) and oapi-codegen (by go vet).

Each runs one smoke: a create with nulls in its nullable fields, an append whose sub-second
timestamp reads back exactly, a read, a list, the conflicts (412, 409), token counts whose sum
passes 2^31, a partial append (202), an update with nulls, an export as JSON imported back
(every read equal), and a delete. The tools are fetched once into caches outside the
repository (the Go module cache); openapi-python-client is the venv's.
"""

# ruff: noqa: E501 (the smokes are programs of their own, written as their users would)

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from app.cli import OPENAPI_PATH
from tests.helpers import missing_tool

OAPI_CODEGEN = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
OAPI_RUNTIME = "github.com/oapi-codegen/runtime@v1.9.0"
TOOLS = Path(sys.executable).parent


@pytest.fixture
def app_name() -> str:
    """An app of its own on the shared live server."""
    return f"sdk-{uuid.uuid4().hex[:12]}"


PYTHON_SMOKE = '''\
"""What a user of the generated SDK writes: every call typed, checked by mypy."""

import sys

from sessionary_sdk import Client
from sessionary_sdk.api.events import append_event, list_events
from sessionary_sdk.api.portability import export_session, import_session
from sessionary_sdk.api.sessions import (
    create_session,
    delete_session,
    get_session,
    list_sessions,
    update_session_state,
)
from sessionary_sdk.models import (
    Content,
    Event,
    EventIn,
    EventPage,
    ExportedSession,
    PartialEvent,
    Problem,
    Session,
    SessionCreate,
    SessionPage,
    SessionUpdate,
)

BASE, APP, USER = sys.argv[1], sys.argv[2], "ada"
STAMP = 1795000001.123456
BIG = 2**31 - 1


def check(condition: bool, what: object) -> None:
    if not condition:
        raise SystemExit(f"unexpected: {what!r}")


def problem(answer: object, status: int, code: str) -> None:
    check(isinstance(answer, Problem) and answer.status == status and answer.code == code, answer)


with Client(base_url=BASE) as client:  # keys off: no token needed
    body = SessionCreate.from_dict(
        {
            "sessionId": "s1",
            "state": {"city": "Oslo"},
            "displayName": None,
            "labels": None,
            "ttl": None,
            "expireTime": None,
        }
    )
    created = create_session.sync(APP, USER, client=client, body=body)
    check(isinstance(created, Session) and created.version == 0, created)
    problem(create_session.sync(APP, USER, client=client, body=body), 409, "session_already_exists")

    event = {
        "id": "e1",
        "author": "model",
        "invocationId": "inv-1",
        "timestamp": STAMP,
        "content": {"role": "model", "parts": [{"text": "Sunny."}]},
        "usageMetadata": {"promptTokenCount": BIG, "candidatesTokenCount": 1, "totalTokenCount": BIG},
        "actions": {"stateDelta": {"sky": "clear"}},
    }
    stored = append_event.sync(
        APP, USER, "s1", client=client, body=EventIn.from_dict(event), if_match='"0"'
    )
    check(isinstance(stored, Event) and stored.seq == 1 and stored.timestamp == STAMP, stored)
    assert isinstance(stored, Event)
    check(isinstance(stored.content, Content) and stored.content.role == "model", stored)
    problem(
        append_event.sync(
            APP, USER, "s1", client=client, body=EventIn.from_dict({"author": "user"}), if_match='"0"'
        ),
        412,
        "stale_session",
    )
    second = {**event, "id": "e2", "timestamp": STAMP + 0.5, "usageMetadata": {"totalTokenCount": BIG}}
    check(isinstance(append_event.sync(APP, USER, "s1", client=client, body=EventIn.from_dict(second)), Event), second)
    partial = EventIn.from_dict({"author": "model", "partial": True, "content": {"parts": [{"text": "Su"}]}})
    check(isinstance(append_event.sync(APP, USER, "s1", client=client, body=partial), PartialEvent), partial)

    read = get_session.sync(APP, USER, "s1", client=client)
    check(isinstance(read, Session), read)
    assert isinstance(read, Session)
    check([e.timestamp for e in read.events] == [STAMP, STAMP + 0.5], read.events)
    check(read.usage.total_token_count == 2 * BIG > 2**31, read.usage)
    check(read.state.to_dict() == {"city": "Oslo", "sky": "clear"}, read.state)

    page = list_sessions.sync(APP, USER, client=client)
    check(isinstance(page, SessionPage) and [s.id for s in page.sessions] == ["s1"], page)
    events = list_events.sync(APP, USER, "s1", client=client)
    check(isinstance(events, EventPage) and [e.seq for e in events.events] == [1, 2], events)

    update = SessionUpdate.from_dict(
        {"stateDelta": None, "displayName": "Weather", "labels": None, "ttl": 3600, "expireTime": None}
    )
    updated = update_session_state.sync(APP, USER, "s1", client=client, body=update)
    check(isinstance(updated, Session) and updated.display_name == "Weather", updated)
    assert isinstance(updated, Session)
    check(isinstance(updated.expire_time, float), updated.expire_time)

    before = get_session.sync(APP, USER, "s1", client=client)
    assert isinstance(before, Session)
    exported = export_session.sync(
        APP, USER, "s1", client=client.with_headers({"Accept": "application/json"})
    )
    check(isinstance(exported, ExportedSession) and len(exported.events) == 2, exported)
    assert isinstance(exported, ExportedSession)
    check(delete_session.sync_detailed(APP, USER, "s1", client=client).status_code == 204, "delete")
    problem(get_session.sync(APP, USER, "s1", client=client), 404, "session_not_found")
    imported = import_session.sync(APP, USER, client=client, body=exported)
    check(isinstance(imported, Session) and imported.version == before.version, imported)
    after = get_session.sync(APP, USER, "s1", client=client)
    check(isinstance(after, Session) and after.to_dict() == before.to_dict(), after)
    again = import_session.sync_detailed(APP, USER, client=client, body=exported)
    check(again.status_code == 200, again)
    check(delete_session.sync_detailed(APP, USER, "s1", client=client).status_code == 204, "delete")
print("ok")
'''

GO_SMOKE = """\
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
)

const stamp = 1795000001.123456
const big = int64(1)<<31 - 1

func check(ok bool, what ...any) {
	if !ok {
		log.Fatalf("unexpected: %v", fmt.Sprint(what...))
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func str(s string) *string { return &s }

func main() {
	base, app, user := os.Args[1], os.Args[2], "ada"
	ctx := context.Background()
	c, err := NewClientWithResponses(base)
	must(err)
	asJSON := func(ctx context.Context, req *http.Request) error {
		req.Header.Set("Accept", "application/json")
		return nil
	}

	// Nulls in every nullable field: raw JSON, as the typed body leaves nil pointers out.
	nulls := `{"sessionId": "g1", "state": {"city": "Oslo"}, "events": null, "displayName": null,
		"labels": null, "ttl": null, "expireTime": null}`
	created, err := c.CreateSessionWithBodyWithResponse(ctx, app, user, "application/json", strings.NewReader(nulls))
	must(err)
	check(created.JSON201 != nil && created.JSON201.Version == 0, string(created.Body))
	again, err := c.CreateSessionWithResponse(ctx, app, user, SessionCreate{SessionId: str("g1")})
	must(err)
	check(again.StatusCode() == 409 && again.ApplicationproblemJSON409.Code == "session_already_exists", string(again.Body))

	var usage UsageMetadata
	must(json.Unmarshal([]byte(fmt.Sprintf(`{"promptTokenCount": %d, "totalTokenCount": %d}`, big, big)), &usage))
	first := EventIn{Id: str("e1"), Author: str("model"), UsageMetadata: &usage}
	timestamp := stamp
	first.Timestamp = &timestamp
	stored, err := c.AppendEventWithResponse(ctx, app, user, "g1", &AppendEventParams{IfMatch: str(`"0"`)}, first)
	must(err)
	check(stored.JSON201 != nil && stored.JSON201.Seq == 1 && stored.JSON201.Timestamp == stamp, string(stored.Body))
	stale, err := c.AppendEventWithResponse(ctx, app, user, "g1", &AppendEventParams{IfMatch: str(`"0"`)}, EventIn{Author: str("user")})
	must(err)
	check(stale.StatusCode() == 412 && stale.ApplicationproblemJSON412.Code == "stale_session", string(stale.Body))
	second := EventIn{Id: str("e2"), Author: str("model"), UsageMetadata: &usage}
	later := stamp + 0.5
	second.Timestamp = &later
	more, err := c.AppendEventWithResponse(ctx, app, user, "g1", nil, second)
	must(err)
	check(more.JSON201 != nil && more.JSON201.Seq == 2, string(more.Body))
	yes := true
	partial, err := c.AppendEventWithResponse(ctx, app, user, "g1", nil, EventIn{Author: str("model"), Partial: &yes})
	must(err)
	check(partial.StatusCode() == 202 && partial.JSON202 != nil, string(partial.Body))
	retried, err := c.AppendEventWithResponse(ctx, app, user, "g1", nil, first)
	must(err)
	check(retried.StatusCode() == 200 && retried.JSON200 != nil, string(retried.Body))
	retry, err := retried.JSON200.AsEvent()
	must(err)
	check(retry.Seq == 1, retry)

	read, err := c.GetSessionWithResponse(ctx, app, user, "g1", nil)
	must(err)
	check(read.JSON200 != nil && len(read.JSON200.Events) == 2, string(read.Body))
	check(read.JSON200.Events[0].Timestamp == stamp && read.JSON200.Events[1].Timestamp == later, read.JSON200.Events)
	check(read.JSON200.Usage.TotalTokenCount == 2*big, read.JSON200.Usage)
	listed, err := c.ListSessionsWithResponse(ctx, app, user, nil)
	must(err)
	check(listed.JSON200 != nil && len(listed.JSON200.Sessions) == 1, string(listed.Body))

	update := `{"stateDelta": null, "displayName": "Weather", "labels": null, "ttl": null, "expireTime": null}`
	updated, err := c.UpdateSessionStateWithBodyWithResponse(ctx, app, user, "g1", nil, "application/json", strings.NewReader(update))
	must(err)
	check(updated.JSON200 != nil && *updated.JSON200.DisplayName == "Weather", string(updated.Body))

	before, err := c.GetSessionWithResponse(ctx, app, user, "g1", nil)
	must(err)
	exported, err := c.ExportSessionWithResponse(ctx, app, user, "g1", asJSON)
	must(err)
	check(exported.JSON200 != nil && len(exported.JSON200.Events) == 2, string(exported.Body))
	raw, err := c.ExportSession(ctx, app, user, "g1") // NDJSON, read as it comes
	must(err)
	ndjson, err := io.ReadAll(raw.Body)
	must(err)
	raw.Body.Close()
	check(strings.Count(string(ndjson), "\\n") == 3, string(ndjson))
	deleted, err := c.DeleteSessionWithResponse(ctx, app, user, "g1", nil)
	must(err)
	check(deleted.StatusCode() == 204, deleted.StatusCode())
	imported, err := c.ImportSessionWithResponse(ctx, app, user, *exported.JSON200)
	must(err)
	check(imported.JSON201 != nil, string(imported.Body))
	after, err := c.GetSessionWithResponse(ctx, app, user, "g1", nil)
	must(err)
	check(string(after.Body) == string(before.Body), string(after.Body), string(before.Body))
	deleted, err = c.DeleteSessionWithResponse(ctx, app, user, "g1", nil)
	must(err)
	check(deleted.StatusCode() == 204, deleted.StatusCode())
	fmt.Println("ok")
}
"""


def run(command: list[str], cwd: Path, timeout: float, **env: str) -> str:
    result = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def test_openapi_python_client_generates_a_typed_sdk_that_works(
    tmp_path: Path, live_server: str, app_name: str
) -> None:
    generator = TOOLS / "openapi-python-client"
    if not generator.exists():
        missing_tool("openapi-python-client", "", "the dev extra: make install")
    config = tmp_path / "config.yaml"
    config.write_text(
        "project_name_override: sessionary-sdk\npackage_name_override: sessionary_sdk\n"
    )
    output = run(
        [
            str(generator),
            "generate",
            *("--path", str(OPENAPI_PATH), "--output-path", str(tmp_path / "sessionary_sdk")),
            *("--config", str(config), "--meta", "none"),
        ],
        tmp_path,
        120,
        PATH=f"{TOOLS}:{os.environ.get('PATH', '')}",
    )
    # It reads no NDJSON, and says so: the JSON form of an import is what it uses.
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert warnings == [
        "WARNING parsing POST /apps/{app_name}/users/{user_id}/sessions:import within portability."
    ], output
    assert "Unsupported content type application/x-ndjson" in output
    smoke = tmp_path / "smoke.py"
    smoke.write_text(PYTHON_SMOKE)
    # The SDK's models and operations, and the smoke's use of them; not the generator's own
    # client.py, which this mypy finds fault with whatever the spec.
    run(
        [
            str(TOOLS / "mypy"),
            "--strict",
            "--follow-imports=silent",
            "--no-incremental",
            "sessionary_sdk/models",
            "sessionary_sdk/api",
            "smoke.py",
        ],
        tmp_path,
        180,
    )
    assert run([sys.executable, "smoke.py", live_server, app_name], tmp_path, 60).strip() == "ok"


def test_oapi_codegen_generates_a_go_client_that_vets_and_works(
    tmp_path: Path, live_server: str, app_name: str
) -> None:
    if shutil.which("go") is None:
        missing_tool("go", "golang-go")
    (tmp_path / "go.mod").write_text("module smoke\n\ngo 1.22\n")
    (tmp_path / "config.yaml").write_text(
        "package: main\noutput: sessionary.gen.go\ngenerate:\n  models: true\n  client: true\n"
    )
    run(["go", "run", OAPI_CODEGEN, "-config", "config.yaml", str(OPENAPI_PATH)], tmp_path, 300)
    generated = (tmp_path / "sessionary.gen.go").read_text()
    assert "float32" not in generated and "int32" not in generated
    (tmp_path / "main.go").write_text(textwrap.dedent(GO_SMOKE))
    run(["go", "get", OAPI_RUNTIME], tmp_path, 120)
    run(["go", "mod", "tidy"], tmp_path, 120)
    run(["go", "vet", "."], tmp_path, 180)
    assert run(["go", "run", ".", live_server, app_name], tmp_path, 120).strip() == "ok"
