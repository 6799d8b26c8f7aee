"""The context view (what a model should see next of a session) and compaction.

The view reads the session's marked events first (a partial index holds them), which says
what rewinds drop and which timestamps compactions cover; then the rest, newest first, a page
sized by the budget at a time, each with the facts stored beside it (token estimate, call and
response ids) and as PostgreSQL renders it, never decoded unless the view changes it; only
until the budget is spent: a long session's old events are never read. The rules are
`app.rules.context`'s.
"""

import json
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from app.config import Settings
from app.db import DriverPool
from app.domain import ContextRead, SessionKey
from app.errors import InvalidInput
from app.repositories import context as context_rows
from app.rules import context as rules
from app.rules.events import prepare
from app.schemas import SessionCompact
from app.services.events import EventService
from app.services.live_events import read_plan
from app.services.preconditions import hold_for_write
from app.strict_json import dumps

# The first page holds what the budget would at this many tokens an event (a turn of a few
# sentences), so that one read usually does; the next are sized by what is still missing.
TOKENS_PER_EVENT = 256
LAST_PAGE = 1024
LOOKBEHIND = 8
DEFAULT_TOOL_OUTPUT_MAX_CHARS = 1000


class ContextService:
    """The view reads in one snapshot; a compaction is one transaction that appends one event."""

    def __init__(self, pool: DriverPool, settings: Settings, events: EventService) -> None:
        self.pool = pool
        self.settings = settings
        self.events = events
        self.estimate = settings.event_limits.estimate

    async def view(self, key: SessionKey, budget: int | None) -> tuple[ContextRead, int]:
        """The view, and the session's version it was read at."""
        async with (
            self.pool.connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            reading, version = await _Reading.start(connection, key, self.estimate)
            chosen = await reading.fit(budget)
            if chosen.over_budget and not chosen.items:
                # The newest event answers a call older than what was read past the budget:
                # read back to it (every live event: rare, and only then).
                chosen = await reading.fit(budget, whole=True)
        view = reading.shown(chosen)
        return view, version

    async def compact(
        self, key: SessionKey, request: SessionCompact, expected_version: int | None
    ) -> dict[str, Any]:
        """Append one compaction event over the live events older than the newest `keepLast`
        (and older than any call one of those answers)."""
        async with self.pool.transaction() as connection:
            held = await hold_for_write(connection, key, expected_version)
            reading, _ = await _Reading.start(connection, key, self.estimate)
            items, _ = await reading.resolve_calls(await reading.everything(), True, 0)
            compacted = _compacted(items, request.keep_last)
            event = prepare(_compaction_event(request, compacted), self.settings.event_limits)
            stored = await self.events.append_prepared(connection, key, [event], held.version)
        assert stored is not None  # the row is held: the session is there, at that version
        return stored[0]


@dataclass(frozen=True)
class _Reading:
    """One read of a session's live events, in the caller's transaction, by its plan."""

    connection: asyncpg.Connection
    key: SessionKey
    plan: rules.Plan
    estimate: rules.TokenEstimator

    @classmethod
    async def start(
        cls, connection: asyncpg.Connection, key: SessionKey, estimate: rules.TokenEstimator
    ) -> tuple["_Reading", int]:
        """Plan from the session's marked events and the first seqs of what they rewind;
        and the session's version. SessionNotFound if there is no such session."""
        plan, version = await read_plan(connection, key, estimate)
        return cls(connection, key, plan, estimate), version

    def items(self, rows: list[context_rows.Row]) -> list[rules.Item]:
        """The rows as items; an event a mask covers is decoded, masked and estimated again,
        as is one stored without its facts."""
        masks = self.plan.masks
        items = []
        for seq, timestamp, facts, body in rows:
            event = None
            if facts is None or (facts.responses and rules.is_masked(masks, seq)):
                event = rules.masked(json.loads(body), masks, seq)
                facts = rules.facts(event, self.estimate)
            order = self.plan.order(seq, timestamp)
            items.append(rules.Item(seq, timestamp, order, facts, event, body))
        return items

    async def page(self, before: tuple[float, ...] | None, limit: int | None) -> list[rules.Item]:
        """Live events no compaction covers, newest first, before `before` (an item's order)."""
        rows = await context_rows.page(
            self.connection, self.key, self.plan, before=before, limit=limit
        )
        return self.items(rows)

    async def everything(self) -> list[rules.Item]:
        """Every live event and summary, in view order."""
        return rules.merge(self.plan.summaries, await self.page(None, None))

    async def fit(self, budget: int | None, *, whole: bool = False) -> rules.Fit:
        """The view within `budget`, decided from the newest events (`window`), or from every
        live event with `whole`."""
        items, complete, lookbehind = await self.window(None if whole else budget)
        items, earlier = await self.resolve_calls(items, complete, lookbehind)
        return rules.fit(items, complete=complete, earlier_calls=earlier, budget=budget)

    def shown(self, chosen: rules.Fit) -> ContextRead:
        """The view of the chosen items: each event as PostgreSQL rendered it, or as the view
        made or changed it (a summary, masked, or less its responses to no earlier call)."""
        shown: list[tuple[int, bytes]] = []
        tokens = 0
        for item in chosen.items:
            lost = chosen.orphans.get(item.seq)
            if lost is None:
                body = item.body if item.event is None else dumps(item.event)
                assert body is not None  # an item has one or the other
                shown.append((item.seq, body))
                tokens += item.tokens
                continue
            event = item.event if item.event is not None else json.loads(item.body or b"")
            trimmed = rules.without_responses(event, lost)
            if trimmed is not None:  # else it held nothing but those responses
                shown.append((item.seq, dumps(trimmed)))
                tokens += self.estimate(trimmed)
        truncated = shown[0][0] if shown and chosen.truncated_before_seq is not None else None
        events = [body for _, body in shown]
        return ContextRead(events, tokens, truncated, chosen.over_budget)

    async def window(self, budget: int | None) -> tuple[list[rules.Item], bool, int]:
        """The newest live events and summaries, in view order, until they hold more than the
        budget and `LOOKBEHIND` more (where the calls of the oldest responses usually are);
        whether they are all there are, and how many are there only to look behind (the one
        that passed the budget is not: alone over it, it is the view). Each page
        is sized by the tokens still missing."""
        summaries = list(self.plan.summaries)
        newest_first: list[rules.Item] = []
        size = LAST_PAGE if budget is None else budget // TOKENS_PER_EVENT + LOOKBEHIND
        tokens, size, before, spent_at = 0, min(size, LAST_PAGE), None, None
        while True:
            page = await self.page(before, size)
            for item in page:
                while summaries and summaries[-1].order > item.order:
                    newest_first.append(summaries.pop())
                    tokens += newest_first[-1].tokens
                newest_first.append(item)
                tokens += item.tokens
                if spent_at is None and budget is not None and tokens > budget:
                    spent_at = len(newest_first)
            if len(page) < size:
                newest_first.extend(reversed(summaries))
                return newest_first[::-1], True, 0
            before = page[-1].order
            if budget is None:
                size = min(2 * size, LAST_PAGE)
            elif spent_at is None:
                per_event = max(1, tokens // len(newest_first))
                size = min(LAST_PAGE, (budget - tokens) * 11 // (10 * per_event) + LOOKBEHIND)
            elif len(newest_first) - spent_at < LOOKBEHIND:
                size = LOOKBEHIND - (len(newest_first) - spent_at)
            else:
                return newest_first[::-1], False, len(newest_first) - spent_at

    async def resolve_calls(
        self, items: list[rules.Item], complete: bool, lookbehind: int
    ) -> tuple[list[rules.Item], frozenset[str]]:
        """Find the calls of the responses whose calls are not among `items` (but for the
        first `lookbehind`, which the view will not show): a call a compaction covers comes
        back (ADK's `_recover_compacted_function_calls`); the ids of those made before the
        window are returned; the rest answer nothing (rewound, or never made)."""
        made: set[str] = set()
        unresolved: dict[str, int] = {}  # call id -> seq of the first response to it
        for index, item in enumerate(items):
            for call_id in item.responses:
                if call_id not in made and index >= lookbehind:
                    unresolved.setdefault(call_id, item.seq)
            made.update(item.calls)
        if not unresolved or (complete and not self.plan.coverage):
            return items, frozenset()
        found = self.items(
            await context_rows.calls_to(
                self.connection, self.key, self.plan, unresolved, max(unresolved.values())
            )
        )
        owners: dict[str, rules.Item] = {}
        for event in found:  # in seq order: the latest call before the response owns it
            for call_id in event.calls:
                if call_id in unresolved and event.seq < unresolved[call_id]:
                    owners[call_id] = event
        covered = {
            call_id: owner
            for call_id, owner in owners.items()
            if self.plan.is_covered(owner.timestamp)
        }
        earlier = frozenset() if complete else frozenset(owners) - covered.keys()
        if not covered:
            return items, earlier
        siblings = {
            sibling
            for owner in covered.values()
            for sibling in owner.calls
            if sibling not in covered
        }
        answers: dict[str, rules.Item] = {}
        if siblings:
            rows = await context_rows.covered_answers(
                self.connection, self.key, self.plan, siblings
            )
            for answer in sorted(self.items(rows), key=lambda item: item.order):
                answers.update(dict.fromkeys(set(answer.responses) & siblings, answer))
        return rules.recover(items, rules.Recovery(covered, answers)), earlier


def _compacted(items: list[rules.Item], keep_last: int) -> list[rules.Item]:
    """The live events a compaction keeping the newest `keep_last` replaces: summaries are
    replaced again (the new range contains theirs), and no kept event answers a call in it."""
    kept_from = max(len(items) - keep_last, 0)
    calls_at = {call: index for index, item in enumerate(items) for call in item.calls}
    while True:
        answered = [
            calls_at[call]
            for item in items[kept_from:]
            for call in item.responses
            if calls_at.get(call, kept_from) < kept_from
        ]
        if not answered:
            break
        kept_from = min(answered)
    if kept_from == 0:
        raise InvalidInput(
            f"Nothing to compact: the session has {len(items)} live events, and keepLast "
            f"keeps {keep_last}.",
            field="keepLast",
        )
    return items[:kept_from]


def _compaction_event(request: SessionCompact, compacted: list[rules.Item]) -> dict[str, Any]:
    """ADK's compaction event, as its summarizer makes one: by `user`, in an invocation of its
    own; an observation mask is Sessionary's, in `customMetadata` (ADK has none)."""
    event: dict[str, Any] = {"author": "user", "invocationId": str(uuid.uuid4())}
    if request.strategy == "observationMask":
        limit = request.tool_output_max_chars
        mask = {
            "throughSeq": max(item.seq for item in compacted),
            "toolOutputMaxChars": DEFAULT_TOOL_OUTPUT_MAX_CHARS if limit is None else limit,
        }
        event["customMetadata"] = {rules.MASK_KEY: {"observationMask": mask}}
        return event
    text = request.summary or f"[{len(compacted)} earlier events were truncated]"
    event["actions"] = {
        "compaction": {
            "startTimestamp": min(_start(item) for item in compacted),
            "endTimestamp": max(item.timestamp for item in compacted),
            "compactedContent": {"role": "model", "parts": [{"text": text}]},
        }
    }
    return event


def _start(item: rules.Item) -> float:
    """Where an item's history starts: a summary's at its range's start, so that a new range
    contains the ranges of the summaries it replaces."""
    compaction = ((item.event or {}).get("actions") or {}).get("compaction")
    start: float = compaction["startTimestamp"] if compaction else item.timestamp
    return start
