"""SQL for full-text search over events: matches taken newest first in windows of a bounded
size, each window ranked and paged by (rank, user, session, seq), with a snippet cut from each
hit's text."""

from dataclasses import dataclass

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

from app.db import fetch
from app.domain import SearchHit, SearchQuery
from app.errors import SearchTimeout
from app.models import StorageEvent, StorageSession, live
from app.rules.search import MARK_END, MARK_START

HEADLINE_OPTIONS = (
    f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords=30, MinWords=12, MaxFragments=2, "
    "FragmentDelimiter= … "
)


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
) -> tuple[list[SearchHit], Window | None]:
    """Up to `limit` hits of one window, best first, from just past `after`, and the window
    (None when no event matches).

    A window is the newest `candidates` matches older than `below` (all of them when None),
    whatever their sessions' state; only those of live sessions are hits. PostgreSQL takes
    them from the app's time index, checking each event's words, when the words are common,
    or from the search index when they are rare: either way it reads a bounded number of rows,
    where ranking every match would read all of them. Runs in the connection's transaction,
    which it stops after `time_limit` seconds (SearchTimeout)."""
    # The configuration written into the statement (`Settings.search_config` allows only a
    # name): a constant, so that PostgreSQL parses the words once, not once for every row.
    regconfig = literal_column(f"'{config}'::regconfig", REGCONFIG)
    terms = func.websearch_to_tsquery(regconfig, query.text)
    place = (StorageEvent.timestamp, StorageEvent.user_id, StorageEvent.session_id)
    conditions = [StorageEvent.app_name == query.app_name, StorageEvent.search.op("@@")(terms)]
    for column, value in (
        (StorageEvent.user_id, query.user_id),
        (StorageEvent.session_id, query.session_id),
        (StorageEvent.author, query.author),
    ):
        if value is not None:
            conditions.append(column == value)
    if query.after_timestamp is not None:
        conditions.append(StorageEvent.timestamp >= query.after_timestamp)
    if query.before_timestamp is not None:
        conditions.append(StorageEvent.timestamp < query.before_timestamp)
    if below is not None:
        conditions.append(
            tuple_(*place, StorageEvent.seq)
            < tuple_(literal(below[0], Double), *(literal(value) for value in below[1:]))
        )
    window = (
        select(*place, StorageEvent.seq, StorageEvent.search)
        .where(*conditions)
        .order_by(*(column.desc() for column in (*place, StorageEvent.seq)))
        .limit(candidates)
        .cte("window")
        .prefix_with("MATERIALIZED")
    )
    # The window's newest and oldest events, and how many events it holds.
    size = select(func.count()).select_from(window).scalar_subquery()
    place_columns = (window.c.timestamp, window.c.user_id, window.c.session_id, window.c.seq)
    newest, oldest = (
        select(*(column.label(f"{end}_{column.name}") for column in place_columns))
        .order_by(*(column.desc() if end == "newest" else column for column in place_columns))
        .limit(1)
        .subquery(end)
        for end in ("newest", "oldest")
    )
    rank = func.ts_rank(window.c.search, terms).label("rank")
    # A join, not EXISTS: Citus plans no correlated subquery over a CTE.
    ranked = (
        select(window.c.user_id, window.c.session_id, window.c.seq, rank)
        .join(
            StorageSession,
            and_(
                StorageSession.app_name == query.app_name,
                StorageSession.user_id == window.c.user_id,
                StorageSession.id == window.c.session_id,
                live(),
            ),
        )
        .subquery("ranked")
    )
    order = (ranked.c.rank.desc(), ranked.c.user_id, ranked.c.session_id, ranked.c.seq)
    page = select(ranked)
    if after is not None:
        seen = literal(after[0], Float)
        spot = tuple_(ranked.c.user_id, ranked.c.session_id, ranked.c.seq)
        page = page.where(
            or_(ranked.c.rank < seen, and_(ranked.c.rank == seen, spot > tuple_(*after[1:])))
        )
    best = page.order_by(*order).limit(limit).subquery("best")
    event = StorageEvent.__table__.alias("event")
    # The snippet is cut from the page's hits only, after the limit: it is the costly part.
    words = func.translate(
        func.sessionary_event_text(event.c.event), f"{MARK_START}{MARK_END}", literal("", Text)
    )
    snippet = func.ts_headline(regconfig, words, terms, HEADLINE_OPTIONS)
    hits = (
        select(
            best.c.user_id,
            best.c.session_id,
            best.c.seq,
            event.c.id,
            event.c.author,
            event.c.timestamp,
            best.c.rank,
            snippet.label("snippet"),
        )
        .join(
            event,
            and_(
                event.c.app_name == query.app_name,
                event.c.user_id == best.c.user_id,
                event.c.session_id == best.c.session_id,
                event.c.seq == best.c.seq,
            ),
        )
        .subquery("hits")
    )
    # One row even when the page is empty, so that the window's ends always come back.
    statement = (
        select(newest, oldest, size.label("size"), hits)
        .select_from(newest.join(oldest, literal(True)).outerjoin(hits, literal(True)))
        .order_by(hits.c.rank.desc(), hits.c.user_id, hits.c.session_id, hits.c.seq)
    )
    await connection.execute(
        f"SET LOCAL statement_timeout = {max(1, round(time_limit * 1000))}; "
        # Planned for these words each time: which index pays depends on how common they are.
        "SET LOCAL plan_cache_mode = force_custom_plan; "
        # One core at most, however many rows it reads: the other is the appends'.
        "SET LOCAL max_parallel_workers_per_gather = 0"
    )
    try:
        rows = await fetch(connection, statement)
    except asyncpg.QueryCanceledError as error:
        raise SearchTimeout(time_limit) from error
    if not rows:
        return [], None
    first = rows[0]
    ends = Window(
        (first[0], first[1], first[2], first[3]),
        (first[4], first[5], first[6], first[7]),
        full=first["size"] == candidates,
    )
    return [SearchHit(*row[9:]) for row in rows if row["seq"] is not None], ends


def rank_of(hit: SearchHit) -> Rank:
    """Where a hit stands in its window, as `search(after=…)` takes it."""
    return (hit.rank, hit.user_id, hit.session_id, hit.seq)
