"""Artifacts' bytes in an S3-compatible object store: a real one, S3Proxy (from Maven Central)
on its filesystem backend, which these tests start; everything else in PostgreSQL."""

import asyncio
import hashlib
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.config import Settings
from app.main import create_app
from tests.fixtures import free_port
from tests.helpers import APP, USER, assert_problem, create_session, maven_jar, session_url, tool

S3PROXY = "org.gaul:s3proxy:2.6.0:jar:jar-with-dependencies"
BUCKET, PREFIX = "artifacts", "sessionary/"
KEY_ID, SECRET = "local-key", "local-secret"
S = session_url("s")
A = f"{S}/artifacts"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def s3proxy(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A running S3Proxy: its URL, and the folder its bucket's objects are files in."""
    java = tool("java", "default-jre-headless")
    jar = maven_jar(pytestconfig, S3PROXY, "s3proxy-2.6.0.jar")
    root = tmp_path_factory.mktemp("s3")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    properties = root / "s3proxy.conf"
    properties.write_text(
        "s3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.endpoint={endpoint}\n"
        f"s3proxy.identity={KEY_ID}\n"
        f"s3proxy.credential={SECRET}\n"
        "jclouds.provider=filesystem\n"
        f"jclouds.filesystem.basedir={root / 'data'}\n"
    )
    process = subprocess.Popen(
        [java, "-XX:TieredStopAtLevel=1", "-jar", str(jar), "--properties", str(properties)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                httpx.get(endpoint, timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, "S3Proxy exited during start-up"
                time.sleep(0.1)
        (root / "data" / BUCKET).mkdir(parents=True)  # the bucket, as its backend keeps it
        yield endpoint, root / "data" / BUCKET
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
async def s3_app(
    settings: Settings, s3proxy: tuple[str, Path], app: FastAPI
) -> AsyncIterator[FastAPI]:
    """An app whose artifacts' bytes go to S3Proxy, from an empty bucket (`app`: the tables are
    emptied after)."""
    endpoint, bucket = s3proxy
    shutil.rmtree(bucket / PREFIX.rstrip("/"), ignore_errors=True)
    configured = settings.model_copy(
        update={
            "artifact_store": f"s3://{BUCKET}/{PREFIX}",
            "s3_endpoint": endpoint,
            "s3_access_key_id": KEY_ID,
            "s3_secret_access_key": SECRET,
            "max_artifact_bytes": 24 * MiB,
            "artifact_orphan_grace": 0.001,
        }
    )
    application = create_app(configured)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(s3_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(s3_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sessionary") as http:
        yield http


def objects(s3proxy: tuple[str, Path]) -> list[Path]:
    """The objects the store holds under the prefix (the files of S3Proxy's backend)."""
    folder = s3proxy[1] / PREFIX.rstrip("/")
    return sorted(path for path in folder.rglob("*") if path.is_file()) if folder.exists() else []


async def count(app: FastAPI, sql: str) -> Any:
    async with app.state.pool.connection() as connection:
        return await connection.fetchval(sql)


def pieces(size: int) -> Iterator[bytes]:
    """`size` bytes, a MiB at a time, each MiB its own."""
    for start in range(0, size, MiB):
        yield bytes([start // MiB % 251]) * min(MiB, size - start)


async def streamed(size: int) -> AsyncIterator[bytes]:
    """`pieces`, made as they are sent."""
    for piece in pieces(size):
        yield piece


def made(size: int) -> bytes:
    return b"".join(pieces(size))


async def test_bytes_go_to_the_object_store_and_come_back_whole(client, s3_app, s3proxy):
    await create_session(client, sessionId="s")
    large = await client.post(f"{A}/big.bin", content=streamed(20 * MiB))  # three parts
    small = await client.post(
        f"{A}/small.txt", content=b"hello", headers={"content-type": "text/plain"}
    )
    assert large.status_code == small.status_code == 201, large.text
    assert large.json()["sha256"] == hashlib.sha256(made(20 * MiB)).hexdigest()
    assert len(objects(s3proxy)) == 2
    assert await count(s3_app, "SELECT count(*) FROM artifact_chunks") == 0
    assert await count(s3_app, "SELECT array_agg(DISTINCT store) FROM artifact_blobs") == ["s3"]
    read = await client.get(f"{A}/big.bin")
    assert read.content == made(20 * MiB) and read.headers["etag"] == f'"{large.json()["sha256"]}"'
    across = await client.get(
        f"{A}/big.bin", headers={"range": f"bytes={8 * MiB - 3}-{8 * MiB + 2}"}
    )
    assert across.status_code == 206 and across.content == made(20 * MiB)[8 * MiB - 3 : 8 * MiB + 3]
    assert (await client.get(f"{A}/small.txt")).content == b"hello"


async def test_the_same_bytes_are_one_object_deleted_with_their_last_version(client, s3proxy):
    await create_session(client, sessionId="s")
    for name in ("a", "b", "a"):
        assert (await client.post(f"{A}/{name}", content=b"same" * 1000)).status_code == 201
    assert len(objects(s3proxy)) == 1
    assert (await client.delete(f"{A}/a")).status_code == 204
    assert len(objects(s3proxy)) == 1 and (await client.get(f"{A}/b")).content == b"same" * 1000
    assert (await client.delete(f"{A}/b")).status_code == 204
    assert objects(s3proxy) == []


async def test_an_upload_that_fails_leaves_no_object(client, s3_app, s3proxy):
    await create_session(client, sessionId="s")
    too_large = await client.post(f"{A}/x", content=streamed(30 * MiB))  # past 24 MiB, in parts
    assert_problem(too_large, 413, "payload_too_large")
    assert objects(s3proxy) == []
    missing = await client.post(f"{session_url('nope')}/artifacts/x", content=b"x")
    assert_problem(missing, 404, "session_not_found")
    assert objects(s3proxy) == []
    assert await count(s3_app, "SELECT count(*) FROM artifact_blobs") == 0


async def test_the_sweeper_deletes_objects_nothing_points_at(client, s3_app, s3proxy):
    await create_session(client, sessionId="s")
    assert (await client.post(f"{A}/kept", content=b"kept")).status_code == 201
    await create_session(client, sessionId="gone")
    assert (
        await client.post(f"{session_url('gone')}/artifacts/x", content=b"x")
    ).status_code == 201
    assert (await client.delete(session_url("gone"))).status_code == 204  # its object lingers
    folder = s3proxy[1] / PREFIX.rstrip("/")
    (folder / str(uuid.uuid4())).write_bytes(b"a failed save's")
    (folder / "not-ours").write_bytes(b"someone else's")
    assert len(objects(s3proxy)) == 4
    await asyncio.sleep(0.01)  # past the grace
    await s3_app.state.services.retention.sweep()
    assert [path.name for path in objects(s3proxy)] == sorted(
        ["not-ours", str(await count(s3_app, "SELECT blob_id FROM artifact_blobs"))]
    )
    assert (await client.get(f"{A}/kept")).content == b"kept"


async def test_an_export_reads_the_object_store_and_an_import_writes_it(client, s3proxy):
    await create_session(client, sessionId="s")
    assert (await client.post(f"{A}/doc", content=streamed(9 * MiB))).status_code == 201
    exported = await client.get(f"{S}:export")
    assert exported.status_code == 200
    imported = await client.post(
        f"/apps/other/users/{USER}/sessions:import",
        content=exported.content,
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    moved = await client.get(f"/apps/other/users/{USER}/sessions/s/artifacts/doc")
    assert moved.content == made(9 * MiB)
    assert len(objects(s3proxy)) == 2  # another app's: bytes are shared within an app and user
    assert APP != "other"
