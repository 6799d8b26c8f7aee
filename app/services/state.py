"""App-wide and user-wide state, read and merged directly (keys without their prefix)."""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
from app.errors import InvalidInput
from app.repositories import state as state_rows
from app.services.events import check_state_size
from app.state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

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


class StateService:
    def __init__(self, db: AsyncSession, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    async def get_app(self, app_name: str) -> dict[str, Any]:
        return {"state": await state_rows.get_app(self.db, app_name)}

    async def get_user(self, app_name: str, user_id: str) -> dict[str, Any]:
        return {"state": await state_rows.get_user(self.db, app_name, user_id)}

    async def update_app(self, app_name: str, delta: dict[str, Any]) -> dict[str, Any]:
        state, size = await state_rows.merge_app(self.db, app_name, _unprefixed(delta))
        return await self._commit(state, size)

    async def update_user(
        self, app_name: str, user_id: str, delta: dict[str, Any]
    ) -> dict[str, Any]:
        state, size = await state_rows.merge_user(self.db, app_name, user_id, _unprefixed(delta))
        return await self._commit(state, size)

    async def _commit(self, state: dict[str, Any], size: int) -> dict[str, Any]:
        check_state_size(size, self.settings)
        await self.db.commit()
        return {"state": state}
