"""SQL for the event log: the one-statement append, lookups by id, and pages."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Double, and_, cast, column, func, literal, select, true, update
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from app.domain import AppendOutcome, NewEvent, SessionKey
from app.models import StorageAppState, StorageEvent, StorageSession, StorageUserState
from app.repositories.state import app_keys, json_literal, merge_statement, text_size, user_keys
from app.state import merge_deltas

EVENT_ID_CONSTRAINT = "uq_events_app_name_user_id_session_id_id"


class DuplicateEventId(Exception):
    """An event id in the batch is already stored in the session (raced with a retry)."""


def _session_filter(key: SessionKey) -> ColumnElement[bool]:
    return and_(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.id == key.session_id,
    )


def _event_filter(key: SessionKey) -> ColumnElement[bool]:
    return and_(
        StorageEvent.app_name == key.app_name,
        StorageEvent.user_id == key.user_id,
        StorageEvent.session_id == key.session_id,
    )


async def append(
    db: AsyncSession, key: SessionKey, events: Sequence[NewEvent], expected_version: int | None
) -> AppendOutcome | None:
    """Append events in one statement; None when the session is absent or not at the version.

    The UPDATE of the session row hands out the seqs and, through its row lock, serialises
    appends to one session across every API worker; app and user state merge with `||` in
    the same statement, so concurrent writers of different keys never lose each other's writes.
    Raises DuplicateEventId when an event id is already stored in the session.
    """
    delta = merge_deltas([event.delta for event in events])
    count = len(events)

    where = _session_filter(key)
    if expected_version is not None:
        where = and_(where, StorageSession.version == expected_version)
    values: dict[str, Any] = {
        "version": StorageSession.version + count,
        "update_time": func.to_timestamp(events[-1].timestamp),
    }
    if delta.session:
        values["state"] = StorageSession.state.op("||")(json_literal(delta.session))
    bump = (
        update(StorageSession)
        .where(where)
        .values(values)
        .returning(
            (StorageSession.version - count).label("base_seq"),
            (text_size(StorageSession.state) if delta.session else literal(0)).label("size"),
        )
        .cte("bump")
    )

    shared = [
        merge_statement(table, keys, scope_delta, only_with=bump)
        .returning(text_size(table.state).label("size"))
        .cte(f"merge_{table.__tablename__}")
        for table, keys, scope_delta in (
            (StorageAppState, app_keys(key.app_name), delta.app),
            (StorageUserState, user_keys(key.app_name, key.user_id), delta.user),
        )
        if scope_delta
    ]

    incoming = (
        func.jsonb_array_elements(
            json_literal([{"event": e.document, "hash": e.request_hash.hex()} for e in events])
        )
        .table_valued(column("value", JSONB), with_ordinality="position")
        .render_derived("incoming")
    )
    document = incoming.c.value["event"]
    seq = bump.c.base_seq + incoming.c.position
    inserted = (
        insert(StorageEvent)
        .from_select(
            [
                "app_name",
                "user_id",
                "session_id",
                "seq",
                "id",
                "invocation_id",
                "author",
                "timestamp",
                "request_hash",
                "event",
            ],
            select(
                literal(key.app_name),
                literal(key.user_id),
                literal(key.session_id),
                seq,
                document["id"].astext,
                document["invocationId"].astext,
                document["author"].astext,
                cast(document["timestamp"], Double),
                func.decode(incoming.c.value["hash"].astext, "hex"),
                # Stored as readers get it, seq included, so reads return it untouched.
                document.op("||")(func.jsonb_build_object("seq", seq)),
            )
            .select_from(bump)
            .join(incoming, true()),
        )
        .cte("inserted")
    )

    sizes = [bump.c.size, *(select(cte.c.size).scalar_subquery() for cte in shared)]
    statement = select(bump.c.base_seq, func.greatest(*sizes)).add_cte(inserted, *shared)
    try:
        row = (await db.execute(statement)).one_or_none()
    except IntegrityError as error:
        if EVENT_ID_CONSTRAINT in str(error.orig):
            raise DuplicateEventId from error
        raise
    return None if row is None else AppendOutcome(base_seq=row[0], largest_state_bytes=row[1])


async def find_by_ids(
    db: AsyncSession, key: SessionKey, event_ids: Sequence[str]
) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Stored events by id, each with the hash of the request that stored it."""
    rows = await db.execute(
        select(StorageEvent.id, StorageEvent.request_hash, StorageEvent.event).where(
            _event_filter(key), StorageEvent.id.in_(event_ids)
        )
    )
    return {id_: (hash_, event) for id_, hash_, event in rows}


async def select_events(
    db: AsyncSession,
    key: SessionKey,
    *,
    after_seq: int | None = None,
    before_seq: int | None = None,
    after_timestamp: float | None = None,
    before_timestamp: float | None = None,
    newest_first: bool = False,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Events in seq order (or reversed); timestamps: `after` inclusive, `before` exclusive."""
    query = select(StorageEvent.event).where(_event_filter(key))
    if after_seq is not None:
        query = query.where(StorageEvent.seq > after_seq)
    if before_seq is not None:
        query = query.where(StorageEvent.seq < before_seq)
    if after_timestamp is not None:
        query = query.where(StorageEvent.timestamp >= after_timestamp)
    if before_timestamp is not None:
        query = query.where(StorageEvent.timestamp < before_timestamp)
    query = query.order_by(StorageEvent.seq.desc() if newest_first else StorageEvent.seq)
    if limit is not None:
        query = query.limit(limit)
    return list((await db.scalars(query)).all())
