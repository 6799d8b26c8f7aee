"""API keys: minted and revoked, verified per request, and matched against what it touches.

Keys look like `sk_<id>_<secret>`; only the sha256 of the whole key is stored. By default
every request looks its key up, so a revocation takes effect at once; a deployment that would
rather save that round trip sets `SESSIONARY_AUTH_CACHE_SECONDS`, and a revocation then takes
effect within that time.
"""

import enum
import hashlib
import secrets
import time
from dataclasses import dataclass

from app.db import DriverPool
from app.domain import ApiKey
from app.errors import AppStateForbidden, Forbidden, NotFound, Unauthorized
from app.repositories import api_keys as key_rows
from app.repositories.erasures import refuse_while_erasing, refuse_while_erasing_app
from app.services.audit import AuditLog


class Need(enum.Enum):
    """How much of an app a route touches, which decides the keys that may call it."""

    USER = "user"  # one user's data, named in the path: that user's keys or app-wide keys
    APP = "app"  # every user of the app (list by app): app-wide keys only
    # every user of the app for an app-wide key, narrowed to its user for a user key (search)
    APP_NARROWED = "app_narrowed"
    APP_SHARED = "app_shared"  # app state, which every user's sessions show anyway: any key
    APP_STATE = "app_state"  # writes app state: app-wide keys, user keys made to (--app-state)
    APPS = "apps"  # which apps there are: any key, the listing narrowed to the key's app
    KEY = "key"  # what the key itself may do: any valid key, no data touched
    OPERATOR = "operator"  # the whole service (the audit log, erasing an app): admin keys only


@dataclass(frozen=True)
class Grant:
    key_id: str
    app_name: str | None  # None: every app (an admin key)
    user_id: str | None  # None: every user of the app
    read_only: bool
    app_state_write: bool  # a user's key that may write `app:` state too

    @property
    def writes_app_state(self) -> bool:
        """App state shows in every user's sessions: a key for one user writes it only when it
        was made to, so one user cannot plant what every other user's agent reads."""
        return not self.read_only and (self.user_id is None or self.app_state_write)

    def authorize(self, need: Need, app_name: str | None, user_id: str | None, write: bool) -> None:
        """Refuse with 403 anything outside the key's scope; judged on the path alone, so a
        refusal never tells whether the session exists. `app_name` is None only for
        `Need.APPS`, whose listing the route narrows to the key's app, and `Need.KEY`, which
        touches no data."""
        if need in (Need.APPS, Need.KEY):
            return
        if need is Need.OPERATOR and self.app_name is not None:
            raise Forbidden("Only an admin key (`sessionary keys create --admin`) may.")
        if self.app_name is not None and self.app_name != app_name:
            raise Forbidden(f"This API key is for app {self.app_name!r} only.")
        if self.user_id is not None:
            if need is Need.APP or (need is Need.USER and user_id != self.user_id):
                raise Forbidden(f"This API key is for user {self.user_id!r} only.")
        if write and self.read_only:
            raise Forbidden("This API key is read-only.")
        if need is Need.APP_STATE and not self.writes_app_state:
            raise AppStateForbidden()


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class GrantCache:
    """Verified keys of this process, each for `ttl` seconds; unknown keys are never cached."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._grants: dict[bytes, tuple[Grant, float]] = {}

    def get(self, key_hash: bytes) -> Grant | None:
        cached = self._grants.get(key_hash)
        if cached is None or cached[1] < time.monotonic():
            return None
        return cached[0]

    def put(self, key_hash: bytes, grant: Grant) -> None:
        if self.ttl > 0:
            self._grants[key_hash] = (grant, time.monotonic() + self.ttl)


class AuthService:
    """Opens its own database connections: a request whose key is cached needs none."""

    def __init__(self, pool: DriverPool, cache: GrantCache, audit: AuditLog) -> None:
        self.pool = pool
        self.cache = cache
        self.audit = audit

    async def authenticate(self, key: str | None) -> Grant:
        if not key:
            raise Unauthorized("Send an API key: Authorization: Bearer sk_…")
        key_hash = hash_key(key)
        grant = self.cache.get(key_hash)
        if grant is None:
            async with self.pool.connection() as connection:
                found = await key_rows.find_active(connection, key_hash)
            if found is None:
                raise Unauthorized("This API key is not valid (unknown or revoked).")
            grant = Grant(
                found.id, found.app_name, found.user_id, found.read_only, found.app_state_write
            )
            self.cache.put(key_hash, grant)
        return grant

    async def create(
        self,
        name: str,
        app_name: str | None,
        user_id: str | None,
        read_only: bool,
        app_state_write: bool = False,
    ) -> tuple[ApiKey, str]:
        """A new key; the returned secret is the only time it is ever shown."""
        key_id = secrets.token_hex(6)
        secret = f"sk_{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(key_id, name, app_name, user_id, read_only, app_state_write)
        async with self.pool.transaction() as connection:
            if app_name is not None and user_id is not None:
                await refuse_while_erasing(connection, app_name, user_id)
            elif app_name is not None:
                await refuse_while_erasing_app(connection, app_name)
            stored = await key_rows.insert_key(connection, key, hash_key(secret))
            scope = "admin" if app_name is None else "app" if user_id is None else "user"
            await self.audit.record(
                connection,
                "key.create",
                app_name=app_name,
                user_id=user_id,
                detail={"keyId": key_id, "scope": scope, "readOnly": read_only},
            )
        return stored, secret

    async def list(self) -> list[ApiKey]:
        async with self.pool.connection() as connection:
            return await key_rows.list_all(connection)

    async def revoke(self, key_id: str) -> None:
        async with self.pool.transaction() as connection:
            if not await key_rows.revoke(connection, key_id):
                raise NotFound(f"No active API key with id {key_id!r}.")
            await self.audit.record(connection, "key.revoke", detail={"keyId": key_id})
