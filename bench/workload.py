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


def wire_event(spec: EventSpec) -> dict[str, Any]:
    """The event as an ADK client sends it over HTTP (camelCase, None fields left out)."""
    dumped: dict[str, Any] = adk_event(spec).model_dump(
        exclude_none=True, mode="json", by_alias=True
    )
    return dumped


# Placeholders the SQL seeders replace per row (see databases.seed_events).
ID_MARK, TURN_MARK, TIME_MARK, INVOCATION_MARK = "@ID@", 987654321, 1234.5678, "@INV@"


def template(*, wire: bool) -> str:
    """The event JSON with placeholders, for set-based SQL seeding of large data."""
    event = adk_event(EventSpec(ID_MARK, TURN_MARK, TIME_MARK))
    event.invocation_id = INVOCATION_MARK
    return json.dumps(event.model_dump(exclude_none=True, mode="json", by_alias=wire))
