"""One set of event rules for every path that writes an event: each rule a path can break is
refused there (4xx problem+json), and nothing is written, whichever path it came by.

A path that composes the event itself (close, rewind, a state PATCH) wraps the client's value
in a few levels of its own, so it is the composed event that must hold to the rules: an event
deeper than an append could carry could never be exported and imported again.
"""

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.helpers import APP, SESSIONS, USER, assert_problem, create_session, session_url

MAX_DEPTH = 64  # the default SESSIONARY_MAX_JSON_DEPTH
MAX_EVENT_BYTES = 4 * 1024 * 1024  # the default SESSIONARY_MAX_EVENT_BYTES
P, C = session_url("p"), session_url("c")


def nested(levels: int) -> Any:
    """A value `levels` arrays deep."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# Each rule as an event breaks it; a path that composes its event breaks it through its input.
RULES: dict[str, dict[str, Any]] = {
    "nested too deep": {"content": {"role": "user", "deep": nested(MAX_DEPTH)}},
    "an id with a slash": {"id": "a/b"},
    "an id with a control character": {"id": "a\x01b"},
    "a timestamp out of range": {"timestamp": -1e300},
    "partial": {"partial": True},
    "too large": {"content": {"role": "user", "parts": [{"text": "x" * MAX_EVENT_BYTES}]}},
}


def bad_event(rule: str) -> dict[str, Any]:
    return {"author": "user", **RULES[rule]}


async def setup(client: httpx.AsyncClient) -> None:
    """`p`: a session whose state holds a value as deep as a create takes, an invocation that
    changes it, a function call and a text event; `c`: a child made for the call."""
    await create_session(client, sessionId="p", state={"k": nested(MAX_DEPTH - 2)})
    events = [
        {
            "id": "call",
            "author": "planner",
            "invocationId": "inv-1",
            "content": {"role": "model", "parts": [{"functionCall": {"id": "f1", "name": "f"}}]},
            "actions": {"stateDelta": {"k": 1}},
        },
        {"id": "text", "author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}},
    ]
    response = await client.post(f"{P}/events:batch", json={"events": events})
    assert response.status_code == 201, response.text
    child = await client.post(f"{P}/children", json={"sessionId": "c", "functionCallId": "f1"})
    assert child.status_code == 201, child.text


async def snapshot(client: httpx.AsyncClient) -> list[Any]:
    reads = [P, C, f"{P}/pending", SESSIONS, f"/apps/{APP}/users/{USER}/state"]
    return [(await client.get(url)).json() for url in reads]


def export_of(event: dict[str, Any]) -> bytes:
    """An export of a new session `imported` holding `event` at seq 1."""
    header = {
        "format": "sessionary.session.v1",
        "id": "imported",
        "appName": APP,
        "userId": USER,
        "state": {},
        "lastUpdateTime": 1.0,
        "createTime": 1.0,
        "version": 1,
        "kind": "root",
        "parent": None,
        "status": "open",
        "outcome": None,
        "displayName": None,
        "labels": {},
        "expireTime": None,
        "baseSeq": 0,
        "baseState": {},
        "eventCount": 1,
    }
    line = {"id": "i1", "timestamp": 1.0, **event, "seq": 1}
    return b"".join(json.dumps(record).encode() + b"\n" for record in (header, line))


Write = Callable[[httpx.AsyncClient, str], Awaitable[httpx.Response]]
BIG = "x" * MAX_EVENT_BYTES


def _post(url: str, body: Callable[[str], Any]) -> Write:
    async def write(client: httpx.AsyncClient, rule: str) -> httpx.Response:
        return await client.post(url, json=body(rule))

    return write


async def _import(client: httpx.AsyncClient, rule: str) -> httpx.Response:
    return await client.post(
        f"{SESSIONS}:import",
        content=export_of(bad_event(rule)),
        headers={"content-type": "application/x-ndjson"},
    )


async def _rewrite(client: httpx.AsyncClient, rule: str) -> httpx.Response:
    assert rule == "too large"
    return await client.patch(f"{P}/events/text", json={"content": {"parts": [{"text": BIG}]}})


async def _state_patch(client: httpx.AsyncClient, rule: str) -> httpx.Response:
    assert rule == "nested too deep"  # as deep as the body takes: the event is deeper
    return await client.patch(P, json={"stateDelta": {"k": nested(MAX_DEPTH - 2)}})


def _close(rule: str) -> dict[str, Any]:
    result = {"nested too deep": nested(MAX_DEPTH - 4), "too large": BIG}[rule]
    return {"outcome": "completed", "result": result}


def _rewind(rule: str) -> dict[str, Any]:
    assert rule == "nested too deep"  # it restores `k` as deep as the create set it
    return {"beforeInvocationId": "inv-1"}


def _compact(rule: str) -> dict[str, Any]:
    assert rule == "too large"
    return {"strategy": "summary", "summary": BIG}


EVERY_RULE = list(RULES)
SENT_EVENT_RULES = [rule for rule in RULES if rule != "partial"]  # an append takes it (202)
PATHS: dict[str, tuple[Write, list[str]]] = {
    "append": (_post(f"{P}/events", bad_event), SENT_EVENT_RULES),
    "batch": (_post(f"{P}/events:batch", lambda r: {"events": [bad_event(r)]}), SENT_EVENT_RULES),
    "create": (
        _post(SESSIONS, lambda r: {"sessionId": "new", "events": [bad_event(r)]}),
        SENT_EVENT_RULES,
    ),
    "queue": (_post(f"{P}/pending", bad_event), EVERY_RULE),
    "import": (_import, EVERY_RULE),
    "close": (_post(f"{C}:close", _close), ["nested too deep", "too large"]),
    "rewind": (_post(f"{P}:rewind", _rewind), ["nested too deep"]),
    "state patch": (_state_patch, ["nested too deep"]),
    "rewrite": (_rewrite, ["too large"]),
    "compact": (_post(f"{P}:compact", _compact), ["too large"]),
}
CASES = [(path, rule) for path, (_, rules) in PATHS.items() for rule in rules]


@pytest.mark.parametrize(("path", "rule"), CASES, ids=[f"{p}: {r}" for p, r in CASES])
async def test_every_path_refuses_what_an_append_refuses_and_writes_nothing(client, path, rule):
    await setup(client)
    before = await snapshot(client)
    response = await PATHS[path][0](client, rule)
    if rule == "too large":
        problem = assert_problem(response, 413, "payload_too_large")
    else:
        problem = assert_problem(response, 422, "validation_error")
    if path == "import":
        assert "line 2" in problem["detail"].lower(), problem
    assert await snapshot(client) == before  # the child `c` still open among them
    for absent in ("new", "imported"):
        assert_problem(await client.get(session_url(absent)), 404, "session_not_found")


async def test_an_event_as_deep_as_the_rules_allow_goes_every_way(client):
    """The limit is the same on each path, not lower: at the limit, each path writes."""
    await setup(client)
    at_limit = nested(MAX_DEPTH - 6)  # in a functionResponse: 6 levels of the event's own
    closed = await client.post(f"{C}:close", json={"outcome": "completed", "result": at_limit})
    assert closed.status_code == 200, closed.text
    event = {"author": "a", "content": {"deep": nested(MAX_DEPTH - 2)}}
    assert (await client.post(f"{P}/events", json=event)).status_code == 201
    exported = await client.get(f"{P}:export")
    assert (await client.delete(P)).status_code == 204
    reimported = await client.post(
        f"{SESSIONS}:import",
        content=exported.content,
        headers={"content-type": "application/x-ndjson"},
    )
    assert reimported.status_code == 201, reimported.text
