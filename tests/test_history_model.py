"""A model of a session's history, as docs/semantics.md defines it, checked against the
service by a Hypothesis state machine: roots, forks, children of each inherit mode, appends
with session, `user:` and `app:` deltas, removals, trims, resets, rewinds, closes, and exports
imported elsewhere and again where they came from, over several users.

After every step the sessions it touched are read at every seq of their history (and the
seqs just outside it, which are 422); at the end of each example, every session. A read at a
seq gives the same answer forever, so the model keeps each session's state history as a fold
that only a trim or a reset cuts, and the reads are checked against it. A fork is also checked
against the read of its parent at the fork point, and an import against its source.

`make test-history` runs it longer (`SESSIONARY_HISTORY_EXAMPLES`).
"""

import asyncio
import copy
import itertools
import os
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

T = TypeVar("T")
USERS = ["ada", "bob"]
MIRROR = "mirror"  # the user exports are imported under
KEYS = ["a", "b", "c"]
VALUES = st.none() | st.integers(0, 3) | st.sampled_from(["x", "y"])
DELTAS = st.dictionaries(st.sampled_from([*KEYS, "user:u", "app:p", "temp:t"]), VALUES, max_size=3)
EXAMPLES = int(os.environ.get("SESSIONARY_HISTORY_EXAMPLES", "12"))
SHARED = ("app:", "user:", "temp:")


def own(delta: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in delta.items() if not key.startswith(SHARED)}


def shared(delta: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {
        key.removeprefix(prefix): value for key, value in delta.items() if key.startswith(prefix)
    }


@dataclass
class Event:
    seq: int
    id: str
    invocation: str | None
    rewinds: str | None = None  # the invocation a rewind event goes back before


@dataclass
class Session:
    """One session as the docs define it: its state at seq s (base ≤ s ≤ version) is the base
    state with every delta of its history up to s applied in order; a removal takes an event
    from `events`, never its delta from `history`."""

    user: str
    id: str
    version: int = 0
    base: int = 0
    base_state: dict[str, Any] = field(default_factory=dict)
    history: dict[int, dict[str, Any]] = field(default_factory=dict)  # seq: own delta
    events: list[Event] = field(default_factory=list)  # kept; a child's inherited ones first
    open: bool = True

    def content(self) -> Any:
        """What an import compares (the user and shared state aside)."""
        events = [(e.seq, e.id) for e in self.events]
        return (self.version, self.base, self.base_state, self.history, events, self.open)

    def state_at(self, seq: int) -> dict[str, Any]:
        assert self.base <= seq <= self.version, (seq, self)
        state = dict(self.base_state)
        for at in sorted(self.history):
            if at <= seq:
                state.update(self.history[at])
        return state

    @property
    def state(self) -> dict[str, Any]:
        return self.state_at(self.version)

    def held_state_at(self, seq: int) -> dict[str, Any]:
        """The state at `seq` as the kept events make it, removed ones' deltas left out: what
        a rewind restores (ADK's runner rebuilds it from the events it is given)."""
        state = dict(self.base_state)
        for event in self.events:
            if self.base < event.seq <= seq:
                state.update(self.history[event.seq])
        return state

    def live(self) -> list[Event]:
        """ADK's `_apply_rewinds` over the kept events."""
        first: dict[str, int] = {}
        for index, event in enumerate(self.events):
            if event.invocation and event.invocation not in first:
                first[event.invocation] = index
        kept, index = [], len(self.events) - 1
        while index >= 0:
            event = self.events[index]
            if event.rewinds:
                target = first.get(event.rewinds)
                if target is not None and target < index:
                    index = target
            else:
                kept.append(event)
            index -= 1
        return kept[::-1]


@dataclass
class Tally:
    """What a run did: examples, steps (rules run), and reads checked against the model."""

    examples: int = 0
    steps: int = 0
    reads: int = 0


class HistoryMachine(RuleBasedStateMachine):
    client: httpx.AsyncClient
    loop: asyncio.AbstractEventLoop
    tally: Tally

    def __init__(self) -> None:
        super().__init__()
        self.tally.examples += 1
        self.app = f"history-{uuid.uuid4().hex[:8]}"
        self.sessions: list[Session] = []
        self.app_state: dict[str, Any] = {}
        self.user_state: dict[str, dict[str, Any]] = {}
        self.names = itertools.count()
        self.touched: list[Session] = []

    # The service, from the state machine's thread, on the test's loop.
    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def url(self, session: Session, suffix: str = "") -> str:
        return f"/apps/{self.app}/users/{session.user}/sessions/{session.id}{suffix}"

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        return self.call(self.client.request(method, url, **options))

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"

    def bump(self, session: Session) -> None:
        session.version += 1

    def share(self, user: str, delta: dict[str, Any]) -> None:
        self.app_state.update(shared(delta, "app:"))
        self.user_state.setdefault(user, {}).update(shared(delta, "user:"))

    def pick(self, index: int) -> Session:
        return self.sessions[index % len(self.sessions)]

    def refused_closed(self, session: Session, response: httpx.Response) -> bool:
        """A write to a closed session: 409 `session_closed`, nothing written."""
        if session.open:
            return False
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "session_closed"
        return True

    # Rules.
    @initialize(user=st.sampled_from(USERS), state=DELTAS)
    def create_root(self, user: str, state: dict[str, Any]) -> None:
        self.create(user, state)

    @rule(user=st.sampled_from(USERS), state=DELTAS)
    def create(self, user: str, state: dict[str, Any]) -> None:
        session = Session(user, self.fresh("s"), base_state=own(state))
        response = self.request(
            "POST",
            f"/apps/{self.app}/users/{user}/sessions",
            json={"sessionId": session.id, "state": state},
        )
        assert response.status_code == 201, response.text
        self.share(user, state)
        self.sessions.append(session)
        self.touched.append(session)

    @rule(index=st.integers(0, 20), delta=DELTAS, new_invocation=st.booleans())
    def append(self, index: int, delta: dict[str, Any], new_invocation: bool) -> None:
        session = self.pick(index)
        invocations = [event.invocation for event in session.events if event.invocation]
        invocation = self.fresh("i") if new_invocation or not invocations else invocations[-1]
        event = {"id": self.fresh("e"), "author": "agent", "invocationId": invocation}
        if delta:
            event["actions"] = {"stateDelta": delta}
        response = self.request("POST", self.url(session, "/events"), json=event)
        if self.refused_closed(session, response):
            return
        assert response.status_code == 201, response.text
        self.bump(session)
        assert response.json()["seq"] == session.version
        session.history[session.version] = own(delta)
        session.events.append(Event(session.version, event["id"], invocation))
        self.share(session.user, delta)
        self.touched.append(session)

    @rule(
        index=st.integers(0, 20),
        point=st.integers(0, 30),
        how=st.sampled_from(["at", "end", "invocation"]),
    )
    def fork(self, index: int, point: int, how: str) -> None:
        parent = self.pick(index)
        body: dict[str, Any] = {"sessionId": self.fresh("f")}
        if how == "at":
            at = parent.base + point % (parent.version - parent.base + 1)
            body["atSeq"] = at
        elif how == "end":
            at = parent.version
        else:
            invocations = sorted({e.invocation for e in parent.events if e.invocation})
            if not invocations:
                return
            invocation = invocations[point % len(invocations)]
            body["beforeInvocationId"] = invocation
            at = min(e.seq for e in parent.events if e.invocation == invocation) - 1
        response = self.request("POST", self.url(parent, ":fork"), json=body)
        if at < parent.base:  # an invocation a child inherited: before its history
            assert response.status_code == 422, response.text
            return
        assert response.status_code == 201, response.text
        fork = Session(
            parent.user,
            body["sessionId"],
            version=at,
            base=parent.base,
            base_state=dict(parent.base_state),
            history={seq: dict(d) for seq, d in parent.history.items() if seq <= at},
            events=[copy.copy(event) for event in parent.events if event.seq <= at],
        )
        self.sessions.append(fork)
        self.touched.append(fork)
        # A fork at a seq starts from exactly what a read at that seq gives.
        then = self.read(parent, at)
        now = self.read(fork, None)
        assert (own(now["state"]), now["events"]) == (own(then["state"]), then["events"])

    @rule(
        index=st.integers(0, 20),
        inherit=st.sampled_from(["none", "all", "context"]),
        state=DELTAS,
    )
    def child(self, index: int, inherit: str, state: dict[str, Any]) -> None:
        parent = self.pick(index)
        body = {"sessionId": self.fresh("c"), "inherit": inherit, "state": state}
        response = self.request("POST", self.url(parent, "/children"), json=body)
        if self.refused_closed(parent, response):
            return
        assert response.status_code == 201, response.text
        inherits = inherit != "none"
        version = parent.version if inherits else 0
        copied = {"none": [], "all": parent.events, "context": parent.live()}[inherit]
        child = Session(
            parent.user,
            body["sessionId"],
            version=version,
            base=version,
            base_state={**(parent.state if inherits else {}), **own(state)},
            events=[copy.copy(event) for event in copied],
        )
        self.share(parent.user, state)
        self.sessions.append(child)
        self.touched.append(child)

    @rule(index=st.integers(0, 20), which=st.integers(0, 30))
    def remove(self, index: int, which: int) -> None:
        session = self.pick(index)
        if not session.events:
            return
        event = session.events[which % len(session.events)]
        response = self.request("DELETE", self.url(session, f"/events/{event.id}"))
        if self.refused_closed(session, response):
            return
        assert response.status_code == 200, response.text
        assert response.json()["removedEventIds"] == [event.id]
        self.bump(session)
        session.events.remove(event)  # its delta stays in `history`
        self.touched.append(session)

    @rule(index=st.integers(0, 20), keep_last=st.integers(0, 6))
    def trim(self, index: int, keep_last: int) -> None:
        session = self.pick(index)
        response = self.request("POST", self.url(session, ":trim"), json={"keepLast": keep_last})
        if self.refused_closed(session, response):
            return
        assert response.status_code == 200, response.text
        removed = session.events[: max(len(session.events) - keep_last, 0)]
        if removed:
            cut = removed[-1].seq
            if cut > session.base:  # never back: a child's inherited events are before it
                session.base_state = session.state_at(cut)
                session.base = cut
                session.history = {s: d for s, d in session.history.items() if s > cut}
            session.events = [event for event in session.events if event.seq > cut]
        self.bump(session)
        assert response.json()["removedEvents"] == len(removed)
        self.touched.append(session)

    @rule(index=st.integers(0, 20))
    def reset(self, index: int) -> None:
        session = self.pick(index)
        response = self.request("POST", self.url(session, ":reset"), json={})
        if self.refused_closed(session, response):
            return
        assert response.status_code == 200, response.text
        self.bump(session)
        session.base, session.base_state, session.history = session.version, {}, {}
        session.events = []
        self.touched.append(session)

    @precondition(lambda self: any(s.events for s in self.sessions))
    @rule(index=st.integers(0, 20), which=st.integers(0, 30))
    def rewind(self, index: int, which: int) -> None:
        # Of the sessions with events: picked among all, a rewind was seldom of one.
        candidates = [s for s in self.sessions if s.events]
        session = candidates[index % len(candidates)]
        invocations = sorted({e.invocation for e in session.events if e.invocation})
        if not invocations:
            return
        invocation = invocations[which % len(invocations)]
        body = {"beforeInvocationId": invocation}
        response = self.request("POST", self.url(session, ":rewind"), json=body)
        if self.refused_closed(session, response):
            return
        before = min(e.seq for e in session.events if e.invocation == invocation) - 1
        if before < session.base:  # an invocation a child inherited: before its history
            assert response.status_code == 422, response.text
            return
        assert response.status_code == 201, response.text
        then, now = session.held_state_at(before), session.state
        # Each key back to its value then, or null where it did not exist then.
        restored = {key: then.get(key) for key in now if key not in then or now[key] != then[key]}
        stored = response.json()
        self.bump(session)
        assert stored["seq"] == session.version
        assert own(stored["actions"]["stateDelta"]) == restored, (stored, then, now)
        session.history[session.version] = restored
        session.events.append(
            Event(session.version, stored["id"], stored["invocationId"], rewinds=invocation)
        )
        self.touched.append(session)

    @rule(index=st.integers(0, 20))
    def close(self, index: int) -> None:
        session = self.pick(index)
        response = self.request("POST", self.url(session, ":close"), json={"outcome": "completed"})
        if self.refused_closed(session, response):
            return
        assert response.status_code == 200, response.text
        self.bump(session)
        session.open = False
        self.touched.append(session)

    @precondition(lambda self: any(s.user != MIRROR for s in self.sessions))
    @rule(index=st.integers(0, 20))
    def export_and_import(self, index: int) -> None:
        """Import the export under another user (a new session reading the same at every
        seq; or, there already, unchanged: 200, else 409), and where it came from (200)."""
        sources = [s for s in self.sessions if s.user != MIRROR]
        source = sources[index % len(sources)]
        exported = self.request("GET", self.url(source, ":export"))
        assert exported.status_code == 200, exported.text
        ndjson = {"content": exported.content, "headers": {"content-type": "application/x-ndjson"}}
        again = self.request(
            "POST", f"/apps/{self.app}/users/{source.user}/sessions:import", **ndjson
        )
        assert again.status_code == 200, again.text
        response = self.request(
            "POST", f"/apps/{self.app}/users/{MIRROR}/sessions:import", **ndjson
        )
        mirror = next((s for s in self.sessions if (s.user, s.id) == (MIRROR, source.id)), None)
        if mirror is not None:
            expected = 200 if mirror.content() == source.content() else 409
            assert response.status_code == expected, response.text
            return
        assert response.status_code == 201, response.text
        mirror = copy.deepcopy(source)
        mirror.user = MIRROR
        self.user_state.setdefault(MIRROR, {}).update(self.user_state.get(source.user, {}))
        self.sessions.append(mirror)
        self.touched.append(mirror)
        for seq in range(source.base, source.version + 1):
            theirs, ours = self.read(source, seq), self.read(mirror, seq)
            assert (own(ours["state"]), ours["events"]) == (own(theirs["state"]), theirs["events"])

    # Checks.
    def read(self, session: Session, seq: int | None) -> dict[str, Any]:
        self.tally.reads += 1
        params = {} if seq is None else {"untilSeq": seq}
        response = self.request("GET", self.url(session), params=params)
        assert response.status_code == 200, (seq, response.text)
        read: dict[str, Any] = response.json()
        return read

    def check(self, session: Session) -> None:
        """Every seq of the session's history reads as the model says; the seqs just outside
        it are 422."""
        current = self.read(session, None)
        assert current["version"] == session.version
        assert current["status"] == ("open" if session.open else "closed")
        expected_shared = {
            **{f"app:{k}": v for k, v in self.app_state.items()},
            **{f"user:{k}": v for k, v in self.user_state.get(session.user, {}).items()},
        }
        assert {
            k: v for k, v in current["state"].items() if k.startswith(SHARED)
        } == expected_shared
        for seq in range(session.base, session.version + 1):
            read = self.read(session, seq)
            assert own(read["state"]) == session.state_at(seq), (session.id, seq, session)
            kept = [(e.seq, e.id) for e in session.events if e.seq <= seq]
            assert [(e["seq"], e["id"]) for e in read["events"]] == kept, (session.id, seq)
        for outside in (session.base - 1, session.version + 1):
            if outside >= 0:
                response = self.request("GET", self.url(session), params={"untilSeq": outside})
                assert response.status_code == 422, (outside, response.text)

    def teardown(self) -> None:
        for session in self.sessions:
            self.check(session)

    @invariant()
    def touched_sessions_read_as_modelled(self) -> None:
        self.tally.steps += 1
        for session in {id(s): s for s in self.touched}.values():
            self.check(session)
        self.touched.clear()


async def test_history_holds_under_every_operation(client: httpx.AsyncClient) -> None:
    HistoryMachine.client = client
    HistoryMachine.loop = asyncio.get_running_loop()
    HistoryMachine.tally = tally = Tally()
    config = settings(
        max_examples=EXAMPLES,
        stateful_step_count=20,
        deadline=None,
        derandomize="SESSIONARY_HISTORY_EXAMPLES" not in os.environ,
        suppress_health_check=list(HealthCheck),
    )
    await asyncio.to_thread(run_state_machine_as_test, HistoryMachine, settings=config)
    print(f"history model: {tally.examples} examples, {tally.steps} steps, {tally.reads} reads")
