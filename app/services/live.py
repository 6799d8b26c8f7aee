"""Live streams: a session's changes as server-sent events, and the sessions of a user or an
app as they are created, updated, closed and deleted.

Each worker holds one listening connection (`Broker`), whatever the number of streams. A
notification carries keys and a version, and only wakes the worker: a session's events are
read from the table, once per worker for all its streams of that session (`Feed`), and each
frame is offered to every stream's bounded buffer (`Stream`). A stream whose client does not
keep up fills its buffer and is dropped; nothing waits for it, least of all an append.

A stream resumes after a position (`Last-Event-ID`, `afterSeq`): every frame's `id` is the
version its write took (an event's seq), so what came after it is read back from the table.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from app import strict_json
from app.config import Settings
from app.db import DRIVER_ERRORS, Connector, DriverPool
from app.domain import Change, SessionKey
from app.errors import InvalidInput, SessionNotFound, TooManyStreams
from app.limits import INT64_MAX
from app.observability import STREAMS_DROPPED, STREAMS_OPEN
from app.repositories import live as live_rows

logger = logging.getLogger("sessionary.live")

HEARTBEAT = b": heartbeat\n\n"
PAGE = 500  # events per read of the table
# The changes a user's or an app's stream calls by their name; every other one is `updated`
# (but `erased`, a user's or an app's: `Broker._end_erased`).
LIFECYCLE = frozenset({"created", "closed", "deleted"})
# Changes that take no version of their own: a session's end, its children's news, an
# artifact saved or deleted (never replayed: a client that resumes lists the artifacts again).
UNVERSIONED = frozenset({"deleted", "child", "artifact"})
BROKERS: set["Broker"] = set()  # this process's, started
# How a worker's listening connection shows in `pg_stat_activity` (outside the pools' gauges).
LISTENER_NAME = "sessionary-listener"


def frame(kind: str, data: bytes, position: int | None = None) -> bytes:
    """One server-sent event; `position`, its `id`, the version to resume after."""
    head = f"event: {kind}\n" if position is None else f"id: {position}\nevent: {kind}\n"
    return head.encode() + b"data: " + data + b"\n\n"


def json_frame(kind: str, data: dict[str, Any], position: int | None = None) -> bytes:
    return frame(kind, strict_json.dumps(data), position)


class Stream:
    """One client's stream: a bounded buffer of (position, frame), `None` to end it."""

    def __init__(self, capacity: int) -> None:
        self.buffer: asyncio.Queue[tuple[int | None, bytes] | None] = asyncio.Queue(capacity)
        self.dropped = False
        self.replaying = False  # reading the log: what has a position, it reads there
        self.sender: asyncio.Task[Any] | None = None  # the task writing it to the client

    def offer(self, position: int | None, data: bytes) -> None:
        if self.dropped or (self.replaying and position is not None):
            return
        try:
            self.buffer.put_nowait((position, data))
        except asyncio.QueueFull:
            self.drop()

    def end(self) -> None:
        if not self.dropped:
            try:
                self.buffer.put_nowait(None)
            except asyncio.QueueFull:
                self.drop()

    def drop(self) -> None:
        """Give up on a client that does not keep up: the connection is closed under it."""
        self.dropped = True
        STREAMS_DROPPED.inc()
        logger.warning("dropped a stream whose client fell behind")
        if self.sender is not None:
            self.sender.cancel()

    async def next(self, heartbeat: float) -> tuple[int | None, bytes] | None:
        """The next (position, frame); a heartbeat when none came for `heartbeat` seconds."""
        try:
            return await asyncio.wait_for(self.buffer.get(), heartbeat)
        except TimeoutError:
            return None, HEARTBEAT


class Feed:
    """A session's changes on this worker, for all of its streams here: reads each change
    once, in the order they were committed."""

    def __init__(self, broker: "Broker", key: SessionKey) -> None:
        self.broker = broker
        self.key = key
        self.streams: set[Stream] = set()
        self.notices: list[Change] = []
        self.wake = asyncio.Event()
        self.position = 0  # the version through which it has delivered
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    def notice(self, change: Change) -> None:
        self.notices.append(change)
        self.wake.set()

    async def _run(self) -> None:
        try:
            async with self.broker.pool.connection() as connection:
                found = await live_rows.events_between(connection, self.key, 0, 0, 0)
            self.position = found[0][0] if found else 0
            self.ready.set()
            while True:
                try:
                    await asyncio.wait_for(self.wake.wait(), self.broker.settings.stream_heartbeat)
                except TimeoutError:
                    # Quiet for a while: read what may have come without word (a worker that
                    # committed an append and died before announcing it).
                    await self._read_through(INT64_MAX, events_only=True)
                    continue
                self.wake.clear()
                notices, self.notices = self.notices, []
                await self._deliver(notices)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("a session feed failed; its streams end (clients resume)")
            for stream in self.streams:
                stream.end()
        finally:
            self.ready.set()
            self.close()

    def close(self) -> None:
        """Stop it, and let the next stream of its session start a new one."""
        if self.broker.feeds.get(self.key) is self:
            del self.broker.feeds[self.key]
        if asyncio.current_task() is not self.task:
            self.task.cancel()

    def _offer(self, position: int | None, data: bytes) -> None:
        for stream in list(self.streams):
            stream.offer(position, data)

    async def _deliver(self, notices: list[Change]) -> None:
        for index, change in enumerate(notices):
            if change.kind in UNVERSIONED:
                self._offer(None, json_frame(change.kind, change.detail))
                if change.kind == "deleted":
                    for stream in list(self.streams):
                        stream.end()
                continue
            if change.version <= self.position and change.kind != "resync":
                continue
            if change.kind == "appended":
                # Consecutive appends are read together.
                following = notices[index + 1 :]
                if following and following[0].kind == "appended":
                    continue  # the last of the run reads up to its version
                await self._read_through(change.version)
            else:
                await self._read_through(change.version - 1)
                await self._changed(change)

    async def _read_through(self, version: int, *, events_only: bool = False) -> None:
        """Offer the events with seq in (position, version], read in pages; the position
        moves to `version` (with `events_only`, nothing having been announced, to the last
        event). There, a version without an event before one is a write other than an append
        (a reset, a removal) whose notice is late or lost: the streams are told `resync` at
        that version before the event, never taken past it in silence."""
        while self.position < version:
            async with self.broker.pool.connection() as connection:
                found = await live_rows.events_between(
                    connection, self.key, self.position, version, PAGE
                )
            if found is None:
                return  # deleted: its `deleted` notice follows
            (current, _, _), events = found
            for seq, event in events:
                if events_only and seq > self.position + 1:
                    unheard = seq - 1
                    self._offer(unheard, json_frame("resync", {"version": unheard}, unheard))
                self._offer(seq, frame("appended", event, seq))
                self.position = max(self.position, seq)
            if len(events) < PAGE:
                if not events_only:
                    self.position = max(self.position, min(version, current))
                return

    async def _changed(self, change: Change) -> None:
        kind, version, detail = change.kind, change.version, change.detail
        if kind == "resync":
            async with self.broker.pool.connection() as connection:
                found = await live_rows.events_between(connection, self.key, 0, 0, 0)
            if found is None:
                return
            version = found[0][0]
            await self._read_through(version)
            self._offer(version, json_frame("resync", {"version": version}, version))
        elif kind == "updated":
            async with self.broker.pool.connection() as connection:
                event = await live_rows.event_at(connection, self.key, detail["seq"])
            body = b'{"version":%d,"event":%s,"removedEventIds":%s}' % (
                version,
                event or b"null",
                strict_json.dumps(detail.get("removedEventIds", [])),
            )
            self._offer(version, frame("updated", body, version))
        elif kind in ("removed", "trimmed", "reset", "closed"):
            self._offer(version, json_frame(kind, {"version": version, **detail}, version))
        self.position = max(self.position, version)
        if kind == "closed":
            for stream in list(self.streams):
                stream.end()


def end_streams() -> None:
    """End every stream of this process: at shutdown, before the server waits for its
    connections to finish (`app.workers`), which streams never would."""
    for broker in list(BROKERS):
        broker.end_streams()


def listening_connector(pooled: Connector, settings: Settings) -> Connector:
    """A connection that stays one server session, as LISTEN needs: DATABASE_DIRECT_URL when
    set, else the pool's own, unless a transaction pooler stands in between."""
    direct = settings.database_direct_url
    if direct is not None:
        return Connector.of(str(direct), connect_timeout=settings.db_connect_timeout)
    if pooled.transaction_pooling:
        raise ValueError(
            "Behind a transaction pooler, live streams need DATABASE_DIRECT_URL: a URL of "
            "PostgreSQL itself (or of PgBouncer in session mode) to LISTEN on."
        )
    return pooled


class Broker:
    """One worker's end of the notifications: its listening connection, the feeds of the
    sessions streamed here, and the streams of users and apps."""

    def __init__(self, pool: DriverPool, settings: Settings) -> None:
        self.listen_to = listening_connector(pool.connector, settings)
        self.pool = pool
        self.settings = settings
        self.feeds: dict[SessionKey, Feed] = {}
        self.watchers: dict[tuple[str, str | None], set[Stream]] = {}
        self.open = 0
        self.listening = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self._later: list[Change] = []
        self._announcer: asyncio.Task[None] | None = None

    def announce_later(self, change: Change) -> None:
        """Tell every worker of a change already committed, with the others that come in
        meanwhile: one NOTIFY transaction for many appends, off their own commits."""
        self._later.append(change)
        if self._announcer is None or self._announcer.done():
            self._announcer = asyncio.create_task(self._announce())

    async def _announce(self) -> None:
        while self._later:
            changes, self._later = self._later, []
            try:
                async with self.pool.connection() as connection:
                    await live_rows.announce_many(connection, changes)
            except Exception:  # the streams catch up at their next heartbeat
                logger.warning("could not announce %d changes", len(changes), exc_info=True)

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen())
        await asyncio.wait_for(self.listening.wait(), self.settings.db_connect_timeout)
        BROKERS.add(self)

    def end_streams(self) -> None:
        """End every stream: each client's response completes (and it may reconnect)."""
        for feed in list(self.feeds.values()):
            for stream in list(feed.streams):
                stream.end()
        for streams in self.watchers.values():
            for stream in list(streams):
                stream.end()

    async def close(self) -> None:
        """End every stream, stop listening."""
        BROKERS.discard(self)
        self.end_streams()
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self) -> None:
        """Keep one connection listening; after a reconnect, streams read what they missed."""
        while True:
            lost = asyncio.Event()
            try:
                connection = await self.listen_to.connect(application_name=LISTENER_NAME)
            except DRIVER_ERRORS:
                logger.warning("cannot listen for changes; retrying in 1 s", exc_info=True)
                await asyncio.sleep(1)
                continue
            try:
                connection.add_termination_listener(lambda _, lost=lost: lost.set())
                await live_rows.listen(connection, self._heard)
                if self.listening.is_set():  # a reconnect: catch up
                    for feed in self.feeds.values():
                        feed.notice(Change("resync", feed.key, INT64_MAX))
                self.listening.set()
                await lost.wait()
                logger.warning("lost the connection listening for changes; reconnecting")
            finally:
                await connection.close(timeout=1)

    def _heard(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        if not self.feeds and not self.watchers:
            return  # nothing streamed here: every worker hears every write
        try:
            change = live_rows.change_of(payload)
        except (ValueError, KeyError, TypeError):
            logger.warning("ignored a notification that is not a change: %.200s", payload)
            return
        feed = self.feeds.get(change.key)
        if feed is not None:
            feed.notice(change)
        if change.parent_id is not None and change.kind in LIFECYCLE:
            key = change.key
            parent = self.feeds.get(SessionKey(key.app_name, key.user_id, change.parent_id))
            if parent is not None:
                parent.notice(Change("child", parent.key, 0, detail=child_status(change)))
        self._tell_watchers(change)

    def _tell_watchers(self, change: Change) -> None:
        key = change.key
        if change.kind == "erased":
            self._end_erased(key.app_name, key.user_id or None)
            return
        streams = [
            *self.watchers.get((key.app_name, key.user_id), ()),
            *self.watchers.get((key.app_name, None), ()),
        ]
        if not streams:
            return
        data = json_frame(
            change.kind if change.kind in LIFECYCLE else "updated",
            {"userId": key.user_id, "sessionId": key.session_id, "version": change.version}
            | lifecycle_detail(change),
        )
        for stream in streams:
            stream.offer(None, data)

    def _end_erased(self, app_name: str, user_id: str | None) -> None:
        """A user (None: the app) is being erased: its streams get a final `erased` frame and
        end (an app's stream just hears that one of its users is)."""
        data = json_frame("erased", {"userId": user_id})
        for (app, user), streams in list(self.watchers.items()):
            if app != app_name or (user_id is not None and user not in (user_id, None)):
                continue
            for stream in list(streams):
                stream.offer(None, data)
                if user is not None or user_id is None:
                    stream.end()

    def _admit(self) -> None:
        if self.open >= self.settings.max_streams:
            raise TooManyStreams(self.settings.max_streams)
        self.open += 1
        STREAMS_OPEN.inc()

    def _released(self) -> None:
        self.open -= 1
        STREAMS_OPEN.dec()

    async def session_stream(self, key: SessionKey, after: int | None) -> "Subscription":
        """The session's changes after version `after` (read back from the table), then as
        they are committed; with `after` None, from now. 404 if there is no such session,
        503 past `max_streams`."""
        async with self.pool.connection() as connection:
            found = await live_rows.events_between(connection, key, 0, 0, 0)
        if found is None:
            raise SessionNotFound(key.app_name, key.user_id, key.session_id)
        version = found[0][0]
        if after is not None and after > version:
            raise InvalidInput(
                f"There is nothing after {after} to resume from: the session is at version "
                f"{version}.",
                field="afterSeq",
            )
        self._admit()
        stream = Stream(self.settings.stream_buffer)
        # It joins the session's feed before its client hears a byte: what has no place in
        # the log (a child's news, the session's deletion) reaches it from then on, and what
        # has, it reads back (`replaying`: the feed keeps that out of its buffer meanwhile).
        feed = self.feeds.get(key) or self._new_feed(key)
        stream.replaying = True
        feed.streams.add(stream)

        def release() -> None:
            feed.streams.discard(stream)
            if not feed.streams:
                feed.close()
            self._released()

        cursor = Cursor(version if after is None else after, opened=version)
        return Subscription(stream, self._session_frames(key, stream, feed, cursor), release)

    async def _session_frames(
        self, key: SessionKey, stream: Stream, feed: Feed, cursor: "Cursor"
    ) -> AsyncGenerator[bytes]:
        async for data in self._replay(key, cursor):
            yield data
        stream.replaying = False
        if cursor.ended:
            return
        await feed.ready.wait()
        # What was committed while the replay read, before the feed's buffer took it.
        async for data in self._replay(key, cursor):
            yield data
        if cursor.ended:
            return
        while True:
            item = await stream.next(self.settings.stream_heartbeat)
            if item is None:
                return
            seen, data = item
            if seen is not None:
                if seen <= cursor.position:
                    continue  # sent already, by the replay
                cursor.position = seen
            yield data

    async def _replay(self, key: SessionKey, cursor: "Cursor") -> AsyncGenerator[bytes]:
        """The events after the cursor, read from the table page by page; a `resync` when
        other writes came after it too (the client may hold an event since removed or
        rewritten, or a reset, trim or removal came after the stream opened); `closed` or
        `deleted`, ending the stream, when the session is."""
        start = cursor.position
        # Versions through it need no word: from 0, the client holds nothing, and what was
        # removed before the stream opened is no change to it. A change after that is, even
        # on a stream from version 0 (its feed, which started later, took it as seen).
        floor = start or cursor.opened
        while True:
            async with self.pool.connection() as connection:
                found = await live_rows.events_between(
                    connection, key, cursor.position, INT64_MAX, PAGE
                )
            if found is None:
                cursor.ended = True
                yield json_frame("deleted", {})
                return
            (version, status, outcome), events = found
            for seq, event in events:
                # Versions no event holds, before this one: writes other than appends (a
                # reset, a removal), told before the event that came after them.
                if seq - 1 > max(cursor.position, floor):
                    cursor.position = seq - 1
                    yield json_frame("resync", {"version": seq - 1}, seq - 1)
                cursor.position = seq
                yield frame("appended", event, seq)
            if len(events) < PAGE:
                break
        closed = status == "closed"
        # And after the last event (a close takes the last version).
        last = version - 1 if closed else version
        if last > max(cursor.position, floor):
            cursor.position = version
            yield json_frame("resync", {"version": version}, version)
        if closed:
            cursor.position, cursor.ended = version, True
            yield json_frame("closed", {"version": version, "outcome": outcome}, version)

    def _new_feed(self, key: SessionKey) -> Feed:
        feed = Feed(self, key)
        self.feeds[key] = feed
        return feed

    def lifecycle_stream(self, app_name: str, user_id: str | None) -> "Subscription":
        """The sessions of an app (of one user, with `user_id`) as they are created, updated,
        closed and deleted, from now. 503 past `max_streams`."""
        self._admit()
        stream = Stream(self.settings.stream_buffer)
        where = (app_name, user_id)
        self.watchers.setdefault(where, set()).add(stream)
        return Subscription(stream, self._lifecycle_frames(stream, where), self._released)

    async def _lifecycle_frames(
        self, stream: Stream, where: tuple[str, str | None]
    ) -> AsyncGenerator[bytes]:
        try:
            while True:
                item = await stream.next(self.settings.stream_heartbeat)
                if item is None:
                    return
                yield item[1]
        finally:
            watchers = self.watchers.get(where, set())
            watchers.discard(stream)
            if not watchers:
                self.watchers.pop(where, None)


@dataclass
class Cursor:
    """Where a session stream is: the version through which it has sent, and the session's
    version when the stream opened."""

    position: int
    opened: int
    ended: bool = False


class Subscription:
    """An open stream as a response sends it: its frames, the buffer that a client who falls
    behind overflows (then `sender`, the task sending them, is cancelled), and its place
    among the worker's open streams, given back once by `close`."""

    def __init__(
        self, stream: Stream, frames: AsyncGenerator[bytes], release: Callable[[], None]
    ) -> None:
        self.stream = stream
        self.frames = frames
        self._release: Callable[[], None] | None = release

    async def close(self) -> None:
        await self.frames.aclose()
        if self._release is not None:
            self._release()
            self._release = None


def child_status(change: Change) -> dict[str, Any]:
    return {"sessionId": change.key.session_id, "change": change.kind, **change.detail}


def lifecycle_detail(change: Change) -> dict[str, Any]:
    if change.kind == "created":
        return {"kind": change.detail.get("kind", "root"), "parentId": change.parent_id}
    if change.kind == "closed":
        return {"outcome": change.detail.get("outcome")}
    return {}
