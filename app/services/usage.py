"""Token usage of an app, summed by user and time; a session's own is on the
session (`StoredSession.usage`)."""

from app.db import DriverPool
from app.domain import Usage
from app.repositories import usage as usage_rows


class UsageService:
    def __init__(self, pool: DriverPool) -> None:
        self.pool = pool

    async def by_user(
        self,
        app_name: str,
        user_id: str | None,
        after_timestamp: float | None,
        before_timestamp: float | None,
    ) -> list[tuple[str, int, Usage]]:
        async with self.pool.connection() as connection:
            return await usage_rows.by_user(
                connection, app_name, user_id, after_timestamp, before_timestamp
            )
