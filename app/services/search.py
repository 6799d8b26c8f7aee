"""Full-text search over an app's events, paged, best match first."""

from sqlalchemy.ext.asyncio import AsyncEngine

from app import paging
from app.config import Settings
from app.domain import Page, PageRequest, SearchHit, SearchQuery
from app.repositories import search as search_rows


class SearchService:
    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings

    async def search(self, query: SearchQuery, page: PageRequest) -> Page[SearchHit]:
        listing = paging.listing("search", query)
        after = None
        if page.token:
            rank, user_id, session_id, seq = paging.decode(
                page.token, listing, (float, str, str, int)
            )
            after = (float(rank), user_id, session_id, seq)
        async with self.engine.connect() as db:
            hits = await search_rows.search(
                db, query, self.settings.search_config, after=after, limit=page.size + 1
            )
        return Page(*paging.cut(hits, page.size, listing, search_rows.position))
