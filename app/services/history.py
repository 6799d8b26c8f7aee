"""History surgery: ADK's rewind (append-only), and for operators trim, reset, and removing or
rewriting an event, with function calls and their responses kept or removed together.

Every operation is one transaction that holds the session's row for writing, honours
If-Match, refuses a closed session, and takes a version; seqs are never reused.
"""

import uuid
from typing import Any

import asyncpg

from app.config import Settings
from app.db import DriverPool
from app.domain import Change, SessionKey
from app.errors import EventNotFound, ToolPairViolation
from app.repositories import history as history_rows
from app.repositories.live import announce
from app.rules import tool_calls
from app.rules.events import prepare
from app.rules.rewinds import restoring_artifacts, restoring_delta
from app.services.artifacts import ArtifactService
from app.services.events import EventService
from app.services.preconditions import hold_for_write, seq_before_invocation


class HistoryService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(
        self,
        pool: DriverPool,
        settings: Settings,
        events: EventService,
        artifacts: ArtifactService,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.events = events
        self.artifacts = artifacts  # a rewind restores the artifacts too

    async def rewind(
        self, key: SessionKey, before_invocation_id: str, expected_version: int | None
    ) -> dict[str, Any]:
        """Append ADK's rewind event: `actions.rewindBeforeInvocationId`, and the state delta
        that takes the session's own state back to what it was before the invocation's first
        event, as the events the session still holds make it: the changes of removed events
        are undone too, as ADK's `Runner.rewind_async` undoes them, rebuilding that state from
        the events it is given. Nothing is removed; readers drop the rewound events
        (`rules.rewinds`).

        The session's artifacts go back the same way, as the events' `artifactDelta`s name
        them: each version named then is saved again as a new version, and a name that was not
        named then gets ADK's marker of a removed artifact; the event's `artifactDelta` names
        the new versions."""
        async with self.pool.transaction() as connection:
            held = await hold_for_write(connection, key, expected_version)
            before = await seq_before_invocation(
                connection, key, before_invocation_id, held.base_seq
            )
            then = await history_rows.held_state_at(connection, key, before)
            restoring = restoring_artifacts(
                await history_rows.artifact_deltas(connection, key), before
            )
            actions: dict[str, Any] = {
                "rewindBeforeInvocationId": before_invocation_id,
                "stateDelta": restoring_delta(held.state, then),
            }
            if restoring:
                actions["artifactDelta"] = await self.artifacts.restore(
                    connection, key, restoring, saved_at=held.version
                )
            event = {"author": "user", "invocationId": f"e-{uuid.uuid4()}", "actions": actions}
            stored = await self.events.append_prepared(
                connection, key, [prepare(event, self.settings.event_limits)], held.version
            )
        assert stored is not None  # the row is held: the session is there, at that version
        return stored[0]

    async def trim(
        self, key: SessionKey, keep_last: int, expected_version: int | None
    ) -> tuple[int, int, int]:
        """Keep the newest `keep_last` events, and of those none that answers a removed call;
        (removed, kept, version). The state before the first kept event becomes the base that
        point-in-time reads start from, unless that is before the start of the session's
        history (events a child inherited): a trim never moves the start back."""
        async with self.pool.transaction() as connection:
            held = await hold_for_write(connection, key, expected_version)
            cut = await history_rows.newest_trimmed_seq(connection, key, keep_last)
            if cut is None:
                version = await history_rows.bump(connection, key)
                return 0, await history_rows.count_events(connection, key), version
            links = await history_rows.tool_links(connection, key)
            trimmed = {link.seq for link in links if link.seq <= cut}
            answers = tool_calls.with_answers(links, trimmed, strict=False) - trimmed
            if cut > held.base_seq:
                version = await history_rows.rebase(connection, key, cut)
            else:
                version = await history_rows.bump(connection, key)
            removed = await history_rows.remove_events(connection, key, seqs=answers, up_to=cut)
            kept = await history_rows.count_events(connection, key)
            await announce(
                connection, Change("trimmed", key, version, detail=counts(removed, kept))
            )
        return len(removed), kept, version

    async def reset(self, key: SessionKey, expected_version: int | None) -> tuple[int, int, int]:
        """Remove every event and the session's own state; (removed, 0, version)."""
        async with self.pool.transaction() as connection:
            await hold_for_write(connection, key, expected_version)
            version = await history_rows.clear(connection, key)
            removed = await history_rows.remove_events(connection, key, up_to=version)
            await announce(connection, Change("reset", key, version, detail=counts(removed, 0)))
        return len(removed), 0, version

    async def remove_event(
        self, key: SessionKey, event_id: str, expected_version: int | None
    ) -> tuple[list[str], int]:
        """Remove the event and the events answering its function calls; (their ids, version).
        ToolPairViolation if the event answers a call whose event would stay."""
        async with self.pool.transaction() as connection:
            await hold_for_write(connection, key, expected_version)
            seq, _ = await _find(connection, key, event_id)
            links = await history_rows.tool_links(connection, key)
            removing = tool_calls.with_answers(links, {seq})
            version = await history_rows.bump(connection, key)
            removed = await history_rows.remove_events(connection, key, seqs=removing)
            await announce(
                connection, Change("removed", key, version, detail={"removedEventIds": removed})
            )
        return removed, version

    async def rewrite_event(
        self,
        key: SessionKey,
        event_id: str,
        content: dict[str, Any],
        expected_version: int | None,
    ) -> tuple[dict[str, Any], int]:
        """Replace the event's `content` (a redaction, say); a function call it no longer makes
        takes its answers with it. (The event as stored, version.)"""
        async with self.pool.transaction() as connection:
            await hold_for_write(connection, key, expected_version)
            seq, document = await _find(connection, key, event_id)
            rewritten = prepare({**document, "content": content}, self.settings.event_limits)
            old = tool_calls.links(seq, document.get("content"))
            new = tool_calls.links(seq, content)
            links = await history_rows.tool_links(connection, key)
            _check_answers(links, old, new)
            # The session's links as the rewrite leaves them: what the cascade is judged on.
            after = [link for link in links if link.seq != seq] + [new]
            dropped_calls = old.calls - new.calls
            if new.responses & dropped_calls:
                raise ToolPairViolation(
                    f"The rewrite drops function call {sorted(new.responses & dropped_calls)[0]!r}"
                    " but keeps the event's response to it."
                )
            answering = {link.seq for link in after if link.responses & dropped_calls}
            removing = tool_calls.with_answers(after, answering) if answering else set()
            version = await history_rows.bump(connection, key)
            removed = await history_rows.remove_events(connection, key, seqs=removing)
            stored = await history_rows.rewrite_content(
                connection,
                key,
                seq,
                content,
                rewritten.facts,
                rewritten.text,
                self.settings.search_config,
            )
            detail = {"seq": seq, "removedEventIds": removed}
            await announce(connection, Change("updated", key, version, detail=detail))
        return stored, version


def counts(removed: list[str], kept: int) -> dict[str, int]:
    return {"removedEvents": len(removed), "keptEvents": kept}


async def _find(
    connection: asyncpg.Connection, key: SessionKey, event_id: str
) -> tuple[int, dict[str, Any]]:
    found = await history_rows.find_event(connection, key, event_id)
    if found is None:
        raise EventNotFound(key.session_id, event_id)
    return found


def _check_answers(
    links: list[tool_calls.ToolLinks], old: tool_calls.ToolLinks, new: tool_calls.ToolLinks
) -> None:
    """A rewrite may drop a response only with its call, and add one only to a call the
    session makes before it (or the event itself makes) that no other event answers."""
    call_seq = {call: link.seq for link in links for call in link.calls if link.seq != old.seq}
    answered = {r for link in links if link.seq != old.seq for r in link.responses}
    for response in sorted(old.responses - new.responses):
        if response in call_seq:
            raise ToolPairViolation(
                f"The rewrite drops the response to function call {response!r}, whose call "
                f"stays (seq {call_seq[response]}): remove the call's event instead."
            )
    for response in sorted(new.responses - old.responses):
        earlier = call_seq.get(response, old.seq) < old.seq
        if response in answered or not (earlier or response in new.calls):
            raise ToolPairViolation(
                f"The rewrite adds a response to function call {response!r}, which no earlier "
                "event of the session makes, or which is answered already."
            )
