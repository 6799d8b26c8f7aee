"""The explorer (`/ui`) in a real browser: Debian's Chromium, driven by Playwright, against a
real server. Outside CI a machine without Chromium skips these tests, saying how to install it;
in CI (`.ci/run` installs it) its absence fails them.

With SESSIONARY_SCREENSHOTS=dir (`make screenshots`), the main views are saved there too.
"""

import asyncio
import json
import os
import re
import struct
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Download, Page, async_playwright, expect

from app.api.explorer import ASSETS, UI
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
    """A tab in a fixed locale and time zone (so that times read as the tests expect), which
    may use the clipboard; any script error in it fails the test."""
    context = await browser.new_context(
        viewport={"width": 1366, "height": 860}, locale="en-US", timezone_id="UTC"
    )
    await context.grant_permissions(["clipboard-read", "clipboard-write"])
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    await context.close()
    assert errors == [], errors


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


def timeline(page: Page) -> Any:
    """The events of the timeline (not those of the context view)."""
    return page.locator(".timeline-window .event")


def iso(seconds: float) -> str:
    """A time as the page's `<time datetime>` holds it (JavaScript's toISOString)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


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
    """A session with text, a call answered, one pending, one orphaned, all three scopes, two
    invocations and the usage its model reported."""
    now = time.time()
    an_hour_ago = now - 3600
    events = [
        text(
            "Weather in Oslo and a hotel, please.",
            actions={"stateDelta": {"mood": "curious"}},
            invocationId="e-1",
            timestamp=now - 4,
        ),
        {**call("w1", "get_weather", city="Oslo"), "invocationId": "e-1", "timestamp": now - 3.6},
        {
            **answer("w1", "get_weather", {"sky": "rain", "celsius": 7}),
            "invocationId": "e-1",
            "timestamp": now - 2.4,
        },
        {**call("h1", "book_hotel", city="Oslo"), "timestamp": an_hour_ago},
        {**call("w2", "get_weather", city="Bergen"), "invocationId": "e-2", "timestamp": now - 1},
        text(
            "Rain in Oslo; booking a hotel.",
            author="planner",
            actions={"stateDelta": {"user:home": "Oslo", "app:bookings": 1, "step": 2}},
            invocationId="e-2",
            usageMetadata={
                "promptTokenCount": 1200,
                "candidatesTokenCount": 34,
                "totalTokenCount": 1234,
            },
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
    await screenshot(page, "session")
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


async def test_an_event_opens_whole_in_a_detail_panel(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: an event seen whole: its raw JSON (copied exactly), its delta by scope, its usage,
    and links to its call or response."""
    await page.goto(await trip(http, server, "details"))
    await page.locator("#seq-6 .text").click()  # a click on the event itself
    detail = page.get_by_role("region", name="Event details")
    await expect(detail.get_by_role("heading", name="Event #6")).to_be_visible()
    for scope, key in (("session", "step"), ("user", "user:home"), ("app", "app:bookings")):
        entry = detail.locator(f'.scope[data-scope="{scope}"] dt', has_text=key)
        await expect(entry).to_be_visible()
        await expect(detail.locator(f'.scope[data-scope="{scope}"]')).to_have_css(
            "border-left-color", COLOURS[scope]
        )
    usage = detail.locator(".facts.usage")
    await expect(usage).to_contain_text("promptTokenCount")
    await expect(usage).to_contain_text("1,234")
    await screenshot(page, "event")
    # The raw JSON, copied, is the event exactly as the API answers it.
    await detail.get_by_role("button", name="Copy JSON").click()
    await expect(detail.get_by_role("status")).to_have_text(" Copied.")
    copied = json.loads(await page.evaluate("navigator.clipboard.readText()"))
    stored = (await http.get(f"{sessions(server, 'details', 'alice')}/trip/events")).json()
    assert copied == stored["events"][5]
    # A call's panel links to its response, a response's to its call.
    await page.get_by_role("button", name="Details of event #2").click()
    await expect(detail.get_by_role("heading", name="Event #2")).to_be_visible()
    await detail.get_by_role("button", name="→ response in #3").click()
    await expect(page.locator("#seq-3")).to_be_in_viewport()
    await expect(page.locator("#seq-3")).to_be_focused()
    # Enter opens the focused event's details, Esc closes them.
    await page.keyboard.press("Enter")
    await expect(detail.get_by_role("heading", name="Event #3")).to_be_visible()
    await expect(detail).to_contain_text("No state change.")
    await detail.get_by_role("button", name="← call in #2").click()
    await expect(page.locator("#seq-2")).to_be_focused()
    await page.keyboard.press("Escape")
    await expect(detail).to_have_count(0)


async def chat(http: httpx.AsyncClient, base: str, app: str) -> str:
    """The conversation of docs/semantics.md's context view: two turns, a call answered, one
    left open, and the usage of one model answer."""
    t0 = 1795000000.0

    def event(seq: int, author: str, invocation: str, part: dict[str, Any], **extra: Any) -> Any:
        role = "user" if author == "user" or "functionResponse" in part else "model"
        content = {"role": role, "parts": [part]}
        return {
            "author": author,
            "invocationId": invocation,
            "timestamp": t0 + seq,
            "content": content,
            **extra,
        }

    events = [
        event(0, "user", "t1", {"text": "What is the weather in Oslo?"}),
        event(
            1,
            "forecaster",
            "t1",
            {"functionCall": {"id": "w1", "name": "get_weather", "args": {"city": "Oslo"}}},
        ),
        event(
            2,
            "forecaster",
            "t1",
            {
                "functionResponse": {
                    "id": "w1",
                    "name": "get_weather",
                    "response": {"sky": "sunny", "high": 21},
                }
            },
        ),
        event(
            3,
            "forecaster",
            "t1",
            {"text": "Sunny in Oslo, up to 21 degrees."},
            usageMetadata={
                "promptTokenCount": 120,
                "candidatesTokenCount": 9,
                "totalTokenCount": 129,
            },
        ),
        event(10, "user", "t2", {"text": "And in Bergen?"}),
        event(
            11,
            "forecaster",
            "t2",
            {"functionCall": {"id": "w2", "name": "get_weather", "args": {"city": "Bergen"}}},
        ),
    ]
    created = await http.post(
        sessions(base, app, "ada"), json={"sessionId": "chat", "events": events}
    )
    assert created.status_code == 201, created.text
    return f"{base}/ui#/apps/{app}/users/ada/sessions/chat"


async def test_the_context_view_shows_what_a_model_would_see_within_a_budget(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: the context view within a chosen budget, what it cut, the compaction summaries,
    and the session's token usage."""
    url = await chat(http, server, "contexts")
    chat_path = f"{sessions(server, 'contexts', 'ada')}/chat"
    await page.goto(url)
    await expect(page.locator(".facts.head .tokens")).to_have_text(
        "120 prompt · 9 candidates · 129 total"
    )
    await page.get_by_role("tab", name="Context").click()
    view = page.locator("#panel-context")
    await expect(view).to_contain_text("129 total")
    await expect(view.locator(".event")).to_have_count(6)  # no budget: every live event
    await view.get_by_label("Token budget").fill("30")
    await view.get_by_role("button", name="Show").click()
    expected = (await http.get(f"{chat_path}/context", params={"tokenBudget": 30})).json()
    seqs = [event["seq"] for event in expected["events"]]
    assert (seqs, expected["truncatedBeforeSeq"]) == ([4, 5, 6], 4)
    await expect(view.locator(".event")).to_have_count(3)
    shown = await view.locator(".event").evaluate_all("rows => rows.map(row => +row.dataset.seq)")
    assert shown == seqs
    await expect(view).to_contain_text(
        f"3 events · about {expected['estimatedTokens']} tokens (estimated) of a budget of 30"
    )
    await expect(view.locator(".cut")).to_contain_text("Cut by the budget: every event before #4.")
    await screenshot(page, "context")
    # The cut, shown in the timeline.
    await view.get_by_role("button", name="show the cut in the timeline").click()
    await expect(page.get_by_role("tab", name="Timeline")).to_have_attribute(
        "aria-selected", "true"
    )
    await expect(page.locator("#seq-4")).to_be_in_viewport()
    # A summary stands in for the events it covers.
    compacted = await http.post(
        f"{chat_path}:compact",
        json={"strategy": "summary", "keepLast": 2, "summary": "Oslo: sunny, up to 21 degrees."},
    )
    assert compacted.status_code == 201, compacted.text
    await page.reload()
    await expect(timeline(page)).to_have_count(7)
    await page.keyboard.press("c")  # the context view's key
    view = page.locator("#panel-context")
    await expect(view.locator(".event")).to_have_count(3)
    summary = view.locator(".event.summary")
    await expect(summary).to_have_id(f"context-seq-{compacted.json()['seq']}")
    await expect(summary).to_contain_text("summary of the events from")
    await expect(summary).to_contain_text("Oslo: sunny, up to 21 degrees.")
    await expect(view).to_contain_text("1 compaction summary stands in for the events they cover")


async def test_a_long_session_opens_newest_first_with_its_total_and_jumps(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: 1,500 events open at the newest with the total; older pages, a jump to a seq or a
    time, a search hit's seq; the live tail on top."""
    base = sessions(server, "long", "alice")
    (await http.post(base, json={"sessionId": "long"})).raise_for_status()
    start = float(int(time.time()) - 100_000)  # event n is stamped start + n
    for first, last in ((1, 1000), (1001, 1500)):
        events = [text(f"message {n}", timestamp=start + n) for n in range(first, last + 1)]
        added = await http.post(f"{base}/long/events:batch", json={"events": events}, timeout=60)
        assert added.status_code == 201, added.text
    await page.goto(f"{server}/ui#/apps/long/users/alice/sessions/long")
    await expect(timeline(page).first).to_have_id("seq-1500")
    await expect(timeline(page)).to_have_count(200)
    await expect(page.locator(".facts.head .counts")).to_have_text(
        "1,500 events (#1 to #1500) · version 1500"
    )
    await expect(page.locator(".window")).to_have_text(
        "1,500 events · showing 200 events, #1301 to #1500"
    )
    await expect(page.get_by_role("button", name="Newer events")).to_be_hidden()
    await screenshot(page, "long")
    await page.get_by_role("button", name="Older events").click()
    await expect(timeline(page)).to_have_count(400)
    await expect(timeline(page).last).to_have_id("seq-1101")
    # To a seq: a window around it, newer and older events a click away.
    await page.get_by_label("Jump to seq").fill("700")
    await page.get_by_role("button", name="Go").click()
    await expect(page.locator("#seq-700")).to_be_in_viewport()
    await expect(page.locator("#seq-700")).to_be_focused()
    await expect(timeline(page)).to_have_count(200)
    await expect(page.get_by_role("button", name="Newer events")).to_be_visible()
    await expect(page.get_by_role("button", name="Older events")).to_be_visible()
    # To a time: the first event stamped at or after it (the page's clock is UTC).
    await page.get_by_label("Jump to seq").fill("")
    at = datetime.fromtimestamp(start + 299.5, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    await page.get_by_label("Jump to time").fill(at)  # seconds: start + 299, so #299 is first
    await page.get_by_role("button", name="Go").click()
    await expect(page.locator("#seq-299")).to_be_in_viewport()
    await page.get_by_label("Jump to seq").fill("99999")
    await page.get_by_role("button", name="Go").click()
    await expect(page.get_by_role("alert")).to_contain_text(
        "No event #99999: this session's events run from #1 to #1500."
    )
    # A search hit's link opens the session at its event, without the pages before it.
    await page.goto(f"{server}/ui#/apps/long/users/alice/sessions/long?seq=1000")
    await expect(page.locator("#seq-1000")).to_be_in_viewport()
    await expect(timeline(page)).to_have_count(200)
    # The live tail goes back to the newest first, then adds on top.
    await page.get_by_role("button", name="Live tail").click()
    await expect(timeline(page).first).to_have_id("seq-1500")
    await asyncio.sleep(0.5)  # as in the live tail's own test
    added = await http.post(f"{base}/long/events", json=text("message 1501"))
    assert added.status_code == 201, added.text
    await expect(timeline(page).first).to_have_id("seq-1501")
    await expect(page.locator(".facts.head .counts")).to_have_text(
        "1,501 events (#1 to #1501) · version 1501"
    )
    # Oldest first, on demand.
    await page.get_by_role("link", name="Oldest first").click()
    await expect(timeline(page).first).to_have_id("seq-1")
    await expect(timeline(page)).to_have_count(200)


async def test_events_are_grouped_by_invocation_with_its_duration(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    t0 = 1795000000.0
    events = [
        text("Plan a trip.", invocationId="inv-a", timestamp=t0),
        {**call("f1", "find_flights", to="OSL"), "invocationId": "inv-a", "timestamp": t0 + 1},
        {
            **answer("f1", "find_flights", {"cheapest": "SK4011"}),
            "invocationId": "inv-a",
            "timestamp": t0 + 2.5,
        },
        text("A note without an invocation.", timestamp=t0 + 5),
        text("And a hotel?", invocationId="inv-b", timestamp=t0 + 10),
        text("Hotel Bristol.", author="planner", invocationId="inv-b", timestamp=t0 + 10.35),
    ]
    created = await http.post(
        sessions(server, "turns", "alice"), json={"sessionId": "turns", "events": events}
    )
    assert created.status_code == 201, created.text
    await page.goto(f"{server}/ui#/apps/turns/users/alice/sessions/turns")
    groups = page.locator(".invocation")
    await expect(groups).to_have_count(2)
    order = await groups.evaluate_all("all => all.map(group => group.dataset.invocation)")
    assert order == ["inv-b", "inv-a"]  # newest first
    first, second = (
        page.locator('[data-invocation="inv-a"]'),
        page.locator('[data-invocation="inv-b"]'),
    )
    await expect(first.locator("summary")).to_have_text(
        "invocation inv-a · 3 events · 2.5 s · user, planner"
    )
    await expect(second.locator("summary")).to_have_text(
        "invocation inv-b · 2 events · 350 ms · user, planner"
    )
    await expect(first.locator(".event")).to_have_count(3)
    # Folded with a click: its events hide; the rest stay.
    await first.locator("summary").click()
    for row in await first.locator(".event").all():
        await expect(row).to_be_hidden()
    await expect(page.locator("#seq-4")).to_be_visible()
    await expect(second.locator(".event").first).to_be_visible()
    # With `o` on one of its events; `j` moves from the fold to the next visible item.
    await page.locator("#seq-6").focus()
    await page.keyboard.press("o")
    await expect(page.locator("#seq-6")).to_be_hidden()
    await expect(second.locator("summary")).to_be_focused()
    await page.keyboard.press("j")
    await expect(page.locator("#seq-4")).to_be_focused()
    # A jump into a folded invocation unfolds it.
    await page.get_by_label("Jump to seq").fill("2")
    await page.get_by_role("button", name="Go").click()
    await expect(page.locator("#seq-2")).to_be_in_viewport()


async def test_a_fork_marks_what_it_inherited_and_a_child_links_its_answer_both_ways(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    await trip(http, server, "kin")
    trip_path = f"{sessions(server, 'kin', 'alice')}/trip"
    forked = await http.post(f"{trip_path}:fork", json={"sessionId": "fork3", "atSeq": 3})
    assert forked.status_code == 201, forked.text
    own = await http.post(f"{sessions(server, 'kin', 'alice')}/fork3/events", json=text("Mine."))
    assert own.status_code == 201, own.text
    await page.goto(f"{server}/ui#/apps/kin/users/alice/sessions/fork3")
    await expect(timeline(page)).to_have_count(4)
    inherited = page.locator(".event.inherited")
    await expect(inherited).to_have_count(3)
    seqs = await inherited.evaluate_all("rows => rows.map(row => +row.dataset.seq)")
    assert sorted(seqs) == [1, 2, 3]
    await expect(page.locator("#seq-4")).not_to_have_class(re.compile("inherited"))
    await expect(page.get_by_role("region", name="Lineage")).to_contain_text(
        "Its events up to #3 are trip's"
    )
    await page.locator("#seq-2 .tag.inherited").get_by_role("link", name="trip").click()
    await expect(page.get_by_role("heading", name="Trip to Oslo")).to_be_visible()
    await expect(page.locator("#seq-2")).to_be_in_viewport()
    # A child made for the pending call posts its result to the parent when it closes.
    child = await http.post(
        f"{trip_path}/children", json={"sessionId": "bergen", "functionCallId": "w2"}
    )
    assert child.status_code == 201, child.text
    closed = await http.post(
        f"{sessions(server, 'kin', 'alice')}/bergen:close",
        json={"outcome": "completed", "result": {"sky": "sun", "celsius": 18}},
    )
    assert closed.status_code == 200, closed.text
    answer_seq = (await http.get(f"{trip_path}/events:count")).json()["lastSeq"]
    await page.goto(f"{server}/ui#/apps/kin/users/alice/sessions/bergen")
    lineage = page.get_by_role("region", name="Lineage")
    await expect(lineage).to_contain_text("child of trip at version 6, for call w2")
    await expect(lineage.locator("pre.result")).to_contain_text('"sky": "sun"')
    await expect(lineage.locator("pre.result")).to_contain_text('"outcome": "completed"')
    await lineage.get_by_role("link", name=f"trip #{answer_seq}").click()
    await expect(page.locator(f"#seq-{answer_seq}")).to_be_in_viewport()
    answer_row = page.locator(f"#seq-{answer_seq}")
    await expect(answer_row.locator(".response")).to_contain_text("posted by child bergen")
    await expect(page.locator('.call[data-call-id="w2"]')).to_contain_text(
        "worked on by child bergen"
    )
    await answer_row.get_by_role("link", name="bergen").click()
    await expect(page.get_by_role("heading", name="bergen")).to_be_visible()


async def test_times_counts_focus_and_search_hints_read_right(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: the head says which time is which, with dates and how long ago; counts are
    pluralised; the focus outline is the focused control's; a search that finds nothing says
    how words combine."""
    base = sessions(server, "clock", "alice")
    an_hour_ago = time.time() - 3600
    created = await http.post(
        base, json={"sessionId": "late", "events": [text("Sent late.", timestamp=an_hour_ago)]}
    )
    assert created.status_code == 201, created.text
    (await http.post(base, json={"sessionId": "empty"})).raise_for_status()
    session = created.json()
    await page.goto(f"{server}/ui#/apps/clock/users/alice/sessions/late")
    facts = page.locator(".facts.head")
    created_at = facts.locator("dd.created")
    await expect(created_at.locator("time")).to_have_attribute(
        "datetime", iso(session["createTime"])
    )
    await expect(created_at).to_contain_text(
        str(datetime.now(UTC).year)
    )  # the date, not the time only
    await expect(created_at).to_contain_text(re.compile(r"\((now|\d+ seconds? ago)\)"))
    last_event = facts.locator("dd.last-event")
    await expect(last_event.locator("time")).to_have_attribute(
        "datetime", iso(session["lastUpdateTime"])
    )
    await expect(last_event).to_contain_text("(1 hour ago) by its writer's clock")
    await expect(facts.locator("dt")).to_have_text(
        ["Status", "Events", "Created", "Last event", "Tokens"]
    )
    await page.goto(f"{server}/ui#/apps/clock/users/alice/sessions/empty")
    await expect(page.locator(".facts.head dd.last-event")).to_have_text("none yet")
    await expect(page.locator(".facts.head .counts")).to_have_text("0 events · version 0")
    # Counts, singular and plural.
    await page.goto(f"{server}/ui#/apps/clock")
    await expect(page.get_by_role("link", name=re.compile("^alice"))).to_contain_text(
        "2 sessions · last active"
    )
    await page.goto(f"{server}/ui")
    await expect(page.get_by_role("link", name=re.compile("^clock"))).to_contain_text(
        " 2 sessions ·"
    )
    await expect(page.get_by_role("link", name=re.compile("^clock"))).not_to_contain_text(
        "1 sessions"
    )
    # The page's container takes focus without an outline; a focused link shows one.
    await page.keyboard.press("j")
    await page.keyboard.press("Enter")  # the first app
    await expect(page.locator("main")).to_be_focused()
    assert (
        await page.locator("main").evaluate("main => getComputedStyle(main).outlineStyle") == "none"
    )
    await page.keyboard.press("j")
    focused = page.locator(".items a:focus")
    await expect(focused).to_have_count(1)
    assert await focused.evaluate("link => getComputedStyle(link).outlineStyle") == "solid"
    # A search with no hit says that every word must match, and how to ask for either.
    await page.goto(f"{server}/ui#/apps/clock")
    await expect(page.locator("form[role=search] .hint")).to_contain_text("Every word must match")
    await page.get_by_label("Search").fill("late zebra")
    await page.keyboard.press("Enter")
    said = page.locator(".no-hits")
    await expect(said).to_contain_text(
        "No event matches “late zebra”. Every word must match: "
        "no event holds all of “late”, “zebra”."
    )
    await expect(said.locator("code").first).to_have_text("late or zebra")
    await screenshot(page, "search")
    await page.get_by_label("Search").fill("late or zebra")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("link", name="alice / late #1")).to_be_visible()
    # The apps screenshot, again with two apps' counts: singular where one session is.
    (
        await http.post(sessions(server, "clock-solo", "bob"), json={"sessionId": "s"})
    ).raise_for_status()
    await page.goto(f"{server}/ui")
    await expect(page.get_by_role("link", name=re.compile("^clock-solo"))).to_contain_text(
        " 1 session ·"
    )


async def open_actions(page: Page) -> Any:
    await page.get_by_text("Actions", exact=True).click()
    return page.get_by_role("menu", name="Actions")


async def test_operator_actions_are_confirmed_and_refusals_shown(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: with keys off every action is offered; each is confirmed, done, and the view
    shows what it did; a refusal is the problem's detail."""
    url = await trip(http, server, "ops")
    trip_path = f"{sessions(server, 'ops', 'alice')}/trip"
    await page.goto(url)
    menu = await open_actions(page)
    await expect(menu.get_by_role("menuitem")).to_have_text(
        ["Heal 1 orphaned call…", "Fork at an event…", "Close…", "Delete…"]
    )
    # Heal: the dialog names the call; the API answered it.
    await menu.get_by_role("menuitem", name="Heal 1 orphaned call…").click()
    dialog = page.get_by_role("dialog", name="Heal 1 orphaned call")
    await expect(dialog).to_contain_text("book_hotel (h1, #4)")
    await screenshot(page, "actions")
    await dialog.get_by_role("button", name="Heal 1 call").click()
    await expect(page.get_by_role("status").filter(has_text="Healed 1 call.")).to_be_visible()
    calls = (await http.get(f"{trip_path}/toolCalls")).json()["toolCalls"]
    assert {one["id"]: one["status"] for one in calls}["h1"] == "answered"
    await expect(page.locator('.call[data-call-id="h1"] .badge')).to_have_count(0)
    await expect(timeline(page)).to_have_count(7)
    # A write made meanwhile: the close is refused (412) and says so; nothing is closed.
    meanwhile = await http.post(f"{trip_path}/events", json=text("Meanwhile."))
    assert meanwhile.status_code == 201, meanwhile.text
    menu = await open_actions(page)
    await menu.get_by_role("menuitem", name="Close…").click()
    dialog = page.get_by_role("dialog", name="Close trip")
    await dialog.get_by_role("button", name="Close session").click()
    refused = await http.post(
        f"{trip_path}:close", json={"outcome": "completed"}, headers={"If-Match": '"7"'}
    )
    assert refused.status_code == 412
    await expect(dialog.get_by_role("alert")).to_contain_text(refused.json()["detail"])
    await dialog.get_by_role("button", name="Cancel").click()
    assert (await http.get(trip_path)).json()["status"] == "open"
    # Fork here, from an event's details: the new fork opens.
    await page.reload()
    await page.get_by_role("button", name="Details of event #3").click()
    await page.get_by_role("button", name="Fork here (at #3)…").click()
    dialog = page.get_by_role("dialog", name="Fork trip")
    await expect(dialog.get_by_label("At seq")).to_have_value("3")
    await dialog.get_by_label("New session id (optional)").fill("trip-at-3")
    await dialog.get_by_role("button", name="Fork").click()
    await expect(page.get_by_role("heading", name="trip-at-3")).to_be_visible()
    await expect(
        page.get_by_role("status").filter(has_text="Forked from trip at #3.")
    ).to_be_visible()
    await expect(page.locator(".event.inherited")).to_have_count(3)
    # Close, as the outcome chosen.
    await page.goto(url)
    await expect(page.get_by_role("heading", name="Trip to Oslo")).to_be_visible()
    menu = await open_actions(page)
    await menu.get_by_role("menuitem", name="Close…").click()
    dialog = page.get_by_role("dialog", name="Close trip")
    await dialog.get_by_label("Outcome").select_option("failed")
    await dialog.get_by_role("button", name="Close session").click()
    await expect(page.locator(".facts.head")).to_contain_text("root · closed (failed)")
    stored = (await http.get(trip_path)).json()
    assert (stored["status"], stored["outcome"]) == ("closed", "failed")
    menu = await open_actions(page)
    await expect(menu.get_by_role("menuitem")).to_have_text(["Fork at an event…", "Delete…"])
    # Delete: the dialog says what goes; the user's sessions are shown after.
    await menu.get_by_role("menuitem", name="Delete…").click()
    dialog = page.get_by_role("dialog", name="Delete trip")
    count = (await http.get(f"{trip_path}/events:count")).json()["count"]
    await expect(dialog).to_contain_text(f"trip and {count} events will be gone for good.")
    await dialog.get_by_role("button", name="Delete session").click()
    await expect(page.get_by_role("heading", name="Sessions of alice")).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Deleted trip.")).to_be_visible()
    assert (await http.get(trip_path)).status_code == 404


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


async def test_actions_are_offered_only_to_a_key_that_may_write(
    secured: tuple[str, str, str], database_url: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: read-only by default in spirit: a key that may only read sees no actions; a key
    that may write the session does, and its writes go through with it."""
    base, admin, other = secured
    created = await http.post(
        sessions(base, "other", "carol"),
        json={"sessionId": "c1", "events": [text("Hello.")]},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert created.status_code == 201, created.text
    reader = keys_command(database_url, "create", "--app", "other", "--read-only")
    dave = keys_command(database_url, "create", "--app", "other", "--user", "dave")
    session_url = f"{base}/ui#/apps/other/users/carol/sessions/c1"
    for key, offered in ((reader, False), (dave, False), (other, True)):
        await page.goto(f"{base}/ui")
        if key != reader:  # the page asked for the first key; the others are changes of key
            await page.get_by_role("button", name="API key").click()
        await page.get_by_label("Key").fill(key)
        await page.get_by_role("button", name="Use this key").click()
        await page.goto(session_url)
        if key == dave:  # another user's key sees nothing of carol's session
            await expect(page.get_by_role("alert")).to_contain_text("Outside this API key's scope")
        else:
            await expect(timeline(page)).to_have_count(1)
        await expect(page.get_by_text("Actions", exact=True)).to_have_count(1 if offered else 0)
    menu = await open_actions(page)
    await menu.get_by_role("menuitem", name="Close…").click()
    await (
        page.get_by_role("dialog", name="Close c1")
        .get_by_role("button", name="Close session")
        .click()
    )
    await expect(page.locator(".facts.head")).to_contain_text("root · closed (completed)")
    closed = await http.get(
        f"{sessions(base, 'other', 'carol')}/c1", headers={"Authorization": f"Bearer {admin}"}
    )
    assert closed.json()["status"] == "closed"


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour, `width` by `height` (its size tells versions apart once decoded)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    pixels = (b"\x00" + bytes(rgb) * width) * height
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


CHART = [png(4, 3, (200, 30, 30)), png(8, 6, (30, 30, 200))]  # versions 0 and 1
NOTES = (
    "# Notes\n<script>window.ran = 'notes'</script> <b>not bold</b> & <i>not italic</i>\n"
    "Smørbrød, 東京.\n"
)
# Uploads that would run script if the page ever rendered them.
PAGE_HTML = (
    b"<!doctype html><h1 id=injected>Hi</h1><script>window.ran = 'html'</script>"
    b"<img src=x onerror=\"window.ran = 'img'\">"
)
LOGO_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.ran = \'svg\'">'
    b"<script>window.ran = 'svg script'</script><circle r='4'/></svg>"
)


async def save_artifact(
    http: httpx.AsyncClient,
    where: str,
    name: str,
    data: bytes,
    mime_type: str,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    saved = await http.post(
        f"{where}/artifacts/{name}",
        content=data,
        headers={"Content-Type": mime_type, **(headers or {})},
    )
    assert saved.status_code == 201, saved.text
    record: dict[str, Any] = saved.json()
    return record


async def made(
    http: httpx.AsyncClient, base: str, app: str, headers: dict[str, str] | None = None
) -> str:
    """A session `made` of alice with artifacts: a chart in two versions, notes in Markdown,
    an HTML page and an SVG that would run script if rendered, and alice's `user:` avatar
    (saved under the user, not the session)."""
    created = await http.post(
        sessions(base, app, "alice"),
        json={"sessionId": "made", "events": [text("Draw me a chart.")]},
        headers=headers,
    )
    assert created.status_code == 201, created.text
    where = f"{sessions(base, app, 'alice')}/made"
    for version in CHART:
        await save_artifact(http, where, "chart.png", version, "image/png", headers)
    await save_artifact(
        http, where, "notes.md", NOTES.encode(), "text/markdown; charset=utf-8", headers
    )
    await save_artifact(http, where, "page.html", PAGE_HTML, "text/html", headers)
    await save_artifact(http, where, "logo.svg", LOGO_SVG, "image/svg+xml", headers)
    avatar = png(2, 2, (30, 160, 60))
    await save_artifact(
        http, f"{base}/apps/{app}/users/alice", "user:avatar.png", avatar, "image/png", headers
    )
    return f"{base}/ui#/apps/{app}/users/alice/sessions/made"


async def saved_bytes(download: Download) -> bytes:
    """What the browser saved."""
    return await asyncio.to_thread(Path(await download.path()).read_bytes)


def artifact_row(page: Page, name: str) -> Any:
    return page.locator(f'.artifact-table tr[data-name="{name}"]')


async def open_artifact(page: Page, name: str) -> Any:
    """The artifacts tab, then one artifact opened below the list: its section."""
    await page.get_by_role("tab", name="Artifacts").click()
    await artifact_row(page, name).get_by_role("button", name=name, exact=True).click()
    return page.get_by_role("region", name=f"Artifact {name}")


async def nothing_ran(page: Page) -> None:
    """No uploaded script ran, and no uploaded markup became part of the page."""
    assert await page.evaluate("window.ran") is None
    await expect(page.locator("#injected")).to_have_count(0)
    await expect(page.locator("iframe, object, embed, svg")).to_have_count(0)


async def test_a_sessions_artifacts_are_listed_with_their_newest_version(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: the session's artifacts and its user's `user:` ones, each with its newest
    version, type, size and time; the live tail adds one saved meanwhile."""
    url = await made(http, server, "arts")
    where = f"{sessions(server, 'arts', 'alice')}/made"
    await page.goto(url)
    await expect(page.get_by_role("tab", name="Artifacts (5)")).to_be_visible()
    await page.keyboard.press("a")  # the artifacts' key
    table = page.get_by_role("table", name="Artifacts")
    names = table.locator("tbody tr")
    listed = await names.evaluate_all("rows => rows.map(row => row.dataset.name)")
    assert listed == ["chart.png", "logo.svg", "notes.md", "page.html", "user:avatar.png"]
    newest = (await http.get(f"{where}/artifacts/chart.png/versions/latest")).json()
    chart = artifact_row(page, "chart.png")
    await expect(chart.locator("td")).to_have_text(
        ["1", "image/png", f"{len(CHART[1])} bytes", re.compile(r"\d"), "Download"]
    )
    await expect(chart.locator("time")).to_have_attribute("datetime", iso(newest["createTime"]))
    await expect(artifact_row(page, "notes.md").locator("td.type")).to_have_text(
        "text/markdown; charset=utf-8"
    )
    avatar = artifact_row(page, "user:avatar.png")
    await expect(avatar).to_have_attribute("data-scope", "user")
    await expect(avatar.locator(".name")).to_have_css("color", COLOURS["user"])
    # A save announced on the live tail lists again (a save takes no version: no event says so).
    await page.keyboard.press("t")
    await page.get_by_role("button", name="Live tail").click()
    await asyncio.sleep(0.5)  # as in the live tail's own test
    await save_artifact(http, where, "zeta.csv", b"a,b\n1,2\n", "text/csv")
    await expect(page.get_by_role("tab", name="Artifacts (6)")).to_be_visible()
    await expect(artifact_row(page, "zeta.csv").locator("td.version")).to_have_text("0")


async def test_an_artifacts_versions_are_listed_and_its_images_previewed(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: an artifact's versions, oldest first, the newest previewed; an image shown from a
    blob: URL, decoded (its pixels are the version's)."""
    await page.goto(await made(http, server, "versions"))
    chart = await open_artifact(page, "chart.png")
    versions = chart.get_by_role("list", name="Versions").locator("li")
    await expect(versions).to_have_count(2)
    await expect(versions.locator("button.link")).to_have_text(["version 0", "version 1"])
    await expect(versions.nth(1)).to_have_attribute("aria-current", "true")
    await expect(versions.nth(0)).to_contain_text(f"image/png · {len(CHART[0])} bytes")
    image = chart.locator("img.artifact-image")
    await expect(image).to_have_attribute("src", re.compile("^blob:"))
    await expect(image).to_have_js_property("naturalWidth", 8)  # version 1 is 8 by 6
    await chart.get_by_role("button", name="Preview chart.png (version 0)").click()
    await expect(chart.get_by_role("heading", name="Preview of version 0")).to_be_visible()
    await expect(versions.nth(0)).to_have_attribute("aria-current", "true")
    await expect(chart.locator("img.artifact-image")).to_have_js_property("naturalWidth", 4)
    # The user's avatar, from this session's list.
    await chart.get_by_role("button", name="Close the artifact").click()
    avatar = await open_artifact(page, "user:avatar.png")
    await expect(avatar).to_contain_text("the user's: every session of the user sees it")
    await expect(avatar.locator("img.artifact-image")).to_have_js_property("naturalWidth", 2)
    await nothing_ran(page)


async def test_text_is_previewed_as_text_escaped_and_cut_to_its_first_bytes(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: text/* and JSON shown as text, never as markup, a long one cut to its first 64
    KiB (fetched so: a Range), and ADK's text part as text."""
    url = await made(http, server, "texts")
    where = f"{sessions(server, 'texts', 'alice')}/made"
    big = ("line of the log\n" * 8000).encode()  # 128,000 bytes
    await save_artifact(http, where, "run.log", big, "text/plain")
    await save_artifact(
        http, where, "data.json", b'{"city":"Oslo","days":[1,2]}', "application/json"
    )
    part = {"filename": "said.txt", "artifact": {"text": "Said as a <Part>."}}
    assert (await http.post(f"{where}/artifacts", json=part)).status_code == 201
    await page.goto(url)
    notes = await open_artifact(page, "notes.md")
    shown = notes.locator("pre.artifact-text")
    await expect(shown).to_be_visible()
    assert await shown.evaluate("pre => pre.textContent") == NOTES  # every character, as text
    await expect(shown.locator("*")).to_have_count(0)  # no element came from the upload
    data = await open_artifact(page, "data.json")
    assert await data.locator("pre.artifact-text").evaluate("pre => pre.textContent") == (
        '{\n  "city": "Oslo",\n  "days": [\n    1,\n    2\n  ]\n}'
    )
    said = await open_artifact(page, "said.txt")
    await expect(said.locator("pre.artifact-text")).to_have_text("Said as a <Part>.")
    await expect(said).to_contain_text("text (a Part's text)")
    log = await open_artifact(page, "run.log")
    await expect(log.locator(".cut")).to_have_text(
        "The first 64 KiB of 125 KiB: download it for the whole."
    )
    cut = await log.locator("pre.artifact-text").evaluate("pre => pre.textContent")
    assert cut == big[: 64 * 1024].decode()
    await nothing_ran(page)


async def test_html_and_svg_are_never_rendered_only_downloaded(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: an HTML page and an SVG, which would run script if rendered, get no preview at
    all (not even as text): a download only; and nothing of them runs."""
    await page.goto(await made(http, server, "unsafe"))
    for name, kind in (("page.html", "text/html"), ("logo.svg", "image/svg+xml")):
        opened = await open_artifact(page, name)
        preview = opened.locator(".artifact-preview")
        await expect(preview).to_have_text(re.compile(f"^No preview of {re.escape(kind)}"))
        await expect(preview.locator("img, pre, iframe")).to_have_count(0)
        await expect(
            opened.get_by_role("button", name=f"Download {name} (version 0)")
        ).to_have_count(2)
        await nothing_ran(page)


async def test_a_download_is_the_versions_bytes_saved_as_a_file(
    server: str, page: Page, http: httpx.AsyncClient
) -> None:
    """Item: Download saves the version's bytes under its name, the page staying where it is
    (nothing is opened, an HTML page included); an older version downloads as itself."""
    url = await made(http, server, "downloads")
    await page.goto(url)
    await page.get_by_role("tab", name="Artifacts").click()
    row = artifact_row(page, "page.html")
    async with page.expect_download() as started:
        await row.get_by_role("button", name="Download page.html (version 0)").click()
    download = await started.value
    assert download.suggested_filename == "page.html"
    assert await saved_bytes(download) == PAGE_HTML
    assert page.url == url
    await nothing_ran(page)
    chart = await open_artifact(page, "chart.png")
    first = chart.get_by_role("list", name="Versions").locator("li").first
    async with page.expect_download() as started:
        await first.get_by_role("button", name="Download chart.png (version 0)").click()
    download = await started.value
    assert download.suggested_filename == "chart.png"
    assert await saved_bytes(download) == CHART[0]


async def test_with_keys_on_previews_and_downloads_use_the_pages_key(
    secured: tuple[str, str, str], page: Page, http: httpx.AsyncClient
) -> None:
    """The bytes are fetched with the key entered in the page, as everything is: a plain
    link or an <img src> to the API would be refused without it."""
    base, admin, other = secured
    url = await made(http, base, "other", headers={"Authorization": f"Bearer {admin}"})
    unkeyed = await http.get(f"{sessions(base, 'other', 'alice')}/made/artifacts/chart.png")
    assert unkeyed.status_code == 401
    await page.goto(f"{base}/ui")
    await page.get_by_label("Key").fill(other)
    await page.get_by_role("button", name="Use this key").click()
    await page.goto(url)
    chart = await open_artifact(page, "chart.png")
    await expect(chart.locator("img.artifact-image")).to_have_js_property("naturalWidth", 8)
    async with page.expect_download() as started:
        await (
            artifact_row(page, "chart.png")
            .get_by_role("button", name="Download chart.png (version 1)")
            .click()
        )
    assert await saved_bytes(await started.value) == CHART[1]
    notes = await open_artifact(page, "notes.md")
    assert await notes.locator("pre.artifact-text").evaluate("pre => pre.textContent") == NOTES


async def test_the_page_and_its_assets_are_served_with_a_strict_policy(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert policy.startswith("default-src 'self'")
    # Images from blob: URLs (an artifact's preview); scripts from the page's own files only.
    assert "img-src 'self' data: blob:;" in policy and "script-src" not in policy
    assert "/ui/explorer.js" in page.text and "/ui/explorer.css" in page.text
    for asset, kind in ASSETS.items():
        served = await client.get(f"/ui/{asset}")
        assert served.status_code == 200, asset
        assert served.headers["content-type"] == kind
        assert served.headers["content-security-policy"].startswith("default-src 'self'")
    # Every module the page imports is served, and nothing comes from elsewhere (no CDN).
    files = sorted(UI.iterdir())
    assert {file.name for file in files} == {"index.html", *ASSETS}
    for file in files:
        source = file.read_text()
        imported = re.findall(r'from "(/ui/[^"]+)"', source)
        assert all(name.removeprefix("/ui/") in ASSETS for name in imported), file.name
        assert not re.search(r"https?://|[\"'(]//", source), file.name
    for entrance in ("/", "/ui/"):
        redirected = await client.get(entrance)
        assert (redirected.status_code, redirected.headers["location"]) == (307, "/ui")
    missing = await client.get("/ui/index.html.bak")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
