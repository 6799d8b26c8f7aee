"""Liveness and readiness: is the database reachable, and is its schema the one this code needs."""

import asyncio

from app import db
from app.errors import DatabaseUnavailable, SchemaBehind


async def check_ready(connector: db.Connector, wait_seconds: float) -> dict[str, str]:
    """Within `wait_seconds`, whatever the database does: a probe that hangs on a stalled
    database would keep a load balancer sending traffic to a replica that cannot serve it.
    The probe opens a connection of its own, so that a pool busy with requests is not taken
    for a database that cannot serve."""
    probe = asyncio.ensure_future(db.current_revision(connector))
    done, _ = await asyncio.wait({probe}, timeout=wait_seconds)
    if not done:
        # Not awaited: a cancelled connection may take a moment more to close.
        probe.cancel()
        probe.add_done_callback(_retrieve)
        raise DatabaseUnavailable(f"The database did not answer within {wait_seconds:g} s.")
    try:
        current = probe.result()
    except db.DRIVER_ERRORS as error:
        # Any database error, even one that would be a bug on a request (a revoked privilege),
        # means this replica cannot serve: a probe answers 503, never 500.
        raise DatabaseUnavailable(
            f"The database cannot serve right now ({type(error).__name__}, "
            f"SQLSTATE {db.sqlstate(error) or 'none'})."
        ) from error
    head = db.head_revision()
    if current != head:
        raise SchemaBehind(current, head, newer=db.is_newer(current))
    return {"status": "ready", "schemaRevision": current or ""}


def _retrieve(task: "asyncio.Task[str | None]") -> None:
    """An abandoned probe's failure was answered already; asyncio must not report it again."""
    if not task.cancelled():
        task.exception()
