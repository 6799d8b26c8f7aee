"""`SessionaryArtifactService`: google-adk's `BaseArtifactService` over Sessionary's artifacts.

    runner = Runner(agent=agent, app_name="my-app",
                    session_service=SessionaryService(url),
                    artifact_service=SessionaryArtifactService(url))

Sessionary keeps artifacts with their session (they fork, rewind and are deleted with it), so
the sessions are the server's: a save into a session it does not hold raises ADK's
`SessionNotFoundError`, and reads through one find nothing.

It keeps the contract ADK's in-memory and GCS services keep: versions from 0; `session_id=None`
reaches the user's `user:` names alone, and any other name without a session raises
`InputValidationError`, as does a name, id or reference ADK refuses; `load_artifact` gives None
for a missing name or version and for ADK's rewind marker, follows `artifact://` references
(five at most, within the app, user and session, checked as ADK checks them), and gives a
`Part` back as it was saved: `text`, `inline_data` with its MIME type and display name
(`application/octet-stream` when it had none, as ADK's file service stores it), or
`file_data`; `delete_artifact` of a missing name does nothing. Bytes are uploaded as they are
(no base64); text and references are saved as ADK's JSON.
"""

from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import (
    ArtifactVersion,
    BaseArtifactService,
    ensure_part,
)
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.genai import types

from sessionary_client import errors
from sessionary_client import models as wire
from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._core import DEFAULT_TIMEOUT

# ADK's `_MAX_ARTIFACT_REFERENCE_DEPTH`: how many `artifact://` references a load follows.
MAX_REFERENCES = 5
# ADK's rewind marker (`artifact_util._new_rewind_tombstone`), which its services load as absent.
REWIND_MARKER = types.Part(inline_data=types.Blob(mime_type="application/octet-stream", data=b""))
# A listing's page: the API's largest.
_PAGE = 1000
# What a read answers "nothing here" for: no such name or version, or no such session.
_ABSENT = (errors.ArtifactNotFoundError, errors.SessionNotFoundError)

T = TypeVar("T")


def _check_ids(app_name: str, user_id: str, session_id: str | None) -> None:
    """Refuse the ids ADK's services refuse: one that would change a path."""
    for value, field in ((app_name, "app_name"), (user_id, "user_id"), (session_id, "session_id")):
        if value is not None:
            artifact_util.validate_path_segment(value, field)


def _check_scope(app_name: str, user_id: str, session_id: str | None, filename: str) -> None:
    """`_check_ids`; a name refused as ADK refuses a path's segment (the server's rule, here
    before a read's path could be refused for another reason); a session's name without a
    session refused, as ADK's in-memory and GCS services refuse it (its file service would
    store it as the user's)."""
    _check_ids(app_name, user_id, session_id)
    artifact_util.validate_path_segment(filename.removeprefix("user:"), "filename")
    if session_id is None and not filename.startswith("user:"):
        raise InputValidationError("Session ID must be provided for session-scoped artifacts.")


@contextmanager
def _refused_input() -> Iterator[None]:
    """A name or reference the server refuses (422) raised as ADK's services raise it."""
    try:
        yield
    except errors.InvalidRequestError as error:
        raise InputValidationError(error.detail) from error


async def _found(call: Awaitable[T]) -> T | None:
    """The call's answer; None when its artifact, version or session does not exist."""
    try:
        with _refused_input():
            return await call
    except _ABSENT:
        return None


async def _listed(items: AsyncIterator[T]) -> list[T]:
    """Every item; none when the artifact or its session does not exist."""
    try:
        with _refused_input():
            return [item async for item in items]
    except _ABSENT:
        return []


def _adk_version(record: wire.ArtifactVersion) -> ArtifactVersion:
    return ArtifactVersion(
        version=record["version"],
        canonical_uri=record["canonicalUri"],
        custom_metadata=record["customMetadata"],
        create_time=record["createTime"],
        mime_type=record["mimeType"],
    )


class SessionaryArtifactService(BaseArtifactService):
    """ADK artifacts stored in Sessionary, with the sessions that made them."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = 2,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: AsyncSessionaryClient | None = None,
    ) -> None:
        self.client = client or AsyncSessionaryClient(
            base_url, timeout=timeout, retries=retries, api_key=api_key, headers=headers
        )

    async def close(self) -> None:
        await self.client.aclose()

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        _check_scope(app_name, user_id, session_id, filename)
        key = (app_name, user_id, session_id, filename)
        try:
            with _refused_input():
                saved = await self._save(key, ensure_part(artifact), custom_metadata)
        except errors.SessionNotFoundError as error:
            raise SessionNotFoundError(f"Session {session_id} not found.") from error
        return saved["version"]

    async def _save(
        self,
        key: tuple[str, str, str | None, str],
        part: types.Part,
        custom_metadata: dict[str, Any] | None,
    ) -> wire.ArtifactVersion:
        """Bytes uploaded as they are; text and references as ADK's JSON. The first of them
        the part holds, in the order ADK's in-memory service reads them."""
        if part.inline_data is not None:
            blob = part.inline_data
            if blob.data is None:
                raise InputValidationError("Artifact inline_data must contain data.")
            return await self.client.upload_artifact(
                *key,
                blob.data,
                mime_type=blob.mime_type or None,
                display_name=blob.display_name,
                custom_metadata=custom_metadata,
            )
        if part.text is not None:
            return await self.client.save_artifact(
                *key, {"text": part.text}, custom_metadata=custom_metadata
            )
        if part.file_data is not None and part.file_data.file_uri:
            reference = part.file_data
            fields = {
                "fileUri": reference.file_uri,
                "mimeType": reference.mime_type,
                "displayName": reference.display_name,
            }
            file_data = {name: value for name, value in fields.items() if value is not None}
            return await self.client.save_artifact(
                *key, {"fileData": file_data}, custom_metadata=custom_metadata
            )
        if part.file_data is not None:
            raise InputValidationError("Artifact file_data must have a file_uri.")
        raise InputValidationError("Not supported artifact type.")

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        # References are followed here, with ADK's own checks at each hop, so that a chain
        # resolves (or is refused) exactly as in ADK's services.
        hops_left = MAX_REFERENCES
        while True:
            _check_scope(app_name, user_id, session_id, filename)
            if version is not None and version < 0:
                return None
            key = (app_name, user_id, session_id, filename)
            record = await _found(self.client.get_artifact_version(*key, version))
            if record is None:
                return None
            uri = record["fileUri"]
            if uri is None or not uri.startswith("artifact://"):
                return await self._content(key, record)
            target = artifact_util.resolve_artifact_reference(
                file_uri=uri,
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                remaining_depth=hops_left,
            )
            app_name, user_id, session_id, filename, version = target
            hops_left -= 1

    async def _content(
        self, key: tuple[str, str, str | None, str], record: wire.ArtifactVersion
    ) -> types.Part | None:
        """The `Part` a version holds, as ADK's services load it."""
        if record["kind"] == "reference":
            return types.Part(
                file_data=types.FileData(
                    file_uri=record["fileUri"],
                    mime_type=record["mimeType"],
                    display_name=record["displayName"],
                )
            )
        data = b""
        if record["size"]:  # an empty one needs no download (and the marker has none)
            downloaded = self.client.download_artifact(*key, version=record["version"])
            found = await _found(downloaded)
            if found is None:  # deleted since its record was read
                return None
            data = found
        if record["kind"] == "text":
            return types.Part(text=data.decode())
        part = types.Part(
            inline_data=types.Blob(
                mime_type=record["mimeType"], data=data, display_name=record["displayName"]
            )
        )
        return None if part == REWIND_MARKER else part

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        _check_ids(app_name, user_id, session_id)
        listed = await _listed(
            self.client.iter_artifacts(app_name, user_id, session_id, page_size=_PAGE)
        )
        return sorted(found["name"] for found in listed)

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        _check_scope(app_name, user_id, session_id, filename)
        try:
            with _refused_input():
                await self.client.delete_artifact(app_name, user_id, session_id, filename)
        except _ABSENT:
            pass  # ADK's services delete a missing artifact silently

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        versions = await self._versions(app_name, user_id, session_id, filename)
        return [found["version"] for found in versions]

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        versions = await self._versions(app_name, user_id, session_id, filename)
        return [_adk_version(found) for found in versions]

    async def _versions(
        self, app_name: str, user_id: str, session_id: str | None, filename: str
    ) -> list[wire.ArtifactVersion]:
        _check_scope(app_name, user_id, session_id, filename)
        key = (app_name, user_id, session_id, filename)
        return await _listed(self.client.iter_artifact_versions(*key, page_size=_PAGE))

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        _check_scope(app_name, user_id, session_id, filename)
        if version is not None and version < 0:
            return None
        key = (app_name, user_id, session_id, filename)
        record = await _found(self.client.get_artifact_version(*key, version))
        return None if record is None else _adk_version(record)
