"""Liveness and readiness: is the database reachable, and is its schema the one this code needs."""

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from app import db
from app.errors import DatabaseUnavailable, SchemaBehind


async def check_ready(engine: AsyncEngine, wait_seconds: float) -> dict[str, str]:
    """Within `wait_seconds`, whatever the database does: a probe that hangs on a stalled
    database would keep a load balancer sending traffic to a replica that cannot serve it."""
    probe = asyncio.ensure_future(db.current_revision(engine))
    done, _ = await asyncio.wait({probe}, timeout=wait_seconds)
    if not done:
        # Not awaited: SQLAlchemy gives a cancelled connection 2 s more to close politely.
        probe.cancel()
        probe.add_done_callback(_retrieve)
        raise DatabaseUnavailable(f"The database did not answer within {wait_seconds:g} s.")
    try:
        current = probe.result()
    except Exception as error:
        if not db.is_unavailable(error):
            raise
        raise DatabaseUnavailable(
            f"The database cannot serve right now ({type(error).__name__})."
        ) from error
    head = db.head_revision()
    if current != head:
        raise SchemaBehind(current, head)
    return {"status": "ready", "schemaRevision": current or ""}


def _retrieve(task: "asyncio.Task[str | None]") -> None:
    """An abandoned probe's failure was answered already; asyncio must not report it again."""
    if not task.cancelled():
        task.exception()
