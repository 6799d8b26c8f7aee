"""SDKs generated from openapi/openapi.json, as a new user would make them, type-check and work
against a live server: openapi-python-client and openapi-generator's `python` (checked by
mypy), openapi-typescript with openapi-fetch and openapi-generator's `typescript-fetch` (by
`tsc --strict`), oapi-codegen and openapi-generator's `go` (by go vet).

Each runs the same smoke, the steps of `STEPS` in order, and prints each step's name once it has
checked it: nulls in the nullable fields of what it sends and reads, a sub-second timestamp read
back exactly, a token count past 2^32, the conflicts (409, 412), a partial append (202), an
export as JSON imported back (every read equal), and deletes. The tools are fetched once into
caches outside the repository: openapi-generator's jar from Maven Central and python-dateutil
(which its Python SDK needs) into pytest's cache, the TypeScript client's pinned npm packages
(its lock file) there too, Go modules into Go's module cache; openapi-python-client is the
venv's.
"""

# ruff: noqa: E501 (the smokes are programs of their own, written as their users would)

import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from app.cli import OPENAPI_PATH
from tests.helpers import cache_folder, go, maven_jar, missing_tool, tool

OAPI_CODEGEN = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
OAPI_RUNTIME = "github.com/oapi-codegen/runtime@v1.9.0"
OPENAPI_GENERATOR = "org.openapitools:openapi-generator-cli:7.25.0"
PYTHON_DATEUTIL = "python-dateutil==2.9.0.post0"
TYPESCRIPT_CLIENT = Path(__file__).parents[1] / "clients" / "typescript"
TOOLS = Path(sys.executable).parent

# What every smoke is given: sub-second digits that a float64 holds exactly as written, and one
# event's token count past 2^32 (two such events sum past 2^33).
STAMP = 1795000001.123456
BIG = 2**32 + 1
# The smoke, step by step, as each SDK's runs it.
STEPS = {
    "create": "a create with null in every field the SDK can send null in, sessionId too (the "
    "server names it): 201 at version 0, its parent, outcome, displayName and expireTime null",
    "conflict": "a create of the same id: 409 session_already_exists",
    "append": 'an event at STAMP with If-Match "0", BIG prompt tokens and `partial` null: 201 '
    "at seq 1, its timestamp exactly STAMP",
    "stale": 'If-Match "0" again: 412 stale_session',
    "more": "a second event half a second later with `content` null, then a partial one with "
    "`usageMetadata` null: 201, then 202",
    "get": "a read: both timestamps exact, BIG prompt tokens and twice BIG in all, the state",
    "list": "the user's sessions (this one, nextPageToken null) and its events (seqs 1 and 2)",
    "update": "a PATCH with null in every field but displayName: 200 with the name",
    "export": "as one JSON document: its header and both events",
    "delete": "204; then a read is 404 session_not_found",
    "import": "the export back: 201 at the same version, then the same read as before; the same "
    "import again: 200; a delete",
}


@pytest.fixture
def app_name() -> str:
    """An app of its own on the shared live server."""
    return f"sdk-{uuid.uuid4().hex[:12]}"


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


def smoke(command: list[str], cwd: Path, live_server: str, app_name: str, **env: str) -> None:
    """Run a smoke against the live server: every step, in order."""
    output = run([*command, live_server, app_name, repr(STAMP), str(BIG)], cwd, 120, **env)
    assert output.split() == list(STEPS), output


# Each language's share of its smokes: the arguments, the checks, the steps.
PYTHON_STEPS = '''\
"""What every smoke in Python shares: its arguments, its checks, and the steps it reports."""

import sys

BASE, APP = sys.argv[1], sys.argv[2]
STAMP, BIG = float(sys.argv[3]), int(sys.argv[4])
USER = "ada"


def check(condition: bool, what: object) -> None:
    if not condition:
        raise SystemExit(f"unexpected: {what!r}")


def step(name: str) -> None:
    print(name, flush=True)
'''

TYPESCRIPT_STEPS = """\
// What every smoke in TypeScript shares: its arguments, its checks, and the steps it reports.
const [base = "", app = "", stampText = "", bigText = ""] = process.argv.slice(2);
export { app, base };
export const stamp = Number(stampText);
export const big = Number(bigText);
export const user = "ada";

export function check(ok: boolean, what: unknown): asserts ok {
  if (!ok) {
    console.error("unexpected:", JSON.stringify(what));
    process.exit(1);
  }
}

export function step(name: string): void {
  console.log(name);
}
"""

GO_STEPS = """\
package main

// What every smoke in Go shares: its arguments, its checks, and the steps it reports.

import (
	"fmt"
	"log"
	"os"
	"strconv"
)

const user = "ada"

var (
	base, app  = os.Args[1], os.Args[2]
	stamp, big = number(strconv.ParseFloat(os.Args[3], 64)), number(strconv.ParseInt(os.Args[4], 10, 64))
)

func number[T any](value T, err error) T {
	must(err)
	return value
}

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

func step(name string) { fmt.Println(name) }

func ptr[T any](value T) *T { return &value }
"""

OPENAPI_PYTHON_CLIENT_SMOKE = '''\
"""What a user of openapi-python-client's SDK writes: every call typed, checked by mypy."""

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
from steps import APP, BASE, BIG, STAMP, USER, check, step


def problem(answer: object, status: int, code: str) -> None:
    check(isinstance(answer, Problem) and answer.status == status and answer.code == code, answer)


def session(answer: object) -> Session:
    check(isinstance(answer, Session), answer)
    assert isinstance(answer, Session)
    return answer


with Client(base_url=BASE) as client:  # keys off: no token needed
    nulls = dict.fromkeys(("sessionId", "state", "events", "displayName", "labels", "ttl", "expireTime"))
    created = session(create_session.sync(APP, USER, client=client, body=SessionCreate.from_dict(nulls)))
    check(created.version == 0 and created.parent is None and created.outcome is None, created)
    check(created.display_name is None and created.expire_time is None, created)
    sid = created.id
    step("create")

    problem(create_session.sync(APP, USER, client=client, body=SessionCreate(session_id=sid)), 409, "session_already_exists")
    step("conflict")

    first = {
        "id": "e1",
        "author": "model",
        "invocationId": "inv-1",
        "timestamp": STAMP,
        "partial": None,
        "content": {"role": "model", "parts": [{"text": "Sunny."}]},
        "usageMetadata": {"promptTokenCount": BIG, "candidatesTokenCount": None, "totalTokenCount": BIG},
        "actions": {"stateDelta": {"sky": "clear"}},
    }
    stored = append_event.sync(APP, USER, sid, client=client, body=EventIn.from_dict(first), if_match='"0"')
    check(isinstance(stored, Event) and stored.seq == 1 and stored.timestamp == STAMP, stored)
    step("append")

    stale = append_event.sync(APP, USER, sid, client=client, body=EventIn(author="user"), if_match='"0"')
    problem(stale, 412, "stale_session")
    step("stale")

    second = {"id": "e2", "author": "model", "timestamp": STAMP + 0.5, "content": None, "usageMetadata": {"totalTokenCount": BIG}}
    more = append_event.sync(APP, USER, sid, client=client, body=EventIn.from_dict(second))
    check(isinstance(more, Event) and more.seq == 2, more)
    partial = {"author": "model", "partial": True, "content": {"parts": [{"text": "Su"}]}, "usageMetadata": None}
    echoed = append_event.sync_detailed(APP, USER, sid, client=client, body=EventIn.from_dict(partial))
    check(echoed.status_code == 202 and isinstance(echoed.parsed, PartialEvent), echoed)
    step("more")

    read = session(get_session.sync(APP, USER, sid, client=client))
    check([e.timestamp for e in read.events] == [STAMP, STAMP + 0.5], read.events)
    check(read.usage.prompt_token_count == BIG and read.usage.total_token_count == 2 * BIG, read.usage)
    check(read.state.to_dict() == {"sky": "clear"}, read.state)
    step("get")

    page = list_sessions.sync(APP, USER, client=client)
    check(isinstance(page, SessionPage) and [s.id for s in page.sessions] == [sid] and page.next_page_token is None, page)
    events = list_events.sync(APP, USER, sid, client=client)
    check(isinstance(events, EventPage) and [e.seq for e in events.events] == [1, 2], events)
    step("list")

    update = {"stateDelta": None, "displayName": "Weather", "labels": None, "ttl": None, "expireTime": None}
    updated = session(update_session_state.sync(APP, USER, sid, client=client, body=SessionUpdate.from_dict(update)))
    check(updated.display_name == "Weather" and updated.expire_time is None, updated)
    step("update")

    before = session(get_session.sync(APP, USER, sid, client=client))
    exported = export_session.sync(APP, USER, sid, client=client.with_headers({"Accept": "application/json"}))
    check(isinstance(exported, ExportedSession) and exported.header.id == sid and len(exported.events) == 2, exported)
    assert isinstance(exported, ExportedSession)
    step("export")

    check(delete_session.sync_detailed(APP, USER, sid, client=client).status_code == 204, "delete")
    problem(get_session.sync(APP, USER, sid, client=client), 404, "session_not_found")
    step("delete")

    imported = import_session.sync_detailed(APP, USER, client=client, body=exported)
    check(imported.status_code == 201 and session(imported.parsed).version == before.version, imported)
    check(session(get_session.sync(APP, USER, sid, client=client)).to_dict() == before.to_dict(), "read")
    check(import_session.sync_detailed(APP, USER, client=client, body=exported).status_code == 200, "again")
    check(delete_session.sync_detailed(APP, USER, sid, client=client).status_code == 204, "delete")
    step("import")
'''

OPENAPI_GENERATOR_PYTHON_SMOKE = '''\
"""What a user of openapi-generator's Python SDK writes: every call typed, checked by mypy."""

from collections.abc import Callable

from sessionary_gen import (
    ApiClient,
    ApiException,
    AppendedEvent,
    Configuration,
    Event,
    EventIn,
    EventsApi,
    PartialEvent,
    PortabilityApi,
    Problem,
    SessionCreate,
    SessionsApi,
    SessionUpdate,
)
from steps import APP, BASE, BIG, STAMP, USER, check, step


def problem(call: Callable[[], object], status: int, code: str) -> None:
    try:
        call()
    except ApiException as error:
        check(isinstance(error.data, Problem) and error.data.code == code, error)
        check(error.status == status, error)
    else:
        check(False, f"no {status}")


def appended(answer: object) -> Event:
    """An append's answer: typed as its 200's `AppendedEvent`, a 201 reads as its `Event`."""
    if isinstance(answer, AppendedEvent):
        answer = answer.actual_instance
    check(isinstance(answer, Event), answer)
    assert isinstance(answer, Event)
    return answer


with ApiClient(Configuration(host=BASE)) as client:  # keys off: no token needed
    sessions, events, portability = SessionsApi(client), EventsApi(client), PortabilityApi(client)
    nulls = SessionCreate(
        sessionId=None, state=None, events=None, displayName=None, labels=None, ttl=None, expireTime=None
    )
    check(nulls.to_dict() == dict.fromkeys(("sessionId", "state", "events", "displayName", "labels", "ttl", "expireTime")), nulls.to_dict())
    created = sessions.create_session(APP, USER, nulls)
    check(created.version == 0 and created.parent is None and created.outcome is None, created)
    check(created.display_name is None and created.expire_time is None, created)
    sid = created.id
    step("create")

    problem(lambda: sessions.create_session(APP, USER, SessionCreate(sessionId=sid)), 409, "session_already_exists")
    step("conflict")

    first = EventIn.from_dict(
        {
            "id": "e1",
            "author": "model",
            "invocationId": "inv-1",
            "timestamp": STAMP,
            "partial": None,
            "content": {"role": "model", "parts": [{"text": "Sunny."}]},
            "usageMetadata": {"promptTokenCount": BIG, "candidatesTokenCount": None, "totalTokenCount": BIG},
            "actions": {"stateDelta": {"sky": "clear"}},
        }
    )
    assert first is not None
    stored = appended(events.append_event(APP, USER, sid, first, if_match='"0"'))
    check(stored.seq == 1 and stored.timestamp == STAMP, stored)
    step("append")

    problem(lambda: events.append_event(APP, USER, sid, EventIn(author="user"), if_match='"0"'), 412, "stale_session")
    step("stale")

    second = EventIn.from_dict(
        {"id": "e2", "author": "model", "timestamp": STAMP + 0.5, "content": None, "usageMetadata": {"totalTokenCount": BIG}}
    )
    assert second is not None
    check(appended(events.append_event(APP, USER, sid, second)).seq == 2, second)
    partial = EventIn.from_dict({"author": "model", "partial": True, "content": {"parts": [{"text": "Su"}]}, "usageMetadata": None})
    assert partial is not None
    answer = events.append_event_with_http_info(APP, USER, sid, partial)
    check(answer.status_code == 202 and isinstance(answer.data, PartialEvent), answer)
    step("more")

    read = sessions.get_session(APP, USER, sid)
    check([e.timestamp for e in read.events] == [STAMP, STAMP + 0.5], read.events)
    check(read.usage.total_token_count == 2 * BIG and read.usage.prompt_token_count == BIG, read.usage)
    check(read.state == {"sky": "clear"}, read.state)
    step("get")

    page = sessions.list_sessions(APP, USER)
    check([s.id for s in page.sessions] == [sid] and page.next_page_token is None, page)
    check([e.seq for e in events.list_events(APP, USER, sid).events] == [1, 2], "events")
    step("list")

    update = SessionUpdate(stateDelta=None, displayName="Weather", labels=None, ttl=None, expireTime=None)
    updated = sessions.update_session_state(APP, USER, sid, update)
    check(updated.display_name == "Weather" and updated.expire_time is None, updated)
    step("update")

    before = sessions.get_session(APP, USER, sid)
    exported = portability.export_session(APP, USER, sid)
    check(exported.header.id == sid and [e.seq for e in exported.events] == [1, 2], exported)
    step("export")

    check(sessions.delete_session_with_http_info(APP, USER, sid).status_code == 204, "delete")
    problem(lambda: sessions.get_session(APP, USER, sid), 404, "session_not_found")
    step("delete")

    imported = portability.import_session_with_http_info(APP, USER, exported)
    check(imported.status_code == 201 and imported.data.version == before.version, imported)
    check(sessions.get_session(APP, USER, sid).to_dict() == before.to_dict(), "import")
    check(portability.import_session_with_http_info(APP, USER, exported).status_code == 200, "again")
    sessions.delete_session(APP, USER, sid)
    step("import")
'''

OPENAPI_FETCH_SMOKE = """\
// What a user of openapi-typescript's types with openapi-fetch writes: checked by tsc --strict.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";
import { app, base, big, check, stamp, step, user } from "./steps.js";

type EventIn = components["schemas"]["EventIn"];
const client = createClient<paths>({ baseUrl: base }); // keys off: no token needed
const sessions = "/apps/{app_name}/users/{user_id}/sessions";
const session = "/apps/{app_name}/users/{user_id}/sessions/{session_id}";
const events = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events";
const userPath = { app_name: app, user_id: user };

const created = await client.POST(sessions, {
  params: { path: userPath },
  body: {
    sessionId: null, state: null, events: null, displayName: null, labels: null, ttl: null, expireTime: null,
  },
});
check(created.response.status === 201 && created.data !== undefined, created.error);
check(created.data.version === 0 && created.data.parent === null && created.data.outcome === null, created.data);
check(created.data.displayName === null && created.data.expireTime === null, created.data);
const id = created.data.id;
const path = { ...userPath, session_id: id };
step("create");

const again = await client.POST(sessions, { params: { path: userPath }, body: { sessionId: id } });
check(again.response.status === 409 && again.error?.code === "session_already_exists", again.error);
step("conflict");

const first: EventIn = {
  id: "e1",
  author: "model",
  invocationId: "inv-1",
  timestamp: stamp,
  partial: null,
  content: { role: "model", parts: [{ text: "Sunny." }] },
  usageMetadata: { promptTokenCount: big, candidatesTokenCount: null, totalTokenCount: big },
  actions: { stateDelta: { sky: "clear" } },
};
const stored = await client.POST(events, { params: { path, header: { "if-match": '"0"' } }, body: first });
check(stored.response.status === 201 && stored.data !== undefined, stored.error);
check(stored.data.seq === 1 && stored.data.timestamp === stamp, stored.data);
step("append");

const stale = await client.POST(events, { params: { path, header: { "if-match": '"0"' } }, body: { author: "user" } });
check(stale.response.status === 412 && stale.error?.code === "stale_session", stale.error);
step("stale");

const second: EventIn = { id: "e2", author: "model", timestamp: stamp + 0.5, content: null, usageMetadata: { totalTokenCount: big } };
const more = await client.POST(events, { params: { path }, body: second });
check(more.response.status === 201 && more.data?.seq === 2, more.data);
const partial: EventIn = { author: "model", partial: true, content: { parts: [{ text: "Su" }] }, usageMetadata: null };
const echoed = await client.POST(events, { params: { path }, body: partial });
check(echoed.response.status === 202 && echoed.data?.partial === true, echoed.data);
step("more");

const read = await client.GET(session, { params: { path } });
check(read.data !== undefined, read.error);
check(JSON.stringify(read.data.events.map((e) => e.timestamp)) === JSON.stringify([stamp, stamp + 0.5]), read.data.events);
check(read.data.usage.totalTokenCount === 2 * big && read.data.usage.promptTokenCount === big, read.data.usage);
check(JSON.stringify(read.data.state) === JSON.stringify({ sky: "clear" }), read.data.state);
step("get");

const listed = await client.GET(sessions, { params: { path: userPath } });
check(listed.data?.sessions.length === 1 && listed.data.sessions[0]?.id === id && listed.data.nextPageToken === null, listed.data);
const page = await client.GET(events, { params: { path } });
check(JSON.stringify(page.data?.events.map((e) => e.seq)) === "[1,2]", page.data);
step("list");

const updated = await client.PATCH(session, {
  params: { path },
  body: { stateDelta: null, displayName: "Weather", labels: null, ttl: null, expireTime: null },
});
check(updated.data?.displayName === "Weather" && updated.data.expireTime === null, updated.data);
step("update");

const before = await client.GET(session, { params: { path } });
const exported = await client.GET("/apps/{app_name}/users/{user_id}/sessions/{session_id}:export", {
  params: { path },
  headers: { Accept: "application/json" },
});
check(exported.data !== undefined && typeof exported.data !== "string", exported.error);
check(exported.data.header.id === id && exported.data.events.length === 2, exported.data);
step("export");

const deleted = await client.DELETE(session, { params: { path } });
check(deleted.response.status === 204, deleted.error);
const gone = await client.GET(session, { params: { path } });
check(gone.response.status === 404 && gone.error?.code === "session_not_found", gone.error);
step("delete");

const imports = "/apps/{app_name}/users/{user_id}/sessions:import";
const imported = await client.POST(imports, { params: { path: userPath }, body: exported.data });
check(imported.response.status === 201 && imported.data?.version === before.data?.version, imported.data);
const after = await client.GET(session, { params: { path } });
check(JSON.stringify(after.data) === JSON.stringify(before.data), after.data);
const reimported = await client.POST(imports, { params: { path: userPath }, body: exported.data });
check(reimported.response.status === 200, reimported.error);
await client.DELETE(session, { params: { path } });
step("import");
"""

TYPESCRIPT_FETCH_SMOKE = """\
// What a user of openapi-generator's typescript-fetch SDK writes: checked by tsc --strict.
import {
  Configuration,
  EventsApi,
  type EventIn,
  PortabilityApi,
  ProblemFromJSON,
  ResponseError,
  SessionsApi,
  SessionToJSON,
} from "./sdk/index.js";
import { app, base, big, check, stamp, step, user } from "./steps.js";

async function problem(call: Promise<unknown>, status: number, code: string): Promise<void> {
  try {
    await call;
  } catch (error) {
    check(error instanceof ResponseError && error.response.status === status, String(error));
    check(ProblemFromJSON(await error.response.json()).code === code, code);
    return;
  }
  check(false, `no ${status}`);
}

const configuration = new Configuration({ basePath: base }); // keys off: no token needed
const sessions = new SessionsApi(configuration);
const events = new EventsApi(configuration);
const portability = new PortabilityApi(configuration);
const at = { appName: app, userId: user };

// `events: null` is left out: this SDK sends a null array as none.
const created = await sessions.createSession({
  ...at,
  sessionCreate: {
    sessionId: null, state: null, events: null, displayName: null, labels: null, ttl: null, expireTime: null,
  },
});
check(created.version === 0 && created.parent === null && created.outcome === null, created);
check(created.displayName === null && created.expireTime === null, created);
const the = { ...at, sessionId: created.id };
step("create");

await problem(sessions.createSession({ ...at, sessionCreate: { sessionId: created.id } }), 409, "session_already_exists");
step("conflict");

const first: EventIn = {
  id: "e1",
  author: "model",
  invocationId: "inv-1",
  timestamp: stamp,
  partial: null,
  content: { role: "model", parts: [{ text: "Sunny." }] },
  usageMetadata: { promptTokenCount: big, candidatesTokenCount: null, totalTokenCount: big },
  actions: { stateDelta: { sky: "clear" } },
};
const stored = await events.appendEvent({ ...the, eventIn: first, ifMatch: '"0"' });
check(stored.seq === 1 && stored.timestamp === stamp, stored);
step("append");

await problem(events.appendEvent({ ...the, eventIn: { author: "user" }, ifMatch: '"0"' }), 412, "stale_session");
step("stale");

const second: EventIn = { id: "e2", author: "model", timestamp: stamp + 0.5, content: null, usageMetadata: { totalTokenCount: big } };
check((await events.appendEvent({ ...the, eventIn: second })).seq === 2, second);
const partial: EventIn = { author: "model", partial: true, content: { parts: [{ text: "Su" }] }, usageMetadata: null };
const echoed = await events.appendEventRaw({ ...the, eventIn: partial });
check(echoed.raw.status === 202 && (await echoed.value()).partial === true, "partial");
step("more");

const read = await sessions.getSession(the);
check(JSON.stringify(read.events.map((e) => e.timestamp)) === JSON.stringify([stamp, stamp + 0.5]), read.events);
check(read.usage.totalTokenCount === 2 * big && read.usage.promptTokenCount === big, read.usage);
check(JSON.stringify(read.state) === JSON.stringify({ sky: "clear" }), read.state);
step("get");

const listed = await sessions.listSessions(at);
check(listed.sessions.length === 1 && listed.sessions[0]?.id === created.id && listed.nextPageToken === null, listed);
const page = await events.listEvents(the);
check(JSON.stringify(page.events.map((e) => e.seq)) === "[1,2]", page);
step("list");

const updated = await sessions.updateSessionState({
  ...the,
  sessionUpdate: { stateDelta: null, displayName: "Weather", labels: null, ttl: null, expireTime: null },
});
check(updated.displayName === "Weather" && updated.expireTime === null, updated);
step("update");

const before = await sessions.getSession(the);
// Without `Accept: application/json` the export is NDJSON, which this SDK reads as one JSON.
const exported = await portability.exportSession(the, { headers: { Accept: "application/json" } });
check(exported.header.id === created.id && exported.events.length === 2, exported);
step("export");

const deleted = await sessions.deleteSessionRaw(the);
check(deleted.raw.status === 204, deleted.raw.status);
await problem(sessions.getSession(the), 404, "session_not_found");
step("delete");

const imported = await portability.importSessionRaw({ ...at, exportedSession: exported });
check(imported.raw.status === 201 && (await imported.value()).version === before.version, "import");
const after = await sessions.getSession(the);
check(JSON.stringify(SessionToJSON(after)) === JSON.stringify(SessionToJSON(before)), after);
const again = await portability.importSessionRaw({ ...at, exportedSession: exported });
check(again.raw.status === 200, again.raw.status);
await sessions.deleteSession(the);
step("import");
"""

OAPI_CODEGEN_SMOKE = """\
package main

// What a user of oapi-codegen's client writes: checked by go vet.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

func main() {
	ctx := context.Background()
	c, err := NewClientWithResponses(base) // keys off: no token needed
	must(err)
	asJSON := func(ctx context.Context, req *http.Request) error {
		req.Header.Set("Accept", "application/json")
		return nil
	}

	// Nulls in every nullable field: raw JSON, as the typed body leaves nil pointers out.
	nulls := `{"sessionId": null, "state": null, "events": null, "displayName": null, "labels": null, "ttl": null, "expireTime": null}`
	created, err := c.CreateSessionWithBodyWithResponse(ctx, app, user, "application/json", strings.NewReader(nulls))
	must(err)
	check(created.JSON201 != nil && created.JSON201.Version == 0, string(created.Body))
	check(created.JSON201.Parent == nil && created.JSON201.Outcome == nil && created.JSON201.DisplayName == nil && created.JSON201.ExpireTime == nil, string(created.Body))
	id := created.JSON201.Id
	step("create")

	again, err := c.CreateSessionWithResponse(ctx, app, user, SessionCreate{SessionId: &id})
	must(err)
	check(again.StatusCode() == 409 && again.ApplicationproblemJSON409.Code == "session_already_exists", string(again.Body))
	step("conflict")

	// The event as JSON, as an agent framework hands it over.
	var first EventIn
	must(json.Unmarshal([]byte(fmt.Sprintf(`{"id": "e1", "author": "model", "invocationId": "inv-1", "timestamp": %v, "partial": null,
		"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "actions": {"stateDelta": {"sky": "clear"}},
		"usageMetadata": {"promptTokenCount": %d, "candidatesTokenCount": null, "totalTokenCount": %d}}`, stamp, big, big)), &first))
	stored, err := c.AppendEventWithResponse(ctx, app, user, id, &AppendEventParams{IfMatch: ptr(`"0"`)}, first)
	must(err)
	check(stored.JSON201 != nil && stored.JSON201.Seq == 1 && stored.JSON201.Timestamp == stamp, string(stored.Body))
	step("append")

	stale, err := c.AppendEventWithResponse(ctx, app, user, id, &AppendEventParams{IfMatch: ptr(`"0"`)}, EventIn{Author: ptr("user")})
	must(err)
	check(stale.StatusCode() == 412 && stale.ApplicationproblemJSON412.Code == "stale_session", string(stale.Body))
	step("stale")

	var usage UsageMetadata
	must(json.Unmarshal([]byte(fmt.Sprintf(`{"totalTokenCount": %d}`, big)), &usage))
	more, err := c.AppendEventWithResponse(ctx, app, user, id, nil, EventIn{Id: ptr("e2"), Author: ptr("model"), Timestamp: ptr(stamp + 0.5), UsageMetadata: &usage})
	must(err)
	check(more.JSON201 != nil && more.JSON201.Seq == 2, string(more.Body))
	partial, err := c.AppendEventWithBodyWithResponse(ctx, app, user, id, nil, "application/json",
		strings.NewReader(`{"author": "model", "partial": true, "content": {"parts": [{"text": "Su"}]}, "usageMetadata": null}`))
	must(err)
	check(partial.StatusCode() == 202 && partial.JSON202 != nil, string(partial.Body))
	retried, err := c.AppendEventWithResponse(ctx, app, user, id, nil, first) // a retry: the event as stored
	must(err)
	check(retried.StatusCode() == 200 && retried.JSON200 != nil, string(retried.Body))
	retry, err := retried.JSON200.AsEvent()
	must(err)
	check(retry.Seq == 1, retry)
	step("more")

	read, err := c.GetSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	check(read.JSON200 != nil && len(read.JSON200.Events) == 2, string(read.Body))
	check(read.JSON200.Events[0].Timestamp == stamp && read.JSON200.Events[1].Timestamp == stamp+0.5, read.JSON200.Events)
	check(read.JSON200.Usage.PromptTokenCount == big && read.JSON200.Usage.TotalTokenCount == 2*big, read.JSON200.Usage)
	check(reflect.DeepEqual(map[string]any(read.JSON200.State), map[string]any{"sky": "clear"}), read.JSON200.State)
	step("get")

	listed, err := c.ListSessionsWithResponse(ctx, app, user, nil)
	must(err)
	check(listed.JSON200 != nil && len(listed.JSON200.Sessions) == 1 && listed.JSON200.Sessions[0].Id == id && listed.JSON200.NextPageToken == nil, string(listed.Body))
	page, err := c.ListEventsWithResponse(ctx, app, user, id, nil)
	must(err)
	check(page.JSON200 != nil && len(page.JSON200.Events) == 2 && page.JSON200.Events[1].Seq == 2, string(page.Body))
	step("list")

	update := `{"stateDelta": null, "displayName": "Weather", "labels": null, "ttl": null, "expireTime": null}`
	updated, err := c.UpdateSessionStateWithBodyWithResponse(ctx, app, user, id, nil, "application/json", strings.NewReader(update))
	must(err)
	check(updated.JSON200 != nil && *updated.JSON200.DisplayName == "Weather" && updated.JSON200.ExpireTime == nil, string(updated.Body))
	step("update")

	before, err := c.GetSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	exported, err := c.ExportSessionWithResponse(ctx, app, user, id, asJSON)
	must(err)
	check(exported.JSON200 != nil && exported.JSON200.Header.Id == id && len(exported.JSON200.Events) == 2, string(exported.Body))
	raw, err := c.ExportSession(ctx, app, user, id) // NDJSON, read as it comes
	must(err)
	ndjson, err := io.ReadAll(raw.Body)
	must(err)
	must(raw.Body.Close())
	check(strings.Count(string(ndjson), "\\n") == 3, string(ndjson))
	step("export")

	deleted, err := c.DeleteSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	check(deleted.StatusCode() == 204, deleted.StatusCode())
	gone, err := c.GetSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	check(gone.StatusCode() == 404 && gone.ApplicationproblemJSON404.Code == "session_not_found", string(gone.Body))
	step("delete")

	imported, err := c.ImportSessionWithResponse(ctx, app, user, *exported.JSON200)
	must(err)
	check(imported.JSON201 != nil && imported.JSON201.Version == before.JSON200.Version, string(imported.Body))
	after, err := c.GetSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	check(string(after.Body) == string(before.Body), string(after.Body), string(before.Body))
	reimported, err := c.ImportSessionWithResponse(ctx, app, user, *exported.JSON200)
	must(err)
	check(reimported.StatusCode() == 200, string(reimported.Body))
	deleted, err = c.DeleteSessionWithResponse(ctx, app, user, id, nil)
	must(err)
	check(deleted.StatusCode() == 204, deleted.StatusCode())
	step("import")
}
"""

OPENAPI_GENERATOR_GO_SMOKE = """\
package main

// What a user of openapi-generator's Go SDK writes: checked by go vet.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"

	sdk "github.com/sessionary/sdk"
)

func problem(err error, response *http.Response, status int, code string) {
	var failed *sdk.GenericOpenAPIError
	check(errors.As(err, &failed), err)
	answer, ok := failed.Model().(sdk.Problem)
	check(ok && response.StatusCode == status && answer.Code == code, string(failed.Body()))
}

func main() {
	ctx := context.Background()
	configuration := sdk.NewConfiguration() // keys off: no token needed
	configuration.Servers = sdk.ServerConfigurations{{URL: base}}
	client := sdk.NewAPIClient(configuration)
	sessions, events, portability := client.SessionsAPI, client.EventsAPI, client.PortabilityAPI

	// Null where the SDK can send one: state, events and labels, nil, are left out instead.
	nulls := sdk.SessionCreate{}
	nulls.SetSessionIdNil()
	nulls.SetDisplayNameNil()
	nulls.SetTtlNil()
	nulls.SetExpireTimeNil()
	created, _, err := sessions.CreateSession(ctx, app, user).SessionCreate(nulls).Execute()
	must(err)
	check(created.Version == 0 && created.Parent.Get() == nil && created.Outcome.Get() == nil, created)
	check(created.DisplayName.Get() == nil && created.ExpireTime.Get() == nil, created)
	id := created.Id
	step("create")

	_, response, err := sessions.CreateSession(ctx, app, user).SessionCreate(sdk.SessionCreate{SessionId: *sdk.NewNullableString(&id)}).Execute()
	problem(err, response, 409, "session_already_exists")
	step("conflict")

	// The event as JSON, as an agent framework hands it over.
	var first sdk.EventIn
	must(json.Unmarshal([]byte(`{"id": "e1", "author": "model", "invocationId": "inv-1", "partial": null,
		"content": {"role": "model", "parts": [{"text": "Sunny."}]},
		"usageMetadata": {"candidatesTokenCount": null}, "actions": {"stateDelta": {"sky": "clear"}}}`), &first))
	first.SetTimestamp(stamp)
	first.UsageMetadata.Get().SetPromptTokenCount(big)
	first.UsageMetadata.Get().SetTotalTokenCount(big)
	stored, _, err := events.AppendEvent(ctx, app, user, id).EventIn(first).IfMatch(`"0"`).Execute()
	must(err)
	check(stored.Event != nil && stored.Event.Seq == 1 && stored.Event.Timestamp == stamp, stored)
	step("append")

	_, response, err = events.AppendEvent(ctx, app, user, id).EventIn(sdk.EventIn{Author: ptr("user")}).IfMatch(`"0"`).Execute()
	problem(err, response, 412, "stale_session")
	step("stale")

	usage := sdk.UsageMetadata{}
	usage.SetTotalTokenCount(big)
	second := sdk.EventIn{Id: ptr("e2"), Author: ptr("model"), Timestamp: ptr(stamp + 0.5)}
	second.SetContentNil()
	second.SetUsageMetadata(usage)
	more, _, err := events.AppendEvent(ctx, app, user, id).EventIn(second).Execute()
	must(err)
	check(more.Event != nil && more.Event.Seq == 2, more)
	partial := sdk.EventIn{Author: ptr("model")}
	partial.SetPartial(true)
	partial.SetContent(sdk.Content{Parts: []sdk.Part{{Text: *sdk.NewNullableString(ptr("Su"))}}})
	partial.SetUsageMetadataNil()
	echoed, response, err := events.AppendEvent(ctx, app, user, id).EventIn(partial).Execute()
	must(err)
	check(response.StatusCode == 202 && echoed.PartialEvent != nil, echoed)
	step("more")

	read, _, err := sessions.GetSession(ctx, app, user, id).Execute()
	must(err)
	check(len(read.Events) == 2 && read.Events[0].Timestamp == stamp && read.Events[1].Timestamp == stamp+0.5, read.Events)
	check(read.Usage.TotalTokenCount == 2*big && read.Usage.PromptTokenCount == big, read.Usage)
	check(reflect.DeepEqual(read.State, map[string]any{"sky": "clear"}), read.State)
	step("get")

	listed, _, err := sessions.ListSessions(ctx, app, user).Execute()
	must(err)
	check(len(listed.Sessions) == 1 && listed.Sessions[0].Id == id && listed.NextPageToken.Get() == nil, listed)
	page, _, err := events.ListEvents(ctx, app, user, id).Execute()
	must(err)
	check(len(page.Events) == 2 && page.Events[0].Seq == 1 && page.Events[1].Seq == 2, page)
	step("list")

	update := sdk.SessionUpdate{}
	update.SetDisplayName("Weather")
	update.SetTtlNil()
	update.SetExpireTimeNil()
	updated, _, err := sessions.UpdateSessionState(ctx, app, user, id).SessionUpdate(update).Execute()
	must(err)
	check(updated.DisplayName.Get() != nil && *updated.DisplayName.Get() == "Weather" && updated.ExpireTime.Get() == nil, updated)
	step("update")

	before, _, err := sessions.GetSession(ctx, app, user, id).Execute()
	must(err)
	exported, _, err := portability.ExportSession(ctx, app, user, id).Execute()
	must(err)
	check(exported.Header.Id == id && len(exported.Events) == 2, exported)
	step("export")

	response, err = sessions.DeleteSession(ctx, app, user, id).Execute()
	must(err)
	check(response.StatusCode == 204, response.Status)
	_, response, err = sessions.GetSession(ctx, app, user, id).Execute()
	problem(err, response, 404, "session_not_found")
	step("delete")

	imported, response, err := portability.ImportSession(ctx, app, user).ExportedSession(*exported).Execute()
	must(err)
	check(response.StatusCode == 201 && imported.Version == before.Version, imported)
	after, _, err := sessions.GetSession(ctx, app, user, id).Execute()
	must(err)
	check(reflect.DeepEqual(after, before), after, before)
	_, response, err = portability.ImportSession(ctx, app, user).ExportedSession(*exported).Execute()
	must(err)
	check(response.StatusCode == 200, response.Status)
	_, err = sessions.DeleteSession(ctx, app, user, id).Execute()
	must(err)
	step("import")
}
"""


@pytest.fixture(scope="module")
def openapi_generator(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """openapi-generator's `python`, `typescript-fetch` and `go` SDKs, each in the folder of
    its name: made together, one JVM's threads, by the jar fetched once into pytest's cache."""
    java = tool("java", "default-jre-headless")
    version = OPENAPI_GENERATOR.rpartition(":")[2]
    jar = maven_jar(pytestconfig, OPENAPI_GENERATOR, f"openapi-generator-cli-{version}.jar")
    root = tmp_path_factory.mktemp("openapi-generator")
    # Node ESM resolves relative imports by their full names, and an SDK has no tests or docs.
    options = {
        "python": "additionalProperties: {packageName: sessionary_gen, projectName: sessionary-gen}",
        "typescript-fetch": "additionalProperties: {importFileExtension: .js, supportsES6: true}",
        "go": "gitUserId: sessionary\ngitRepoId: sdk\nadditionalProperties: {packageName: sessionary}",
    }
    for generator, more in options.items():
        (root / f"{generator}.yaml").write_text(
            f"generatorName: {generator}\ninputSpec: {OPENAPI_PATH}\noutputDir: {generator}\n"
            "globalProperties: {apiTests: false, modelTests: false, apiDocs: false, modelDocs: false}\n"
            f"{more}\n"
        )
    # A run of seconds: the JIT's optimising tier would cost more than it saves (half the CPU).
    jvm = [java, "-XX:TieredStopAtLevel=1", "-jar", str(jar)]
    output = run(
        [*jvm, "batch", "--fail-fast", *(f"{name}.yaml" for name in options)],
        root,
        600,
    )
    assert f"[SUCCESS] Batch generation finished {len(options)} generators successfully" in output
    assert "ERROR" not in output, output
    return root


@pytest.fixture(scope="module")
def npm_tools(pytestconfig: pytest.Config) -> Path:
    """The node_modules of the TypeScript client's lock file (openapi-typescript, openapi-fetch
    and TypeScript at its pins), installed once into pytest's cache."""
    npm = tool("npm", "npm")
    lock = (TYPESCRIPT_CLIENT / "package-lock.json").read_bytes()
    folder = cache_folder(pytestconfig, f"npm-{hashlib.sha256(lock).hexdigest()[:16]}")
    if not (folder / "node_modules" / ".bin" / "tsc").exists():
        shutil.copy(TYPESCRIPT_CLIENT / "package.json", folder)
        shutil.copy(TYPESCRIPT_CLIENT / "package-lock.json", folder)
        run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], folder, 600)
    return folder / "node_modules"


@pytest.fixture(scope="module")
def python_dateutil(pytestconfig: pytest.Config) -> Path:
    """python-dateutil, which openapi-generator's Python SDK imports and the venv lacks,
    installed once into pytest's cache."""
    folder = cache_folder(pytestconfig, PYTHON_DATEUTIL.replace("==", "-"))
    if not (folder / "dateutil").is_dir():
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(folder)]
        run([*pip, PYTHON_DATEUTIL], folder, 300)
    return folder


def typescript(folder: Path, node_modules: Path) -> list[str]:
    """Check `smoke.ts` and what it imports with `tsc --strict`, into `out/` as ES modules for
    Node; the command that runs it."""
    (folder / "node_modules").symlink_to(node_modules)
    (folder / "package.json").write_text('{"type": "module"}\n')
    (folder / "steps.ts").write_text(TYPESCRIPT_STEPS)
    options = {"target": "ES2022", "module": "NodeNext", "lib": ["ES2022", "DOM"]}
    options |= {"types": ["node"], "skipLibCheck": True, "outDir": "out"}
    config = {"compilerOptions": options, "files": ["smoke.ts"]}
    (folder / "tsconfig.json").write_text(json.dumps(config))
    run([str(node_modules / ".bin" / "tsc"), "--strict", "-p", "tsconfig.json"], folder, 300)
    return [tool("node", "nodejs"), "out/smoke.js"]


def test_openapi_python_client_generates_a_typed_sdk_that_works(
    tmp_path: Path, live_server: str, app_name: str
) -> None:
    generator = TOOLS / "openapi-python-client"
    if not generator.exists():
        missing_tool("openapi-python-client", "", "the dev extra: make install")
    config = tmp_path / "config.yaml"
    # An artifact's bytes are of its own media type (`*/*`), which it reads as bytes when told.
    config.write_text(
        "project_name_override: sessionary-sdk\npackage_name_override: sessionary_sdk\n"
        "content_type_overrides: {'*/*': application/octet-stream}\n"
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
    # It reads no NDJSON, and says so: the JSON form of a session's import is what it uses; a
    # user's export and import are NDJSON alone (a user's data may be larger than memory).
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert warnings == [
        "WARNING parsing GET /apps/{app_name}/users/{user_id}:export within portability.",
        "WARNING parsing POST /apps/{app_name}/users/{user_id}:import within portability. "
        "Endpoint will not be generated.",
        "WARNING parsing POST /apps/{app_name}/users/{user_id}/sessions:import within portability.",
    ], output
    assert "Unsupported content type application/x-ndjson" in output
    (tmp_path / "steps.py").write_text(PYTHON_STEPS)
    (tmp_path / "smoke.py").write_text(OPENAPI_PYTHON_CLIENT_SMOKE)
    # The SDK's models and operations, and the smoke's use of them; not the generator's own
    # client.py, which this mypy finds fault with whatever the spec.
    run(
        [
            str(TOOLS / "mypy"),
            *("--strict", "--follow-imports=silent", "--no-incremental"),
            *("sessionary_sdk/models", "sessionary_sdk/api", "smoke.py", "steps.py"),
        ],
        tmp_path,
        180,
    )
    smoke([sys.executable, "smoke.py"], tmp_path, live_server, app_name)


def test_openapi_generator_python_sdk_type_checks_and_works(
    openapi_generator: Path, python_dateutil: Path, live_server: str, app_name: str
) -> None:
    project = openapi_generator / "python"
    (project / "steps.py").write_text(PYTHON_STEPS)
    (project / "smoke.py").write_text(OPENAPI_GENERATOR_PYTHON_SMOKE)
    mypy = [str(TOOLS / "mypy"), "--follow-imports=silent", "--no-incremental"]
    # The SDK as mypy checks by default (strict, its untyped helpers would fail whatever the
    # spec), and the smoke's use of it strictly.
    run([*mypy, "sessionary_gen"], project, 180, MYPYPATH=str(python_dateutil))
    run([*mypy, "--strict", "smoke.py", "steps.py"], project, 180, MYPYPATH=str(python_dateutil))
    smoke(
        [sys.executable, "smoke.py"],
        project,
        live_server,
        app_name,
        PYTHONPATH=str(python_dateutil),
    )


def test_openapi_typescript_types_with_openapi_fetch_type_check_and_work(
    npm_tools: Path, tmp_path: Path, live_server: str, app_name: str
) -> None:
    output = run(
        [str(npm_tools / ".bin" / "openapi-typescript"), str(OPENAPI_PATH), "-o", "schema.ts"],
        tmp_path,
        120,
    )
    assert "warn" not in output.lower() and "error" not in output.lower(), output
    (tmp_path / "smoke.ts").write_text(OPENAPI_FETCH_SMOKE)
    smoke(typescript(tmp_path, npm_tools), tmp_path, live_server, app_name)


def test_openapi_generator_typescript_fetch_sdk_type_checks_and_works(
    openapi_generator: Path, npm_tools: Path, tmp_path: Path, live_server: str, app_name: str
) -> None:
    shutil.copytree(openapi_generator / "typescript-fetch", tmp_path / "sdk")
    (tmp_path / "smoke.ts").write_text(TYPESCRIPT_FETCH_SMOKE)
    smoke(typescript(tmp_path, npm_tools), tmp_path, live_server, app_name)


def test_oapi_codegen_generates_a_go_client_that_vets_and_works(
    tmp_path: Path, live_server: str, app_name: str
) -> None:
    go_tool = go()
    (tmp_path / "go.mod").write_text("module smoke\n\ngo 1.22\n")
    (tmp_path / "config.yaml").write_text(
        "package: main\noutput: sessionary.gen.go\ngenerate:\n  models: true\n  client: true\n"
    )
    run([go_tool, "run", OAPI_CODEGEN, "-config", "config.yaml", str(OPENAPI_PATH)], tmp_path, 300)
    generated = (tmp_path / "sessionary.gen.go").read_text()
    assert "float32" not in generated and "int32" not in generated
    (tmp_path / "steps.go").write_text(GO_STEPS)
    (tmp_path / "main.go").write_text(OAPI_CODEGEN_SMOKE)
    run([go_tool, "get", OAPI_RUNTIME], tmp_path, 120)
    run([go_tool, "mod", "tidy"], tmp_path, 120)
    run([go_tool, "vet", "."], tmp_path, 180)
    smoke([go_tool, "run", "."], tmp_path, live_server, app_name)


def test_openapi_generator_go_sdk_vets_and_works(
    openapi_generator: Path, tmp_path: Path, live_server: str, app_name: str
) -> None:
    go_tool = go()
    sdk = openapi_generator / "go"
    generated = "".join(path.read_text() for path in sdk.glob("model_*.go"))
    assert "float32" not in generated and "int32" not in generated
    (tmp_path / "go.mod").write_text(
        "module smoke\n\ngo 1.23\n\nrequire github.com/sessionary/sdk v0.0.0\n\n"
        f"replace github.com/sessionary/sdk => {sdk}\n"
    )
    (tmp_path / "steps.go").write_text(GO_STEPS)
    (tmp_path / "main.go").write_text(OPENAPI_GENERATOR_GO_SMOKE)
    run([go_tool, "vet", ".", "github.com/sessionary/sdk"], tmp_path, 180)
    smoke([go_tool, "run", "."], tmp_path, live_server, app_name)
