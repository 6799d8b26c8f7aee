"""The clients' erase of a user, and of an app, on a live server (keys off): what it removed,
the sessions gone, the erase read back, and a user (an app) never erased."""

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


async def test_an_app_is_erased_and_the_erase_read_back(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    with pytest.raises(ErasureNotFoundError):
        await client.get_app_erasure(app_name)
    for user in (USER, "bob"):
        await client.create_session(app_name, user, session_id="chat")
    await client.append_event(app_name, USER, "chat", EVENT)
    await client.update_app_state(app_name, {"banner": "hi"})

    erasure = await client.erase_app(app_name)
    assert (erasure["appName"], erasure["status"]) == (app_name, "done")
    assert "userId" not in erasure
    assert erasure["removed"]["sessions"] == 2 and erasure["removed"]["appStates"] == 1
    assert erasure["finishTime"] is not None and erasure["finishTime"] >= erasure["createTime"]

    with pytest.raises(SessionNotFoundError):
        await client.get_session(app_name, USER, "chat")
    assert await client.get_app_state(app_name) == {}
    assert await client.get_app_erasure(app_name) == erasure


def test_the_blocking_client_erases_an_app(sync_client: SessionaryClient, app_name: str) -> None:
    sync_client.create_session(app_name, USER, session_id="chat")
    erasure = sync_client.erase_app(app_name)
    assert erasure["status"] == "done" and erasure["removed"]["sessions"] == 1
    with pytest.raises(SessionNotFoundError):
        sync_client.get_session(app_name, USER, "chat")
    assert sync_client.get_app_erasure(app_name) == erasure
