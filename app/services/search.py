"""Full-text search over an app's events, paged, best match first."""

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

    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings
        self.running = 0

    async def search(self, query: SearchQuery, page: PageRequest) -> Page[SearchHit]:
        listing = paging.listing("search", query)
        after = None
        if page.token:
            rank, user_id, session_id, seq = paging.decode(
                page.token, listing, (float, str, str, int)
            )
            after = (float(rank), user_id, session_id, seq)
        if self.running >= self.settings.search_concurrency:
            raise SearchBusy(self.settings.search_concurrency)
        self.running += 1
        try:
            async with self.pool.transaction() as connection:
                hits = await search_rows.search(
                    connection,
                    query,
                    self.settings.search_config,
                    after=after,
                    limit=page.size + 1,
                    time_limit=self.settings.search_timeout,
                )
        finally:
            self.running -= 1
        return Page(*paging.cut(hits, page.size, listing, search_rows.position))
