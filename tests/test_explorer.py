"""The explorer (`/ui`) in a real browser: Debian's Chromium, driven by Playwright, against a
real server. Outside CI a machine without Chromium skips these tests, saying how to install it;
in CI (`.ci/run` installs it) its absence fails them.

With SESSIONARY_SCREENSHOTS=dir (`make screenshots`), the main views are saved there too.
"""

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.fixtures import keys_command, start_server, stop_server
from tests.helpers import chromium

# As root on a machine without network: no sandbox, and none of Chromium's own connections.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The scopes' colours (explorer.css): session blue, user green, app orange.
COLOURS = {"session": "rgb(31, 111, 235)", "user": "rgb(26, 127, 55)", "app": "rgb(179, 89, 0)"}


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    executable = chromium()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        await launched.close()


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    process, base_url = start_server(database_url)
    try:
        yield base_url
    finally:
        stop_server(process)


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1366, "height": 860})
    yield await context.new_page()
    await context.close()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as client:
        yield client


async def screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("SESSIONARY_SCREENSHOTS")
    if folder:  # Playwright makes the folder
        await page.screenshot(path=str(Path(folder) / f"{name}.png"))


def sessions(base: str, app: str, user: str) -> str:
    return f"{base}/apps/{app}/users/{user}/sessions"


def text(words: str, author: str = "user", **extra: Any) -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {"author": author, "content": {"role": role, "parts": [{"text": words}]}, **extra}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    part = {"functionCall": {"id": call_id, "name": name, "args": args}}
    return {"author": "planner", "content": {"role": "model", "parts": [part]}}


def answer(call_id: str, name: str, response: Any) -> dict[str, Any]:
    part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
    return {"author": "planner", "content": {"role": "user", "parts": [part]}}


async def trip(
    http: httpx.AsyncClient, base: str, app: str, user: str = "alice", session_id: str = "trip"
) -> str:
    """A session with text, a call answered, one pending, one orphaned, and all three scopes."""
    an_hour_ago = time.time() - 3600
    events = [
        text("Weather in Oslo and a hotel, please.", actions={"stateDelta": {"mood": "curious"}}),
        call("w1", "get_weather", city="Oslo"),
        answer("w1", "get_weather", {"sky": "rain", "celsius": 7}),
        {**call("h1", "book_hotel", city="Oslo"), "timestamp": an_hour_ago},
        call("w2", "get_weather", city="Bergen"),
        text(
            "Rain in Oslo; booking a hotel.",
            author="planner",
            actions={"stateDelta": {"user:home": "Oslo", "app:bookings": 1, "step": 2}},
        ),
    ]
    created = await http.post(
        sessions(base, app, user),
        json={"sessionId": session_id, "events": events, "displayName": "Trip to Oslo"},
    )
    assert created.status_code == 201, created.text
    return f"{base}/ui#/apps/{app}/users/{user}/sessions/{session_id}"


async def test_apps_lead_to_users_and_their_sessions(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await trip(http, server, "travel")
    (
        await http.post(sessions(server, "travel", "bob"), json={"sessionId": "b1"})
    ).raise_for_status()
    await page.goto(f"{server}/ui")
    await expect(page.get_by_role("link", name="travel")).to_be_visible()
    await screenshot(page, "apps")
    await page.get_by_role("link", name="travel").click()
    await expect(page.get_by_role("heading", name="Users")).to_be_visible()
    await expect(page.locator(".items a")).to_have_count(2)
    await page.get_by_role("link", name="alice").click()
    await expect(page.get_by_role("link", name="Trip to Oslo")).to_be_visible()
    await screenshot(page, "sessions")
    # The list's filters: a display name that no session has lists none.
    await page.get_by_label("Display name").fill("Nowhere")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.get_by_text("No sessions match.")).to_be_visible()
    # Keyboard: `u` goes up a level, `j` then Enter opens the first item.
    await page.locator("main").focus()
    await page.keyboard.press("u")
    await expect(page.locator(".items a")).to_have_count(2)
    await page.keyboard.press("j")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Sessions of alice")).to_be_visible()


async def test_a_session_pairs_its_calls_and_colours_its_state_by_scope(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await page.goto(await trip(http, server, "pairs"))
    await expect(page.locator(".event")).to_have_count(6)
    answered = page.locator('.call[data-call-id="w1"]')
    await expect(answered.locator(".badge")).to_have_count(0)
    await answered.get_by_role("button", name="→ response").click()
    await expect(page.locator("#response-w1")).to_be_in_viewport()
    await expect(page.locator("#response-w1")).to_contain_text('"sky":"rain"')
    await page.locator("#response-w1").get_by_role("button", name="← call").click()
    await expect(page.locator("#call-w1")).to_be_in_viewport()
    await expect(page.locator('.call[data-call-id="w2"] .badge')).to_have_text("pending")
    await expect(page.locator('.call[data-call-id="h1"] .badge')).to_have_text("orphaned")
    for scope, key in (("session", "step"), ("user", "user:home"), ("app", "app:bookings")):
        chip = page.locator(f'.chip[data-scope="{scope}"]', has_text=key)
        await expect(chip).to_have_css("color", COLOURS[scope])
        panel = page.locator(f'.state [data-scope="{scope}"]')
        await expect(panel.locator("dt", has_text=key)).to_be_visible()
    await screenshot(page, "session")


async def test_a_search_hit_opens_its_session_at_its_event(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await trip(http, server, "finds")
    await page.goto(f"{server}/ui#/apps/finds")
    await page.get_by_label("Search").fill("booking")
    await page.keyboard.press("Enter")
    hit = page.get_by_role("link", name="alice / trip #6")
    await expect(hit.locator("mark")).to_have_text("booking")
    await hit.click()
    await expect(page.locator("#seq-6")).to_be_in_viewport()


async def test_compactions_and_rewinds_are_marked(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    url = await trip(http, server, "marks")
    trip_path = f"{sessions(server, 'marks', 'alice')}/trip"
    compacted = await http.post(
        f"{trip_path}:compact", json={"strategy": "summary", "summary": "Asked about Oslo."}
    )
    assert compacted.status_code == 201, compacted.text
    turn = await http.post(f"{trip_path}/events", json=text("Now Bergen?", invocationId="i-9"))
    assert turn.status_code == 201, turn.text
    rewound = await http.post(f"{trip_path}:rewind", json={"beforeInvocationId": "i-9"})
    assert rewound.status_code == 201, rewound.text
    await page.goto(url)
    await expect(page.locator(".marker.compaction")).to_contain_text("Asked about Oslo.")
    await expect(page.locator(".marker.rewind")).to_contain_text("before invocation i-9")


async def test_a_fork_links_to_its_parent_and_the_parent_to_it(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await trip(http, server, "forks")
    forked = await http.post(f"{sessions(server, 'forks', 'alice')}/trip:fork", json={"atSeq": 3})
    assert forked.status_code == 201, forked.text
    fork_id = forked.json()["id"]
    await page.goto(f"{server}/ui#/apps/forks/users/alice/sessions/{fork_id}")
    await expect(page.locator(".event")).to_have_count(3)
    lineage = page.get_by_role("region", name="Lineage")
    await expect(lineage).to_contain_text("forked from trip at version 3")
    await lineage.get_by_role("link", name="trip").first.click()
    await expect(page.locator(".event")).to_have_count(6)
    await page.get_by_role("region", name="Lineage").get_by_role("link", name=fork_id).click()
    await expect(page.get_by_role("heading", name=fork_id)).to_be_visible()


async def test_the_live_tail_shows_an_event_appended_over_http(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await page.goto(await trip(http, server, "live"))
    await expect(page.locator(".event")).to_have_count(6)
    await page.get_by_role("button", name="Live tail").click()
    await expect(page.get_by_role("button", name="Live tail")).to_have_attribute(
        "aria-pressed", "true"
    )
    await asyncio.sleep(
        0.5
    )  # the stream is open once the server holds it; the append may come first
    appended = await http.post(
        f"{sessions(server, 'live', 'alice')}/trip/events",
        json=text("Booked: Hotel Bristol.", author="planner"),
    )
    assert appended.status_code == 201, appended.text
    await expect(page.locator("#seq-7")).to_contain_text("Booked: Hotel Bristol.")


async def test_events_of_any_shape_are_shown(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Content is stored as sent: a shape ADK would not write still leaves the page whole."""
    odd = [
        {"author": "user", "content": {"parts": 5}},
        {"author": "user", "content": "plain"},
        {"author": "user", "content": {"parts": [None, "x", {"functionCall": "f"}]}},
        text("Still here."),
    ]
    created = await http.post(
        sessions(server, "odd", "alice"), json={"sessionId": "odd", "events": odd}
    )
    assert created.status_code == 201, created.text
    await page.goto(f"{server}/ui#/apps/odd/users/alice/sessions/odd")
    await expect(page.locator(".event")).to_have_count(4)
    await expect(page.locator("#seq-4")).to_contain_text("Still here.")


async def test_a_long_session_is_shown_a_page_at_a_time(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    base = sessions(server, "long", "alice")
    (await http.post(base, json={"sessionId": "long"})).raise_for_status()
    for batch in range(10):
        events = [text(f"message {batch * 1000 + n + 1}") for n in range(1000)]
        added = await http.post(f"{base}/long/events:batch", json={"events": events}, timeout=60)
        assert added.status_code == 201, added.text
    await page.goto(f"{server}/ui#/apps/long/users/alice/sessions/long")
    await expect(page.locator(".event")).to_have_count(200)
    await page.get_by_role("button", name="Load more events").click()
    await expect(page.locator(".event")).to_have_count(400)
    # A search hit opens the session at its event, loading the 25 pages before it: one
    # after another, so a loaded CI host gets more than the default 5 s.
    await page.goto(f"{server}/ui#/apps/long/users/alice/sessions/long?seq=5000")
    await expect(page.locator("#seq-5000")).to_be_in_viewport(timeout=30_000)
    # Newest first: the latest page at once, and the live tail adds on top without the rest.
    await page.get_by_role("link", name="Newest first").click()
    await expect(page.locator(".event").first).to_have_id("seq-10000")
    await expect(page.locator(".event")).to_have_count(200)
    await page.get_by_role("button", name="Live tail").click()
    await asyncio.sleep(0.5)  # as in the live tail's own test
    added = await http.post(f"{base}/long/events", json=text("message 10001"))
    assert added.status_code == 201, added.text
    await expect(page.locator(".event").first).to_have_id("seq-10001")
    await expect(page.locator(".event")).to_have_count(201)


@pytest.fixture(scope="module")
def secured(database_url: str) -> Iterator[tuple[str, str, str]]:
    """A server with keys on; an admin key and a key of app `other` only."""
    admin = keys_command(database_url, "create", "--admin")
    other = keys_command(database_url, "create", "--app", "other")
    process, base_url = start_server(database_url, env={"SESSIONARY_AUTH": "true"})
    try:
        yield base_url, admin, other
    finally:
        stop_server(process)


async def test_a_key_sees_only_its_scope(
    secured: tuple[str, str, str], page: Page, http: httpx.AsyncClient
) -> None:
    base, admin, other = secured
    as_admin = {"Authorization": f"Bearer {admin}"}
    for app in ("secret", "other"):
        created = await http.post(
            sessions(base, app, "alice"), json={"sessionId": "s"}, headers=as_admin
        )
        assert created.status_code == 201, created.text
    await page.goto(f"{base}/ui")
    await page.get_by_label("Key").fill(other)
    await page.get_by_role("button", name="Use this key").click()
    await expect(page.get_by_role("link", name="other")).to_be_visible()
    await expect(page.locator(".items a")).to_have_count(1)
    await page.goto(f"{base}/ui#/apps/secret/users/alice/sessions/s")
    await expect(page.get_by_role("alert")).to_contain_text("Outside this API key's scope")
    await expect(page.locator(".event")).to_have_count(0)
    await screenshot(page, "forbidden")


async def test_the_page_and_its_assets_are_served_with_a_strict_policy(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    for asset, kind in (("explorer.js", "text/javascript"), ("explorer.css", "text/css")):
        served = await client.get(f"/ui/{asset}")
        assert served.status_code == 200
        assert served.headers["content-type"].startswith(kind)
        assert f"/ui/{asset}" in page.text
    for entrance in ("/", "/ui/"):
        redirected = await client.get(entrance)
        assert (redirected.status_code, redirected.headers["location"]) == (307, "/ui")
    missing = await client.get("/ui/index.html.bak")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
