"""The artifact endpoints of ADK's own API server, under `/adk`, for `adk web`'s artifact panel
and any client written for `google.adk.cli.api_server`: the same paths, bodies and answers (a
version's record as ADK's `ArtifactVersion`, content as a genai `Part`, names and versions as
bare arrays, a delete as 200 `null`), errors as `{"detail": …}`. Underneath, the same artifacts
as the native API (`app.api.artifacts`).

A `Part`'s bytes are base64 in its JSON, which is streamed out as it is encoded (URL-safe, as
ADK's server writes it): a large artifact costs no more memory here than a download does.
"""

import base64
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import StreamingResponse

from app import strict_json
from app.api.adk_server import PREFIX, AdkRoute
from app.api.artifacts import ArtifactName, Artifacts, SessionScope, saved_part
from app.api.deps import authorized
from app.api.routing import SESSION_PATH
from app.domain import ArtifactScope, PageRequest, StoredArtifact
from app.errors import ArtifactNotFound, BadRequest, InvalidInput, NotFound
from app.limits import INT64_MAX
from app.rules.artifacts import canonical_uri
from app.schemas import ArtifactSave
from app.services.artifacts import ArtifactService
from app.services.auth import Need

ARTIFACTS = PREFIX + SESSION_PATH + "/artifacts"
ALL = 1000  # a page of the listings ADK answers whole

router = APIRouter(
    prefix=ARTIFACTS,
    route_class=AdkRoute,
    dependencies=[authorized(Need.USER)],
    include_in_schema=False,
)


def _json(value: Any) -> Response:
    return Response(strict_json.dumps(value), media_type="application/json")


def _record(found: StoredArtifact, scope: ArtifactScope) -> dict[str, Any]:
    """ADK's `ArtifactVersion`, its null fields left out as ADK's server leaves them."""
    record = {
        "version": found.version,
        "canonicalUri": canonical_uri(
            scope.app_name, scope.user_id, found.session_id, found.name, found.version
        ),
        "customMetadata": found.custom_metadata,
        "createTime": found.create_time.timestamp(),
        "mimeType": found.mime_type,
    }
    return {key: value for key, value in record.items() if value is not None}


def _version(version_id: str) -> int | None:
    if version_id == "latest":
        return None
    # `str.isdigit` takes "²" too, which `int` refuses: ASCII digits only.
    if not re.fullmatch(r"[0-9]{1,19}", version_id) or int(version_id) > INT64_MAX:
        raise InvalidInput("Invalid version ID")
    return int(version_id)


async def _all(artifacts: ArtifactService, scope: ArtifactScope, name: str) -> list[StoredArtifact]:
    found: list[StoredArtifact] = []
    page = PageRequest(ALL)
    while True:
        try:
            listed = await artifacts.versions(scope, name, page)
        except ArtifactNotFound:
            return found
        found += listed.items
        if listed.next_page_token is None:
            return found
        page = PageRequest(ALL, listed.next_page_token)


async def _part(
    artifacts: ArtifactService, scope: ArtifactScope, name: str, version: int | None
) -> Response:
    """The version's content as a genai `Part`, streamed; 404 `Artifact not found`."""
    try:
        found = await artifacts.find_content(scope, name, version)
    except ArtifactNotFound:
        raise NotFound("Artifact not found") from None
    if found.kind == "reference":
        reference = {"fileUri": found.file_uri, "mimeType": found.mime_type}
        return _json({"fileData": {k: v for k, v in reference.items() if v is not None}})
    content = artifacts.read(scope, found, None)
    if found.kind == "text":
        return StreamingResponse(_text_part(content), media_type="application/json")
    head = {"mimeType": found.mime_type, "displayName": found.display_name}
    return StreamingResponse(
        _inline_part({k: v for k, v in head.items() if v is not None}, content),
        media_type="application/json",
    )


async def _text_part(content: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    text = b"".join([piece async for piece in content]).decode("utf-8")
    yield strict_json.dumps({"text": text})


async def _inline_part(head: dict[str, Any], content: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """`{"inlineData": {…head, "data": "<base64>"}}`, the base64 encoded as the bytes come, in
    pieces of a multiple of 3 bytes so that they join into one."""
    yield b'{"inlineData":' + strict_json.dumps(head)[:-1] + (b"," if head else b"") + b'"data":"'
    rest = b""
    async for piece in content:
        piece = rest + piece
        cut = len(piece) - len(piece) % 3
        rest = piece[cut:]
        yield base64.urlsafe_b64encode(piece[:cut])
    yield base64.urlsafe_b64encode(rest) + b'"}}'


@router.get("/{name:artifact_name}/versions/{version_id}/metadata")
async def adk_get_artifact_version(
    scope: SessionScope,
    name: ArtifactName,
    version_id: str,
    artifacts: Artifacts,
) -> Response:
    try:
        found = await artifacts.find(scope, name, _version(version_id))
    except ArtifactNotFound:
        raise NotFound("Artifact version not found") from None
    return _json(_record(found, scope))


@router.get("/{name:artifact_name}/versions/metadata")
async def adk_list_artifact_versions_metadata(
    scope: SessionScope,
    name: ArtifactName,
    artifacts: Artifacts,
) -> Response:
    return _json([_record(found, scope) for found in await _all(artifacts, scope, name)])


@router.post("")
async def adk_save_artifact(
    scope: SessionScope,
    body: ArtifactSave,
    artifacts: Artifacts,
) -> Response:
    try:
        saved = await saved_part(artifacts, scope, body)
    except InvalidInput as error:  # ADK's `InputValidationError`, which its server makes a 400
        raise BadRequest(error.detail) from None
    return _json(_record(saved, scope))


@router.get("/{name:artifact_name}/versions/{version_id}")
async def adk_load_artifact_version(
    scope: SessionScope,
    name: ArtifactName,
    version_id: str,
    artifacts: Artifacts,
) -> Response:
    return await _part(artifacts, scope, name, _version(version_id))


@router.get("")
async def adk_list_artifact_names(scope: SessionScope, artifacts: Artifacts) -> Response:
    names: list[str] = []
    page = PageRequest(ALL)
    while True:
        listed = await artifacts.latest(scope, page)
        names += [found.name for found in listed.items]
        if listed.next_page_token is None:
            return _json(names)
        page = PageRequest(ALL, listed.next_page_token)


@router.get("/{name:artifact_name}/versions")
async def adk_list_artifact_versions(
    scope: SessionScope,
    name: ArtifactName,
    artifacts: Artifacts,
) -> Response:
    return _json([found.version for found in await _all(artifacts, scope, name)])


@router.get("/{name:artifact}")
async def adk_load_artifact(
    scope: SessionScope,
    name: ArtifactName,
    artifacts: Artifacts,
    version: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
) -> Response:
    return await _part(artifacts, scope, name, version)


@router.delete("/{name:artifact}")
async def adk_delete_artifact(
    scope: SessionScope,
    name: ArtifactName,
    artifacts: Artifacts,
) -> Response:
    """200 `null`, whether or not the artifact was there, as ADK's server answers."""
    try:
        await artifacts.delete(scope, name)
    except ArtifactNotFound:
        pass
    return _json(None)
