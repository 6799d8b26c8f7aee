"""An S3-compatible object store (AWS S3, MinIO, SeaweedFS, Ceph, R2, GCS's interoperability
API, …), for artifacts' bytes: the few calls they need, signed with AWS Signature Version 4
over httpx, path-style (`{endpoint}/{bucket}/{key}`), so that any S3-compatible server works.

Uploads stream: a content is sent as the parts of a multipart upload as it arrives (one part
held at a time), or in one PUT when it ends within the first part.
"""

import hashlib
import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote
from xml.etree import ElementTree

import httpx

UNSIGNED = "UNSIGNED-PAYLOAD"
_S3 = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class ObjectStoreError(Exception):
    """The object store answered with an error, or could not be reached."""


@dataclass(frozen=True)
class Listed:
    key: str
    last_modified: datetime


def _encode(value: str, *, slash: bool = False) -> str:
    """RFC 3986 encoding, as SigV4 canonical requests take it."""
    return quote(value, safe="-_.~" + ("/" if slash else ""))


class ObjectStore:
    """One bucket (and a key prefix in it) of an S3-compatible server."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        endpoint: str,
        bucket: str,
        prefix: str,
        region: str,
        access_key_id: str,
        secret_access_key: str,
    ) -> None:
        self.http = http
        self.endpoint = endpoint.rstrip("/")
        self.bucket, self.prefix, self.region = bucket, prefix, region
        self.access_key_id, self.secret_access_key = access_key_id, secret_access_key

    def key(self, name: str) -> str:
        return self.prefix + name

    def _signed(
        self, method: str, key: str | None, query: dict[str, str], content_hash: str
    ) -> tuple[str, dict[str, str]]:
        """The URL and the headers of a request signed with SigV4 (`content_hash`: the body's
        SHA-256 in hex, or UNSIGNED-PAYLOAD)."""
        now = datetime.now(UTC)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        path = f"/{self.bucket}" + ("" if key is None else "/" + _encode(key, slash=True))
        host = httpx.URL(self.endpoint).netloc.decode()
        headers = {"host": host, "x-amz-content-sha256": content_hash, "x-amz-date": stamp}
        names = ";".join(sorted(headers))
        canonical = "\n".join(
            [
                method,
                path,
                "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items())),
                "".join(f"{name}:{headers[name]}\n" for name in sorted(headers)),
                names,
                content_hash,
            ]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        signing = ("AWS4" + self.secret_access_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            signing = hmac.new(signing, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.access_key_id}/{scope}, "
            f"SignedHeaders={names}, Signature={signature}"
        )
        del headers["host"]  # httpx sends it
        query_string = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
        return self.endpoint + path + ("?" + query_string if query_string else ""), headers

    async def _call(
        self,
        method: str,
        key: str | None,
        *,
        query: dict[str, str] | None = None,
        body: bytes = b"",
        ok: tuple[int, ...] = (200,),
    ) -> httpx.Response:
        url, headers = self._signed(method, key, query or {}, hashlib.sha256(body).hexdigest())
        try:
            response = await self.http.request(method, url, headers=headers, content=body)
        except httpx.HTTPError as error:
            raise ObjectStoreError(f"the object store cannot be reached: {error}") from error
        if response.status_code not in ok:
            raise ObjectStoreError(
                f"the object store answered {method} with {response.status_code}: "
                f"{response.text[:200]}"
            )
        return response

    async def create_bucket(self) -> None:
        await self._call("PUT", None, ok=(200, 409))

    async def put(self, key: str, data: bytes) -> None:
        await self._call("PUT", key, body=data)

    async def start_upload(self, key: str) -> str:
        answer = await self._call("POST", key, query={"uploads": ""})
        upload_id = ElementTree.fromstring(answer.content).findtext(f"{_S3}UploadId")
        if not upload_id:
            raise ObjectStoreError("the object store started an upload without an id")
        return upload_id

    async def put_part(self, key: str, upload_id: str, number: int, data: bytes) -> str:
        query = {"partNumber": str(number), "uploadId": upload_id}
        answer = await self._call("PUT", key, query=query, body=data)
        return str(answer.headers.get("etag", ""))

    async def complete_upload(self, key: str, upload_id: str, etags: list[str]) -> None:
        parts = "".join(
            f"<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag></Part>"
            for number, etag in enumerate(etags, start=1)
        )
        body = f"<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>".encode()
        answer = await self._call("POST", key, query={"uploadId": upload_id}, body=body)
        if b"<Error>" in answer.content:  # S3 may fail a completion with a 200
            raise ObjectStoreError(f"the object store did not complete an upload: {answer.text}")

    async def abort_upload(self, key: str, upload_id: str) -> None:
        await self._call("DELETE", key, query={"uploadId": upload_id}, ok=(200, 204, 404))

    @asynccontextmanager
    async def read(self, key: str, start: int, end: int) -> AsyncIterator[AsyncIterator[bytes]]:
        """Bytes `start` to `end` (inclusive) of an object, as they come. ObjectStoreError for
        an object that is not there."""
        url, headers = self._signed("GET", key, {}, UNSIGNED)
        headers["range"] = f"bytes={start}-{end}"
        try:
            async with self.http.stream("GET", url, headers=headers) as response:
                if response.status_code not in (200, 206):
                    raise ObjectStoreError(
                        f"the object store answered GET with {response.status_code}"
                    )
                yield response.aiter_bytes()
        except httpx.HTTPError as error:
            raise ObjectStoreError(f"the object store cannot be reached: {error}") from error

    async def delete(self, key: str) -> None:
        await self._call("DELETE", key, ok=(200, 204, 404))

    async def list(self, after: str | None = None) -> tuple[list[Listed], str | None]:
        """A page of the objects under the prefix, and where the next page starts (None: the
        last page)."""
        query = {"list-type": "2", "prefix": self.prefix}
        if after is not None:
            query["continuation-token"] = after
        root = ElementTree.fromstring((await self._call("GET", None, query=query)).content)
        listed = [
            Listed(
                item.findtext(f"{_S3}Key") or "",
                datetime.fromisoformat(
                    (item.findtext(f"{_S3}LastModified") or "").replace("Z", "+00:00")
                ),
            )
            for item in root.iter(f"{_S3}Contents")
        ]
        following = root.findtext(f"{_S3}NextContinuationToken")
        return listed, following or None
