"""Token usage of an app, summed by user and time (DESIGN §6.3); a session's own is on the
session (`StoredSession.usage`)."""

from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain import Usage
from app.repositories import usage as usage_rows


class UsageService:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def by_user(
        self,
        app_name: str,
        user_id: str | None,
        after_timestamp: float | None,
        before_timestamp: float | None,
    ) -> list[tuple[str, int, Usage]]:
        async with self.engine.connect() as db:
            return await usage_rows.by_user(
                db, app_name, user_id, after_timestamp, before_timestamp
            )
