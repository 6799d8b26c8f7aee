"""The clients' artifact methods on a live server: every method in both scopes (a session's
names, a user's `user:` ones), streamed uploads and downloads, ranges, errors and resends."""

import base64
import hashlib
import io
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sessionary_client import (
    APIConnectionError,
    ArtifactIsReferenceError,
    ArtifactNotFoundError,
    AsyncSessionaryClient,
    InvalidRequestError,
    RangeNotSatisfiableError,
    SessionaryClient,
    SessionNotFoundError,
)
from sessionary_client._core import UPLOAD_CHUNK

USER = "ada"
MIB = 1 << 20


async def test_async_client_covers_every_artifact_method_in_both_scopes(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    report = await client.upload_artifact(
        app_name,
        USER,
        "s1",
        "reports/q1.csv",
        b"a,b\n1,2\n",
        mime_type="text/csv",
        display_name="Q1",
        custom_metadata={"rows": 1, "by": "Zoë"},
    )
    assert report == {
        "name": "reports/q1.csv",
        "version": 0,
        "canonicalUri": f"artifact://apps/{app_name}/users/{USER}/sessions/s1/artifacts/"
        "reports/q1.csv/versions/0",
        "customMetadata": {"rows": 1, "by": "Zoë"},
        "createTime": report["createTime"],
        "mimeType": "text/csv",
        "kind": "bytes",
        "size": 8,
        "sha256": hashlib.sha256(b"a,b\n1,2\n").hexdigest(),
        "displayName": "Q1",
        "fileUri": None,
    }
    png = base64.b64encode(b"\x89PNG").decode()
    inline = {"inlineData": {"data": png, "mimeType": "image/png"}}
    notes = await client.save_artifact(app_name, USER, "s1", "notes", {"text": "hello"})
    again = await client.save_artifact(app_name, USER, "s1", "notes", inline)
    linked = await client.save_artifact(
        app_name,
        USER,
        "s1",
        "linked",
        {"fileData": {"fileUri": "gs://bucket/big.bin", "mimeType": "video/mp4"}},
        custom_metadata={"from": "gcs"},
    )
    assert (notes["kind"], notes["mimeType"], notes["size"]) == ("text", "text/plain", 5)
    assert (again["version"], again["kind"], again["mimeType"]) == (1, "bytes", "image/png")
    assert (linked["kind"], linked["fileUri"], linked["sha256"]) == (
        "reference",
        "gs://bucket/big.bin",
        None,
    )
    # A user's names, through the session or the user alone.
    avatar = await client.upload_artifact(app_name, USER, None, "user:avatar.png", b"\x89PNG")
    await client.save_artifact(app_name, USER, "s1", "user:bio", {"text": "Ada."})
    assert avatar["canonicalUri"] == (
        f"artifact://apps/{app_name}/users/{USER}/artifacts/user:avatar.png/versions/0"
    )

    listed = await client.list_artifacts(app_name, USER, "s1", page_size=2)
    assert [a["name"] for a in listed["artifacts"]] == ["linked", "notes"]
    assert listed["nextPageToken"] is not None
    names = [a["name"] async for a in client.iter_artifacts(app_name, USER, "s1", page_size=2)]
    assert names == ["linked", "notes", "reports/q1.csv", "user:avatar.png", "user:bio"]
    users = (await client.list_artifacts(app_name, USER))["artifacts"]
    assert [(a["name"], a["version"]) for a in users] == [("user:avatar.png", 0), ("user:bio", 0)]

    assert await client.download_artifact(app_name, USER, "s1", "notes") == b"\x89PNG"
    assert await client.download_artifact(app_name, USER, "s1", "notes", version=0) == b"hello"
    assert await client.download_artifact(app_name, USER, None, "user:bio") == b"Ada."
    with pytest.raises(ArtifactIsReferenceError) as elsewhere:
        await client.download_artifact(app_name, USER, "s1", "linked")
    assert (elsewhere.value.uri, elsewhere.value.version) == ("gs://bucket/big.bin", 0)

    versions = await client.list_artifact_versions(app_name, USER, "s1", "notes", page_size=1)
    assert [v["version"] for v in versions["versions"]] == [0]
    every = client.iter_artifact_versions(app_name, USER, "s1", "notes", page_size=1)
    assert [(v["version"], v["kind"]) async for v in every] == [(0, "text"), (1, "bytes")]
    assert await client.get_artifact_version(app_name, USER, "s1", "notes", 0) == notes
    assert await client.get_artifact_version(app_name, USER, "s1", "notes") == again
    user_versions = await client.list_artifact_versions(app_name, USER, None, "user:avatar.png")
    assert user_versions["versions"] == [avatar]
    assert await client.get_artifact_version(app_name, USER, None, "user:avatar.png") == avatar

    await client.delete_artifact(app_name, USER, "s1", "notes")
    await client.delete_artifact(app_name, USER, None, "user:avatar.png")
    for session_id, name in (("s1", "notes"), (None, "user:avatar.png")):
        with pytest.raises(ArtifactNotFoundError):
            await client.get_artifact_version(app_name, USER, session_id, name)
        with pytest.raises(ArtifactNotFoundError):
            await client.download_artifact(app_name, USER, session_id, name)
        with pytest.raises(ArtifactNotFoundError):
            await client.delete_artifact(app_name, USER, session_id, name)
    restarted = await client.save_artifact(app_name, USER, "s1", "notes", {"text": "again"})
    assert restarted["version"] == 0


def test_sync_client_covers_every_artifact_method_in_both_scopes(
    sync_client: SessionaryClient, app_name: str, tmp_path: Path
) -> None:
    sync_client.create_session(app_name, USER, session_id="s1")
    chat = sync_client.session(app_name, USER, "s1")
    path = tmp_path / "page.html"
    path.write_bytes(b"<p>hi</p>")
    with path.open("rb") as page:
        saved = chat.upload_artifact("page.html", page, mime_type="text/html")
    assert (saved["version"], saved["size"], saved["mimeType"]) == (0, 9, "text/html")
    chat.save_artifact("user:tone", {"text": "dry"}, custom_metadata={"set": "by hand"})
    assert [a["name"] for a in chat.iter_artifacts()] == ["page.html", "user:tone"]
    assert chat.list_artifacts()["nextPageToken"] is None
    with chat.stream_artifact("page.html") as download:
        assert (download.version, download.mime_type, download.content_length) == (
            0,
            "text/html",
            9,
        )
        assert download.sha256 == saved["sha256"]
        assert b"".join(download.iter_bytes()) == b"<p>hi</p>"
    assert chat.download_artifact("page.html", offset=3, length=2) == b"hi"
    assert chat.get_artifact_version("user:tone")["customMetadata"] == {"set": "by hand"}
    assert [v["version"] for v in chat.iter_artifact_versions("page.html")] == [0]
    assert chat.list_artifact_versions("page.html")["versions"] == [saved]
    user_tone = sync_client.download_artifact(app_name, USER, None, "user:tone")
    assert user_tone == b"dry"
    chat.delete_artifact("page.html")
    with pytest.raises(ArtifactNotFoundError):
        chat.download_artifact("page.html")
    sync_client.delete_artifact(app_name, USER, None, "user:tone")
    assert sync_client.list_artifacts(app_name, USER)["artifacts"] == []


async def test_what_the_server_refuses_raises_its_error(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    with pytest.raises(SessionNotFoundError):
        await client.upload_artifact(app_name, USER, "missing", "a.txt", b"x")
    await client.create_session(app_name, USER, session_id="s1")
    with pytest.raises(InvalidRequestError):  # a session's name belongs to a session
        await client.upload_artifact(app_name, USER, None, "a.txt", b"x")
    for name in ("../up", "a/versions/b", "/rooted", "C:drive"):
        with pytest.raises(InvalidRequestError):
            await client.save_artifact(app_name, USER, "s1", name, {"text": "x"})
    with pytest.raises(InvalidRequestError):
        await client.upload_artifact(app_name, USER, "s1", "a.bin", b"x", mime_type="not a type")


async def chunks_of(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


class Reads(io.BytesIO):
    """A file that remembers how much each read asked for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def read(self, size: int | None = -1, /) -> bytes:
        self.asked.append(-1 if size is None else size)
        return super().read(size)


async def test_a_large_artifact_is_streamed_up_and_down_a_chunk_at_a_time(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    data = os.urandom(5 * MIB + 123)
    from_iterator = await client.upload_artifact(
        app_name, USER, "s1", "big.bin", chunks_of(data, 64 * 1024)
    )
    file = Reads(data)
    from_file = await client.upload_artifact(app_name, USER, "s1", "big.bin", file)
    assert from_iterator["size"] == from_file["size"] == len(data)
    assert from_iterator["sha256"] == from_file["sha256"] == hashlib.sha256(data).hexdigest()
    assert set(file.asked) == {UPLOAD_CHUNK} and len(file.asked) == 7  # 6 chunks, then EOF

    received = []
    async with client.stream_artifact(app_name, USER, "s1", "big.bin") as download:
        assert (download.version, download.content_length) == (1, len(data))
        async for chunk in download.aiter_bytes():
            received.append(chunk)
    assert len(received) > 1 and max(map(len, received)) < len(data)
    assert b"".join(received) == data
    assert await client.download_artifact(app_name, USER, "s1", "big.bin", version=0) == data


async def test_a_range_of_the_content_is_downloaded(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    data = bytes(range(256)) * 8192  # 2 MiB: ranges across the server's chunks
    await client.upload_artifact(app_name, USER, "s1", "data.bin", data)

    async def download(**where: int | None) -> bytes:
        return await client.download_artifact(app_name, USER, "s1", "data.bin", **where)

    assert await download(offset=MIB - 10, length=20) == data[MIB - 10 : MIB + 10]
    assert await download(offset=len(data) - 5) == data[-5:]
    assert await download(offset=-300) == data[-300:]
    assert await download(offset=10, length=len(data)) == data[10:]
    async with client.stream_artifact(
        app_name, USER, "s1", "data.bin", offset=100, length=50
    ) as part:
        assert part.content_length == 50
        assert part.response.headers["content-range"] == f"bytes 100-149/{len(data)}"
    with pytest.raises(RangeNotSatisfiableError) as past_the_end:
        await download(offset=len(data))
    assert past_the_end.value.status_code == 416 and past_the_end.value.size == len(data)
    for wrong in ({"length": 0}, {"offset": -5, "length": 2}):
        with pytest.raises(ValueError):
            await download(**wrong)


class RefuseFirstConnection(httpx.AsyncBaseTransport):
    """The first request never reaches the server (after its body was read, which a resend
    must send again from its start); later ones do."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.requests == 1:
            await request.aread()
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class LoseFirstAnswer(RefuseFirstConnection):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        response = await self.inner.handle_async_request(request)
        if self.requests == 1:
            await response.aread()
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return response


def flaky(live_server: str, transport: httpx.AsyncBaseTransport) -> AsyncSessionaryClient:
    http = httpx.AsyncClient(base_url=live_server, transport=transport)
    return AsyncSessionaryClient(live_server, http=http, backoff=0.01)


async def test_an_upload_is_resent_only_when_its_body_can_be_sent_again(
    client: AsyncSessionaryClient, live_server: str, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    file = io.BytesIO(b"header|the body")
    file.seek(7)  # sent from where the file is, on each attempt
    for content in (b"the body", file):
        transport = RefuseFirstConnection()
        async with flaky(live_server, transport) as retrying:
            await retrying.upload_artifact(app_name, USER, "s1", "body", content)
        assert transport.requests == 2
    transport = RefuseFirstConnection()
    async with flaky(live_server, transport) as retrying:
        with pytest.raises(APIConnectionError):
            await retrying.upload_artifact(app_name, USER, "s1", "body", chunks_of(b"x", 1))
    assert transport.requests == 1
    versions = client.iter_artifact_versions(app_name, USER, "s1", "body")
    assert [v["size"] async for v in versions] == [8, 8]
    assert await client.download_artifact(app_name, USER, "s1", "body") == b"the body"


async def test_an_upload_whose_answer_was_lost_is_not_resent(
    client: AsyncSessionaryClient, live_server: str, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s1")
    transport = LoseFirstAnswer()
    async with flaky(live_server, transport) as retrying:
        with pytest.raises(APIConnectionError):
            await retrying.upload_artifact(app_name, USER, "s1", "once", b"x")
        transport.requests = 0
        assert await retrying.download_artifact(app_name, USER, "s1", "once") == b"x"
    assert transport.requests == 2  # a download is a read: resent
    assert [
        v["version"] async for v in client.iter_artifact_versions(app_name, USER, "s1", "once")
    ] == [0]


def test_the_sync_client_uploads_an_iterator_and_a_file_in_chunks(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="s1")
    data = os.urandom(2 * MIB + 1)

    def chunks() -> Iterator[bytes]:
        yield from (data[i : i + MIB] for i in range(0, len(data), MIB))

    file = Reads(data)
    for content in (chunks(), file):
        saved = sync_client.upload_artifact(app_name, USER, "s1", "big", content)
        assert saved["sha256"] == hashlib.sha256(data).hexdigest()
    assert set(file.asked) == {UPLOAD_CHUNK}
    with sync_client.stream_artifact(app_name, USER, "s1", "big", version=0) as download:
        assert b"".join(download.iter_bytes()) == data
