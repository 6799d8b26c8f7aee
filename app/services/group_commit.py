"""Group commit: appends that reach a worker together share one statement, and so one
PostgreSQL transaction and one commit.

What an append costs PostgreSQL is mostly per statement (its plan, executor and snapshot)
and per commit (the WAL record and its flush), far less per row: bench/README.md ("Group
commit") has the figures. So each worker runs at most `lanes` appends' statements at once. An
append that arrives while every lane is busy waits; when a lane frees, it takes the waiting
appends together, one per session and none that writes app or user state (those go alone),
into one statement (`events.append_group`). Under light load nothing waits: each append runs
alone, as it would without this.

Each append is still all or nothing and answered alone. One that is refused (its session at
another version) is simply not written while the others are. One whose session another
transaction holds, or that is absent, closed or expired, is left out and runs alone after the
group, where it waits or is refused as it would without grouping. One that fails the
statement (a duplicate event id, a state over the limit) makes its group run again one append
at a time, so each gets its own answer.
"""

import asyncio
from collections import deque
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import asyncpg

from app.config import Settings
from app.db import DriverPool, translated
from app.domain import Append, SessionKey
from app.observability import APPENDS_GROUPED
from app.repositories import events as event_rows
from app.sharding import WorkerPools

# The most appends one statement takes: past a few dozen, a bigger group saves nothing more
# per append and only makes its statement (and its row locks) last longer.
MAX_GROUP = 32


@dataclass(frozen=True)
class _Waiting:
    request: Append
    answer: "asyncio.Future[int | None]"


class GroupCommit:
    """`lanes`: how many append statements this worker runs at once; None runs every append
    alone, at once (on Citus, where a group's sessions lie on different nodes). `routed`: on
    Citus, each append goes whole to its user's worker (`events.APPEND_ROUTED`), sent there
    straight over `workers`' connections when there are some (`sharding.WorkerPools`, only
    ever given with `routed`)."""

    def __init__(
        self,
        pool: DriverPool,
        settings: Settings,
        lanes: int | None,
        *,
        routed: bool = False,
        workers: WorkerPools | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.lanes = lanes
        self.routed = routed
        self.workers = workers
        self.busy = 0
        self.waiting: deque[_Waiting] = deque()
        self.running: set[asyncio.Task[None]] = set()

    async def append(self, request: Append) -> int | None:
        """`events.append` of one request, unannounced: the seq before its first event, or
        None when its session is absent, closed or not at the version asked for. Raises as
        `events.append` does."""
        if self.lanes is not None and self.busy >= self.lanes:
            waiting = _Waiting(request, asyncio.get_running_loop().create_future())
            self.waiting.append(waiting)
            return await waiting.answer
        self.busy += 1
        try:
            async with self._connection(request) as connection:
                return await self._alone(connection, request)
        finally:
            self._release()

    def _connection(self, request: Append) -> AbstractAsyncContextManager[asyncpg.Connection]:
        """Where a lone append runs: its user's worker when it goes there whole (an append
        that writes app state does not), else the pool's."""
        if self.workers is not None and not request.writes_app_state:
            return self.workers.connection(request.key.user_id)
        return self.pool.connection()

    async def _alone(self, connection: asyncpg.Connection, request: Append) -> int | None:
        return await event_rows.append(
            connection,
            request,
            self.settings.max_state_bytes,
            self.settings.search_config,
            announced=False,
            routed=self.routed,
        )

    def _release(self) -> None:
        """A lane is free: the appends waiting for one go, together."""
        self.busy -= 1
        group = self._next_group()
        if group:
            self.busy += 1
            task = asyncio.create_task(self._run(group))
            self.running.add(task)
            task.add_done_callback(self.running.discard)

    def _next_group(self) -> list[_Waiting]:
        """The waiting appends that can share a statement, oldest first: one per session; an
        append that writes app or user state only alone. The others keep their place."""
        group: list[_Waiting] = []
        sessions: set[SessionKey] = set()
        passed: list[_Waiting] = []
        while self.waiting and len(group) < MAX_GROUP:
            waiting = self.waiting.popleft()
            if waiting.answer.done():  # its request was cancelled while it waited
                continue
            shares_state = waiting.request.shares_state
            if waiting.request.key in sessions or (shares_state and group):
                passed.append(waiting)
                continue
            group.append(waiting)
            sessions.add(waiting.request.key)
            if shares_state:
                break
        self.waiting.extendleft(reversed(passed))
        return group

    async def _run(self, group: list[_Waiting]) -> None:
        try:
            async with self.pool.connection() as connection:
                alone = group
                if len(group) > 1:
                    try:
                        decided = await event_rows.append_group(
                            connection,
                            [waiting.request for waiting in group],
                            self.settings.max_state_bytes,
                            self.settings.search_config,
                        )
                    except event_rows.GroupRefused:
                        decided = {}  # one of them failed it, and none was written
                    APPENDS_GROUPED.inc(sum(seq is not None for seq in decided.values()))
                    for number, base_seq in decided.items():
                        _answer(group[number], base_seq)
                    alone = [w for n, w in enumerate(group) if n not in decided]
                for waiting in alone:
                    if waiting.answer.done():  # its request is gone: nothing to write
                        continue
                    try:
                        base_seq = await self._alone(connection, waiting.request)
                    except Exception as error:  # its refusal, for it alone
                        _fail(waiting, translated(error) or error)
                    else:
                        _answer(waiting, base_seq)
        except Exception as error:  # no connection, or it broke: the rest are not written
            for waiting in group:
                _fail(waiting, error)
        except asyncio.CancelledError:  # the worker is stopping
            for waiting in group:
                waiting.answer.cancel()
            raise
        finally:
            self._release()


def _answer(waiting: _Waiting, base_seq: int | None) -> None:
    if not waiting.answer.done():
        waiting.answer.set_result(base_seq)


def _fail(waiting: _Waiting, error: BaseException) -> None:
    if not waiting.answer.done():
        waiting.answer.set_exception(error)
