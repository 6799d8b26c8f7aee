"""The audit log: every erase, session delete, import, key creation and revocation, and
retention sweep is recorded in the transaction that does it (so nothing is recorded that did
not happen, and nothing happens unrecorded), with the key that asked for it (its id, never
its secret), ids and counts, and no content.

People are named by a keyed hash (`rules.audit.pseudonym`), as are their sessions: after a
user is erased their id is in no table, yet the log, asked about that id, still finds them.
"""

from contextvars import ContextVar
from datetime import datetime
from typing import Any

import asyncpg

from app import paging
from app.config import Settings
from app.db import DriverPool
from app.domain import Page, PageRequest, SessionKey
from app.repositories import audit as audit_rows
from app.repositories.audit import AuditQuery, AuditRecord
from app.rules.audit import pseudonym

# The id of the key of the request being served, which `app.api.deps.authorize` sets: what
# a record says did it. None with keys off, and outside requests (the CLI, the sweeper).
ACTING_KEY: ContextVar[str | None] = ContextVar("acting_key", default=None)
SECRET_NAME = "audit"


class AuditLog:
    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.pool = pool
        self.settings = settings
        configured = settings.audit_secret.encode()
        self._secret: bytes | None = configured or None

    async def secret(self, connection: asyncpg.Connection) -> bytes:
        """`SESSIONARY_AUDIT_SECRET`, else the one the server made and keeps."""
        if self._secret is None:
            self._secret = await audit_rows.server_secret(connection, SECRET_NAME)
        return self._secret

    async def user_ref(self, connection: asyncpg.Connection, app_name: str, user_id: str) -> str:
        return pseudonym(await self.secret(connection), app_name, user_id)

    async def record(
        self,
        connection: asyncpg.Connection,
        action: str,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        detail: dict[str, Any] | None = None,
        outcome: str = "ok",
    ) -> None:
        """Record an action in the caller's transaction. `detail` holds ids and counts only;
        a user's id becomes its pseudonym."""
        user_ref = None
        if app_name is not None and user_id is not None:
            user_ref = await self.user_ref(connection, app_name, user_id)
        await audit_rows.insert(
            connection, action, ACTING_KEY.get(), app_name, user_ref, detail or {}, outcome
        )

    async def session_ref(self, connection: asyncpg.Connection, key: SessionKey) -> str:
        """A session's name in the log: a keyed hash, as its id may say who its user is."""
        secret = await self.secret(connection)
        return pseudonym(secret, key.app_name, f"{key.user_id}\x00{key.session_id}")

    async def records(
        self,
        app_name: str | None,
        user_id: str | None,
        action: str | None,
        after: datetime | None,
        before: datetime | None,
        page: PageRequest,
    ) -> Page[AuditRecord]:
        """The records that match, newest first."""
        listing = paging.listing("audit", app_name, user_id, action, str(after), str(before))
        below = None
        if page.token:
            (below,) = paging.decode(page.token, listing, (int,))
        async with self.pool.connection() as connection:
            user_ref = None
            if user_id is not None:
                # A user of no app given: the pseudonym needs the app, as user ids are per app.
                user_ref = await self.user_ref(connection, app_name or "", user_id)
            query = AuditQuery(app_name, user_ref, action, after, before)
            rows = await audit_rows.page(connection, query, below=below, limit=page.size + 1)
        return Page(*paging.cut(rows, page.size, listing, lambda row: [row.seq]))

    async def sweep(self) -> int:
        """Delete the records older than `SESSIONARY_AUDIT_RETENTION_DAYS`."""
        async with self.pool.transaction() as connection:
            return await audit_rows.delete_older(connection, self.settings.audit_retention_days)
