"""What spares callers boilerplate: settings from the environment, keys refused as their own
errors, If-Match as an ETag, an append's outcome, a session-bound handle."""

from collections.abc import Iterator

import httpx
import pytest
from sessionary_client import (
    AsyncSessionaryClient,
    ForbiddenError,
    SessionaryClient,
    SessionHandle,
    SessionNotFoundError,
    StaleSessionError,
    UnauthorizedError,
)
from sessionary_client.adk import SessionaryService

from tests.fixtures import keys_command, start_server, stop_server

USER = "ada"


async def test_the_url_and_key_come_from_the_environment(
    live_server: str, app_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONARY_URL", live_server)
    monkeypatch.setenv("SESSIONARY_API_KEY", "sk_from_env")
    async with AsyncSessionaryClient() as client:
        assert client._http.headers["Authorization"] == "Bearer sk_from_env"
        created = await client.create_session(app_name, USER)  # the server's auth is off
    service = SessionaryService()
    try:
        assert service.client._http.headers["Authorization"] == "Bearer sk_from_env"
        read = await service.get_session(app_name=app_name, user_id=USER, session_id=created["id"])
        assert read is not None
    finally:
        await service.close()
    with SessionaryClient(api_key="sk_given") as given:  # what is given wins
        assert given._http.headers["Authorization"] == "Bearer sk_given"


def test_without_the_environment_a_local_server_and_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SESSIONARY_URL", raising=False)
    monkeypatch.delenv("SESSIONARY_API_KEY", raising=False)
    with SessionaryClient() as client:
        assert str(client._http.base_url) == "http://127.0.0.1:8000"
        assert "Authorization" not in client._http.headers


@pytest.fixture(scope="module")
def secured(database_url: str) -> Iterator[tuple[str, str]]:
    """A server with keys on, and a key for user `ada` of app `shop`."""
    key = keys_command(database_url, "create", "--app", "shop", "--user", USER)
    process, base_url = start_server(database_url, env={"SESSIONARY_AUTH": "true"})
    try:
        yield base_url, key
    finally:
        stop_server(process)


def test_a_missing_key_and_a_key_out_of_scope_are_errors_of_their_own(
    secured: tuple[str, str],
) -> None:
    base_url, key = secured
    with SessionaryClient(base_url, api_key="") as anonymous:
        with pytest.raises(UnauthorizedError) as refused:
            anonymous.list_sessions("shop", USER)
        assert refused.value.status_code == 401
    with SessionaryClient(base_url, api_key=key) as ada:
        assert ada.list_sessions("shop", USER)["sessions"] == []
        with pytest.raises(ForbiddenError):
            ada.list_sessions("shop", "bob")


def test_if_match_takes_a_version_an_etag_as_read_or_a_star(
    sync_client: SessionaryClient, live_server: str, app_name: str
) -> None:
    sync_client.create_session(app_name, USER, session_id="s")
    etag = httpx.get(f"{live_server}/apps/{app_name}/users/{USER}/sessions/s").headers["etag"]
    assert etag == '"0"'
    sync_client.append_event(app_name, USER, "s", {"author": "user"}, if_match=etag)
    sync_client.append_event(app_name, USER, "s", {"author": "user"}, if_match=1)
    sync_client.append_event(app_name, USER, "s", {"author": "user"}, if_match="*")
    with pytest.raises(StaleSessionError):
        sync_client.append_event(app_name, USER, "s", {"author": "user"}, if_match='"1"')
    with pytest.raises(ValueError, match="if_match"):
        sync_client.append_event(app_name, USER, "s", {"author": "user"}, if_match="v3")


def test_a_delete_can_be_conditional(sync_client: SessionaryClient, app_name: str) -> None:
    sync_client.create_session(app_name, USER, session_id="s")
    sync_client.append_event(app_name, USER, "s", {"author": "user"})
    with pytest.raises(StaleSessionError) as stale:
        sync_client.delete_session(app_name, USER, "s", if_match=0)
    assert stale.value.current_version == 1
    sync_client.delete_session(app_name, USER, "s", if_match='"1"')
    with pytest.raises(SessionNotFoundError):
        sync_client.get_session(app_name, USER, "s")


async def test_an_append_tells_a_stored_event_from_a_retry_and_a_partial_one(
    client: AsyncSessionaryClient, app_name: str
) -> None:
    await client.create_session(app_name, USER, session_id="s")
    event = {"id": "e1", "author": "user", "content": {"parts": [{"text": "hi"}]}}
    first = await client.append_event_outcome(app_name, USER, "s", event)
    again = await client.append_event_outcome(app_name, USER, "s", event)
    partial = await client.append_event_outcome(
        app_name, USER, "s", {"author": "agent", "partial": True}
    )
    assert (first.outcome, first.stored, first.event["seq"]) == ("stored", True, 1)
    assert (again.outcome, again.stored, again.event) == ("replayed", False, first.event)
    assert (partial.outcome, partial.stored, "seq" in partial.event) == (
        "acknowledged",
        False,
        False,
    )


async def test_a_session_handle_spares_the_app_user_and_id(
    client: AsyncSessionaryClient, sync_client: SessionaryClient, app_name: str
) -> None:
    session = client.session(app_name, USER, "s")
    assert repr(session) == f"<session 's' of '{USER}' in '{app_name}'>"
    await client.create_session(app_name, USER, session_id="s")
    await session.append_event({"author": "user", "actions": {"stateDelta": {"a": 1}}})
    appended = await session.append_event_outcome({"id": "e2", "author": "agent"}, if_match=1)
    assert appended.stored
    await session.update_state({"b": 2})
    read = await session.get(num_recent_events=1)
    assert (read["state"], read["version"], len(read["events"])) == ({"a": 1, "b": 2}, 3, 1)
    assert [event["seq"] async for event in session.iter_events()] == [1, 2, 3]
    fork = await session.fork(session_id="f", at_seq=1)
    assert fork["state"] == {"a": 1}

    blocking = sync_client.session(app_name, USER, "f")
    assert isinstance(blocking, SessionHandle)
    assert [event["seq"] for event in blocking.iter_events()] == [1]
    blocking.delete(if_match=fork["version"])
    with pytest.raises(SessionNotFoundError):
        blocking.get()
