"""The workload shared by the three systems: sizes, names, and the one event shape.

Every system stores the same event: a real ADK `Event` (text content, a session-scoped
`stateDelta`), dumped the way each side dumps it. ADK keeps its own `model_dump`; Sessionary
and the Floor get the camelCase JSON an ADK client sends over HTTP. Bodies are built before
any timed section, so no system is charged for building its input.
"""

import json
from dataclasses import dataclass
from typing import Any

from google.adk.events import Event, EventActions
from google.genai import types

# ~200 characters of model text: a typical short turn, so events weigh ~500 bytes as JSON.
TEXT = (
    "The forecast for Oslo tomorrow is sunny with a light breeze from the north-west, "
    "highs of 21 degrees and lows of 12. Rain is expected to return on Thursday evening, "
    "so plan outdoor errands early."
)
BASE_TIME = 1_790_000_000.0

APPEND_APP = "bench-append"
READ_APP = "bench-read"
LIST_APP = "bench-list"
GROWTH_APP = "bench-growth"
LINEAGE_APP = "bench-lineage"
CONTEXT_APP = "bench-context"
LIVE_APP = "bench-live"
SEARCH_APP = "bench-search"
# S11's queries: two common words (each in ~10% of events, both in ~1%), two rarer ones.
SEARCH_QUERIES = {"common": "word3 word5", "rare": "word200 word400"}


@dataclass(frozen=True)
class Sizes:
    """Scenario sizes; the defaults are the figures the issue asks to report."""

    append_sessions: int = 64
    appends_per_session: int = 50
    clients: int = 32
    batch: int = 100
    long_session: int = 2000
    recent: int = 20
    list_sessions: int = 10_000
    page_size: int = 100
    far_page: int = 50
    growth_events: int = 1_000_000
    growth_sessions: int = 10_000
    repeat: int = 5
    read_repeat: int = 20
    append_seconds: int = 10
    sustained_minutes: int = 10
    lineage_events: int = 10_000
    context_events: int = 10_000
    context_budget: int = 32_000
    # S9's reference: reading this many of the newest events, about what the budget holds.
    context_recent: int = 100
    # S10: appends, one at a time, timed from their 201 to their frames on 100 streams.
    live_appends: int = 200
    # S11: events of twelve words each from a vocabulary of this many, then two-word searches.
    search_events: int = 1_000_000
    search_vocabulary: int = 5_000
    # S16: a mixed load of `clients` over this many sessions (bench/mixed.py).
    mixed_minutes: int = 8
    mixed_sessions: int = 64
    # S18 (bench/artifacts.py): tasks saving then loading at once, and rounds, of 1 KiB and
    # 1 MiB; the large size, its tasks (fewer: 1 GiB a burst on two cores is minutes a round)
    # and rounds; large transfers at once for memory; names listed.
    artifact_tasks: int = 16
    artifact_rounds: int = 8
    artifact_large_mib: int = 64
    artifact_large_tasks: int = 8
    artifact_large_rounds: int = 3
    artifact_memory_transfers: int = 8
    artifact_memory_mib: int = 256
    artifact_names: int = 1000

    @property
    def append_events(self) -> int:
        return self.append_sessions * self.appends_per_session


@dataclass(frozen=True)
class EventSpec:
    """What varies between events; everything else is the shared template."""

    id: str
    turn: int
    timestamp: float


def specs(prefix: str, count: int, start: float = BASE_TIME) -> list[EventSpec]:
    return [EventSpec(f"{prefix}-e{n}", n, start + n * 0.001) for n in range(1, count + 1)]


def adk_event(spec: EventSpec) -> Event:
    return Event(
        id=spec.id,
        author="weather_agent",
        invocation_id=f"inv-{spec.turn // 2}",
        timestamp=spec.timestamp,
        content=types.Content(role="model", parts=[types.Part(text=TEXT)]),
        actions=EventActions(state_delta={"turn": spec.turn, "last_city": "Oslo"}),
    )


def dumped(event: Event, *, wire: bool) -> dict[str, Any]:
    """The event as an ADK client sends it over HTTP (`wire`: camelCase), or as ADK's
    DatabaseSessionService stores it; None fields left out."""
    found: dict[str, Any] = event.model_dump(exclude_none=True, mode="json", by_alias=wire)
    return found


def wire_event(spec: EventSpec) -> dict[str, Any]:
    """The event as an ADK client sends it over HTTP."""
    return dumped(adk_event(spec), wire=True)


# Placeholders the SQL seeders replace per row (see databases.seed_events).
ID_MARK, TURN_MARK, TIME_MARK, INVOCATION_MARK = "@ID@", 987654321, 1234.5678, "@INV@"


def template(*, wire: bool) -> str:
    """The event JSON with placeholders, for set-based SQL seeding of large data."""
    event = adk_event(EventSpec(ID_MARK, TURN_MARK, TIME_MARK))
    event.invocation_id = INVOCATION_MARK
    return json.dumps(event.model_dump(exclude_none=True, mode="json", by_alias=wire))


# S9's conversation: turns of a question, a tool call, its result and an answer, weighing
# ~320 estimated tokens an event, so that a 32k-token budget holds ~100 of them.
QUESTION = "What should I pack for a week in Oslo, given the forecast? " * 10
FORECAST = {"city": "Oslo", "days": [TEXT] * 10}
ANSWER = TEXT * 11


def conversation(prefix: str, count: int) -> list[Event]:
    """`count` events of a tool-using conversation, in order."""
    events = []
    for n in range(count):
        turn, step = divmod(n, 4)
        call = types.FunctionCall(id=f"{prefix}-call{turn}", name="forecast", args={"city": "Oslo"})
        answer = types.FunctionResponse(id=call.id, name=call.name, response=FORECAST)
        part = [
            types.Part(text=QUESTION),
            types.Part(function_call=call),
            types.Part(function_response=answer),
            types.Part(text=ANSWER),
        ][step]
        events.append(
            Event(
                id=f"{prefix}-e{n + 1}",
                author="user" if step == 0 else "weather_agent",
                invocation_id=f"inv-{turn}",
                timestamp=BASE_TIME + n * 0.001,
                content=types.Content(role="user" if step in (0, 2) else "model", parts=[part]),
            )
        )
    return events
