"""`/adk`: ADK's own API server's artifact endpoints, for `adk web`'s artifact panel. The same
requests go to google-adk's real server (`google.adk.cli.fast_api`, in-memory services) and to
Sessionary under `/adk`; the answers must be the same."""

import base64
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

SESSIONS = "/apps/shop/users/alice/sessions"
A = f"{SESSIONS}/s1/artifacts"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()

REQUESTS: list[tuple[str, str, Any]] = [
    ("POST", SESSIONS, {"sessionId": "s1"}),
    ("POST", A, {"filename": "a.txt", "artifact": {"text": "héllo"}}),
    (
        "POST",
        A,
        {
            "filename": "pic.png",
            "artifact": {"inlineData": {"mimeType": "image/png", "data": PNG}},
            "customMetadata": {"by": "agent", "n": 1},
        },
    ),
    (
        "POST",
        A,
        {
            "filename": "pic.png",
            "artifact": {"inlineData": {"mimeType": "image/png", "data": PNG[:8]}},
        },
    ),
    ("POST", A, {"filename": "user:profile", "artifact": {"text": "p"}}),
    (
        "POST",
        A,
        {
            "filename": "clip",
            "artifact": {"fileData": {"fileUri": "gs://b/clip.mp4", "mimeType": "video/mp4"}},
        },
    ),
    ("GET", A, None),
    ("GET", f"{A}/pic.png", None),
    ("GET", f"{A}/pic.png?version=0", None),
    ("GET", f"{A}/pic.png/versions", None),
    ("GET", f"{A}/pic.png/versions/metadata", None),
    ("GET", f"{A}/pic.png/versions/1/metadata", None),
    ("GET", f"{A}/pic.png/versions/latest/metadata", None),
    ("GET", f"{A}/pic.png/versions/0", None),
    ("GET", f"{A}/pic.png/versions/latest", None),
    ("GET", f"{A}/pic.png/versions/x", None),
    ("GET", f"{A}/a.txt", None),
    ("GET", f"{A}/user:profile", None),
    ("GET", f"{A}/clip", None),
    ("GET", f"{A}/nope", None),
    ("GET", f"{A}/nope/versions", None),
    ("GET", f"{A}/nope/versions/metadata", None),
    ("GET", f"{A}/nope/versions/0/metadata", None),
    ("GET", f"{A}/pic.png/versions/7", None),
    ("DELETE", f"{A}/pic.png", None),
    ("DELETE", f"{A}/pic.png", None),
    ("GET", A, None),
]


def normalized(answer: httpx.Response) -> tuple[int, Any]:
    """The answer without what differs between two servers: create times, the scheme of
    canonical URIs (ADK's in-memory `memory://`, Sessionary's `artifact://`)."""
    body = answer.json()

    def record(item: Any) -> Any:
        if isinstance(item, dict) and "canonicalUri" in item:
            assert isinstance(item.pop("createTime"), float)
            item["canonicalUri"] = item["canonicalUri"].split("://", 1)[1]
        return item

    if isinstance(body, list):
        body = [record(item) for item in body]
    elif isinstance(body, dict) and "appName" in body:
        body = body["id"]
    elif isinstance(body, dict) and isinstance(body.get("detail"), list):
        body = [(error["loc"], error["type"]) for error in body["detail"]]
    else:
        body = record(body)
    return answer.status_code, body


async def answers(http: httpx.AsyncClient, prefix: str) -> list[tuple[int, Any]]:
    found = []
    for method, path, body in REQUESTS:
        sent = {"json": body} if body is not None else {}
        found.append(normalized(await http.request(method, prefix + path, **sent)))
    return found


@pytest.fixture(scope="module")
def adk_server() -> Iterator[FastAPI]:
    """google-adk's own API server, with its in-memory services and no agents."""
    from google.adk.cli.fast_api import get_fast_api_app

    with tempfile.TemporaryDirectory() as agents, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADK's experimental features warn as they load
        yield get_fast_api_app(
            agents_dir=agents,
            web=False,
            session_service_uri="memory://",
            artifact_service_uri="memory://",
        )


async def test_answers_as_adks_own_server_does(
    client: httpx.AsyncClient, adk_server: FastAPI
) -> None:
    transport = httpx.ASGITransport(adk_server)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as adk:
        expected = await answers(adk, "")
    got = await answers(client, "/adk")
    for request, want, have in zip(REQUESTS, expected, got, strict=True):
        assert have == want, request


async def test_what_adk_would_store_under_a_path_it_cannot_name_is_a_400(client):
    created = await client.post(f"/adk{SESSIONS}", json={"sessionId": "s1"})
    assert created.status_code == 200
    for name in ("../etc/passwd", "/abs", "a/versions/b"):
        refused = await client.post(f"/adk{A}", json={"filename": name, "artifact": {"text": "x"}})
        assert refused.status_code == 400 and isinstance(refused.json()["detail"], str)
    # Input stays strict where ADK guesses: a Part with two kinds of content is refused (ADK
    # would keep its `inlineData` and drop the rest).
    both = {"filename": "x", "artifact": {"text": "a", "inlineData": {"data": ""}}}
    assert (await client.post(f"/adk{A}", json=both)).status_code == 422


async def test_a_large_part_streams_as_one_base64_string(client):
    assert (await client.post(f"/adk{SESSIONS}", json={"sessionId": "s1"})).status_code == 200
    data = bytes(range(256)) * 12_289  # not a multiple of 3, over several chunks
    uploaded = await client.post(f"{A}/big.bin", content=data)
    assert uploaded.status_code == 201
    part = (await client.get(f"/adk{A}/big.bin")).json()
    assert base64.urlsafe_b64decode(part["inlineData"]["data"]) == data


async def test_a_version_that_is_not_ascii_digits_is_a_422_not_a_500(client):
    assert (await client.post(f"/adk{SESSIONS}", json={"sessionId": "s1"})).status_code == 200
    for version_id in ("²", "\uff11", "-1", "9" * 20):  # superscript, fullwidth: digits to isdigit
        answer = await client.get(f"/adk{A}/a.txt/versions/{version_id}/metadata")
        assert answer.status_code == 422, (version_id, answer.text)
        assert answer.json() == {"detail": "Invalid version ID"}
