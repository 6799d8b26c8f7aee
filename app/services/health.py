"""Liveness and readiness: is the database reachable, and is its schema the one this code needs."""

from sqlalchemy.ext.asyncio import AsyncEngine

from app import db
from app.errors import DatabaseUnavailable, SchemaBehind


async def check_ready(engine: AsyncEngine) -> dict[str, str]:
    try:
        current = await db.current_revision(engine)
    except db.UNAVAILABLE as error:
        raise DatabaseUnavailable(
            f"The database cannot be reached: {type(error).__name__}."
        ) from error
    head = db.head_revision()
    if current != head:
        raise SchemaBehind(current, head)
    return {"status": "ready", "schemaRevision": current or ""}
