"""The clients' audit log methods on a live server (keys off, so its records name no key): a
session delete recorded without the user's or the session's id, found by app, user, action
and time, paged newest first, and a user asked for without the app refused."""

import re
import time

import pytest
from sessionary_client import AsyncSessionaryClient, InvalidRequestError, SessionaryClient

USER = "ada"


async def test_a_session_delete_is_recorded_by_pseudonyms_and_found_by_its_user(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    started = time.time()
    await client.create_session(app_name, USER, session_id="private-chat")
    await client.delete_session(app_name, USER, "private-chat")

    page = await client.list_audit_records(app_name=app_name, user_id=USER, action="session.delete")
    assert page["nextPageToken"] is None
    (record,) = page["records"]
    assert record == {
        **record,
        "action": "session.delete",
        "keyId": None,  # keys are off
        "appName": app_name,
        "outcome": "ok",
    }
    assert abs(record["time"] - started) < 60
    # The user and the session are named by keyed hashes, never by their ids.
    # A hash of 32 hex digits (which may hold "ada" by chance), never the id.
    assert isinstance(record["user"], str) and re.fullmatch("[0-9a-f]{32}", record["user"])
    assert isinstance(record["detail"]["session"], str)
    assert "private-chat" not in str(record)

    assert [r async for r in client.iter_audit_records(app_name=app_name)] == [record]
    assert (await client.list_audit_records(app_name=app_name, user_id="bob"))["records"] == []
    found = await client.list_audit_records(app_name=app_name, after_timestamp=started - 60)
    assert found["records"] == [record]
    earlier = await client.list_audit_records(app_name=app_name, before_timestamp=started - 60)
    assert earlier["records"] == []


async def test_records_are_paged_newest_first(client: AsyncSessionaryClient, app_name: str) -> None:
    for session_id in ("s1", "s2", "s3"):
        await client.create_session(app_name, USER, session_id=session_id)
        await client.delete_session(app_name, USER, session_id)

    first = await client.list_audit_records(app_name=app_name, page_size=2)
    assert len(first["records"]) == 2 and first["nextPageToken"] is not None
    rest = await client.list_audit_records(
        app_name=app_name, page_size=2, page_token=first["nextPageToken"]
    )
    assert len(rest["records"]) == 1 and rest["nextPageToken"] is None
    seqs = [record["seq"] for record in first["records"] + rest["records"]]
    assert seqs == sorted(seqs, reverse=True)
    every = [r["seq"] async for r in client.iter_audit_records(app_name=app_name, page_size=1)]
    assert every == seqs


async def test_a_user_without_an_app_is_refused(client: AsyncSessionaryClient) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        await client.list_audit_records(user_id=USER)
    assert (refused.value.status_code, refused.value.code) == (422, "validation_error")


def test_the_blocking_client_lists_the_audit_log(
    sync_client: SessionaryClient, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="s1")
    sync_client.delete_session(app_name, USER, "s1")
    (record,) = sync_client.list_audit_records(app_name=app_name)["records"]
    assert (record["action"], record["appName"], record["keyId"]) == (
        "session.delete",
        app_name,
        None,
    )
    assert list(sync_client.iter_audit_records(app_name=app_name, user_id=USER)) == [record]
