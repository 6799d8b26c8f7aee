"""Tool-call integrity: which of a session's function calls are answered, pending or orphaned,
and healing the orphans with an error response, so that a provider is never sent a call
without its result."""

from app.config import Settings
from app.db import DriverPool
from app.domain import SessionKey
from app.rules.events import prepare
from app.rules.tool_calls import ToolCall, healing_events
from app.services.events import EventService
from app.services.live_events import calls_of
from app.services.preconditions import hold_for_write


class ToolCallService:
    """A listing reads in one snapshot; a heal is one transaction that holds the session."""

    def __init__(self, pool: DriverPool, settings: Settings, events: EventService) -> None:
        self.pool = pool
        self.settings = settings
        self.events = events
        self.estimate = settings.event_limits.estimate

    def timeout(self, timeout_seconds: float | None) -> float:
        return self.settings.tool_call_timeout if timeout_seconds is None else timeout_seconds

    async def list(
        self, key: SessionKey, status: str | None, timeout_seconds: float | None
    ) -> tuple[list[ToolCall], int]:
        """The function calls of the session's live events (rewinds applied), in order, with
        `status` only when given; and the session's version."""
        async with (
            self.pool.connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            found, version = await calls_of(
                connection, key, self.estimate, self.timeout(timeout_seconds)
            )
        return [call for call in found if status is None or call.status == status], version

    async def heal(
        self, key: SessionKey, timeout_seconds: float | None, expected_version: int | None
    ) -> tuple[int, int]:
        """Answer every orphaned call with an error, in one transaction; (how many, version).
        Idempotent: a healed call is answered, so a second heal finds nothing to do."""
        timeout = self.timeout(timeout_seconds)
        async with self.pool.transaction() as connection:
            held = await hold_for_write(connection, key, expected_version)
            found, _ = await calls_of(connection, key, self.estimate, timeout)
            orphans = [call for call in found if call.status == "orphaned"]
            if not orphans:
                return 0, held.version
            healing = [
                prepare(event, self.settings.event_limits)
                for event in healing_events(orphans, timeout)
            ]
            stored = await self.events.append_prepared(connection, key, healing, held.version)
        assert stored is not None  # the row is held: the session is there, at that version
        return len(orphans), stored[-1]["seq"]
