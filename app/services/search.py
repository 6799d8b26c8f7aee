"""Full-text search over an app's events, paged, best match first."""

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import Page, PageRequest, SearchHit, SearchQuery
from app.repositories import search as search_rows


class SearchService:
    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings

    async def search(self, query: SearchQuery, page: PageRequest) -> Page[SearchHit]:
        listing = paging.listing("search", query)
        after = None
        if page.token:
            rank, user_id, session_id, seq = paging.decode(
                page.token, listing, (float, str, str, int)
            )
            after = (float(rank), user_id, session_id, seq)
        async with self.pool.connection() as connection:
            hits = await search_rows.search(
                connection, query, self.settings.search_config, after=after, limit=page.size + 1
            )
        return Page(*paging.cut(hits, page.size, listing, search_rows.position))
