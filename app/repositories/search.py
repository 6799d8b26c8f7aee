"""SQL for full-text search over events: matched through the GIN index on `events.search`,
ranked, paged by (rank, user, session, seq), with a snippet cut from each hit's text."""

from typing import Any

import asyncpg
from sqlalchemy import Float, Text, and_, cast, exists, func, literal, or_, select, tuple_
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


async def search(
    connection: asyncpg.Connection,
    query: SearchQuery,
    config: str,
    *,
    after: tuple[float, str, str, int] | None,
    limit: int,
    time_limit: float,
) -> list[SearchHit]:
    """Up to `limit` hits, best first, from just past `after` (the last hit's rank, user id,
    session id and seq); only events of live sessions. In the connection's transaction, which
    it stops after `time_limit` seconds (SearchTimeout)."""
    regconfig = cast(literal(config), REGCONFIG)
    terms = func.websearch_to_tsquery(regconfig, query.text)
    rank = func.ts_rank(StorageEvent.search, terms).label("rank")
    conditions = [
        StorageEvent.app_name == query.app_name,
        StorageEvent.search.op("@@")(terms),
        exists().where(
            StorageSession.app_name == StorageEvent.app_name,
            StorageSession.user_id == StorageEvent.user_id,
            StorageSession.id == StorageEvent.session_id,
            live(),
        ),
    ]
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
    matches = (
        select(
            StorageEvent.user_id,
            StorageEvent.session_id,
            StorageEvent.seq,
            StorageEvent.id,
            StorageEvent.author,
            StorageEvent.timestamp,
            StorageEvent.event,
            rank,
        )
        .where(*conditions)
        .subquery("matches")
    )
    place = tuple_(matches.c.user_id, matches.c.session_id, matches.c.seq)
    page = select(matches)
    if after is not None:
        seen_rank = literal(after[0], Float)
        page = page.where(
            or_(
                matches.c.rank < seen_rank,
                and_(matches.c.rank == seen_rank, place > tuple_(*after[1:])),
            )
        )
    page = page.order_by(
        matches.c.rank.desc(), matches.c.user_id, matches.c.session_id, matches.c.seq
    ).limit(limit)
    best = page.subquery("best")
    # The snippet is cut from the page's hits only, after the limit: it is the costly part.
    words = func.translate(
        func.sessionary_event_text(best.c.event), f"{MARK_START}{MARK_END}", literal("", Text)
    )
    snippet = func.ts_headline(regconfig, words, terms, HEADLINE_OPTIONS)
    statement = select(
        best.c.user_id,
        best.c.session_id,
        best.c.seq,
        best.c.id,
        best.c.author,
        best.c.timestamp,
        best.c.rank,
        snippet,
    ).order_by(best.c.rank.desc(), best.c.user_id, best.c.session_id, best.c.seq)
    await connection.execute(f"SET LOCAL statement_timeout = {max(1, round(time_limit * 1000))}")
    try:
        rows = await fetch(connection, statement)
    except asyncpg.QueryCanceledError as error:
        raise SearchTimeout(time_limit) from error
    return [SearchHit(*row) for row in rows]


def position(hit: SearchHit) -> list[Any]:
    """The keyset position of a hit, as `search(after=…)` takes it."""
    return [hit.rank, hit.user_id, hit.session_id, hit.seq]
