"""The clients' export of a user and its import under another user, on a live server (keys
off): the export streamed, what the import counted, the session and the memory read back."""

import io
import json

import pytest
from sessionary_client import (
    AsyncSessionaryClient,
    SessionAlreadyExistsError,
    SessionaryClient,
)

EVENT = {"id": "e1", "author": "user", "invocationId": "inv-1", "timestamp": 1.0}
COUNTS = {"sessions": 1, "events": 1, "memories": 1, "artifactVersions": 0}
NOTHING = dict.fromkeys(COUNTS, 0)


async def test_a_user_exported_is_imported_under_another(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, "ada", session_id="chat", events=[EVENT])
    await client.create_memory(app_name, "ada", "Ada takes her tea black.", memory_id="tea")
    await client.update_user_state(app_name, "ada", {"units": "metric"})

    # The export's chunks are given to the import as they arrive.
    imported = await client.import_user(app_name, "bob", client.export_user(app_name, "ada"))
    assert imported == {"created": COUNTS, "unchanged": NOTHING, "userStateKeys": 1}

    session = await client.get_session(app_name, "bob", "chat")
    assert session["userId"] == "bob" and [e["id"] for e in session["events"]] == ["e1"]
    assert (await client.get_memory(app_name, "bob", "tea"))["text"] == "Ada takes her tea black."
    assert await client.get_user_state(app_name, "bob") == {"units": "metric"}

    # Read whole, it is NDJSON, and the same export again creates nothing.
    export = b"".join([chunk async for chunk in client.export_user(app_name, "ada")])
    formats = [json.loads(line).get("format") for line in export.splitlines()]
    assert formats == [
        "sessionary.userState.v1",
        "sessionary.session.v1",
        None,  # the session's event
        "sessionary.memory.v1",
    ]
    again = await client.import_user(app_name, "bob", export)
    assert again == {"created": NOTHING, "unchanged": COUNTS, "userStateKeys": 1}


def test_the_blocking_client_exports_and_imports_a_user(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, "ada", session_id="chat", events=[EVENT])
    sync_client.create_memory(app_name, "ada", "Ada takes her tea black.", memory_id="tea")
    export = io.BytesIO()
    for chunk in sync_client.export_user(app_name, "ada"):
        export.write(chunk)
    export.seek(0)

    imported = sync_client.import_user(app_name, "bob", export)  # a file, as one
    assert imported == {"created": COUNTS, "unchanged": NOTHING, "userStateKeys": 0}
    assert [e["id"] for e in sync_client.get_session(app_name, "bob", "chat")["events"]] == ["e1"]
    assert sync_client.get_memory(app_name, "bob", "tea")["userId"] == "bob"
    assert b"".join(sync_client.export_user(app_name, "nobody")) == b""

    # The same session id, different (its event changed): nothing is imported.
    sync_client.append_event(app_name, "ada", "chat", {**EVENT, "id": "e2"})
    with pytest.raises(SessionAlreadyExistsError):
        sync_client.import_user(app_name, "bob", b"".join(sync_client.export_user(app_name, "ada")))
