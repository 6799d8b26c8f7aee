"""ADK's session-service behaviours, run against `SessionaryService` on a live server.

One behaviour per test, named for it, written from what google-adk's own services promise.
"""

import uuid

import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types

USER = "ada"


def delta_event(delta: dict[str, object], timestamp: float, **fields: object) -> Event:
    return Event(
        author="agent",
        invocation_id="inv-1",
        timestamp=timestamp,
        actions=EventActions(state_delta=delta),
        **fields,
    )


async def create(service: BaseSessionService, app_name: str, **kwargs: object) -> Session:
    return await service.create_session(app_name=app_name, user_id=USER, **kwargs)


async def reload(service: BaseSessionService, session: Session, **config: object) -> Session:
    found = await service.get_session(
        app_name=session.app_name,
        user_id=session.user_id,
        session_id=session.id,
        config=GetSessionConfig(**config) if config else None,
    )
    assert found is not None
    return found


async def test_create_generates_an_id_and_returns_an_empty_session(service, app_name):
    session = await create(service, app_name)
    uuid.UUID(session.id)
    assert (session.app_name, session.user_id) == (app_name, USER)
    assert session.state == {} and session.events == [] and session.last_update_time > 0


async def test_a_blank_session_id_means_generate_one(service, app_name):
    session = await create(service, app_name, session_id="  ")
    uuid.UUID(session.id)


async def test_create_with_a_taken_id_raises_already_exists(service, app_name):
    await create(service, app_name, session_id="s1")
    with pytest.raises(AlreadyExistsError):
        await create(service, app_name, session_id="s1")


async def test_session_ids_are_scoped_by_app_and_user(service, app_name):
    await create(service, app_name, session_id="s1", state={"k": "mine"})
    other_user = await service.create_session(app_name=app_name, user_id="bob", session_id="s1")
    other_app = await create(service, app_name + "-2", session_id="s1")
    assert other_user.state == {} and other_app.state == {}
    assert await service.get_session(app_name=app_name, user_id="eve", session_id="s1") is None


async def test_create_splits_state_by_prefix_and_drops_temp(service, app_name):
    session = await create(service, app_name, state={"k": 1, "app:a": 2, "user:u": 3, "temp:t": 4})
    assert session.state == {"k": 1, "app:a": 2, "user:u": 3}
    same_user = await create(service, app_name)
    other_user = await service.create_session(app_name=app_name, user_id="bob")
    assert same_user.state == {"app:a": 2, "user:u": 3}
    assert other_user.state == {"app:a": 2}
    assert await service.get_user_state(app_name=app_name, user_id=USER) == {"u": 3}


async def test_get_a_missing_session_returns_none(service, app_name):
    assert await service.get_session(app_name=app_name, user_id=USER, session_id="no") is None


async def test_get_returns_events_in_append_order_even_when_timestamps_go_back(service, app_name):
    session = await create(service, app_name)
    for timestamp in (3.0, 1.0, 2.0):
        await service.append_event(session, delta_event({}, timestamp))
    found = await reload(service, session)
    assert [e.timestamp for e in found.events] == [3.0, 1.0, 2.0]
    assert found.last_update_time == 2.0


async def test_num_recent_events_limits_and_zero_means_none(service, app_name):
    session = await create(service, app_name)
    for timestamp in (1.0, 2.0, 3.0):
        await service.append_event(session, delta_event({}, timestamp))
    assert [e.timestamp for e in (await reload(service, session, num_recent_events=2)).events] == [
        2.0,
        3.0,
    ]
    assert (await reload(service, session, num_recent_events=0)).events == []
    assert len((await reload(service, session)).events) == 3


async def test_after_timestamp_is_inclusive_and_combines_with_num_recent(service, app_name):
    session = await create(service, app_name)
    for timestamp in (1.0, 2.0, 3.0):
        await service.append_event(session, delta_event({}, timestamp))
    since = await reload(service, session, after_timestamp=2.0)
    assert [e.timestamp for e in since.events] == [2.0, 3.0]
    both = await reload(service, session, after_timestamp=2.0, num_recent_events=1)
    assert [e.timestamp for e in both.events] == [3.0]


async def test_append_updates_the_live_session_and_storage_with_prefixed_state(service, app_name):
    session = await create(service, app_name)
    event = delta_event({"k": 1, "app:a": 2, "user:u": 3}, 10.0)
    returned = await service.append_event(session, event)
    assert returned is event and session.events == [event]
    assert session.state == {"k": 1, "app:a": 2, "user:u": 3}
    assert session.last_update_time == 10.0
    assert (await reload(service, session)).state == session.state
    assert (await create(service, app_name)).state == {"app:a": 2, "user:u": 3}


async def test_null_is_stored_and_a_dict_value_replaces_the_old_one(service, app_name):
    session = await create(service, app_name, state={"k": {"x": 1}, "user:n": 1})
    await service.append_event(session, delta_event({"k": {"y": 2}, "user:n": None}, 1.0))
    expected = {"k": {"y": 2}, "user:n": None}
    assert session.state == expected and (await reload(service, session)).state == expected
    assert await service.get_user_state(app_name=app_name, user_id=USER) == {"n": None}


async def test_temp_keys_reach_the_live_session_but_not_the_event_or_the_store(service, app_name):
    session = await create(service, app_name)
    event = delta_event({"temp:scratch": "x", "k": 1}, 1.0)
    await service.append_event(session, event)
    assert session.state == {"temp:scratch": "x", "k": 1}
    assert event.actions.state_delta == {"k": 1}
    stored = await reload(service, session)
    assert stored.state == {"k": 1} and stored.events[0].actions.state_delta == {"k": 1}


async def test_partial_events_are_returned_and_change_nothing(service, app_name):
    session = await create(service, app_name)
    event = delta_event({"k": 1, "temp:t": 1}, 1.0, partial=True)
    assert await service.append_event(session, event) is event
    assert session.events == [] and session.state == {}
    assert event.actions.state_delta == {"k": 1, "temp:t": 1}
    assert (await reload(service, session)).events == []


async def test_a_writer_holding_a_stale_session_is_refused(service, app_name):
    session = await create(service, app_name)
    first, second = await reload(service, session), await reload(service, session)
    await service.append_event(first, delta_event({"k": "first"}, 1.0))
    with pytest.raises(StaleSessionError):
        await service.append_event(second, delta_event({"k": "second"}, 2.0))
    stored = await reload(service, session)
    assert stored.state == {"k": "first"} and len(stored.events) == 1
    await service.append_event(stored, delta_event({"k": "again"}, 3.0))


async def test_one_writer_keeps_appending_to_the_session_it_holds(service, app_name):
    session = await create(service, app_name)
    for timestamp in (1.0, 2.0, 3.0):
        await service.append_event(session, delta_event({"n": timestamp}, timestamp))
    assert (await reload(service, session)) == session


async def test_a_session_from_a_listing_can_be_appended_to(service, app_name):
    await create(service, app_name)
    listed = (await service.list_sessions(app_name=app_name, user_id=USER)).sessions[0]
    await service.append_event(listed, delta_event({"k": 1}, 1.0))
    assert (await reload(service, listed)).state == {"k": 1}


async def test_re_delivering_a_stored_event_changes_nothing(service, app_name):
    session = await create(service, app_name)
    event = delta_event({"n": 1}, 1.0)
    await service.append_event(session, event)
    await service.append_event(session, event)
    assert session.events == [event]
    assert len((await reload(service, session)).events) == 1


async def test_append_to_a_missing_session_raises_session_not_found(service, app_name):
    session = await create(service, app_name)
    await service.delete_session(app_name=app_name, user_id=USER, session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, delta_event({}, 1.0))


async def test_delete_removes_the_session_but_keeps_app_and_user_state(service, app_name):
    session = await create(service, app_name, state={"app:a": 1, "user:u": 2})
    await service.delete_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert await service.get_session(app_name=app_name, user_id=USER, session_id=session.id) is None
    assert (await create(service, app_name)).state == {"app:a": 1, "user:u": 2}


async def test_deleting_a_missing_session_is_silent(service, app_name):
    await service.delete_session(app_name=app_name, user_id=USER, session_id="never")


async def test_list_sessions_has_merged_state_no_events_oldest_update_first(service, app_name):
    older = await create(service, app_name, session_id="older", state={"user:u": 1})
    newer = await create(service, app_name, session_id="newer")
    await service.append_event(newer, delta_event({"k": 2}, 2_000_000_000.0))
    await service.append_event(older, delta_event({"k": 1}, 1_000_000_000.0))
    listed = (await service.list_sessions(app_name=app_name, user_id=USER)).sessions
    assert [s.id for s in listed] == ["older", "newer"]
    assert all(s.events == [] for s in listed)
    assert listed[0].state == {"k": 1, "user:u": 1} and listed[1].state == {"k": 2, "user:u": 1}


async def test_list_sessions_without_a_user_lists_every_user(service, app_name):
    await create(service, app_name)
    await service.create_session(app_name=app_name, user_id="bob", state={"user:b": 1})
    everyone = (await service.list_sessions(app_name=app_name)).sessions
    assert sorted(s.user_id for s in everyone) == ["ada", "bob"]
    assert next(s for s in everyone if s.user_id == "bob").state == {"user:b": 1}
    assert (await service.list_sessions(app_name=app_name, user_id="nobody")).sessions == []


async def test_get_user_state_has_unprefixed_keys_and_is_empty_when_unknown(service, app_name):
    await create(service, app_name, state={"user:u": 1, "app:a": 2, "k": 3})
    assert await service.get_user_state(app_name=app_name, user_id=USER) == {"u": 1}
    assert await service.get_user_state(app_name=app_name, user_id="nobody") == {}


def rich_event(timestamp: float) -> Event:
    """An event using most of ADK's fields, to catch any loss on the way through JSON."""
    call = types.FunctionCall(id="fc1", name="lookup", args={"city": "Oslo", "days": [1, 2]})
    return Event(
        id=f"e-{timestamp}",
        invocation_id="inv-7",
        author="weather_agent",
        branch="root.weather_agent",
        timestamp=timestamp,
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Looking it up."),
                types.Part(function_call=call),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00")),
            ],
        ),
        long_running_tool_ids={"fc1", "fc0"},
        custom_metadata={"trace": {"id": 7}},
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=12),
        actions=EventActions(
            state_delta={"k": 1, "app:a": [1], "user:u": None, "temp:t": 1},
            artifact_delta={"chart.png": 0},
            transfer_to_agent="other",
        ),
    )


async def same_calls(service: BaseSessionService, app_name: str) -> list[object]:
    """A script of calls whose results must not depend on which service ran them."""
    session = await create(service, app_name, session_id="s1", state={"k": 0, "user:v": 1})
    results: list[object] = []
    for timestamp in (1_700_000_000.25, 1_700_000_001.5):
        event = rich_event(timestamp)
        results.append(await service.append_event(session, event))
    results.append(session)
    results.append(await reload(service, session))
    results.append(await reload(service, session, num_recent_events=1))
    results.append((await service.list_sessions(app_name=app_name, user_id=USER)).sessions)
    results.append(await service.get_user_state(app_name=app_name, user_id=USER))
    return results


async def test_sessions_and_events_equal_those_of_adks_in_memory_service(service, app_name):
    assert await same_calls(service, app_name) == await same_calls(
        InMemorySessionService(), app_name
    )
