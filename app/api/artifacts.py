"""Artifact routes, ADK's `ArtifactService` over HTTP: save a version (an upload streamed in,
or ADK's JSON `Part`), download one (streamed out, `ETag`, `Range`), list names and versions,
delete a name. The same routes serve a session (its names and its user's `user:` names) and
a user alone (`user:` names)."""

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse

from app import strict_json
from app.api import render
from app.api.deps import AppName, PageOf, SessionId, UserId, authorized, services
from app.api.responses import problem_responses, respond
from app.api.routing import SESSION_PATH, StrictRoute
from app.domain import ArtifactScope, NewArtifact, StoredArtifact
from app.errors import InvalidInput, RangeNotSatisfiable
from app.limits import INT64_MAX
from app.rules.artifacts import (
    DEFAULT_MIME_TYPE,
    TEXT_MIME_TYPE,
    UnsatisfiableRange,
    byte_range,
    check_mime_type,
)
from app.schemas import ArtifactPage, ArtifactSave, ArtifactVersion, ArtifactVersionPage
from app.services.artifacts import ArtifactService
from app.services.auth import Need

USER_PATH = "/apps/{app_name}/users/{user_id}"
# Never let a browser run what was uploaded (HTML, SVG, scripts) from the API's origin: a
# sandbox with nothing allowed, and a download rather than a page (every answer carries
# `X-Content-Type-Options: nosniff` besides).
CONTENT_HEADERS = {
    "Content-Security-Policy": "sandbox; default-src 'none'",
    "Cross-Origin-Resource-Policy": "same-site",
}
METADATA_HEADER = "Artifact-Metadata"

ArtifactName = Annotated[
    str,
    Path(
        description="The artifact's name (ADK's `filename`); `/` may separate segments, as in "
        "a folder (`reports/q1.pdf`), and one that starts with `user:` belongs to the user.",
    ),
]
VersionQuery = Annotated[
    int | None,
    Query(ge=0, le=INT64_MAX, description="Which version; the newest when absent."),
]
UntilSeq = Annotated[
    int | None,
    Query(
        alias="untilSeq",
        ge=0,
        le=INT64_MAX,
        description="The artifacts as the session was at this seq: the versions saved before "
        "the write that took it (`user:` names, which no session's history holds, as now).",
    ),
]
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {
        **problem_responses(404)[404],
        "description": "No such session (`session_not_found`), or no such artifact or version "
        "(`artifact_not_found`; a version ADK's rewind marked removed reads so too).",
    }
}


async def _artifacts(request: Request) -> ArtifactService:
    return services(request).artifacts


Artifacts = Annotated[ArtifactService, Depends(_artifacts)]


async def _session_scope(
    app_name: AppName, user_id: UserId, session_id: SessionId
) -> ArtifactScope:
    return ArtifactScope(app_name, user_id, session_id)


async def _user_scope(app_name: AppName, user_id: UserId) -> ArtifactScope:
    return ArtifactScope(app_name, user_id, None)


SessionScope = Annotated[ArtifactScope, Depends(_session_scope)]


def _version(found: StoredArtifact, scope: ArtifactScope, code: int = 200) -> Response:
    return respond(
        render.dumps(render.artifact_version(found, scope.app_name, scope.user_id)), code
    )


def _metadata(header: str | None, max_depth: int) -> dict[str, Any]:
    if header is None:
        return {}
    try:
        metadata = strict_json.loads(header.encode("latin-1"), max_depth=max_depth)
    except (ValueError, UnicodeEncodeError) as error:
        raise InvalidInput(
            f"{METADATA_HEADER} is not JSON: {error}", field=METADATA_HEADER
        ) from None
    if not isinstance(metadata, dict):
        raise InvalidInput(f"{METADATA_HEADER} must be a JSON object.", field=METADATA_HEADER)
    return metadata


def _content_headers(found: StoredArtifact) -> dict[str, str]:
    mime_type = found.mime_type or DEFAULT_MIME_TYPE
    if found.kind == "text":
        mime_type = f"{TEXT_MIME_TYPE}; charset=utf-8"
    basename = found.name.removeprefix("user:").rpartition("/")[2]
    return {
        **CONTENT_HEADERS,
        "Content-Type": mime_type,
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(basename, safe='')}",
        "Artifact-Version": str(found.version),
        "Accept-Ranges": "bytes",
        "Cache-Control": "private, no-cache",
    }


async def saved_part(
    artifacts: ArtifactService, scope: ArtifactScope, body: ArtifactSave
) -> StoredArtifact:
    """Save ADK's JSON form: the `Part`'s bytes, text or reference, as its kind says."""
    part = body.artifact
    metadata = body.custom_metadata or {}
    data = b""
    if part.inline_data is not None:
        data = part.inline_data.data
        inline = part.inline_data
        new = NewArtifact("bytes", inline.mime_type, inline.display_name, None, metadata)
    elif part.text is not None:
        data = part.text.encode()
        new = NewArtifact("text", TEXT_MIME_TYPE, None, None, metadata)
    else:
        assert part.file_data is not None  # the Part holds exactly one
        ref = part.file_data
        new = NewArtifact("reference", ref.mime_type, ref.display_name, ref.file_uri, metadata)
    return await artifacts.save(scope, body.filename, _once(data), new)


def _router(prefix: str, scope_of: Callable[..., Any], suffix: str, where: str) -> APIRouter:
    """The artifact routes under `prefix` (a session's path or a user's), each named
    `<verb>_<suffix>` in the spec; `where` says whose names they serve, for their docs."""
    router = APIRouter(
        prefix=prefix + "/artifacts",
        tags=["artifacts"],
        route_class=StrictRoute,
        dependencies=[authorized(Need.USER)],
        responses=problem_responses(401, 403),
    )
    Scope = Annotated[ArtifactScope, Depends(scope_of)]

    @router.get(
        "",
        name=f"list_{suffix}s",
        response_model=ArtifactPage,
        responses=problem_responses(422, 503) | NOT_FOUND,
        description=f"The newest version of each artifact name of {where}, by name.",
    )
    async def list_artifacts(
        scope: Scope, artifacts: Artifacts, page: PageOf, until_seq: UntilSeq = None
    ) -> Response:
        listed = await artifacts.latest(scope, page, until_seq=until_seq)
        return respond(render.artifact_page(listed, "artifacts", scope.app_name, scope.user_id))

    @router.post(
        "",
        name=f"save_{suffix}",
        status_code=status.HTTP_201_CREATED,
        response_model=ArtifactVersion,
        responses=problem_responses(409, 413, 415, 422, 503) | NOT_FOUND,
        description=f"Save the next version of an artifact of {where} from ADK's JSON "
        "(`SaveArtifactRequest`: a `Part` with `inlineData` in base64, `text`, or `fileData`, "
        "a reference by URI). For large files, upload the bytes instead (`POST "
        "…/artifacts/{name}`): this form is read whole, within the request body limit.",
    )
    async def save_artifact(scope: Scope, artifacts: Artifacts, body: ArtifactSave) -> Response:
        return _version(await saved_part(artifacts, scope, body), scope, status.HTTP_201_CREATED)

    @router.get(
        "/{name:artifact_name}/versions/{version}",
        name=f"get_{suffix}_version",
        response_model=ArtifactVersion,
        responses=problem_responses(422, 503) | NOT_FOUND,
        description="One version's record (`latest`: the newest's), not its content.",
    )
    async def get_version(
        scope: Scope,
        artifacts: Artifacts,
        name: ArtifactName,
        version: Annotated[
            str,
            Path(pattern=r"^(latest|[0-9]{1,18})$", description="A version, or `latest`."),
        ],
    ) -> Response:
        found = await artifacts.find(scope, name, None if version == "latest" else int(version))
        return _version(found, scope)

    @router.get(
        "/{name:artifact_name}/versions",
        name=f"list_{suffix}_versions",
        response_model=ArtifactVersionPage,
        responses=problem_responses(422, 503) | NOT_FOUND,
        description="Every version of an artifact, oldest first, with its record.",
    )
    async def list_versions(
        scope: Scope, artifacts: Artifacts, name: ArtifactName, page: PageOf
    ) -> Response:
        listed = await artifacts.versions(scope, name, page)
        return respond(render.artifact_page(listed, "versions", scope.app_name, scope.user_id))

    @router.post(
        "/{name:artifact}",
        name=f"upload_{suffix}",
        status_code=status.HTTP_201_CREATED,
        response_model=ArtifactVersion,
        responses=problem_responses(409, 413, 422, 503) | NOT_FOUND,
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "The bytes, any media type, streamed: never held whole.",
                "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
            }
        },
        description=f"Save the next version of an artifact of {where} from the request's "
        "bytes, streamed into storage (up to `SESSIONARY_MAX_ARTIFACT_BYTES`, 512 MiB by "
        "default; past it, 413 and nothing is kept). `Content-Type` is its media type "
        f"(`{DEFAULT_MIME_TYPE}` when absent); the header `{METADATA_HEADER}`, a JSON "
        "object (non-ASCII as `\\u` escapes), is its custom metadata. Concurrent saves of one "
        "name take consecutive versions.",
    )
    async def upload_artifact(
        request: Request,
        scope: Scope,
        artifacts: Artifacts,
        name: ArtifactName,
        display_name: Annotated[
            str | None,
            Query(alias="displayName", max_length=1024, description="ADK's `displayName`."),
        ] = None,
    ) -> Response:
        content_type = request.headers.get("content-type")
        new = NewArtifact(
            "bytes",
            DEFAULT_MIME_TYPE if content_type is None else check_mime_type(content_type),
            display_name,
            None,
            _metadata(
                request.headers.get(METADATA_HEADER), request.app.state.settings.max_json_depth
            ),
        )
        saved = await artifacts.save(scope, name, request.stream(), new)
        return _version(saved, scope, status.HTTP_201_CREATED)

    @router.get(
        "/{name:artifact}",
        name=f"download_{suffix}",
        response_class=Response,
        responses={
            200: {
                "description": "The content, with its media type; `ETag` is its SHA-256.",
                "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
            },
            206: {"description": "The part of the content `Range` asked for."},
            303: {
                "description": "A reference saved with a URI that is not `artifact://`: "
                "`Location` is the URI."
            },
            304: {"description": "`If-None-Match` names this content's `ETag`."},
            **problem_responses(416, 422, 503),
            **NOT_FOUND,
        },
        description="Download a version's content (the newest when `version` is absent), "
        "streamed. Conditional (`If-None-Match`) and partial (`Range: bytes=…`, one range, "
        "`If-Range`) requests are answered. Always served as an attachment that a browser "
        "will not run (`Content-Security-Policy: sandbox`, `nosniff`).",
    )
    async def download_artifact(
        request: Request,
        scope: Scope,
        artifacts: Artifacts,
        name: ArtifactName,
        version: VersionQuery = None,
        range_: Annotated[str | None, Header(alias="Range")] = None,
    ) -> Response:
        found = await artifacts.find_content(scope, name, version)
        if found.kind == "reference":  # not `artifact://`, which find_content follows
            location = quote(found.file_uri or "", safe=":/?#[]@!$&'()*+,;=%~")
            headers = {"Location": location, "Artifact-Version": str(found.version)}
            return Response(status_code=status.HTTP_303_SEE_OTHER, headers=headers)
        tag = f'"{(found.content_hash or b"").hex()}"'
        headers = {**_content_headers(found), "ETag": tag}
        if tag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
        if request.headers.get("if-range", tag) != tag:
            range_ = None  # changed since: the whole of it
        try:
            part = byte_range(range_, found.size)
        except UnsatisfiableRange:
            raise RangeNotSatisfiable(found.size) from None
        code = status.HTTP_200_OK
        length = found.size
        if part is not None:
            code = status.HTTP_206_PARTIAL_CONTENT
            length = part.length
            headers["Content-Range"] = f"bytes {part.start}-{part.end}/{part.size}"
        headers["Content-Length"] = str(length)
        body: AsyncIterator[bytes] = artifacts.read(scope, found, part)
        return StreamingResponse(body, code, headers=headers)

    @router.delete(
        "/{name:artifact}",
        name=f"delete_{suffix}",
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        responses=problem_responses(409, 422, 503) | NOT_FOUND,
        description="Delete every version of an artifact; its bytes go too, unless another "
        "version (of any name of the user) holds the same.",
    )
    async def delete_artifact(scope: Scope, artifacts: Artifacts, name: ArtifactName) -> Response:
        await artifacts.delete(scope, name)
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    return router


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


router = APIRouter()
router.include_router(
    _router(SESSION_PATH, _session_scope, "artifact", "the session (and its user's `user:` names)")
)
router.include_router(_router(USER_PATH, _user_scope, "user_artifact", "the user (`user:` names)"))
