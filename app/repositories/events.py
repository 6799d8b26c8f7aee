"""SQL for the event log: the one-statement append, lookups by id, and pages."""

import re
from collections.abc import Sequence
from typing import Any

import asyncpg
from sqlalchemy import (
    ARRAY,
    BigInteger,
    String,
    Text,
    and_,
    bindparam,
    cast,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, REGCONFIG
from sqlalchemy.sql.elements import ColumnElement

from app import strict_json
from app.db import DriverStatement, fetch, refused_value, violated_check, violated_unique
from app.domain import (
    NO_USAGE,
    Append,
    EventQuery,
    EventSpan,
    NewEvent,
    Order,
    ScopedDelta,
    SessionKey,
    Usage,
)
from app.models import LIVE_SQL, StorageEvent
from app.repositories.live import CHANNEL
from app.repositories.shared_state import is_state_too_large, state_too_large
from app.rules.scopes import merge_deltas

EVENT_ID_CONSTRAINT = "uq_events_app_name_user_id_session_id_id"


class DuplicateEventId(Exception):
    """An event id in the batch is already stored in the session (raced with a retry)."""


class GroupRefused(Exception):
    """One of a group's appends failed its statement (`append_group`): none was written."""


# An event's token counts (`domain.Usage`), in that order.
USAGE_COLUMNS = (
    StorageEvent.prompt_tokens,
    StorageEvent.candidates_tokens,
    StorageEvent.total_tokens,
)


def event_filter(key: SessionKey) -> ColumnElement[bool]:
    return and_(
        StorageEvent.app_name == key.app_name,
        StorageEvent.user_id == key.user_id,
        StorageEvent.session_id == key.session_id,
    )


# The columns of each new event (`event_records`) in `:events`, and how they are stored.
RECORD = (
    "event jsonb, hash text, tokens integer, calls text[], responses text[], "
    "prompt bigint, candidates bigint, total bigint, text text"
)


_EVENT_COLUMNS = """app_name, user_id, session_id, seq, id, invocation_id, author,
                        timestamp, request_hash, event, tokens, calls, responses,
                        prompt_tokens, candidates_tokens, total_tokens, search"""


def _event_values(seq: str, session: str) -> str:
    """The values of `_EVENT_COLUMNS` for the event `new` (a row of `RECORD`) at the seq that
    the expression `seq` gives it, in the session whose key the expressions `session` give."""
    return f"""{session}, {seq},
           new.event ->> 'id', new.event ->> 'invocationId', new.event ->> 'author',
           CAST(new.event -> 'timestamp' AS double precision), decode(new.hash, 'hex'),
           new.event || jsonb_build_object('seq', {seq}),
           new.tokens, new.calls, new.responses, new.prompt, new.candidates, new.total,
           to_tsvector(CAST(:search_config AS regconfig), new.text)"""


_SESSION = ":app_name, :user_id, :session_id"


def insert_events(seq: str, source: str, session: str = _SESSION) -> str:
    """SQL inserting the events of `source` (rows of `RECORD` as `new`), each at the seq that
    the expression `seq` gives it, with the columns derived from it, into the session whose
    key the expressions `session` give."""
    return f"""
    INSERT INTO events ({_EVENT_COLUMNS})
    SELECT {_event_values(seq, session)}
    FROM {source}"""


def event_records(events: Sequence[NewEvent]) -> list[dict[str, Any]]:
    """The rows of `RECORD` for `events`."""
    return [
        {
            "event": event.document,
            "hash": event.request_hash.hex(),
            "tokens": event.facts.tokens,
            "calls": event.facts.calls,
            "responses": event.facts.responses,
            "prompt": event.usage.prompt,
            "candidates": event.usage.candidates,
            "total": event.usage.total,
            "text": event.text,
        }
        for event in events
    ]


# The session's part of an append: its seqs (the version before them is returned) and sums.
_BUMP = """
    UPDATE sessions
    SET version = version + :count,
        state = CASE WHEN :session_delta = '{}' THEN state
                ELSE sessionary_checked_state(state || :session_delta, 'session', :max_state)
                END,
        update_time = to_timestamp(:last_timestamp),
        update_second = floor(extract(epoch FROM to_timestamp(:last_timestamp))),
        prompt_tokens = prompt_tokens + :prompt_tokens,
        candidates_tokens = candidates_tokens + :candidates_tokens,
        total_tokens = total_tokens + :total_tokens
    WHERE app_name = :app_name AND user_id = :user_id AND id = :session_id AND status = 'open'
      AND LIVE AND (CAST(:expected_version AS bigint) IS NULL OR version = :expected_version)
    RETURNING version - :count""".replace("LIVE", LIVE_SQL)
# The user state's part, its new row given by `SOURCE`.
_USER_MERGE = """
    INSERT INTO user_states AS shared (app_name, user_id, state, update_time)
    SOURCE
    ON CONFLICT (app_name, user_id) DO UPDATE
    SET state = sessionary_checked_state(shared.state || excluded.state, 'user', :max_state),
        update_time = excluded.update_time"""
_USER_ROW = ":app_name, :user_id, sessionary_checked_state(:user_delta, 'user', :max_state), now()"

# One statement: one round trip, and its own transaction when no other is open. The UPDATE
# hands out the seqs and, through its row lock, serialises appends to one session across every
# API worker. App and user state merge with `||` (atomic: concurrent writers of different keys
# never lose each other's writes), only once the UPDATE has found the session at the version
# asked for. `sessionary_checked_state` aborts the whole statement when a state would outgrow
# the limit. Events are stored as readers get them, seq included, so reads return them as is.
# `APPEND_ANNOUNCED`, run inside a larger transaction, also tells every worker at commit
# (`app.repositories.live`); a lone append's worker tells them once it has committed
# (`Broker.announce_later`): a NOTIFY in the append's own commit would serialise it with every
# other notifying commit, fsync included (bench/README.md: S1).
_APPEND = """
WITH bump AS (BUMP AS base_seq
), app_merge AS (
    INSERT INTO app_states AS shared (app_name, state, update_time)
    SELECT :app_name, sessionary_checked_state(:app_delta, 'app', :max_state), now()
    FROM bump WHERE :app_delta <> '{}'
    ON CONFLICT (app_name) DO UPDATE
    SET state = sessionary_checked_state(shared.state || excluded.state, 'app', :max_state),
        update_time = excluded.update_time
), user_merge AS (USER_MERGE
), inserted AS (
    INSERT_EVENTS
)
SELECT base_seq ANNOUNCE
FROM bump
""".replace("BUMP", _BUMP).replace(
    "USER_MERGE",
    _USER_MERGE.replace("SOURCE", f"SELECT {_USER_ROW} FROM bump WHERE :user_delta <> '{{}}'"),
)
_ANNOUNCE = f""",
       pg_notify('{CHANNEL}', json_build_object('k', 'appended', 'a', CAST(:app_name AS text),
                                                'u', CAST(:user_id AS text),
                                                's', CAST(:session_id AS text),
                                                'v', base_seq + :count)::text)"""


_NEW_EVENTS = insert_events(
    "bump.base_seq + new.position",
    f"""bump,
         ROWS FROM (jsonb_to_recordset(:events) AS ({RECORD}))
             WITH ORDINALITY AS new(event, hash, tokens, calls, responses,
                                    prompt, candidates, total, text, position)""",
)


def _append_statement(announce: str) -> DriverStatement:
    sql = _APPEND.replace("INSERT_EVENTS", _NEW_EVENTS).replace("ANNOUNCE", announce)
    return DriverStatement.compile(
        text(sql).bindparams(
            *(
                bindparam(name, type_=JSONB)
                for name in ("session_delta", "app_delta", "user_delta")
            ),
            bindparam("events", type_=JSONB),
            bindparam("expected_version", type_=BigInteger),
        )
    )


APPEND = _append_statement("")
APPEND_ANNOUNCED = _append_statement(_ANNOUNCE)

# On Citus, the one statement above is planned by the coordinator in four parts, each a task on
# the user's worker, their results held by the coordinator between them. `sessionary_append`
# is the same append as a function, distributed by its user (`app.sharding`): Citus hands a
# call outside a transaction whole to the worker holding that user's shard, which runs its
# statements there, each on local shards, and commits alone. The coordinator only passes the
# call on. It writes no app state: `app_states` is on every node, and a delegated call may not
# write past its shard (such an append runs `APPEND`). Made on Citus by `sessionary migrate`
# from the parts `APPEND` is made of, so the two stay the same append.
_ROUTED_PARAMETERS = (
    ("app_name", "text"),
    ("user_id", "text"),
    ("session_id", "text"),
    ("count", "integer"),
    ("expected_version", "bigint"),
    ("last_timestamp", "double precision"),
    ("session_delta", "jsonb"),
    ("user_delta", "jsonb"),
    ("prompt_tokens", "bigint"),
    ("candidates_tokens", "bigint"),
    ("total_tokens", "bigint"),
    ("events", "jsonb"),
    ("max_state", "integer"),
    ("search_config", "regconfig"),
)
ROUTED_FUNCTION = "sessionary_append"
ROUTED_SIGNATURE = f"{ROUTED_FUNCTION}({', '.join(kind for _, kind in _ROUTED_PARAMETERS)})"
# The parameter Citus routes a call by: the user.
ROUTED_BY = f"${[name for name, _ in _ROUTED_PARAMETERS].index('user_id') + 1}"
_ROUTED_BODY = f"""
DECLARE
    base_seq bigint;
    new record;
BEGIN
    {_BUMP} INTO base_seq;
    IF base_seq IS NULL THEN
        RETURN NULL;
    END IF;
    IF :user_delta <> '{{}}' THEN
        {_USER_MERGE.replace("SOURCE", f"VALUES ({_USER_ROW})")};
    END IF;
    FOR new IN SELECT * FROM ROWS FROM (jsonb_to_recordset(:events) AS ({RECORD}))
                   WITH ORDINALITY AS new(event, hash, tokens, calls, responses,
                                          prompt, candidates, total, text, position) LOOP
        INSERT INTO events ({_EVENT_COLUMNS})
        VALUES ({_event_values("base_seq + new.position", _SESSION)});
    END LOOP;
    RETURN base_seq;
END"""


def _positional(sql: str) -> str:
    """`sql` with each `:name` of `_ROUTED_PARAMETERS` as the function's `$n`."""
    for number, (name, _) in enumerate(_ROUTED_PARAMETERS, start=1):
        sql = re.sub(rf"(?<!:):{name}\b", f"${number}", sql)
    if re.search(r"(?<!:):[a-z]", sql):
        raise ValueError(f"a parameter the function lacks: {sql}")
    return sql


# One INSERT per event, `VALUES`: Citus's fast path takes it whole to the local shard, where
# an `INSERT … SELECT` would be collected first and then inserted.
CREATE_ROUTED = f"""
CREATE OR REPLACE FUNCTION {ROUTED_SIGNATURE} RETURNS bigint LANGUAGE plpgsql AS $append$
{_positional(_ROUTED_BODY)}
$append$"""
APPEND_ROUTED = DriverStatement.compile(
    text(
        f"SELECT {ROUTED_FUNCTION}(" + ", ".join(f":{name}" for name, _ in _ROUTED_PARAMETERS) + ")"
    )
)


def search_vector(config: str, text: str | None) -> ColumnElement[Any]:
    """An event's words (`rules.search.event_text`) for search in the text-search
    configuration `config`, as `APPEND` stores them."""
    return func.to_tsvector(cast(literal(config), REGCONFIG), literal(text, Text))


def _json_text(value: Any) -> str:
    return strict_json.dumps(value).decode()


def _sums(request: Append) -> tuple[ScopedDelta, Usage]:
    """The append's state delta, its events' deltas merged, and the token counts it adds to
    its session's sums."""
    delta = merge_deltas([event.delta for event in request.events])
    return delta, sum((event.usage for event in request.events), NO_USAGE)


async def append(
    connection: asyncpg.Connection,
    request: Append,
    max_state_bytes: int,
    search_config: str,
    *,
    announced: bool,
    routed: bool = False,
) -> int | None:
    """Append events in one statement; returns the seq before the first of them, or None when
    the session is absent, closed or not at the version asked for. Their words are indexed for
    search in the text-search configuration `search_config`; with `announced`, every worker
    hears of the append when its transaction commits. `routed`, on Citus and outside a
    transaction: by `sessionary_append` on the user's worker, unless it writes app state.

    Raises DuplicateEventId when an event id is already stored in the session, StateTooLarge
    when a state would outgrow `max_state_bytes`.
    """
    delta, used = _sums(request)
    if routed and not announced and not delta.app:
        statement = APPEND_ROUTED
    else:
        statement = APPEND_ANNOUNCED if announced else APPEND
    arguments = statement.arguments(
        {
            **request.key.columns(),
            "prompt_tokens": used.prompt,
            "candidates_tokens": used.candidates,
            "total_tokens": used.total,
            "count": len(request.events),
            "expected_version": request.expected_version,
            "last_timestamp": request.events[-1].timestamp,
            "session_delta": _json_text(delta.session),
            "app_delta": _json_text(delta.app),
            "user_delta": _json_text(delta.user),
            "events": _json_text(event_records(request.events)),
            "max_state": max_state_bytes,
            "search_config": search_config,
        }
    )
    try:
        base_seq: int | None = await connection.fetchval(statement.sql, *arguments)
    except asyncpg.ProgramLimitExceededError as error:
        raise state_too_large(error, max_state_bytes) from error
    except asyncpg.PostgresError as error:
        if violated_unique(error) == EVENT_ID_CONSTRAINT:
            raise DuplicateEventId from error
        raise
    return base_seq


# `APPEND` for several requests' appends at once, each to a session of its own and none
# writing app or user state: one statement, so one transaction and one commit for all of them
# (what an append costs PostgreSQL is mostly per statement and per commit: bench/README.md).
# Each append still takes its session's row lock and is written whole or not at all. The
# group never waits for a lock: a session that another transaction holds (an append from
# another worker, a fork copying it, a close) is skipped, `SKIP LOCKED`, and so is one that is
# absent, closed or expired; the caller runs those alone, where they wait or are refused as
# usual. Holding no lock while waiting for another, a group cannot deadlock. A locked session
# not at the version asked for is refused: its base seq is NULL.
_GROUP = """
WITH asked AS (
    SELECT * FROM jsonb_to_recordset(:appends) AS asked(
        number integer, app_name text, user_id text, session_id text, count integer,
        expected_version bigint, last_timestamp double precision, session_delta jsonb,
        prompt_tokens bigint, candidates_tokens bigint, total_tokens bigint)
), locked AS (
    SELECT asked.number FROM sessions
    JOIN asked ON sessions.app_name = asked.app_name AND sessions.user_id = asked.user_id
              AND sessions.id = asked.session_id
    WHERE sessions.status = 'open' AND LIVE
    FOR UPDATE OF sessions SKIP LOCKED
), bump AS (
    UPDATE sessions
    SET version = sessions.version + asked.count,
        state = CASE WHEN asked.session_delta = '{}' THEN sessions.state
                ELSE sessionary_checked_state(sessions.state || asked.session_delta, 'session',
                                              :max_state)
                END,
        update_time = to_timestamp(asked.last_timestamp),
        update_second = floor(extract(epoch FROM to_timestamp(asked.last_timestamp))),
        prompt_tokens = sessions.prompt_tokens + asked.prompt_tokens,
        candidates_tokens = sessions.candidates_tokens + asked.candidates_tokens,
        total_tokens = sessions.total_tokens + asked.total_tokens
    FROM asked JOIN locked USING (number)
    WHERE sessions.app_name = asked.app_name AND sessions.user_id = asked.user_id
      AND sessions.id = asked.session_id
      AND (asked.expected_version IS NULL OR sessions.version = asked.expected_version)
    RETURNING asked.number, asked.app_name, asked.user_id, asked.session_id,
              sessions.version - asked.count AS base_seq
), inserted AS (
    INSERT_EVENTS
)
SELECT locked.number, bump.base_seq FROM locked LEFT JOIN bump USING (number)
""".replace("LIVE", LIVE_SQL)

APPEND_GROUP = DriverStatement.compile(
    text(
        _GROUP.replace(
            "INSERT_EVENTS",
            insert_events(
                "bump.base_seq + new.position",
                f"""bump JOIN ROWS FROM (jsonb_to_recordset(:events)
                              AS ({RECORD}, number integer, position integer)) AS new
                     USING (number)""",
                session="bump.app_name, bump.user_id, bump.session_id",
            ),
        )
    ).bindparams(bindparam("appends", type_=JSONB), bindparam("events", type_=JSONB))
)


async def append_group(
    connection: asyncpg.Connection,
    requests: Sequence[Append],
    max_state_bytes: int,
    search_config: str,
) -> dict[int, int | None]:
    """`append` for several requests at once, each to another session and none with app or
    user state (`Append.shares_state`), never announced. By the request's place in
    `requests`: its base seq, or None when its session was not at the version asked for. A
    request missing from the answer was skipped (its session locked by another transaction,
    or absent, closed or expired): nothing of it was written, and it is for `append` alone.

    Raises GroupRefused when one of them fails the statement for a reason of its own (an event
    id already stored, a state over the limit, a session at its last version, a value
    PostgreSQL cannot store): then none is written."""
    appends, records = [], []
    for number, request in enumerate(requests):
        delta, used = _sums(request)
        appends.append(
            {
                **request.key.columns(),
                "number": number,
                "count": len(request.events),
                "expected_version": request.expected_version,
                "last_timestamp": request.events[-1].timestamp,
                "session_delta": delta.session,
                "prompt_tokens": used.prompt,
                "candidates_tokens": used.candidates,
                "total_tokens": used.total,
            }
        )
        records += [
            {**record, "number": number, "position": position}
            for position, record in enumerate(event_records(request.events), start=1)
        ]
    arguments = APPEND_GROUP.arguments(
        {
            "appends": _json_text(appends),
            "events": _json_text(records),
            "max_state": max_state_bytes,
            "search_config": search_config,
        }
    )
    try:
        rows = await connection.fetch(APPEND_GROUP.sql, *arguments)
    except asyncpg.PostgresError as error:
        if (
            is_state_too_large(error)
            or violated_unique(error)
            or violated_check(error)
            or refused_value(error)
        ):
            raise GroupRefused from error
        raise
    return {number: base_seq for number, base_seq in rows}


FIND_BY_IDS = DriverStatement.compile(
    select(StorageEvent.id, StorageEvent.request_hash, StorageEvent.event).where(
        StorageEvent.app_name == bindparam("app_name", type_=String),
        StorageEvent.user_id == bindparam("user_id", type_=String),
        StorageEvent.session_id == bindparam("session_id", type_=String),
        StorageEvent.id == func.any(bindparam("ids", type_=ARRAY(String))),
    )
)


async def find_by_ids(
    connection: asyncpg.Connection, key: SessionKey, event_ids: Sequence[str]
) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Stored events by id, each with the hash of the request that stored it."""
    rows = await connection.fetch(
        FIND_BY_IDS.sql,
        *FIND_BY_IDS.arguments({**key.columns(), "ids": list(event_ids)}),
    )
    return {row["id"]: (row["request_hash"], row["event"]) for row in rows}


async def select_events(
    connection: asyncpg.Connection,
    key: SessionKey,
    query: EventQuery,
    *,
    after_page_seq: int | None,
    limit: int,
) -> list[tuple[int, bytes]]:
    """Events' seqs and UTF-8 JSON as PostgreSQL renders them (never decoded here), in the
    query's order, from just past `after_page_seq` (the last one of the previous page)."""
    newest_first = query.order is Order.DESC
    rendered = func.convert_to(cast(StorageEvent.event, Text), "UTF8")
    statement = select(StorageEvent.seq, rendered).where(event_filter(key))
    if query.after_seq is not None:
        statement = statement.where(StorageEvent.seq > query.after_seq)
    if after_page_seq is not None:
        seq = StorageEvent.seq
        statement = statement.where(seq < after_page_seq if newest_first else seq > after_page_seq)
    if query.after_timestamp is not None:
        statement = statement.where(StorageEvent.timestamp >= query.after_timestamp)
    if query.before_timestamp is not None:
        statement = statement.where(StorageEvent.timestamp < query.before_timestamp)
    order = StorageEvent.seq.desc() if newest_first else StorageEvent.seq
    rows = await fetch(connection, statement.order_by(order).limit(limit))
    return [(row[0], row[1]) for row in rows]


async def span(connection: asyncpg.Connection, key: SessionKey) -> EventSpan:
    """How many events the session holds, its oldest seq and its newest: from the index of
    the events' primary key, never their JSON."""
    statement = select(func.count(), func.min(StorageEvent.seq), func.max(StorageEvent.seq)).where(
        event_filter(key)
    )
    rows = await fetch(connection, statement)
    count, first_seq, last_seq = rows[0]
    return EventSpan(count, first_seq, last_seq)
