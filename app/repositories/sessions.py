"""SQL for session rows, read together with the app and user state they share."""

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from sqlalchemy import (
    BigInteger,
    Float,
    Select,
    String,
    Text,
    and_,
    bindparam,
    case,
    cast,
    column,
    delete,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    true,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as insert_into
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from app.db import DriverStatement, execute, fetch, fetchrow, fetchval, violated_unique
from app.domain import (
    ROOT,
    UNDESCRIBED,
    Deleted,
    Descriptor,
    History,
    Order,
    Origin,
    ParentLink,
    SessionKey,
    SessionQuery,
    SessionRow,
    StoredSession,
    Tally,
    Usage,
)
from app.errors import Conflict
from app.models import (
    StorageAppState,
    StorageEvent,
    StoragePendingEvent,
    StorageSession,
    StorageUserState,
    Timestamp,
    live,
)
from app.repositories.artifacts import delete_session_artifacts
from app.repositories.memories import delete_session_memories
from app.repositories.shared_state import checked_state, is_state_too_large, state_too_large
from app.rules.scopes import APP_PREFIX, TEMP_PREFIX, USER_PREFIX

EMPTY_STATE = literal_column("'{}'", JSONB)
EMPTY_LIST = literal_column("'[]'", JSONB)


def row_filter(key: SessionKey) -> ColumnElement[bool]:
    """The session's row, live or expired."""
    return and_(
        StorageSession.app_name == key.app_name,
        StorageSession.user_id == key.user_id,
        StorageSession.id == key.session_id,
    )


def key_filter(key: SessionKey) -> ColumnElement[bool]:
    """The session, while it is live (an expired one is absent before it is swept)."""
    return and_(row_filter(key), live())


def with_shared_state(
    *extra: ColumnElement[Any],
    state: ColumnElement[Any] | None = None,
    user_id: ColumnElement[str] | str | None = None,
) -> Select[Any]:
    """Live sessions with their app's and user's state, and the time of their last event.

    `user_id` is the user the caller filters on, if one: the last event's lookup names it as
    a value too, which Citus needs to keep the statement on that user's shard.
    """
    # update_time keeps microseconds; ADK's lastUpdateTime is the last event's exact float.
    last_event_time = (
        select(StorageEvent.timestamp)
        .where(
            StorageEvent.app_name == StorageSession.app_name,
            StorageEvent.user_id == StorageSession.user_id,
            true() if user_id is None else StorageEvent.user_id == user_id,
            StorageEvent.session_id == StorageSession.id,
        )
        .order_by(StorageEvent.seq.desc())
        .limit(literal_column("1"))
        .scalar_subquery()
    )
    return (
        select(
            StorageSession.app_name,
            StorageSession.user_id,
            StorageSession.id,
            (StorageSession.state if state is None else state).label("state"),
            StorageSession.version,
            StorageSession.base_seq,
            StorageSession.create_time,
            StorageSession.update_time,
            func.coalesce(StorageAppState.state, EMPTY_STATE).label("app_state"),
            func.coalesce(StorageUserState.state, EMPTY_STATE).label("user_state"),
            last_event_time.label("last_event_time"),
            StorageSession.kind,
            StorageSession.parent_id,
            StorageSession.parent_seq,
            StorageSession.function_call_id,
            StorageSession.status,
            StorageSession.outcome,
            StorageSession.prompt_tokens,
            StorageSession.candidates_tokens,
            StorageSession.total_tokens,
            StorageSession.display_name,
            StorageSession.labels,
            StorageSession.expire_time,
            *extra,
        )
        .outerjoin(StorageAppState, StorageAppState.app_name == StorageSession.app_name)
        .outerjoin(
            StorageUserState,
            and_(
                StorageUserState.app_name == StorageSession.app_name,
                StorageUserState.user_id == StorageSession.user_id,
            ),
        )
        .where(live())
    )


def stored_session(row: Mapping[str, Any]) -> StoredSession:
    """A row of `with_shared_state`."""
    return StoredSession(
        key=SessionKey(row["app_name"], row["user_id"], row["id"]),
        state=row["state"],
        app_state=row["app_state"],
        user_state=row["user_state"],
        version=row["version"],
        base_seq=row["base_seq"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        last_event_time=row["last_event_time"],
        kind=row["kind"],
        parent=(
            None
            if row["parent_id"] is None
            else ParentLink(row["parent_id"], row["parent_seq"], row["function_call_id"])
        ),
        status=row["status"],
        outcome=row["outcome"],
        usage=Usage(row["prompt_tokens"], row["candidates_tokens"], row["total_tokens"]),
        display_name=row["display_name"],
        labels=row["labels"],
        expire_time=row["expire_time"],
    )


async def insert_new(
    connection: asyncpg.Connection,
    key: SessionKey,
    state: dict[str, Any],
    created: float,
    max_state_bytes: int,
    origin: Origin = ROOT,
    descriptor: Descriptor = UNDESCRIBED,
) -> bool:
    """Create the row of a new session (created, forked or a child), made `created`; False if
    the id is taken."""
    row = SessionRow(
        key=key,
        state=state,
        version=origin.version,
        create_time=created,
        update_time=created,
        kind=origin.kind,
        parent=origin.parent,
        history=origin.history,
        descriptor=descriptor,
    )
    return await insert(connection, row, max_state_bytes)


async def insert(connection: asyncpg.Connection, row: SessionRow, max_state_bytes: int) -> bool:
    """Insert the row; False if the id is taken (no exception, so the transaction lives on).
    An expired session under the id, not yet swept, is deleted to make room."""
    checked = checked_state(literal(row.state, JSONB), "session", max_state_bytes)
    history = row.history or History(row.version, {})
    base_state = (
        checked
        if row.history is None
        else checked_state(literal(history.base_state, JSONB), "session", max_state_bytes)
    )
    update_time = func.to_timestamp(row.update_time)
    parent = row.parent
    statement = (
        insert_into(StorageSession)
        .values(
            app_name=row.key.app_name,
            user_id=row.key.user_id,
            id=row.key.session_id,
            state=checked,
            version=row.version,
            create_time=func.to_timestamp(row.create_time),
            update_time=update_time,
            update_second=whole_second(update_time),
            kind=row.kind,
            parent_id=parent and parent.session_id,
            parent_seq=parent and parent.seq,
            function_call_id=parent and parent.function_call_id,
            status=row.status,
            outcome=row.outcome,
            base_seq=history.base_seq,
            base_state=base_state,
            removed_deltas=literal(history.removed_deltas, JSONB),
            display_name=row.descriptor.display_name,
            labels=literal(row.descriptor.labels, JSONB),
            expire_time=epoch_time(row.descriptor.expire_time),
        )
        # On the key only: a child for a function call that has one is an error, not a no-op.
        .on_conflict_do_nothing(index_elements=["app_name", "user_id", "id"])
        .returning(StorageSession.version)
    )
    async with refusals(parent, max_state_bytes):
        created_row = await fetchval(connection, statement)
    if created_row is None and await delete_expired(connection, row.key):
        return await insert(connection, row, max_state_bytes)
    return created_row is not None


@asynccontextmanager
async def refusals(parent: ParentLink | None, max_state_bytes: int) -> AsyncIterator[None]:
    """A new session's row refused for what it holds: a state over the limit (413), a second
    child for one function call (409)."""
    try:
        yield
    except asyncpg.PostgresError as error:
        if is_state_too_large(error):
            raise state_too_large(error, max_state_bytes) from error
        if parent is not None and violated_unique(error) is not None:
            raise Conflict(
                f"Function call {parent.function_call_id!r} of session {parent.session_id!r} "
                "already has a child session working on it."
            ) from error
        raise


async def delete_expired(connection: asyncpg.Connection, key: SessionKey) -> bool:
    expired = and_(row_filter(key), StorageSession.expire_time <= func.now())
    deleted = delete(StorageSession).where(expired).returning(StorageSession.id)
    if await fetchval(connection, deleted) is None:
        return False
    await delete_logs(connection, key)
    return True


async def delete_logs(connection: asyncpg.Connection, key: SessionKey) -> None:
    """Delete the events, queued events and artifacts (not its user's) of a session this
    transaction has just deleted.
    Statements of their own, after the session's: each sees what an append committed while
    the session's DELETE waited for its row lock (one statement's snapshot would not), and no
    append can write to it after."""
    for table in (StorageEvent, StoragePendingEvent):
        await execute(
            connection,
            delete(table).where(
                table.app_name == key.app_name,
                table.user_id == key.user_id,
                table.session_id == key.session_id,
            ),
        )
    await delete_session_artifacts(connection, key)
    await delete_session_memories(connection, key)


def epoch_time(seconds: float | None) -> ColumnElement[Any]:
    return null() if seconds is None else func.to_timestamp(literal(seconds, Float))


# A session with its shared state and its events, in one statement so that the version (the
# ETag) and the events come from one snapshot: the first row (seq 0) is the session, the
# others its events, as the UTF-8 JSON PostgreSQL renders from the stored JSONB: a read never
# decodes an event. `after_timestamp` NULL means no filter. Compiled once, and sent through
# the driver: it is the hot read.
_KEY = {name: bindparam(name, type_=String) for name in ("app_name", "user_id", "session_id")}
_AFTER = bindparam("after_timestamp", type_=Float)
_UNTIL = bindparam("until_seq", type_=BigInteger)


def _quoted(constant: str) -> ColumnElement[Any]:
    """A string constant written into the SQL (the hot reads compile to `DriverStatement`)."""
    return literal_column(f"'{constant}'", Text)


# How far from a session's newest event a state as of an earlier seq is found by undoing the
# changes since, not by replaying every delta from the base state (`state_as_of`).
UNDO_REACH = 100
_REACH = literal_column(str(UNDO_REACH), BigInteger)


def _state_delta(past: Any) -> ColumnElement[Any]:
    """The `actions.stateDelta` of the event `past` when it is an object, else `{}`."""
    delta = past.event.op("->", return_type=JSONB)(_quoted("actions")).op("->", return_type=JSONB)(
        _quoted("stateDelta")
    )
    return case((func.jsonb_typeof(delta) == _quoted("object"), delta), else_=EMPTY_STATE)


def _own_events(past: Any, user_id: ColumnElement[str] | str) -> list[ColumnElement[bool]]:
    """The kept events of the session the statement is about, naming its `user_id` as a value:
    on Citus the whole statement runs on the user's shard."""
    return [
        past.app_name == StorageSession.app_name,
        past.user_id == StorageSession.user_id,
        past.user_id == user_id,
        past.session_id == StorageSession.id,
        past.seq > StorageSession.base_seq,
    ]


def _own_keys(key: ColumnElement[str]) -> list[ColumnElement[bool]]:
    """Not an `app:`, `user:` or `temp:` key: shared state has no history."""
    return [
        key.not_like(_quoted(f"{prefix}%")) for prefix in (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)
    ]


def _replayed(
    until_seq: ColumnElement[int], user_id: ColumnElement[str] | str, *, with_removed: bool = True
) -> ColumnElement[Any]:
    """The base state, then each delta of the history up to `until_seq` in seq order: the
    kept events' and (`with_removed`) the removed ones'."""
    past = aliased(StorageEvent, name="past")
    removed = (
        func.jsonb_array_elements(StorageSession.removed_deltas)
        .table_valued(column("value", JSONB))
        .render_derived(name="removed")
    )
    removed_seq = cast(removed.c.value.op("->>")(_quoted("seq")), BigInteger)
    # A removed delta comes after an event of the same seq (only one that migration 0019 made
    # up at the version can share it: an import refuses any, `app.rules.portability.Replay`).
    kept = (
        select(
            past.seq.label("seq"),
            literal_column("0").label("removed"),
            _state_delta(past).label("delta"),
        )
        .where(*_own_events(past, user_id), past.seq <= until_seq)
        .correlate(StorageSession)
    )
    deltas = (
        union_all(
            kept,
            select(
                removed_seq,
                literal_column("1"),
                removed.c.value.op("->", return_type=JSONB)(_quoted("stateDelta")),
            )
            .where(removed_seq <= until_seq)
            .correlate(StorageSession),
        )
        if with_removed
        else kept
    ).subquery("deltas")
    delta = (
        func.jsonb_each(deltas.c.delta).table_valued("key", "value").render_derived(name="delta")
    )
    # Each key's last value: aggregated in seq order, a later value replaces an earlier one
    # (jsonb keeps a duplicate key's last value), with no sort by key.
    changes = (
        select(
            func.jsonb_object_agg(delta.c.key, delta.c.value).aggregate_order_by(
                deltas.c.seq, deltas.c.removed
            )
        )
        .select_from(deltas)
        .join(delta, true())
        .where(*_own_keys(delta.c.key))
        .correlate(StorageSession)
        .scalar_subquery()
    )
    return StorageSession.base_state.op("||")(func.coalesce(changes, EMPTY_STATE))


def _undone(until_seq: ColumnElement[int], user_id: ColumnElement[str] | str) -> ColumnElement[Any]:
    """The state with each key that an event after `until_seq` changed put back as it was:
    its last value in the `UNDO_REACH` events up to `until_seq`, else (when those reach back to
    the base) the base state's, else gone. NULL when a key's last value lies further back."""
    past = aliased(StorageEvent, name="recent_past")
    recent = (
        select(past.seq, _state_delta(past).label("delta"))
        .where(*_own_events(past, user_id), past.seq > until_seq - _REACH)
        .correlate(StorageSession)
        .cte("recent")
    )
    delta = func.jsonb_each(recent.c.delta).table_valued("key").render_derived(name="delta")
    changed = (
        select(delta.c.key)
        .distinct()
        .select_from(recent)
        .join(delta, true())
        .where(recent.c.seq > until_seq, *_own_keys(delta.c.key))
        .subquery("changed")
    )
    then = (
        select(recent.c.delta.op("->", return_type=JSONB)(changed.c.key).label("value"))
        .where(recent.c.seq <= until_seq, recent.c.delta.op("?")(changed.c.key))
        .order_by(recent.c.seq.desc())
        .limit(literal_column("1"))
        .lateral("then")
    )
    # A JSON null in a delta is a value (jsonb `null`); SQL NULL is a key not found.
    reached_base = until_seq - _REACH <= StorageSession.base_seq
    earlier = StorageSession.base_state.op("->", return_type=JSONB)(changed.c.key)
    restored = (
        select(
            changed.c.key, func.coalesce(then.c.value, case((reached_base, earlier))).label("value")
        )
        .select_from(changed)
        .outerjoin(then, true())
        .correlate(StorageSession)
        .subquery("restored")
    )
    found = restored.c.value.is_not(None)
    undone = StorageSession.state.op("-")(
        func.coalesce(func.array_agg(restored.c.key), literal_column("CAST('{}' AS text[])"))
    ).op("||")(
        func.coalesce(
            func.jsonb_object_agg(restored.c.key, restored.c.value).filter(found), EMPTY_STATE
        )
    )
    resolved = or_(found, reached_base)
    return (
        select(case((func.bool_and(resolved).is_(False), null()), else_=undone))
        .add_cte(recent, nest_here=True)
        .select_from(restored)
        .correlate(StorageSession)
        .scalar_subquery()
    )


def state_as_of(
    until_seq: ColumnElement[int], user_id: ColumnElement[str] | str
) -> ColumnElement[Any]:
    """The session's own state as it was at `until_seq`, without the `app:`, `user:` and
    `temp:` keys (shared state has no history): its base state with every kept event's delta
    up to that seq applied in order, those of events since removed included. At its version,
    that is the state itself; within `UNDO_REACH` events of it, when no delta was removed, the
    state with the changes since undone, which reads those events and as many before them
    instead of every one; else (or when a changed key's earlier value lies further back) the
    deltas replayed. Written into the statement, not a function, so that on Citus it runs on
    the user's shard."""
    near = and_(
        StorageSession.removed_deltas == EMPTY_LIST,
        StorageSession.version - until_seq <= _REACH,
    )
    return case(
        (until_seq >= StorageSession.version, StorageSession.state),
        else_=func.coalesce(
            case((near, _undone(until_seq, user_id))), _replayed(until_seq, user_id)
        ),
    )


def held_state_as_of(
    until_seq: ColumnElement[int], user_id: ColumnElement[str] | str
) -> ColumnElement[Any]:
    """The session's own state at `until_seq` as the events it still holds make it: its base
    state with their deltas up to that seq applied in order, those of events since removed
    left out (what ADK's runner rebuilds from the events it is given). With none removed,
    that is `state_as_of`."""
    return case(
        (StorageSession.removed_deltas == EMPTY_LIST, state_as_of(until_seq, user_id)),
        else_=_replayed(until_seq, user_id, with_removed=False),
    )


def _read(*, recent: bool, until: bool) -> DriverStatement:
    """The read with every event (`recent=False`: the events in seq order straight from the
    primary key, no sort) or with the last `limit` (newest first, then put back in order);
    with `until`, the session as it was at seq `until_seq`: its events up to it and its
    state then."""
    events = select(StorageEvent.seq, StorageEvent.event).where(
        StorageEvent.app_name == _KEY["app_name"],
        StorageEvent.user_id == _KEY["user_id"],
        StorageEvent.session_id == _KEY["session_id"],
        or_(_AFTER.is_(None), StorageEvent.timestamp >= _AFTER),
    )
    if until:
        events = events.where(StorageEvent.seq <= _UNTIL)
    if recent:
        events = events.order_by(StorageEvent.seq.desc()).limit(
            bindparam("limit", type_=BigInteger)
        )
    chosen = events.subquery("chosen")
    session = with_shared_state(
        literal_column("0").label("seq"),
        null().label("event"),
        state=state_as_of(_UNTIL, _KEY["user_id"]) if until else None,
        user_id=_KEY["user_id"],
    ).where(
        StorageSession.app_name == _KEY["app_name"],
        StorageSession.user_id == _KEY["user_id"],
        StorageSession.id == _KEY["session_id"],
    )
    # The session's columns are on the session's row only.
    blanks = [null() for _ in range(len(session.selected_columns) - 2)]
    return DriverStatement.compile(
        union_all(
            session,
            select(
                *blanks,
                chosen.c.seq,
                func.convert_to(cast(chosen.c.event, Text), literal_column("'UTF8'")),
            ),
        ).order_by(literal_column("seq"))
    )


# By (recent, until): each read is its own plan, none paying for a filter it does not use.
READS = {
    (recent, until): _read(recent=recent, until=until)
    for recent in (False, True)
    for until in (False, True)
}


async def read(
    connection: asyncpg.Connection,
    key: SessionKey,
    *,
    limit: int | None,
    after_timestamp: float | None,
    until_seq: int | None = None,
) -> tuple[StoredSession, list[bytes]] | None:
    """The session and its events as UTF-8 JSON: the last `limit` of those at or after
    `after_timestamp`, in seq order; with `until_seq`, as the session was at that seq (the
    caller checks that it lies within the session's kept history: `StoredSession.base_seq`
    to `version`)."""
    statement = READS[limit is not None, until_seq is not None]
    arguments = statement.arguments(
        {
            **key.columns(),
            "limit": limit,
            "after_timestamp": after_timestamp,
            "until_seq": until_seq,
        }
    )
    rows = await connection.fetch(statement.sql, *arguments)
    if not rows or rows[0]["seq"] != 0:  # absent, or expired (its events not yet swept)
        return None
    return stored_session(rows[0]), [row["event"] for row in rows[1:]]


VERSION = DriverStatement.compile(
    select(StorageSession.version, StorageSession.status).where(
        StorageSession.app_name == _KEY["app_name"],
        StorageSession.user_id == _KEY["user_id"],
        StorageSession.id == _KEY["session_id"],
        live(),
    )
)


async def get_version(connection: asyncpg.Connection, key: SessionKey) -> tuple[int, bool] | None:
    """The session's version and whether it is open; None if there is no such session."""
    row = await connection.fetchrow(VERSION.sql, *VERSION.arguments(key.columns()))
    return None if row is None else (row["version"], row["status"] == "open")


HOLD_VERSION = DriverStatement.compile(
    select(StorageSession.version)
    .where(
        StorageSession.app_name == _KEY["app_name"],
        StorageSession.user_id == _KEY["user_id"],
        StorageSession.id == _KEY["session_id"],
        live(),
    )
    .with_for_update(read=True)
)


async def hold_version(connection: asyncpg.Connection, key: SessionKey) -> int | None:
    """The session's version, its row held (`FOR SHARE`) until the transaction ends: no
    write takes a version, and no delete passes, before the caller's write that records it
    (an artifact's save) commits. None if there is no such session."""
    version: int | None = await connection.fetchval(
        HOLD_VERSION.sql, *HOLD_VERSION.arguments(key.columns())
    )
    return version


def whole_second(moment: ColumnElement[Any]) -> ColumnElement[int]:
    """`update_second` of an `update_time` (migration 0007), computed the one way everywhere."""
    return cast(func.floor(func.extract("epoch", moment)), BigInteger)  # bigint, as indexed


async def list_page(
    connection: asyncpg.Connection,
    query: SessionQuery,
    *,
    after: tuple[Any, ...] | None,
    limit: int,
) -> list[StoredSession]:
    """Keyset page by (update_time, id), or (update_time, user_id, id) across an app's users.

    `after` is the sort key of the last row already seen. The index holds `update_second`,
    not `update_time` (migration 0007): rows come from it in second order and each second's
    few are sorted by the rest of the key, which yields the same order.
    """
    newest_first = query.order is Order.DESC
    statement = with_shared_state(user_id=query.user_id).where(
        StorageSession.app_name == query.app_name
    )
    if query.user_id is None:
        rest: tuple[Any, ...] = (StorageSession.user_id, StorageSession.id)
    else:
        statement = statement.where(StorageSession.user_id == query.user_id)
        rest = (StorageSession.id,)
    if query.labels:
        statement = statement.where(StorageSession.labels.contains(dict(query.labels)))
    if query.display_name is not None:
        # The hash is what the index holds (migration 0020); the name itself, what is asked.
        name = StorageSession.display_name
        statement = statement.where(
            func.md5(name) == func.md5(literal(query.display_name, name.type)),
            name == query.display_name,
        )
    sort_key = tuple_(StorageSession.update_second, StorageSession.update_time, *rest)
    if after is not None:
        moment = literal(after[0], Timestamp)
        seen = tuple_(whole_second(moment), moment, *after[1:])
        # The bound on the indexed second alone lets the index scan start there.
        second = StorageSession.update_second
        statement = statement.where(
            second <= whole_second(moment) if newest_first else second >= whole_second(moment),
            sort_key < seen if newest_first else sort_key > seen,
        )
    columns = list(sort_key.clauses)
    order = [column.desc() for column in columns] if newest_first else columns
    rows = await fetch(connection, statement.order_by(*order).limit(limit))
    return [stored_session(row) for row in rows]


async def tally(
    connection: asyncpg.Connection,
    app_name: str | None,
    *,
    only: str | None,
    user_id: str | None = None,
    after: str | None,
    limit: int,
) -> list[Tally]:
    """The apps (`app_name` None) or an app's users that have live sessions, by name, after
    `after`; with `only`, that one alone; with `user_id`, counting that user's sessions alone.
    Each group is read in the primary key's order, so a page costs the sessions it counts."""
    name = StorageSession.app_name if app_name is None else StorageSession.user_id
    statement = select(name, func.count(), func.max(StorageSession.update_time)).where(live())
    if app_name is not None:
        statement = statement.where(StorageSession.app_name == app_name)
    if only is not None:
        statement = statement.where(name == only)
    if user_id is not None:
        statement = statement.where(StorageSession.user_id == user_id)
    if after is not None:
        statement = statement.where(name > after)
    rows = await fetch(connection, statement.group_by(name).order_by(name).limit(limit))
    return [Tally(*row) for row in rows]


def sort_key(session: StoredSession, query: SessionQuery) -> tuple[Any, ...]:
    """The keyset position of a listed session, as `list_page(after=…)` takes it."""
    if query.user_id is None:
        return (session.update_time, session.key.user_id, session.key.session_id)
    return (session.update_time, session.key.session_id)


async def delete_one(
    connection: asyncpg.Connection, key: SessionKey, expected_version: int | None
) -> Deleted | None:
    """None if there is no such session, or it is not at `expected_version` (when given)."""
    statement = (
        delete(StorageSession)
        .where(key_filter(key))
        .returning(StorageSession.version, StorageSession.parent_id)
    )
    if expected_version is not None:
        statement = statement.where(StorageSession.version == expected_version)
    row = await fetchrow(connection, statement)
    if row is None:
        return None
    await delete_logs(connection, key)
    return Deleted(key, row["version"], row["parent_id"])


async def describe(
    connection: asyncpg.Connection,
    key: SessionKey,
    changes: dict[str, Any],
    expected_version: int | None,
    *,
    takes_version: bool,
) -> int | None:
    """Set the descriptor columns in `changes` (by column name; `expire_time` in epoch
    seconds) of the session at `expected_version` (any, when None), taking a version when
    `takes_version` (when no event of the same write took one already); its version, or None
    if nothing was changed."""
    values = dict(changes)
    if "expire_time" in values:
        values["expire_time"] = epoch_time(values["expire_time"])
    if "labels" in values:
        values["labels"] = literal(values["labels"], JSONB)
    if takes_version:
        values["version"] = StorageSession.version + 1
    statement = (
        update(StorageSession)
        .where(key_filter(key))
        .values(**values)
        .returning(StorageSession.version)
    )
    if expected_version is not None:
        statement = statement.where(StorageSession.version == expected_version)
    version: int | None = await fetchval(connection, statement)
    return version
