"""Artifacts over HTTP: ADK's model (names per session, `user:` names per user, versions from
0, bytes or a reference, MIME type, metadata), streamed in and out, stored once per hash."""

import asyncio
import base64
import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.fixtures import client_of, sessionary
from tests.helpers import APP, USER, append, assert_problem, create_session, session_url

S = session_url("s")
A = f"{S}/artifacts"
U = f"/apps/{APP}/users/{USER}/artifacts"


async def upload(
    client: httpx.AsyncClient,
    name: str,
    data: bytes | AsyncIterator[bytes],
    mime_type: str | None = "application/octet-stream",
    *,
    base: str = A,
    **headers: str,
) -> httpx.Response:
    if mime_type is not None:
        headers["content-type"] = mime_type
    return await client.post(f"{base}/{name}", content=data, headers=headers)


async def saved(client: httpx.AsyncClient, name: str, data: bytes, **kwargs: Any) -> dict[str, Any]:
    response = await upload(client, name, data, **kwargs)
    assert response.status_code == 201, response.text
    version: dict[str, Any] = response.json()
    return version


async def save_part(
    client: httpx.AsyncClient, filename: str, part: dict[str, Any], base: str = A, **extra: Any
) -> httpx.Response:
    return await client.post(base, json={"filename": filename, "artifact": part, **extra})


async def rows(app: FastAPI, table: str) -> int:
    async with app.state.pool.connection() as connection:
        count: int = await connection.fetchval(f"SELECT count(*) FROM {table}")
        return count


async def test_an_upload_reads_back_byte_for_byte_with_its_record(client):
    await create_session(client, sessionId="s")
    data = bytes(range(256)) * 5000
    first = await saved(client, "report.pdf", data, mime_type="application/pdf")
    digest = hashlib.sha256(data).hexdigest()
    assert first["name"] == "report.pdf" and first["version"] == 0
    assert (first["mimeType"], first["kind"], first["size"], first["sha256"]) == (
        "application/pdf",
        "bytes",
        len(data),
        digest,
    )
    assert first["canonicalUri"] == (
        f"artifact://apps/{APP}/users/{USER}/sessions/s/artifacts/report.pdf/versions/0"
    )
    assert first["customMetadata"] == {} and first["fileUri"] is None
    second = await saved(client, "report.pdf", b"v2", mime_type="text/plain")
    assert second["version"] == 1

    newest = await client.get(f"{A}/report.pdf")
    assert newest.status_code == 200 and newest.content == b"v2"
    older = await client.get(f"{A}/report.pdf", params={"version": 0})
    assert older.content == data and older.headers["etag"] == f'"{digest}"'
    assert older.headers["content-type"] == "application/pdf"
    assert older.headers["content-length"] == str(len(data))
    assert older.headers["artifact-version"] == "0"
    absent = await client.get(f"{A}/report.pdf", params={"version": 2})
    assert_problem(absent, 404, "artifact_not_found")


async def test_downloads_never_run_in_a_browser(client):
    await create_session(client, sessionId="s")
    page = b"<html><script>alert(1)</script></html>"
    await saved(client, "page.html", page, mime_type="text/html")
    await saved(client, "lies.png", page, mime_type="image/png")  # a declared type that lies
    for name, mime_type in (("page.html", "text/html"), ("lies.png", "image/png")):
        served = await client.get(f"{A}/{name}")
        assert served.content == page
        assert served.headers["content-type"] == mime_type  # as declared, never sniffed
        assert served.headers["x-content-type-options"] == "nosniff"
        assert served.headers["content-security-policy"] == "sandbox; default-src 'none'"
        assert served.headers["content-disposition"].startswith("attachment;")


async def test_adk_json_saves_bytes_text_and_references(client):
    await create_session(client, sessionId="s")
    png = b"\x89PNG\r\n\x1a\n\x00"
    inline = {"inlineData": {"data": base64.b64encode(png).decode(), "mimeType": "image/png"}}
    response = await save_part(client, "pic.png", inline, customMetadata={"by": "agent"})
    assert response.status_code == 201, response.text
    assert response.json()["customMetadata"] == {"by": "agent"}
    assert (await client.get(f"{A}/pic.png")).content == png
    # pydantic's own base64 (URL-safe, unpadded) reads the same
    urlsafe = {
        "inline_data": {
            "data": base64.urlsafe_b64encode(png).decode().rstrip("="),
            "mime_type": "image/png",
        }
    }
    assert (await save_part(client, "pic.png", urlsafe)).json()["sha256"] == hashlib.sha256(
        png
    ).hexdigest()

    text = await save_part(client, "notes.txt", {"text": "héllo"})
    assert text.json()["kind"] == "text" and text.json()["mimeType"] == "text/plain"
    read = await client.get(f"{A}/notes.txt")
    assert read.content == "héllo".encode() and read.headers["content-type"].startswith(
        "text/plain; charset=utf-8"
    )

    uri = "gs://bucket/big.mp4"
    ref = await save_part(client, "video", {"fileData": {"fileUri": uri, "mimeType": "video/mp4"}})
    assert ref.status_code == 201 and ref.json()["kind"] == "reference"
    assert (ref.json()["fileUri"], ref.json()["sha256"], ref.json()["size"]) == (uri, None, 0)
    redirected = await client.get(f"{A}/video")
    assert redirected.status_code == 303 and redirected.headers["location"] == uri

    # An artifact:// reference is followed to the version it names.
    target = "artifact://apps/agent-app/users/alice/sessions/s/artifacts/notes.txt/versions/0"
    alias = await save_part(client, "alias", {"fileData": {"fileUri": target}})
    assert alias.status_code == 201
    assert (await client.get(f"{A}/alias")).content == "héllo".encode()
    elsewhere = target.replace("alice", "bob")
    escape = await save_part(client, "x", {"fileData": {"fileUri": elsewhere}})
    assert "same app and user" in assert_problem(escape, 422, "validation_error")["detail"]


async def test_a_part_holds_exactly_one_kind_of_content(client):
    await create_session(client, sessionId="s")
    both = {"text": "a", "fileData": {"fileUri": "gs://b/c"}}
    assert_problem(await save_part(client, "x", both), 422, "validation_error")
    assert_problem(await save_part(client, "x", {}), 422, "validation_error")
    call = {"functionCall": {"name": "f"}}
    assert_problem(await save_part(client, "x", call), 422, "validation_error")
    bad = {"inlineData": {"data": "not base64!", "mimeType": "image/png"}}
    assert_problem(await save_part(client, "x", bad), 422, "validation_error")
    lying = {"inlineData": {"data": "", "mimeType": "not a type"}}
    assert_problem(await save_part(client, "x", lying), 422, "validation_error")
    assert await client.get(A) is not None
    assert (await client.get(A)).json()["artifacts"] == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("user:", "must not be empty"),
        ("/etc/passwd", "absolute path"),
        ("\\x", "absolute path"),
        ("C:x", "drive-qualified"),
        ("a/../b", "traversal"),
        ("..", "traversal"),
        ("a/versions/1", "reserved path segments"),
        ("sessions/x", "reserved path segments"),
        ("a//b", "empty or `.` segments"),
        ("a/./b", "empty or `.` segments"),
        ("a/", "empty or `.` segments"),
        ("a\nb", "control characters"),
        ("x" * 10240, "at most 1024"),
    ],
)
async def test_names_adk_refuses_are_refused_with_its_words(client, name, message):
    await create_session(client, sessionId="s")
    refused = assert_problem(await save_part(client, name, {"text": "t"}), 422, "validation_error")
    assert message in refused["detail"]
    assert (await client.get(A)).json()["artifacts"] == []


async def test_a_name_in_a_path_is_held_to_the_same_rules(client):
    await create_session(client, sessionId="s")
    nul = assert_problem(await upload(client, "a%00b", b"x"), 422, "validation_error")
    assert "null bytes" in nul["detail"]
    for name in ("a/versions/1/x", "C:x", "x" * 2000, "a%0Ab"):
        assert_problem(await upload(client, name, b"x"), 422, "validation_error")
    for name in ("a/%2e%2e/b", "a%2Fb"):  # what a URL cannot carry as one name
        assert_problem(await upload(client, name, b"x"), 422, "validation_error")
    assert (await client.get(A)).json()["artifacts"] == []


async def test_names_with_slashes_are_folders_as_in_adk(client):
    await create_session(client, sessionId="s")
    await saved(client, "reports/2026/q1.pdf", b"q1")
    await saved(client, "user:shared/logo.png", b"logo")
    assert (await client.get(f"{A}/reports/2026/q1.pdf")).content == b"q1"
    versions = (await client.get(f"{A}/reports/2026/q1.pdf/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [0]
    one = await client.get(f"{A}/reports/2026/q1.pdf/versions/latest")
    assert one.json()["name"] == "reports/2026/q1.pdf"
    assert (await client.get(f"{A}/reports/2026/q1.pdf/versions/0")).json()["version"] == 0
    names = [a["name"] for a in (await client.get(A)).json()["artifacts"]]
    assert names == ["reports/2026/q1.pdf", "user:shared/logo.png"]
    assert_problem(await client.get(f"{A}/a/%2e%2e/b"), 422, "validation_error")
    assert (await client.delete(f"{A}/reports/2026/q1.pdf")).status_code == 204


async def test_user_names_are_shared_by_every_session_of_the_user(client):
    for session_id in ("s", "t"):
        await create_session(client, sessionId=session_id)
    await saved(client, "user:profile.json", b"{}", mime_type="application/json")
    await saved(client, "draft.md", b"# s", mime_type="text/markdown")
    in_t = [
        a["name"] for a in (await client.get(f"{session_url('t')}/artifacts")).json()["artifacts"]
    ]
    assert in_t == ["user:profile.json"]
    by_user = (await client.get(U)).json()["artifacts"]
    assert [a["name"] for a in by_user] == ["user:profile.json"]
    assert by_user[0]["canonicalUri"] == (
        f"artifact://apps/{APP}/users/{USER}/artifacts/user:profile.json/versions/0"
    )
    again = await saved(client, "user:profile.json", b'{"a": 1}', base=U)
    assert again["version"] == 1
    assert (
        await client.get(f"{session_url('t')}/artifacts/user:profile.json")
    ).content == b'{"a": 1}'
    not_user = await upload(client, "draft.md", b"x", base=U)
    assert "user:" in assert_problem(not_user, 422, "validation_error")["detail"]


async def test_a_listing_pages_by_name(client):
    await create_session(client, sessionId="s")
    for index in range(5):
        await saved(client, f"n{index}", b"x")
    seen, token = [], None
    while True:
        params = {"pageSize": 2, **({"pageToken": token} if token else {})}
        page = (await client.get(A, params=params)).json()
        seen += [a["name"] for a in page["artifacts"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == [f"n{index}" for index in range(5)]
    other = await client.get(f"{A}/n0/versions", params={"pageToken": token or "x"})
    assert_problem(other, 422, "validation_error")


async def test_the_same_bytes_are_stored_once_and_go_with_their_last_version(client, app):
    await create_session(client, sessionId="s")
    data = b"same bytes" * 1000
    await saved(client, "a", data)
    await saved(client, "b", data)
    await saved(client, "a", data)
    assert await rows(app, "artifact_blobs") == 1 and await rows(app, "artifact_chunks") == 1
    assert (await client.delete(f"{A}/a")).status_code == 204
    assert (await client.get(f"{A}/b")).content == data
    assert await rows(app, "artifact_blobs") == 1
    assert (await client.delete(f"{A}/b")).status_code == 204
    assert await rows(app, "artifact_blobs") == 0 and await rows(app, "artifact_chunks") == 0
    assert_problem(await client.delete(f"{A}/b"), 404, "artifact_not_found")
    assert (await saved(client, "b", b"new"))["version"] == 0  # a deleted name starts again


async def test_deleting_a_session_deletes_its_artifacts_not_its_users(client, app):
    await create_session(client, sessionId="s")
    await saved(client, "own", b"session's")
    await saved(client, "user:kept", b"user's")
    assert (await client.delete(S)).status_code == 204
    assert await rows(app, "artifact_versions") == 1
    assert (await client.get(f"{U}/user:kept")).content == b"user's"
    assert await rows(app, "artifact_chunks") == 1
    assert_problem(await client.get(f"{A}/own"), 404, "session_not_found")


async def test_ranges_and_conditional_reads(client):
    await create_session(client, sessionId="s")
    data = bytes(range(100))
    tag = f'"{hashlib.sha256(data).hexdigest()}"'
    await saved(client, "r", data)
    for asked, start, end in (
        ("bytes=0-9", 0, 9),
        ("bytes=90-", 90, 99),
        ("bytes=-5", 95, 99),
        ("bytes=95-500", 95, 99),
    ):
        part = await client.get(f"{A}/r", headers={"range": asked})
        assert part.status_code == 206 and part.content == data[start : end + 1]
        assert part.headers["content-range"] == f"bytes {start}-{end}/100"
    several = await client.get(f"{A}/r", headers={"range": "bytes=0-1,5-6"})
    assert several.status_code == 200 and several.content == data
    past = await client.get(f"{A}/r", headers={"range": "bytes=100-"})
    assert_problem(past, 416, "range_not_satisfiable")
    assert past.headers["content-range"] == "bytes */100"
    same = await client.get(f"{A}/r", headers={"if-none-match": tag})
    assert same.status_code == 304 and same.content == b""
    stale = await client.get(f"{A}/r", headers={"range": "bytes=0-0", "if-range": '"other"'})
    assert stale.status_code == 200 and stale.content == data


async def test_a_zero_byte_artifact(client):
    await create_session(client, sessionId="s")
    empty = await saved(client, "empty.png", b"", mime_type="image/png")
    assert empty["size"] == 0 and empty["sha256"] == hashlib.sha256(b"").hexdigest()
    read = await client.get(f"{A}/empty.png")
    assert read.status_code == 200 and read.content == b"" and read.headers["content-length"] == "0"


async def test_adks_rewind_marker_reads_as_absent(client):
    await create_session(client, sessionId="s")
    await saved(client, "gone", b"x")
    await saved(client, "gone", b"", mime_type="application/octet-stream")
    assert_problem(await client.get(f"{A}/gone"), 404, "artifact_not_found")
    assert (await client.get(f"{A}/gone", params={"version": 0})).content == b"x"
    assert (await client.get(f"{A}/gone/versions/1")).json()["size"] == 0


async def test_metadata_and_display_name_of_an_upload(client):
    await create_session(client, sessionId="s")
    stored = await saved(
        client, "m", b"x", **{"artifact-metadata": '{"tags": ["a"], "caf\\u00e9": 1}'}
    )
    assert stored["customMetadata"] == {"tags": ["a"], "café": 1}
    named = await client.post(f"{A}/m", params={"displayName": "My file"}, content=b"y")
    assert named.json()["displayName"] == "My file"
    for bad in ("[1]", "{", '{"a": 1, "a": 2}'):
        refused = await upload(client, "m", b"x", **{"artifact-metadata": bad})
        assert_problem(refused, 422, "validation_error")
    assert_problem(await upload(client, "m", b"x", "no type"), 422, "validation_error")
    assert len((await client.get(f"{A}/m/versions")).json()["versions"]) == 2


async def test_no_session_no_artifact_and_closed_sessions_refuse_saves(client):
    assert_problem(await upload(client, "x", b"x"), 404, "session_not_found")
    assert_problem(await client.get(A), 404, "session_not_found")
    await create_session(client, sessionId="s")
    assert_problem(await client.get(f"{A}/x"), 404, "artifact_not_found")
    assert_problem(await client.get(f"{A}/x/versions"), 404, "artifact_not_found")
    assert_problem(await client.get(f"{A}/x/versions/0"), 404, "artifact_not_found")
    await saved(client, "x", b"x")
    closed = await client.post(f"{S}:close", json={"outcome": "completed"})
    assert closed.status_code == 200, closed.text
    assert_problem(await upload(client, "x", b"y"), 409, "session_closed")
    assert_problem(await client.delete(f"{A}/x"), 409, "session_closed")
    assert (await client.get(f"{A}/x")).content == b"x"


async def test_sixteen_concurrent_saves_of_one_name_take_sixteen_versions(client):
    await create_session(client, sessionId="s")
    bodies = [f"save {index}".encode() * 100 for index in range(16)]
    answers = await asyncio.gather(*(upload(client, "hot", body) for body in bodies))
    versions = {
        answer.json()["version"]: body for answer, body in zip(answers, bodies, strict=True)
    }
    assert sorted(versions) == list(range(16))
    for version, body in versions.items():
        assert (await client.get(f"{A}/hot", params={"version": version})).content == body


async def test_uploads_past_the_limit_are_refused_unread_and_leave_nothing(settings, app):
    small = settings.model_copy(
        update={"max_artifact_bytes": 64 * 1024, "artifact_chunk_bytes": 4096}
    )
    sent = 0

    async def gigabyte() -> AsyncIterator[bytes]:
        nonlocal sent
        piece = b"\0" * 65536
        for _ in range(16384):  # 1 GiB, if it were read
            sent += len(piece)
            yield piece

    async with client_of(small) as client:
        await create_session(client, sessionId="s")
        declared = await client.post(
            f"{A}/big", content=gigabyte(), headers={"content-length": str(2**30)}
        )
        assert_problem(declared, 413, "payload_too_large")
        assert "SESSIONARY_MAX_ARTIFACT_BYTES" in declared.json()["detail"]
        sent = 0
        streamed = await client.post(f"{A}/big", content=gigabyte())  # chunked, no length
        assert_problem(streamed, 413, "payload_too_large")
        assert sent <= 4 * 65536  # read up to the limit, not the gigabyte
        assert (await client.get(A)).json()["artifacts"] == []
    for table in ("artifact_chunks", "artifact_blobs", "artifact_versions", "artifacts"):
        assert await rows(app, table) == 0


async def test_an_interrupted_upload_leaves_nothing(client, app):
    await create_session(client, sessionId="s")
    messages = [
        {"type": "http.request", "body": b"x" * 100_000, "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    path = f"{A}/cut"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"sessionary"), (b"content-type", b"application/octet-stream")],
        "client": ("127.0.0.1", 1),
        "server": ("sessionary", 80),
    }
    await app(scope, receive, send)
    for table in ("artifact_chunks", "artifact_blobs", "artifact_versions", "artifacts"):
        assert await rows(app, table) == 0
    assert (await client.get(A)).json()["artifacts"] == []


async def test_a_read_as_of_a_seq_sees_the_versions_saved_before_it(client):
    await create_session(client, sessionId="s")
    await saved(client, "doc", b"v0")  # before event 1
    assert (await append(client, "s", {"author": "user"})).status_code == 201  # seq 1
    await saved(client, "doc", b"v1")
    await saved(client, "late", b"l")
    assert (await append(client, "s", {"author": "agent"})).status_code == 201  # seq 2
    await saved(client, "user:u", b"u")

    def listed(page: httpx.Response) -> dict[str, int]:
        return {a["name"]: a["version"] for a in page.json()["artifacts"]}

    assert listed(await client.get(A, params={"untilSeq": 1})) == {"doc": 0, "user:u": 0}
    assert listed(await client.get(A, params={"untilSeq": 2})) == {"doc": 1, "late": 0, "user:u": 0}
    assert listed(await client.get(A)) == {"doc": 1, "late": 0, "user:u": 0}
    past = await client.get(A, params={"untilSeq": 3})
    assert_problem(past, 422, "validation_error")


def said(invocation: str, **actions: Any) -> dict[str, Any]:
    return {"author": "agent", "invocationId": invocation, "actions": actions}


async def test_a_fork_sees_its_parents_artifacts_as_at_the_fork_point(client, app):
    await create_session(client, sessionId="s")
    await saved(client, "doc", b"v0")
    assert (await append(client, "s", said("i1", artifactDelta={"doc": 0}))).status_code == 201
    await saved(client, "doc", b"v1")
    await saved(client, "new", b"n")
    assert (await append(client, "s", said("i2", artifactDelta={"doc": 1}))).status_code == 201
    at_one = await client.post(f"{S}:fork", json={"sessionId": "f1", "atSeq": 1})
    whole = await client.post(f"{S}:fork", json={"sessionId": "f2"})
    assert at_one.status_code == whole.status_code == 201
    f1, f2 = f"{session_url('f1')}/artifacts", f"{session_url('f2')}/artifacts"
    assert {a["name"]: a["version"] for a in (await client.get(f1)).json()["artifacts"]} == {
        "doc": 0
    }
    assert {a["name"]: a["version"] for a in (await client.get(f2)).json()["artifacts"]} == {
        "doc": 1,
        "new": 0,
    }
    assert (await client.get(f"{f2}/doc")).content == b"v1"
    assert await rows(app, "artifact_chunks") == 3  # no byte copied
    # The fork goes its own way: its saves number on, the parent's delete leaves it whole.
    assert (await saved(client, "doc", b"f1's", base=f1))["version"] == 1
    assert (await client.delete(f"{A}/doc")).status_code == 204
    assert (await client.get(f"{f2}/doc", params={"version": 0})).content == b"v0"
    assert (await client.delete(S)).status_code == 204
    assert (await client.get(f"{f1}/doc", params={"version": 0})).content == b"v0"
    assert (await client.get(f"{f1}/doc")).content == b"f1's"


async def test_a_child_that_inherits_sees_its_parents_artifacts_one_that_does_not_none(client):
    await create_session(client, sessionId="s")
    await saved(client, "doc", b"parent's")
    await saved(client, "user:u", b"user's")
    for child, inherit in (("c-all", "all"), ("c-none", "none")):
        made = await client.post(f"{S}/children", json={"sessionId": child, "inherit": inherit})
        assert made.status_code == 201, made.text
    inherited = (await client.get(f"{session_url('c-all')}/artifacts")).json()["artifacts"]
    assert [a["name"] for a in inherited] == ["doc", "user:u"]
    alone = (await client.get(f"{session_url('c-none')}/artifacts")).json()["artifacts"]
    assert [a["name"] for a in alone] == ["user:u"]


async def test_a_rewind_restores_artifacts_as_adks_runner_does(client):
    await create_session(client, sessionId="s")
    await saved(client, "doc", b"v0")
    await saved(client, "user:pref", b"p0")
    await append(client, "s", said("i1", artifactDelta={"doc": 0, "user:pref": 0}))
    await saved(client, "doc", b"v1")
    await saved(client, "made-later", b"m")
    await saved(client, "user:pref", b"p1")
    await append(client, "s", said("i2", artifactDelta={"doc": 1, "made-later": 0, "user:pref": 1}))
    rewound = await client.post(f"{S}:rewind", json={"beforeInvocationId": "i2"})
    assert rewound.status_code == 201, rewound.text
    delta = rewound.json()["actions"]["artifactDelta"]
    assert delta == {"doc": 2, "made-later": 1}  # user: names stay as they are
    assert (await client.get(f"{A}/doc")).content == b"v0"  # v0 saved again, as version 2
    assert_problem(await client.get(f"{A}/made-later"), 404, "artifact_not_found")
    marker = (await client.get(f"{A}/made-later/versions/1")).json()
    assert (marker["mimeType"], marker["size"]) == ("application/octet-stream", 0)
    assert (await client.get(f"{A}/user:pref")).content == b"p1"
    # What the rewind saved is part of its event: a read as of it sees it.
    seq = rewound.json()["seq"]
    at = (await client.get(A, params={"untilSeq": seq})).json()["artifacts"]
    assert {a["name"]: a["version"] for a in at}["doc"] == 2


NDJSON = {"Content-Type": "application/x-ndjson"}


async def with_artifacts(client: httpx.AsyncClient) -> bytes:
    """A session whose artifacts span events, share bytes, hold a reference and a text, and
    its export."""
    await create_session(client, sessionId="s")
    big = bytes(range(256)) * 40  # several pieces at the chunk size of `small_chunks`
    await saved(client, "doc", big, mime_type="application/pdf", **{"artifact-metadata": '{"a":1}'})
    await append(client, "s", said("i1", artifactDelta={"doc": 0}))
    await saved(client, "copy", big)  # the same bytes: one content in the export
    await save_part(client, "note", {"text": "héllo"})
    await save_part(client, "ref", {"fileData": {"fileUri": "gs://b/o", "mimeType": "video/mp4"}})
    await saved(client, "empty", b"", mime_type="text/plain")
    await append(client, "s", said("i2"))
    await saved(client, "doc", b"v1")
    await saved(client, "user:not-exported", b"u")
    exported = await client.get(f"{S}:export")
    assert exported.status_code == 200
    return exported.content


async def listing_at_every_seq(client: httpx.AsyncClient, base: str) -> list[Any]:
    seen = []
    version = (await client.get(base.removesuffix("/artifacts"))).json()["version"]
    for seq in (None, *range(version + 1)):
        params = {} if seq is None else {"untilSeq": seq}
        page = (await client.get(base, params=params)).json()["artifacts"]
        seen.append(
            [
                {k: v for k, v in a.items() if k != "canonicalUri"}
                for a in page
                if "user:" not in a["name"]
            ]
        )
    return seen


@pytest.fixture
async def small_chunks(settings, app):  # `app`: the tables are emptied after the test
    async with client_of(settings.model_copy(update={"artifact_chunk_bytes": 4096})) as client:
        yield client


async def test_an_export_carries_the_sessions_artifacts_byte_for_byte(small_chunks):
    client = small_chunks
    body = await with_artifacts(client)
    header, *rest = [json.loads(line) for line in body.splitlines()]
    artifact_lines = rest[header["eventCount"] :]
    assert header["artifactLines"] == len(artifact_lines)
    pieces = [line["artifactBytes"] for line in artifact_lines if "artifactBytes" in line]
    versions = [line["artifact"] for line in artifact_lines if "artifact" in line]
    assert [(v["name"], v["version"]) for v in versions] == [
        ("copy", 0),
        ("doc", 0),
        ("doc", 1),
        ("empty", 0),
        ("note", 0),
        ("ref", 0),
    ]
    assert len(pieces) == 3 + 1 + 1  # the shared content once, in 3 pieces; v1; the text
    imported = await client.post(
        f"/apps/other/users/{USER}/sessions:import", content=body, headers=NDJSON
    )
    assert imported.status_code == 201, imported.text
    there = f"/apps/other/users/{USER}/sessions/s/artifacts"
    assert await listing_at_every_seq(client, there) == await listing_at_every_seq(client, A)
    for name, version in (("doc", 0), ("doc", 1), ("copy", 0), ("note", 0), ("empty", 0)):
        params = {"version": version}
        mine, theirs = (
            await client.get(f"{A}/{name}", params=params),
            await client.get(f"{there}/{name}", params=params),
        )
        assert theirs.content == mine.content and theirs.headers["etag"] == mine.headers["etag"]
    assert (await client.get(f"{there}/ref")).headers["location"] == "gs://b/o"
    # The same export again: nothing new; other artifacts under the taken id: 409.
    again = await client.post(
        f"/apps/other/users/{USER}/sessions:import", content=body, headers=NDJSON
    )
    assert again.status_code == 200, again.text
    assert (await saved(client, "doc", b"v2", base=there))["version"] == 2
    differs = await client.post(
        f"/apps/other/users/{USER}/sessions:import", content=body, headers=NDJSON
    )
    assert_problem(differs, 409, "session_already_exists")
    json_form = await client.get(f"{S}:export", headers={"Accept": "application/json"})
    document = json_form.json()
    assert len(document["artifacts"]) == header["artifactLines"]
    elsewhere = await client.post(f"/apps/third/users/{USER}/sessions:import", json=document)
    assert elsewhere.status_code == 201, elsewhere.text
    third = f"/apps/third/users/{USER}/sessions/s/artifacts"
    assert await listing_at_every_seq(client, third) == await listing_at_every_seq(client, A)


async def test_an_import_refuses_artifact_lines_that_do_not_hold_together(client, app):
    body = await with_artifacts(client)
    header, *rest = [json.loads(line) for line in body.splitlines()]
    events, artifacts = rest[: header["eventCount"]], rest[header["eventCount"] :]

    async def refused(lines: list[dict[str, Any]], why: str, **change: Any) -> None:
        document = [{**header, "artifactLines": len(lines), **change}, *events, *lines]
        body = b"".join(json.dumps(line).encode() + b"\n" for line in document)
        answer = await client.post(
            f"/apps/other/users/{USER}/sessions:import", content=body, headers=NDJSON
        )
        assert why in assert_problem(answer, 422, "validation_error")["detail"]

    piece = next(line for line in artifacts if "artifactBytes" in line)
    forged = {"artifactBytes": {**piece["artifactBytes"], "data": base64.b64encode(b"x").decode()}}
    await refused([forged, *artifacts[1:]], "do not hash to its sha256")
    versions = [line for line in artifacts if "artifact" in line]
    await refused(versions, "no content of its sha256 and size")
    orphan = {
        "artifactBytes": {
            "sha256": hashlib.sha256(b"orphan").hexdigest(),
            "data": base64.b64encode(b"orphan").decode(),
        }
    }
    await refused([*artifacts, orphan], "no version holds")
    user_name = {"artifact": {**versions[0]["artifact"], "name": "user:x"}}
    await refused([*artifacts, user_name], "not its user's")
    await refused(artifacts, "announces 10 artifact lines; 9 follow", artifactLines=10)
    bad_name = {"artifact": {**versions[0]["artifact"], "name": "../x"}}
    await refused([*artifacts, bad_name], "traversal")
    document = {"header": header, "events": events, "artifacts": [forged, *artifacts[1:]]}
    named = await client.post(f"/apps/other/users/{USER}/sessions:import", json=document)
    assert "`artifacts[0]`" in assert_problem(named, 422, "validation_error")["detail"]
    assert (await client.get(f"/apps/other/users/{USER}/sessions/s")).status_code == 404
    assert await rows(app, "artifact_versions") == 7  # the source's, nothing imported


async def test_the_commands_move_artifacts_to_another_database(client, database_url, new_database):
    await with_artifacts(client)
    exported = sessionary(database_url, "export", "--app", APP)
    assert exported.returncode == 0, exported.stderr
    target = await asyncio.to_thread(new_database)
    assert sessionary(target, "migrate").returncode == 0
    imported = sessionary(target, "import", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert sessionary(target, "export").stdout == exported.stdout


async def test_a_delete_during_a_download_cuts_it_short_and_never_mixes_bytes(live_server, app):
    size = 64 * 1024 * 1024
    pattern = bytes(range(251)) * 4096  # never aligned with the chunks: a mix-up shows

    async def content() -> AsyncIterator[bytes]:
        for start in range(0, size, len(pattern)):
            yield pattern[: size - start]

    async with httpx.AsyncClient(base_url=live_server, timeout=60) as http:
        await create_session(http, sessionId="s")
        assert (await http.post(f"{A}/big", content=content())).status_code == 201
        got = bytearray()
        async with http.stream("GET", f"{A}/big") as response:
            pieces = response.aiter_bytes()
            got += await anext(pieces)
            assert (await http.delete(f"{A}/big")).status_code == 204
            with pytest.raises(httpx.HTTPError):  # the server closes it short of its length
                async for piece in pieces:
                    got += piece
        assert 0 < len(got) < size
        whole = pattern * (size // len(pattern) + 1)
        assert bytes(got) == whole[: len(got)]
        assert (await http.get("/readyz")).status_code == 200
