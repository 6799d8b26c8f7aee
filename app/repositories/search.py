"""SQL for full-text search over events: matches taken newest first in windows of a bounded
size, each window ranked and paged by (rank, user, session, seq), with a snippet cut from each
hit's text."""

from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import (
    Double,
    Float,
    Text,
    and_,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
)
from sqlalchemy.dialects.postgresql import REGCONFIG
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import CTE

from app.db import fetch, fetchval
from app.domain import SearchHit, SearchQuery
from app.errors import SearchTimeout
from app.models import StorageEvent, StorageSession, live
from app.rules.search import MARK_END, MARK_START

HEADLINE_OPTIONS = (
    f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords=30, MinWords=12, MaxFragments=2, "
    "FragmentDelimiter= … "
)


# Events a search reads newest first for each of its candidates before it asks PostgreSQL to
# choose: words in 1 of 20 events or more are found among the newest, in a few milliseconds,
# whatever PostgreSQL's statistics say of them (none, before the table is first analyzed).
SCANNED = 20
# Where an event stands in the app's log, newest first: (timestamp, user id, session id, seq).
Place = tuple[float, str, str, int]
# Where a hit stands in its window, best first: (rank, user id, session id, seq).
Rank = tuple[float, str, str, int]


@dataclass(frozen=True)
class Window:
    """The events a page of search ranked among: its newest and oldest, and whether it was
    full (older matches may remain)."""

    newest: Place
    oldest: Place
    full: bool


async def search(
    connection: asyncpg.Connection,
    query: SearchQuery,
    config: str,
    *,
    below: Place | None,
    after: Rank | None,
    candidates: int,
    limit: int,
    time_limit: float,
    sharded: bool = False,
) -> tuple[list[tuple[SearchHit, bool]], Window | None]:
    """Up to `limit` matches of one window, best first, from just past `after`, each with
    whether its session is live (only those are hits), and the window (None when no event
    matches).

    A window is the newest `candidates` matches older than `below` (all of them when None),
    whatever their sessions' state. They are looked for first among the newest
    `candidates * SCANNED` events (from the app's time index, read in order until enough
    match: a few milliseconds whatever the words), and only when those hold too few, among
    all, through whichever index PostgreSQL finds cheaper for these words (the search index,
    for rare words). Runs in the connection's transaction (one snapshot: the two statements
    must agree on which events are newest), which it stops after `time_limit` seconds
    (SearchTimeout).

    `sharded`, on Citus: the window is taken among all at once, each shard asked for its
    newest `candidates` matches alone. The first look among the newest events would have
    every shard hand the coordinator its newest `candidates * SCANNED` events, whole, to
    filter there (bench/README.md: S15)."""
    # The configuration written into the statement (`Settings.search_config` allows only a
    # name): a constant, so that PostgreSQL parses the words once, not once for every row.
    regconfig = literal_column(f"'{config}'::regconfig", REGCONFIG)
    terms = func.websearch_to_tsquery(regconfig, query.text)
    key = (StorageEvent.timestamp, StorageEvent.user_id, StorageEvent.session_id, StorageEvent.seq)
    # `search IS NOT NULL`: the time index's predicate (migration 0017); no other event matches.
    filters = [StorageEvent.app_name == query.app_name, StorageEvent.search.is_not(None)]
    for column, value in (
        (StorageEvent.user_id, query.user_id),
        (StorageEvent.session_id, query.session_id),
        (StorageEvent.author, query.author),
    ):
        if value is not None:
            filters.append(column == value)
    if query.after_timestamp is not None:
        filters.append(StorageEvent.timestamp >= query.after_timestamp)
    if query.before_timestamp is not None:
        filters.append(StorageEvent.timestamp < query.before_timestamp)
    if below is not None:
        filters.append(
            tuple_(*key) < tuple_(literal(below[0], Double), *(literal(v) for v in below[1:]))
        )
    newest_first = [column.desc() for column in key]
    # What a hit shows comes along (a large event's JSON as a pointer to it, until the snippet
    # of one of the page's hits reads it): no second lookup of the page's events.
    carried = (StorageEvent.search, StorageEvent.id, StorageEvent.author, StorageEvent.event)
    recent = (
        select(*key, *carried)
        .where(*filters)
        .order_by(*newest_first)
        .limit(candidates * SCANNED)
        .subquery("recent")
    )
    # Read in the order of the time index, as far as the last match needed, then stopped.
    among_recent = (
        select(recent)
        .where(recent.c.search.op("@@")(terms))
        .order_by(*_newest_first(recent))
        .limit(candidates)
    )
    everywhere = (
        select(*key, *carried)
        .where(*filters, StorageEvent.search.op("@@")(terms))
        .order_by(*newest_first)
        .limit(candidates)
    )
    await connection.execute(
        f"SET LOCAL statement_timeout = {max(1, round(time_limit * 1000))}; "
        # Planned for these words each time: which index pays depends on how common they are.
        "SET LOCAL plan_cache_mode = force_custom_plan; "
        # One core at most, however many rows it reads: the other is the appends'.
        "SET LOCAL max_parallel_workers_per_gather = 0; "
        # The newest events from the time index in its order, never all of them sorted: what
        # PostgreSQL would do if its statistics (none before the table is first analyzed)
        # said the app has few events.
        "SET LOCAL enable_sort = off; "
        # Which sorts off would count as too costly a plan to run without compiling it.
        "SET LOCAL jit = off"
    )
    try:
        common = 0
        if not sharded:
            common = await fetchval(
                connection, select(func.count()).select_from(among_recent.subquery())
            )
        if common < candidates:
            await connection.execute("SET LOCAL enable_sort = on")
        window = (
            (among_recent if common == candidates else everywhere)
            .cte("window")
            .prefix_with("MATERIALIZED")
        )
        return await _page(connection, query, window, terms, regconfig, after, candidates, limit)
    except asyncpg.QueryCanceledError as error:
        raise SearchTimeout(time_limit) from error


async def _page(
    connection: asyncpg.Connection,
    query: SearchQuery,
    window: CTE,
    terms: ColumnElement[Any],
    regconfig: ColumnElement[Any],
    after: Rank | None,
    candidates: int,
    limit: int,
) -> tuple[list[tuple[SearchHit, bool]], Window | None]:
    """The page of `window`'s matches past `after`, with the window's ends."""
    # The window's newest and oldest events, and how many events it holds.
    size = select(func.count()).select_from(window).scalar_subquery()
    newest, oldest = (
        select(*(column.label(f"{end}_{column.name}") for column in _place(window)))
        .order_by(*(_newest_first(window) if end == "newest" else _place(window)))
        .limit(1)
        .subquery(end)
        for end in ("newest", "oldest")
    )
    rank = func.ts_rank(window.c.search, terms).label("rank")
    ranked = select(
        window.c.user_id,
        window.c.session_id,
        window.c.seq,
        window.c.id,
        window.c.author,
        window.c.timestamp,
        window.c.event,
        rank,
    ).subquery("ranked")
    order = (ranked.c.rank.desc(), ranked.c.user_id, ranked.c.session_id, ranked.c.seq)
    page = select(ranked)
    if after is not None:
        seen = literal(after[0], Float)
        spot = tuple_(ranked.c.user_id, ranked.c.session_id, ranked.c.seq)
        page = page.where(
            or_(ranked.c.rank < seen, and_(ranked.c.rank == seen, spot > tuple_(*after[1:])))
        )
    best = page.order_by(*order).limit(limit).subquery("best")
    # The snippet is cut from the page's hits only, after the limit: it is the costly part.
    words = func.translate(
        func.sessionary_event_text(best.c.event), f"{MARK_START}{MARK_END}", literal("", Text)
    )
    snippet = func.ts_headline(regconfig, words, terms, HEADLINE_OPTIONS)
    # Whether its session is live, looked up for the page's events only: an expired session's
    # events wait for the sweeper, and are never shown.
    alive = StorageSession.id.is_not(None).label("alive")
    hits = (
        select(
            best.c.user_id,
            best.c.session_id,
            best.c.seq,
            best.c.id,
            best.c.author,
            best.c.timestamp,
            best.c.rank,
            snippet.label("snippet"),
            alive,
        )
        .select_from(
            best.outerjoin(
                StorageSession,
                and_(
                    StorageSession.app_name == query.app_name,
                    StorageSession.user_id == best.c.user_id,
                    StorageSession.id == best.c.session_id,
                    live(),
                ),
            )
        )
        .subquery("hits")
    )
    # One row even when the page is empty, so that the window's ends always come back.
    statement = (
        select(newest, oldest, size.label("size"), hits)
        .select_from(newest.join(oldest, literal(True)).outerjoin(hits, literal(True)))
        .order_by(hits.c.rank.desc(), hits.c.user_id, hits.c.session_id, hits.c.seq)
    )
    rows = await fetch(connection, statement)
    if not rows:
        return [], None
    first = rows[0]
    ends = Window(
        (first[0], first[1], first[2], first[3]),
        (first[4], first[5], first[6], first[7]),
        full=first["size"] == candidates,
    )
    matches = [(SearchHit(*row[9:17]), row["alive"]) for row in rows if row["seq"] is not None]
    return matches, ends


def _place(rows: Any) -> tuple[Any, ...]:
    return (rows.c.timestamp, rows.c.user_id, rows.c.session_id, rows.c.seq)


def _newest_first(rows: Any) -> list[Any]:
    return [column.desc() for column in _place(rows)]


def rank_of(hit: SearchHit) -> Rank:
    """Where a hit stands in its window, as `search(after=…)` takes it."""
    return (hit.rank, hit.user_id, hit.session_id, hit.seq)
