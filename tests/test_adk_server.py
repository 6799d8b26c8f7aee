"""`/adk`: ADK's own API server's session endpoints. The same requests are sent to google-adk's
real server (`google.adk.cli.fast_api`, in-memory sessions) and to Sessionary under `/adk`, and
the answers compared; ADK's own HTTP client (`AdkWebServerClient`) is then run against a real
Sessionary process."""

import json
import re
import subprocess
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from google.adk.cli.conformance.adk_web_server_client import AdkWebServerClient
from google.adk.events.event import Event

from app.config import Settings
from tests.fixtures import client_of, keys_command, start_server, stop_server

SESSIONS = "/apps/shop/users/alice/sessions"
HELLO = {"author": "user", "invocationId": "i-1", "content": {"parts": [{"text": "hi"}]}}

# (method, path under the server's root, JSON body or None): ADK's session endpoints, each
# answer and each failure. The raw body `b"…"` is sent as is, with a JSON content type.
REQUESTS: list[tuple[str, str, Any]] = [
    ("POST", SESSIONS, {"state": {"mood": "calm", "app:tier": "gold", "temp:x": 1}}),
    ("POST", SESSIONS, None),
    ("POST", SESSIONS, {"sessionId": "s1", "state": {"user:name": "Alice"}}),
    ("POST", SESSIONS, {"session_id": "s1"}),  # taken: 409
    ("POST", SESSIONS, {"session_id": "s2", "events": [HELLO, {**HELLO, "invocationId": "i-2"}]}),
    ("POST", f"{SESSIONS}/s3", {"k": 1, "app:tier": "silver"}),  # ADK's older create
    ("POST", f"{SESSIONS}/s4", None),
    ("POST", f"{SESSIONS}/s3", {"k": 2}),  # taken: 409
    ("GET", f"{SESSIONS}/s2", None),
    ("GET", f"{SESSIONS}/nope", None),
    ("PATCH", f"{SESSIONS}/s2", {"state_delta": {"step": 1, "user:seen": True, "temp:t": 0}}),
    ("PATCH", f"{SESSIONS}/s2", {"stateDelta": {"step": 2}}),
    ("PATCH", f"{SESSIONS}/nope", {"stateDelta": {"step": 1}}),
    ("PATCH", f"{SESSIONS}/s2", {}),
    ("GET", SESSIONS, None),
    ("GET", "/apps/shop/users/nobody/sessions", None),
    ("DELETE", f"{SESSIONS}/s4", None),
    ("DELETE", f"{SESSIONS}/s4", None),  # gone already: still 200 null
    ("GET", f"{SESSIONS}/s4", None),
    # What ADK's server refuses of a create.
    ("POST", SESSIONS, {"sessionId": "s5", "options": {"ttl": 5}}),
    ("POST", SESSIONS, {"sessionId": "s6", "events": [{**HELLO, "actions": {"stateDelta": {}}}]}),
    ("POST", SESSIONS, {"sessionId": "s7", "events": [{**HELLO, "actions": {"escalate": 1}}]}),
    ("POST", SESSIONS, {"sessionId": "s7", "events": [{**HELLO, "longRunningToolIds": ["c"]}]}),
    (
        "POST",
        SESSIONS,
        {
            "sessionId": "s8",
            "events": [
                {
                    "author": "user",
                    "content": {"parts": [{"functionResponse": {"name": "adk_request_input"}}]},
                }
            ],
        },
    ),
    ("POST", SESSIONS, {"state": [1]}),
    ("POST", SESSIONS, b"{not json"),
    ("GET", SESSIONS, None),
]


def normalized(answer: httpx.Response, names: dict[str, str]) -> tuple[int, Any]:
    """The answer without what differs between any two servers: generated ids (named in order
    of appearance), times; events as ADK's `Event` model reads them."""
    body = answer.json()

    def session(item: dict[str, Any]) -> dict[str, Any]:
        assert isinstance(item.pop("lastUpdateTime"), float)
        # ADK's server answers a PATCH with the `temp:` keys of its delta in the state (its
        # in-memory session holds them for an invocation); Sessionary never returns them.
        item["state"] = {k: v for k, v in item["state"].items() if not k.startswith("temp:")}
        item["id"] = names.setdefault(item["id"], f"generated-{len(names)}")
        item["events"] = [event(each) for each in item["events"]]
        return item

    def event(item: dict[str, Any]) -> dict[str, Any]:
        read = Event.model_validate(item).model_dump(exclude_none=True, by_alias=True, mode="json")
        assert isinstance(read.pop("timestamp"), float) and read.pop("id")
        read["invocationId"] = re.sub(r"^p-[0-9a-f-]{36}$", "p-<uuid>", read["invocationId"])
        return read

    if isinstance(body, list):
        body = sorted((session(item) for item in body), key=lambda item: item["id"])
    elif isinstance(body, dict) and "appName" in body:
        body = session(body)
    elif isinstance(body, dict) and isinstance(body.get("detail"), str):
        for generated, name in names.items():
            body["detail"] = body["detail"].replace(generated, name)
    elif isinstance(body, dict):  # FastAPI's validation errors: where and which kind
        body = [(error["loc"], error["type"]) for error in body["detail"]]
    return answer.status_code, body


async def answers(http: httpx.AsyncClient, prefix: str) -> list[tuple[int, Any]]:
    names: dict[str, str] = {}
    found = []
    for method, path, body in REQUESTS:
        if isinstance(body, bytes):
            sent = {"content": body, "headers": {"Content-Type": "application/json"}}
        else:
            sent = {"json": body} if body is not None else {}
        found.append(normalized(await http.request(method, prefix + path, **sent), names))
    return found


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    """A real Sessionary process for this module only (the suite-wide one would hold its
    connections open through the concurrency tests that follow)."""
    process, base_url = start_server(database_url)
    try:
        yield base_url
    finally:
        stop_server(process)


@pytest.fixture(scope="module")
def adk_server() -> Iterator[FastAPI]:
    """google-adk's own API server, with its in-memory session service and no agents."""
    from google.adk.cli.fast_api import get_fast_api_app

    with tempfile.TemporaryDirectory() as agents, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADK's experimental features warn as they load
        yield get_fast_api_app(agents_dir=agents, web=False, session_service_uri="memory://")


async def test_answers_as_adks_own_server_does(
    client: httpx.AsyncClient, adk_server: FastAPI
) -> None:
    transport = httpx.ASGITransport(adk_server)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as adk:
        expected = await answers(adk, "")
    got = await answers(client, "/adk")
    for request, want, answer in zip(REQUESTS, expected, got, strict=True):
        assert answer == want, (request, answer, want)


async def test_adks_own_client_works_against_sessionary(server: str) -> None:
    async with AdkWebServerClient(base_url=f"{server}/adk") as adk:
        created = await adk.create_session(app_name="shop", user_id="bob", state={"a": 1})
        assert created.state == {"a": 1}
        updated = await adk.update_session(
            app_name="shop", user_id="bob", session_id=created.id, state_delta={"b": 2}
        )
        assert updated.state == {"a": 1, "b": 2}
        assert [event.actions.state_delta for event in updated.events] == [{"b": 2}]
        read = await adk.get_session(app_name="shop", user_id="bob", session_id=created.id)
        assert read == updated
        await adk.delete_session(app_name="shop", user_id="bob", session_id=created.id)
        with pytest.raises(httpx.HTTPStatusError) as gone:
            await adk.get_session(app_name="shop", user_id="bob", session_id=created.id)
        assert gone.value.response.status_code == 404


@pytest.mark.parametrize(
    "event",
    [
        {"author": "user", "content": "hi"},
        {"author": "user", "content": {"parts": 5}},
        {"author": "user", "content": {"parts": ["hi", {"functionCall": "f"}, None]}},
        {"author": "user", "longRunningToolIds": "c1"},
        {"author": "user", "actions": "none"},
        {"author": "user", "actions": {"stateDelta": []}},
        {"author": 5},
    ],
)
async def test_odd_first_events_are_refused_or_stored_never_a_5xx(
    client: httpx.AsyncClient, event: dict[str, Any]
) -> None:
    answer = await client.post("/adk" + SESSIONS, json={"events": [event]})
    assert answer.status_code in (200, 400, 422), answer.text
    assert isinstance(
        answer.json()["detail"] if answer.is_error else answer.json()["id"], (str, list)
    )


async def test_one_store_under_both_apis(client: httpx.AsyncClient) -> None:
    """A session made through `/adk` is an ordinary session, and the other way round."""
    await client.post("/adk" + SESSIONS, json={"sessionId": "a", "state": {"x": 1}})
    native = await client.post(SESSIONS, json={"sessionId": "b", "events": [HELLO]})
    assert (await client.get(f"{SESSIONS}/a")).json()["state"] == {"x": 1}
    via_adk = (await client.get(f"/adk{SESSIONS}/b")).json()
    assert set(via_adk) == {"id", "appName", "userId", "state", "events", "lastUpdateTime"}
    stored = native.json()["events"][0]
    assert via_adk["events"] == [{key: stored[key] for key in stored if key != "seq"}]
    listed = (await client.get("/adk" + SESSIONS)).json()
    assert sorted(item["id"] for item in listed) == ["a", "b"]


@pytest.mark.parametrize(
    "path",
    [
        "/adk/apps/shop/users/%FF/sessions",  # invalid UTF-8: would be stored as U+FFFD
        "/adk/apps/%FE/users/alice/sessions",
        "/adk/apps/shop/users/a%2Fb/sessions",
        "/adk/apps/shop/users/%2E%2E/sessions",
        "/adk/apps/shop/users/alice/sessions/%2E%2E",
        "/adk/apps/shop/users/alice/sessions/%FF",
    ],
)
async def test_ids_follow_the_apis_rules_under_adk_too(
    client: httpx.AsyncClient, path: str
) -> None:
    """Two ids that differ only in invalid bytes must not collide as the same U+FFFD id."""
    answer = await client.post(path, json={})
    assert answer.status_code == 422, answer.text
    assert set(answer.json()) == {"detail"} and isinstance(answer.json()["detail"], str)
    assert (await client.get("/apps")).json()["apps"] == []


async def test_a_listing_leaves_out_adks_evaluation_sessions(client: httpx.AsyncClient) -> None:
    for session_id in ("adk-eval-session-1", "___eval___session___2", "real"):
        await client.post(SESSIONS, json={"sessionId": session_id})
    listed = (await client.get("/adk" + SESSIONS)).json()
    assert [item["id"] for item in listed] == ["real"]


async def test_a_listing_has_every_session_past_one_page(client: httpx.AsyncClient) -> None:
    for number in range(1001):
        await client.post(SESSIONS, json={"sessionId": f"s{number:04}"})
    listed = (await client.get("/adk" + SESSIONS)).json()
    assert len(listed) == 1001


@pytest.fixture(scope="module")
async def secured(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(Settings(database_url=database_url, auth=True)) as http:
        yield http


async def test_keys_are_checked_as_on_the_native_api(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    alice = keys_command(database_url, "create", "--app", "shop", "--user", "alice")
    refused = await secured.get("/adk" + SESSIONS)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == "Bearer"
    assert isinstance(refused.json()["detail"], str)
    as_alice = {"Authorization": f"Bearer {alice}"}
    assert (await secured.get("/adk" + SESSIONS, headers=as_alice)).status_code == 200
    other = await secured.get("/adk/apps/shop/users/bob/sessions", headers=as_alice)
    assert other.status_code == 403


def test_the_readme_example_runs_as_written(server: str) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("### Tools written for `adk api_server`", 1)[1]
    example = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert example is not None
    script = example.group(1).replace("http://127.0.0.1:8000", server)
    ran = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, check=True)
    answers, read, decoder = [], 0, json.JSONDecoder()
    while read < len(ran.stdout):  # curl prints the answers back to back
        answer, read = decoder.raw_decode(ran.stdout, read)
        answers.append(answer)
    assert [item.get("id") for item in answers[:3]] == ["s1", "s2", "s1"]
    assert answers[2]["events"][0]["actions"] == {"stateDelta": {"step": 1}}
    assert [item["id"] for item in answers[3]] == ["s2", "s1"]  # least recently updated first
    assert answers[4:] == [{"detail": "Session not found"}, None]
