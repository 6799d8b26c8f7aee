"""SQL for the audit log and the server's own secrets."""

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import orjson


@dataclass(frozen=True)
class AuditRecord:
    seq: int
    time: datetime
    action: str
    key_id: str | None
    app_name: str | None
    user_ref: str | None
    detail: dict[str, Any]
    outcome: str


@dataclass(frozen=True)
class AuditQuery:
    app_name: str | None
    user_ref: str | None
    action: str | None
    after: datetime | None
    before: datetime | None


async def server_secret(connection: asyncpg.Connection, name: str) -> bytes:
    """The secret of that name, made (32 random bytes) by whichever process asks first."""
    await connection.execute(
        "INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        name,
        secrets.token_bytes(32),
    )
    value: bytes = await connection.fetchval(
        "SELECT value FROM server_secrets WHERE name = $1", name
    )
    return value


async def insert(
    connection: asyncpg.Connection,
    action: str,
    key_id: str | None,
    app_name: str | None,
    user_ref: str | None,
    detail: dict[str, Any],
    outcome: str,
) -> None:
    await connection.execute(
        """INSERT INTO audit_log (action, key_id, app_name, user_ref, detail, outcome)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        action,
        key_id,
        app_name,
        user_ref,
        orjson.dumps(detail).decode(),
        outcome,
    )


async def page(
    connection: asyncpg.Connection, query: AuditQuery, *, below: int | None, limit: int
) -> list[AuditRecord]:
    """The records that match, newest first, from just below seq `below`."""
    rows = await connection.fetch(
        """SELECT seq, time, action, key_id, app_name, user_ref, detail, outcome FROM audit_log
           WHERE ($1::text IS NULL OR app_name = $1) AND ($2::text IS NULL OR user_ref = $2)
             AND ($3::text IS NULL OR action = $3)
             AND ($4::timestamptz IS NULL OR time >= $4)
             AND ($5::timestamptz IS NULL OR time < $5)
             AND ($6::bigint IS NULL OR seq < $6)
           ORDER BY seq DESC LIMIT $7""",
        query.app_name,
        query.user_ref,
        query.action,
        query.after,
        query.before,
        below,
        limit,
    )
    return [AuditRecord(**dict(row)) for row in rows]


async def delete_older(connection: asyncpg.Connection, days: float) -> int:
    """Delete the records older than `days`; how many."""
    deleted = await connection.fetch(
        "DELETE FROM audit_log WHERE time < now() - make_interval(secs => $1) RETURNING seq",
        days * 86_400,
    )
    return len(deleted)
