"""A turn's load of a long session costs what is new: `SessionaryService` keeps the events it
read, asks the server for the newest only, and reads the session whole again unless appends
alone came since. Every load is checked against a service that keeps nothing."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import Session
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryService

USER = "ada"


class Counting(AsyncSessionaryClient):
    """The client, noting how many events each read of a session asked for."""

    asked: list[int | None]

    async def get_session_json(self, *args: Any, **options: Any) -> bytes:
        self.asked.append(options.get("num_recent_events"))
        return await super().get_session_json(*args, **options)


@pytest.fixture
async def services(live_server: str) -> AsyncIterator[tuple[SessionaryService, Counting]]:
    counting = Counting(live_server)
    counting.asked = []
    service = SessionaryService(client=counting)
    yield service, counting
    await service.close()


def said(n: int) -> Event:
    return Event(
        author="agent", invocation_id=f"inv-{n}", actions=EventActions(state_delta={"n": n})
    )


async def same_as_a_fresh_read(live_server: str, session: Session) -> None:
    fresh = SessionaryService(live_server, cached_events=0)
    try:
        truth = await fresh.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id
        )
    finally:
        await fresh.close()
    assert truth is not None
    assert session.model_dump() == truth.model_dump()


async def load(service: SessionaryService, app_name: str, session_id: str) -> Session:
    found = await service.get_session(app_name=app_name, user_id=USER, session_id=session_id)
    assert found is not None
    return found


async def test_a_load_after_appends_asks_only_for_the_newest_events(
    services: tuple[SessionaryService, Counting], live_server: str, app_name: str
) -> None:
    service, client = services
    session = await service.create_session(app_name=app_name, user_id=USER, session_id="long")
    await client.append_events(
        app_name,
        USER,
        "long",
        [said(n).model_dump(mode="json", by_alias=True, exclude_none=True) for n in range(80)],
    )
    first = await load(service, app_name, "long")
    for turn in range(3):
        # A turn: the runner appends to the session it loaded, then the next turn loads it.
        await service.append_event(first, said(100 + turn))
        await client.append_event(app_name, USER, "long", {"author": "user"})  # elsewhere
        first = await load(service, app_name, "long")
        await same_as_a_fresh_read(live_server, first)
    assert client.asked == [None, 32, 32, 32]
    assert len(first.events) == 86 and session.id == "long"


@pytest.mark.parametrize("change", ["remove", "rewrite", "trim", "recreate"])
async def test_a_load_after_any_other_write_reads_the_session_whole(
    services: tuple[SessionaryService, Counting], live_server: str, app_name: str, change: str
) -> None:
    service, client = services
    await service.create_session(app_name=app_name, user_id=USER, session_id="s")
    stored = [
        await client.append_event(
            app_name, USER, "s", said(n).model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        for n in range(5)
    ]
    await load(service, app_name, "s")
    if change == "remove":
        await client.remove_event(app_name, USER, "s", stored[1]["id"])
    elif change == "rewrite":
        await client.rewrite_event(app_name, USER, "s", stored[1]["id"], {"parts": [{"text": "x"}]})
    elif change == "trim":
        await client.trim_session(app_name, USER, "s", keep_last=2)
    else:  # deleted elsewhere, made again under the id with as many events
        await client.delete_session(app_name, USER, "s")
        await client.create_session(app_name, USER, session_id="s")
        for _ in range(6):
            await client.append_event(app_name, USER, "s", {"author": "user"})
    await same_as_a_fresh_read(live_server, await load(service, app_name, "s"))
