"""The clients' erase of a user on a live server (keys off): what it removed, the user's session
gone, the erase read back, and a user never erased."""

import pytest
from sessionary_client import (
    AsyncSessionaryClient,
    ErasureNotFoundError,
    SessionaryClient,
    SessionNotFoundError,
)

USER = "ada"
EVENT = {"id": "e1", "author": "user", "invocationId": "inv-1", "timestamp": 1.0}


async def test_a_user_is_erased_and_the_erase_read_back(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="chat")
    await client.append_event(app_name, USER, "chat", EVENT)

    erasure = await client.erase_user(app_name, USER)
    assert (erasure["appName"], erasure["userId"], erasure["status"]) == (app_name, USER, "done")
    assert erasure["removed"]["sessions"] == 1 and erasure["removed"]["events"] >= 1
    assert erasure["deletedKeyIds"] == []  # keys are off: the user had none
    assert erasure["finishTime"] is not None and erasure["finishTime"] >= erasure["createTime"]

    with pytest.raises(SessionNotFoundError):
        await client.get_session(app_name, USER, "chat")
    assert (await client.get_erasure(app_name, USER))["id"] == erasure["id"]


async def test_a_user_never_erased_has_no_erasure(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    with pytest.raises(ErasureNotFoundError) as missing:
        await client.get_erasure(app_name, "bob")
    assert (missing.value.status_code, missing.value.code) == (404, "erasure_not_found")


def test_the_blocking_client_erases_a_user(sync_client: SessionaryClient, app_name: str) -> None:
    sync_client.create_session(app_name, USER, session_id="chat")
    sync_client.append_event(app_name, USER, "chat", EVENT)
    erasure = sync_client.erase_user(app_name, USER)
    assert erasure["status"] == "done" and erasure["removed"]["sessions"] == 1
    with pytest.raises(SessionNotFoundError):
        sync_client.get_session(app_name, USER, "chat")
    assert sync_client.get_erasure(app_name, USER) == erasure
    with pytest.raises(ErasureNotFoundError):
        sync_client.get_erasure(app_name, "bob")
