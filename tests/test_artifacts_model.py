"""A model of artifacts under a session's history, as docs/artifacts.md defines it, checked
against the service by a Hypothesis state machine: saves of a session's names and of the user's
`user:` names, appends naming them (`artifactDelta`), forks at a seq or whole, children that
inherit or not, deletes of a name and of a session, ADK's rewind, and exports imported into
another app.

After every step the sessions it touched are read as of every seq of their history (the names
and versions a read then lists, with their content's hash); each name's versions too. At every
step, the stored bytes add up: each content is counted by exactly the versions that hold it, and
no chunk or content is left that nothing holds.
"""

import hashlib
import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from tests.machines import EXAMPLES, ServiceMachine

USER = "ada"
NAMES = ["doc", "img", "user:pref"]
CONTENTS = st.sampled_from([b"", b"a", b"bb", b"c" * 5000])
MARKER = ("application/octet-stream", b"")  # ADK's rewind marker


@dataclass(frozen=True)
class Version:
    content: bytes
    mime_type: str
    saved_at: int | None  # None: a `user:` name's


@dataclass
class Session:
    id: str
    version: int = 0
    base: int = 0  # where its own history starts: a child's inherited events come before
    names: dict[str, list[Version]] = field(default_factory=dict)
    events: list[tuple[int, str, dict[str, int]]] = field(default_factory=list)  # seq, inv, delta


def digest(version: Version) -> str:
    return hashlib.sha256(version.content).hexdigest()


class ArtifactMachine(ServiceMachine):
    def __init__(self) -> None:
        super().__init__()
        self.app = f"artifacts-{uuid.uuid4().hex[:8]}"
        self.sessions: list[Session] = []
        self.user_names: dict[str, list[Version]] = {}
        self.counter = itertools.count()
        self.touched: list[Session] = []

    def url(self, session: Session, suffix: str = "", app: str | None = None) -> str:
        return f"/apps/{app or self.app}/users/{USER}/sessions/{session.id}{suffix}"

    def pick(self, index: int) -> Session:
        return self.sessions[index % len(self.sessions)]

    def versions_of(self, session: Session, name: str) -> list[Version]:
        if name.startswith("user:"):
            return self.user_names.setdefault(name, [])
        return session.names.setdefault(name, [])

    # Rules.
    @initialize()
    def first(self) -> None:
        self.create()

    @rule()
    def create(self) -> None:
        session = Session(f"s{next(self.counter)}")
        response = self.request(
            "POST", f"/apps/{self.app}/users/{USER}/sessions", json={"sessionId": session.id}
        )
        assert response.status_code == 201, response.text
        self.sessions.append(session)

    @rule(index=st.integers(0, 9), name=st.sampled_from(NAMES), content=CONTENTS)
    def save(self, index: int, name: str, content: bytes) -> None:
        session = self.pick(index)
        versions = self.versions_of(session, name)
        saved = self.request(
            "POST",
            self.url(session, f"/artifacts/{name}"),
            content=content,
            headers={"content-type": "text/plain"},
        )
        assert saved.status_code == 201, saved.text
        assert saved.json()["version"] == len(versions)
        saved_at = None if name.startswith("user:") else session.version
        versions.append(Version(content, "text/plain", saved_at))
        self.touched.append(session)

    @rule(index=st.integers(0, 9), names=st.sets(st.sampled_from(NAMES), max_size=3))
    def append(self, index: int, names: set[str]) -> None:
        """An event naming the newest version of each of `names` that has one."""
        session = self.pick(index)
        delta = {n: len(self.versions_of(session, n)) - 1 for n in names}
        delta = {n: v for n, v in delta.items() if v >= 0}
        invocation = f"i{next(self.counter)}"
        event = {"author": "agent", "invocationId": invocation, "actions": {"artifactDelta": delta}}
        appended = self.request("POST", self.url(session, "/events"), json=event)
        assert appended.status_code == 201, appended.text
        session.version += 1
        session.events.append((session.version, invocation, delta))
        self.touched.append(session)

    @rule(index=st.integers(0, 9), name=st.sampled_from(NAMES))
    def delete(self, index: int, name: str) -> None:
        session = self.pick(index)
        versions = self.versions_of(session, name)
        deleted = self.request("DELETE", self.url(session, f"/artifacts/{name}"))
        assert deleted.status_code == (204 if versions else 404), deleted.text
        versions.clear()
        self.touched.extend(self.sessions if name.startswith("user:") else [session])

    @rule(index=st.integers(0, 9), at=st.none() | st.integers(0, 30))
    def fork(self, index: int, at: int | None) -> None:
        parent = self.pick(index)
        fork = Session(f"f{next(self.counter)}")
        body: dict[str, Any] = {"sessionId": fork.id}
        if at is not None:
            at = parent.base + at % (parent.version - parent.base + 1)
            body["atSeq"] = at
        made = self.request("POST", self.url(parent, ":fork"), json=body)
        assert made.status_code == 201, made.text
        fork.version = parent.version if at is None else at
        fork.base = parent.base
        fork.events = [event for event in parent.events if event[0] <= fork.version]
        fork.names = {
            name: [v for v in versions if at is None or (v.saved_at or 0) < at]
            for name, versions in parent.names.items()
        }
        self.sessions.append(fork)
        self.touched.append(fork)

    @rule(index=st.integers(0, 9), inherit=st.sampled_from(["all", "none"]))
    def child(self, index: int, inherit: str) -> None:
        parent = self.pick(index)
        child = Session(f"c{next(self.counter)}")
        body = {"sessionId": child.id, "inherit": inherit}
        made = self.request("POST", self.url(parent, "/children"), json=body)
        assert made.status_code == 201, made.text
        if inherit == "all":
            child.version = child.base = parent.version
            child.events = list(parent.events)
            child.names = {name: list(versions) for name, versions in parent.names.items()}
        self.sessions.append(child)
        self.touched.append(child)

    @precondition(lambda self: len(self.sessions) > 1)
    @rule(index=st.integers(0, 9))
    def delete_session(self, index: int) -> None:
        session = self.pick(index)
        assert self.request("DELETE", self.url(session)).status_code == 204
        self.sessions.remove(session)

    @rule(index=st.integers(0, 9), which=st.integers(0, 30))
    def rewind(self, index: int, which: int) -> None:
        """ADK's rewind before one of the session's invocations (as ADK's
        `compute_artifact_delta_for_rewind` restores artifacts)."""
        session = self.pick(index)
        own = [event for event in session.events if event[0] > session.base]
        if not own:
            return
        seq, invocation, _ = own[which % len(own)]
        then: dict[str, int] = {}
        now: dict[str, int] = {}
        for event_seq, _, delta in session.events:
            now.update(delta)
            if event_seq < seq:
                then.update(delta)
        rewound = self.request(
            "POST", self.url(session, ":rewind"), json={"beforeInvocationId": invocation}
        )
        assert rewound.status_code == 201, rewound.text
        restored = {}
        for name, version in now.items():
            if name.startswith("user:") or then.get(name) == version:
                continue
            versions = self.versions_of(session, name)
            old = then.get(name)
            kept = versions[old] if old is not None and old < len(versions) else None
            mime_type, content = (kept.mime_type, kept.content) if kept else MARKER
            versions.append(Version(content, mime_type, session.version))
            restored[name] = len(versions) - 1
        assert rewound.json()["actions"].get("artifactDelta", {}) == restored
        session.version += 1
        session.events.append((session.version, rewound.json()["invocationId"], restored))
        self.touched.append(session)

    @rule(index=st.integers(0, 9))
    def export_and_import(self, index: int) -> None:
        session = self.pick(index)
        exported = self.request("GET", self.url(session, ":export"))
        mirror = f"/apps/{self.app}-mirror/users/{USER}/sessions:import"
        ndjson = {"Content-Type": "application/x-ndjson"}
        first = self.request("POST", mirror, content=exported.content, headers=ndjson)
        if first.status_code == 409:  # imported before, and changed since
            return
        assert first.status_code in (200, 201), first.text
        source = f"{self.app}"
        for seq in range(session.base, session.version + 1):
            params = {"untilSeq": seq}
            here = self.listing(self.url(session, "/artifacts", source), params)
            there = self.listing(self.url(session, "/artifacts", f"{self.app}-mirror"), params)
            own = {name: found for name, found in here.items() if not name.startswith("user:")}
            assert own == there, (seq, here, there)  # the user's names are not the session's

    # Checks.
    def listing(self, url: str, params: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
        found, token = {}, None
        while True:
            page = self.request(
                "GET", url, params={**params, **({"pageToken": token} if token else {})}
            )
            assert page.status_code == 200, page.text
            for item in page.json()["artifacts"]:
                found[item["name"]] = (item["version"], item["sha256"])
            token = page.json()["nextPageToken"]
            if token is None:
                return found

    def expected(self, session: Session, until: int | None) -> dict[str, tuple[int, str]]:
        names = {**session.names, **self.user_names}
        listed = {}
        for name, versions in names.items():
            seen = [
                v for v in versions if until is None or v.saved_at is None or v.saved_at < until
            ]
            if seen:
                listed[name] = (len(seen) - 1, digest(seen[-1]))
        return listed

    def check(self, session: Session) -> None:
        for until in (None, *range(session.base, session.version + 1)):
            params = {} if until is None else {"untilSeq": until}
            ArtifactMachine.reads += 1
            assert self.listing(self.url(session, "/artifacts"), params) == self.expected(
                session, until
            ), until
        for name, versions in session.names.items():
            response = self.request("GET", self.url(session, f"/artifacts/{name}/versions"))
            if not versions:
                assert response.status_code == 404
                continue
            listed = [(v["version"], v["sha256"]) for v in response.json()["versions"]]
            assert listed == [(n, digest(v)) for n, v in enumerate(versions)]

    @invariant()
    def touched_sessions_read_as_modelled(self) -> None:
        for session in {s.id: s for s in self.touched if s in self.sessions}.values():
            self.check(session)
        self.touched.clear()

    @invariant()
    def every_content_is_counted_by_the_versions_that_hold_it(self) -> None:
        self.call(bytes_add_up(self.app_under_test, self.app))


async def bytes_add_up(app: FastAPI, app_name: str) -> None:
    async with app.state.pool.connection() as connection:
        miscounted = await connection.fetchval(
            """
            SELECT count(*) FROM artifact_blobs b WHERE b.app_name LIKE $1 AND b.refs <> (
                SELECT count(*) FROM artifact_versions v WHERE v.app_name = b.app_name
                AND v.user_id = b.user_id AND v.content_hash = b.content_hash)
            """,
            app_name + "%",
        )
        unheld = await connection.fetchval(
            """
            SELECT count(*) FROM artifact_chunks c WHERE c.app_name LIKE $1 AND NOT EXISTS (
                SELECT 1 FROM artifact_blobs b WHERE b.app_name = c.app_name
                AND b.user_id = c.user_id AND b.blob_id = c.blob_id)
            """,
            app_name + "%",
        )
        missing = await connection.fetchval(
            """
            SELECT count(*) FROM artifact_versions v WHERE v.app_name LIKE $1
            AND v.content_hash IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM artifact_blobs b WHERE b.app_name = v.app_name
                AND b.user_id = v.user_id AND b.content_hash = v.content_hash)
            """,
            app_name + "%",
        )
    assert (miscounted, unheld, missing) == (0, 0, 0)


async def test_artifacts_hold_under_every_operation(client: httpx.AsyncClient, app: FastAPI):
    reads = await ArtifactMachine.run(client, app, steps=25)
    print(f"artifacts model: {reads} reads checked")
    assert reads > EXAMPLES * 5
