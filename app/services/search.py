"""Full-text search over an app's events, paged, best match first within windows of the
newest matches."""

from typing import Any

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import Page, PageRequest, SearchHit, SearchQuery
from app.errors import SearchBusy
from app.repositories import search as search_rows


class SearchService:
    """A search may read much of an app's events: each worker runs at most
    `SESSIONARY_SEARCH_CONCURRENCY` at once, refusing the next rather than queueing it, and
    each for at most `SESSIONARY_SEARCH_TIMEOUT`, so searches cannot starve appends."""

    def __init__(self, pool: DriverPool, settings: Settings, *, sharded: bool = False) -> None:
        self.pool = pool
        self.settings = settings
        self.sharded = sharded  # on Citus (`search_rows.search`)
        self.running = 0

    async def search(self, query: SearchQuery, page: PageRequest) -> Page[SearchHit]:
        """A page of hits: best first among the newest `SESSIONARY_SEARCH_CANDIDATES`
        matches, then among the next as many older ones, window after window.

        A token holds where its window ends (exclusive: the first window ends just above its
        newest event, so events stored later never enter it) and, past the window's first
        page, the last hit's place in it."""
        listing = paging.listing("search", query)
        below: search_rows.Place | None = None
        after: search_rows.Rank | None = None
        if page.token:
            position = paging.decode(page.token, listing, _PLACE, _PLACE * 2)
            below = _place(position[:4])
            if len(position) == 8:
                after = (float(position[4]), position[5], position[6], position[7])
        if self.running >= self.settings.search_concurrency:
            raise SearchBusy(self.settings.search_concurrency)
        self.running += 1
        try:
            # One snapshot for its statements: they must agree on which events are newest.
            async with self.pool.transaction(
                isolation="repeatable_read", readonly=True
            ) as connection:
                ranked, window = await search_rows.search(
                    connection,
                    query,
                    self.settings.search_config,
                    below=below,
                    after=after,
                    candidates=self.settings.search_candidates,
                    limit=page.size + 1,
                    time_limit=self.settings.search_timeout,
                    sharded=self.sharded,
                )
        finally:
            self.running -= 1
        shown = ranked[: page.size]
        hits = [hit for hit, live in shown if live]
        if window is None:
            return Page(hits, None)
        if below is None:
            timestamp, user_id, session_id, seq = window.newest
            below = (timestamp, user_id, session_id, seq + 1)
        if len(ranked) > page.size:
            position = [*below, *search_rows.rank_of(shown[-1][0])]
        elif window.full:
            position = list(window.oldest)
        else:
            return Page(hits, None)
        return Page(hits, paging.encode(listing, position))


# A token's position: where its window ends, then (past the window's first page) the last hit.
_PLACE = (float, str, str, int)


def _place(position: list[Any]) -> search_rows.Place:
    timestamp, user_id, session_id, seq = position
    return (float(timestamp), user_id, session_id, seq)  # JSON writes a whole float as an int
