"""Shared state, the app's and each user's, read and merged directly (keys without prefix)."""

from typing import Any

from app.config import Settings
from app.db import DriverPool
from app.errors import InvalidInput
from app.repositories import shared_state as state_rows
from app.repositories.erasures import refuse_while_erasing, refuse_while_erasing_app
from app.rules.scopes import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

PREFIXES = (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)


def _unprefixed(delta: dict[str, Any]) -> dict[str, Any]:
    prefixed = [key for key in delta if key.startswith(PREFIXES)]
    if prefixed:
        raise InvalidInput(
            f"Keys here carry no scope prefix, got {prefixed[:5]}: this endpoint's path already "
            "names the scope.",
            field="stateDelta",
        )
    return delta


class SharedStateService:
    """Each public method is one unit of work, committed before it returns."""

    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings

    async def get_app(self, app_name: str) -> dict[str, Any]:
        async with self.pool.connection() as connection:
            return await state_rows.get_app(connection, app_name)

    async def get_user(self, app_name: str, user_id: str) -> dict[str, Any]:
        async with self.pool.connection() as connection:
            return await state_rows.get_user(connection, app_name, user_id)

    async def update_app(self, app_name: str, delta: dict[str, Any]) -> dict[str, Any]:
        limit = self.settings.max_state_bytes
        async with self.pool.transaction() as connection:
            await refuse_while_erasing_app(connection, app_name)
            state = await state_rows.merge_app(connection, app_name, _unprefixed(delta), limit)
        return state

    async def update_user(
        self, app_name: str, user_id: str, delta: dict[str, Any]
    ) -> dict[str, Any]:
        limit = self.settings.max_state_bytes
        async with self.pool.transaction() as connection:
            await refuse_while_erasing(connection, app_name, user_id)
            state = await state_rows.merge_user(
                connection, app_name, user_id, _unprefixed(delta), limit
            )
        return state
