"""`SessionaryArtifactService` behaves as ADK's artifact services do, on a live server.

google-adk ships no tests of its artifact services (neither its wheel nor its 2.13.0 sdist
holds `tests/`), so their contract is written here: one behaviour a test, from what
`BaseArtifactService` documents and its in-memory, file and GCS services do; then the same
random operations against ADK's `InMemoryArtifactService` and this service, every answer
compared; then ADK's `Runner`, a tool of which saves artifacts, rewound by ADK and by the
server, alike.
"""

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from typing import Any, TypeVar

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.artifacts import InMemoryArtifactService
from google.adk.artifacts.artifact_util import get_artifact_uri
from google.adk.artifacts.base_artifact_service import ArtifactVersion
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    rule,
    run_state_machine_as_test,
)
from sessionary_client import AsyncSessionaryClient
from sessionary_client.adk import SessionaryArtifactService, SessionaryService

T = TypeVar("T")
USER = "ada"


@pytest.fixture(scope="module")
async def artifacts(live_server: str) -> AsyncIterator[SessionaryArtifactService]:
    service = SessionaryArtifactService(live_server)
    yield service
    await service.close()


@pytest.fixture
async def sessions(live_server: str, app_name: str) -> AsyncIterator[AsyncSessionaryClient]:
    """A client whose sessions s1 and s2 of `ada` exist in the test's app."""
    async with AsyncSessionaryClient(live_server) as client:
        for session_id in ("s1", "s2"):
            await client.create_session(app_name, USER, session_id=session_id)
        yield client


def text(value: str) -> types.Part:
    return types.Part(text=value)


def inline(data: bytes, mime_type: str | None, display_name: str | None = None) -> types.Part:
    blob = types.Blob(data=data, mime_type=mime_type, display_name=display_name)
    return types.Part(inline_data=blob)


def reference(uri: str, mime_type: str | None = None) -> types.Part:
    return types.Part(file_data=types.FileData(file_uri=uri, mime_type=mime_type))


@pytest.mark.usefixtures("sessions")
async def test_each_save_is_the_next_version_and_loads_as_it_was_saved(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1", "filename": "doc"}
    saved = [
        text("Zoë's draft"),
        inline(b"\x89PNG\x00", "image/png", "chart.png"),
        reference("gs://bucket/doc.pdf", "application/pdf"),
        text(""),
    ]
    metadata = [None, {"by": "tool"}, None, None]
    for expected, (part, custom) in enumerate(zip(saved, metadata, strict=True)):
        version = await artifacts.save_artifact(**where, artifact=part, custom_metadata=custom)
        assert version == expected
    for version, part in enumerate(saved):
        assert await artifacts.load_artifact(**where, version=version) == part
    assert await artifacts.load_artifact(**where) == text("")
    assert await artifacts.list_versions(**where) == [0, 1, 2, 3]
    records = await artifacts.list_artifact_versions(**where)
    assert [(r.version, r.mime_type, r.custom_metadata) for r in records] == [
        (0, "text/plain", {}),
        (1, "image/png", {"by": "tool"}),
        (2, "application/pdf", {}),
        (3, "text/plain", {}),
    ]
    assert records[1].canonical_uri == get_artifact_uri(app_name, USER, "doc", 1, "s1")
    assert await artifacts.get_artifact_version(**where, version=1) == records[1]
    assert await artifacts.get_artifact_version(**where) == records[3]


@pytest.mark.usefixtures("sessions")
async def test_a_dict_part_is_taken_as_adk_takes_it(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1", "filename": "d"}
    await artifacts.save_artifact(
        **where, artifact={"inlineData": {"data": b"x", "mimeType": "a/b"}}
    )
    assert await artifacts.load_artifact(**where) == inline(b"x", "a/b")


@pytest.mark.usefixtures("sessions")
async def test_user_names_are_every_sessions_and_reached_without_a_session(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    user = {"app_name": app_name, "user_id": USER}
    await artifacts.save_artifact(
        **user, session_id="s1", filename="user:tone", artifact=text("dry")
    )
    await artifacts.save_artifact(**user, filename="user:tone", artifact=text("wry"))
    await artifacts.save_artifact(**user, session_id="s1", filename="own", artifact=text("mine"))
    for session_id in ("s2", None):
        loaded = await artifacts.load_artifact(**user, session_id=session_id, filename="user:tone")
        assert loaded == text("wry")
    assert await artifacts.list_artifact_keys(**user, session_id="s1") == ["own", "user:tone"]
    assert await artifacts.list_artifact_keys(**user, session_id="s2") == ["user:tone"]
    assert await artifacts.list_artifact_keys(**user) == ["user:tone"]
    assert await artifacts.load_artifact(**user, session_id="s2", filename="own") is None


async def test_a_sessions_name_without_a_session_is_refused(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    user = {"app_name": app_name, "user_id": USER, "filename": "report.txt"}
    calls: list[Coroutine[Any, Any, object]] = [
        artifacts.save_artifact(**user, artifact=text("x")),
        artifacts.load_artifact(**user),
        artifacts.delete_artifact(**user),
        artifacts.list_versions(**user),
        artifacts.list_artifact_versions(**user),
        artifacts.get_artifact_version(**user),
    ]
    for call in calls:
        with pytest.raises(InputValidationError, match="Session ID must be provided"):
            await call


@pytest.mark.usefixtures("sessions")
async def test_what_is_missing_reads_as_nothing_and_deletes_silently(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1"}
    await artifacts.save_artifact(**where, filename="one", artifact=text("1"))
    for version in (1, -1):
        assert await artifacts.load_artifact(**where, filename="one", version=version) is None
        assert (
            await artifacts.get_artifact_version(**where, filename="one", version=version) is None
        )
    assert await artifacts.load_artifact(**where, filename="none") is None
    assert await artifacts.get_artifact_version(**where, filename="none") is None
    assert await artifacts.list_versions(**where, filename="none") == []
    assert await artifacts.list_artifact_versions(**where, filename="none") == []
    await artifacts.delete_artifact(**where, filename="none")
    await artifacts.delete_artifact(**where, filename="one")
    await artifacts.delete_artifact(**where, filename="one")
    assert await artifacts.list_artifact_keys(**where) == []
    assert await artifacts.save_artifact(**where, filename="one", artifact=text("1")) == 0


async def test_a_session_the_server_does_not_hold_finds_nothing_and_takes_nothing(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "gone"}
    with pytest.raises(SessionNotFoundError):
        await artifacts.save_artifact(**where, filename="a", artifact=text("x"))
    assert await artifacts.load_artifact(**where, filename="user:a") is None
    assert await artifacts.list_artifact_keys(**where) == []
    assert await artifacts.list_versions(**where, filename="a") == []
    await artifacts.delete_artifact(**where, filename="a")


@pytest.mark.usefixtures("sessions")
@pytest.mark.parametrize(
    ("filename", "why"),
    [
        ("../up", "traversal"),
        ("a/../../b", "traversal"),
        ("/etc/passwd", "absolute"),
        ("C:evil", "drive-qualified"),
        ("reports/sessions/x", "reserved"),
        ("", "empty"),
        ("user:", "empty"),
        ("nul\x00", "null bytes"),
    ],
)
async def test_names_adk_refuses_raise_its_input_validation_error(
    artifacts: SessionaryArtifactService, app_name: str, filename: str, why: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1", "filename": filename}
    with pytest.raises(InputValidationError, match=why):
        await artifacts.save_artifact(**where, artifact=text("x"))
    with pytest.raises(InputValidationError, match=why):
        await artifacts.load_artifact(**where)


async def test_ids_adk_refuses_raise_its_input_validation_error(
    artifacts: SessionaryArtifactService,
) -> None:
    with pytest.raises(InputValidationError, match="app_name"):
        await artifacts.list_artifact_keys(app_name="../x", user_id=USER)
    with pytest.raises(InputValidationError, match="session_id"):
        await artifacts.load_artifact(app_name="a", user_id=USER, session_id="/s", filename="f")


@pytest.mark.usefixtures("sessions")
async def test_artifact_references_resolve_within_their_scope(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1"}
    await artifacts.save_artifact(**where, filename="target", artifact=text("v0"))
    await artifacts.save_artifact(**where, filename="target", artifact=text("v1"))
    uri = get_artifact_uri(app_name, USER, "target", 0, "s1")
    await artifacts.save_artifact(**where, filename="link", artifact=reference(uri))
    assert await artifacts.load_artifact(**where, filename="link") == text("v0")
    # A chain of five references resolves; a sixth is one too many, as in ADK.
    for hop in range(1, 7):
        before = "link" if hop == 1 else f"link{hop - 1}"
        hop_uri = get_artifact_uri(app_name, USER, before, 0, "s1")
        await artifacts.save_artifact(**where, filename=f"link{hop}", artifact=reference(hop_uri))
    assert await artifacts.load_artifact(**where, filename="link4") == text("v0")
    with pytest.raises(InputValidationError, match="maximum recursion depth"):
        await artifacts.load_artifact(**where, filename="link5")
    # Another session's, or another user's, is refused when saved, as is no version's URI.
    for outside in (
        get_artifact_uri(app_name, USER, "target", 0, "s2"),
        get_artifact_uri(app_name, "bob", "user:x", 0),
    ):
        with pytest.raises(InputValidationError, match="must stay within"):
            await artifacts.save_artifact(**where, filename="out", artifact=reference(outside))
    with pytest.raises(InputValidationError, match="Invalid artifact reference URI"):
        await artifacts.save_artifact(**where, filename="out", artifact=reference("artifact://x"))
    # A user's name that points at a session's resolves from that session alone.
    await artifacts.save_artifact(**where, filename="user:pin", artifact=reference(uri))
    assert await artifacts.load_artifact(**where, filename="user:pin") == text("v0")
    with pytest.raises(InputValidationError, match="same session scope"):
        await artifacts.load_artifact(**{**where, "session_id": "s2"}, filename="user:pin")
    # A reference to content stored elsewhere loads as it was saved.
    await artifacts.save_artifact(**where, filename="ext", artifact=reference("https://x/y", "a/b"))
    assert await artifacts.load_artifact(**where, filename="ext") == reference("https://x/y", "a/b")


@pytest.mark.usefixtures("sessions")
async def test_adks_rewind_marker_loads_as_nothing_but_its_version_lists(
    artifacts: SessionaryArtifactService, app_name: str
) -> None:
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1", "filename": "gone"}
    await artifacts.save_artifact(**where, artifact=text("was here"))
    await artifacts.save_artifact(**where, artifact=inline(b"", "application/octet-stream"))
    assert await artifacts.load_artifact(**where) is None
    assert await artifacts.list_versions(**where) == [0, 1]
    # Empty bytes of another kind, or with a display name, are not the marker.
    shown = inline(b"", "application/octet-stream", "empty.bin")
    await artifacts.save_artifact(**where, artifact=shown)
    assert await artifacts.load_artifact(**where) == shown


@pytest.mark.usefixtures("sessions")
async def test_inline_bytes_are_uploaded_as_they_are_not_in_base64(
    live_server: str, app_name: str
) -> None:
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        await request.aread()
        sent.append(request)

    http = httpx.AsyncClient(base_url=live_server, event_hooks={"request": [record]})
    service = SessionaryArtifactService(client=AsyncSessionaryClient(http=http))
    where = {"app_name": app_name, "user_id": USER, "session_id": "s1", "filename": "raw"}
    await service.save_artifact(**where, artifact=inline(b"\xff\x00raw", None, "Raw"))
    upload = sent[-1]
    assert upload.content == b"\xff\x00raw"
    assert upload.url.params["displayName"] == "Raw"
    # Without a MIME type it is stored as ADK's file service stores it.
    assert await service.load_artifact(**where) == inline(
        b"\xff\x00raw", "application/octet-stream", "Raw"
    )
    await service.close()


# The differential test: the same operations on ADK's in-memory service and on this one.
SESSIONS = ("s1", "s2")
# Few names and scopes, the first session the likeliest, so that reads find what was saved.
SCOPES = st.sampled_from(["s1", "s1", "s2", None])
NAMES = st.sampled_from(["a.txt", "dir/b.bin", "user:c"])
PLACES = st.tuples(SCOPES, NAMES)
VERSIONS = st.none() | st.integers(-1, 2)
# Without U+0000, which the server's JSON refuses (ADK's in-memory service takes it), nor
# lone surrogates, which no UTF-8 request carries.
TEXTS = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
METADATA = st.none() | st.dictionaries(
    st.sampled_from(["k", "Zoë"]), st.integers(-(2**31), 2**31) | TEXTS, max_size=2
)
PARTS = st.one_of(
    st.builds(text, TEXTS),
    st.builds(
        inline,
        st.binary(max_size=48),
        st.sampled_from(["application/octet-stream", "image/png", "text/csv"]),
        st.none() | st.sampled_from(["shown.png", "Zoë"]),
    ),
    st.builds(
        reference,
        st.sampled_from(["gs://bucket/x.bin", "https://example.com/a?b=c"]),
        st.none() | st.just("video/mp4"),
    ),
    # An `artifact://` reference, made with the example's app: (user, session, name, version).
    st.tuples(st.sampled_from([USER, USER, "bob"]), SCOPES, NAMES, st.integers(0, 2)),
)
Drawn = types.Part | tuple[str, str | None, str, int]


def comparable(answer: object) -> object:
    """An answer as both services should give it: records without their create time, and
    canonical URIs without their scheme (`memory://` in ADK's, `artifact://` here)."""
    if isinstance(answer, list):
        return [comparable(item) for item in answer]
    if isinstance(answer, types.Part):
        return answer.model_dump(mode="json", exclude_none=True)
    if isinstance(answer, ArtifactVersion):
        record = answer.model_dump(mode="json", exclude={"create_time"})
        record["canonical_uri"] = record["canonical_uri"].split("://", 1)[1]
        return record
    return answer


class Differential(RuleBasedStateMachine):
    """One app of each service, driven alike; each rule compares their answers (an error by
    its type). Reads go mostly where a save went. The services are async; the machine, which
    Hypothesis runs synchronously, drives them on the test's event loop from a thread."""

    service: SessionaryArtifactService
    client: AsyncSessionaryClient
    loop: asyncio.AbstractEventLoop
    steps = 0
    saved = Bundle("saved")

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    @initialize()
    def sessions(self) -> None:
        self.app = f"diff-{uuid.uuid4().hex[:10]}"
        self.adk = InMemoryArtifactService()
        for session_id in SESSIONS:
            self.call(self.client.create_session(self.app, USER, session_id=session_id))

    def same(self, method: str, where: tuple[str | None, str] | None, **arguments: Any) -> None:
        if where is not None:
            arguments |= {"session_id": where[0], "filename": where[1]}
        answers = []
        for service in (self.adk, self.service):
            call = getattr(service, method)(app_name=self.app, user_id=USER, **arguments)
            try:
                answers.append(comparable(self.call(call)))
            except InputValidationError as error:
                answers.append(type(error).__name__)
        theirs, ours = answers
        assert ours == theirs, (method, arguments)
        Differential.steps += 1

    def part(self, drawn: Drawn) -> types.Part:
        if isinstance(drawn, tuple):
            user_id, session_id, name, version = drawn
            return reference(get_artifact_uri(self.app, user_id, name, version, session_id))
        return drawn

    @rule(target=saved, where=PLACES, part=PARTS, custom_metadata=METADATA)
    def save(
        self, where: tuple[str | None, str], part: Drawn, custom_metadata: dict[str, Any] | None
    ) -> tuple[str | None, str]:
        artifact = self.part(part)
        self.same("save_artifact", where, artifact=artifact, custom_metadata=custom_metadata)
        return where

    @rule(where=saved | PLACES, version=VERSIONS)
    def load(self, where: tuple[str | None, str], version: int | None) -> None:
        self.same("load_artifact", where, version=version)

    @rule(session_id=SCOPES)
    def keys(self, session_id: str | None) -> None:
        self.same("list_artifact_keys", None, session_id=session_id)

    @rule(where=saved | PLACES)
    def delete(self, where: tuple[str | None, str]) -> None:
        self.same("delete_artifact", where)

    @rule(where=saved | PLACES)
    def versions(self, where: tuple[str | None, str]) -> None:
        self.same("list_versions", where)
        self.same("list_artifact_versions", where)

    @rule(where=saved | PLACES, version=VERSIONS)
    def record(self, where: tuple[str | None, str], version: int | None) -> None:
        self.same("get_artifact_version", where, version=version)


async def test_random_operations_answer_as_adks_in_memory_service(
    artifacts: SessionaryArtifactService, live_server: str
) -> None:
    async with AsyncSessionaryClient(live_server) as client:
        Differential.service, Differential.client = artifacts, client
        Differential.loop = asyncio.get_running_loop()
        config = settings(
            max_examples=50,
            stateful_step_count=30,
            deadline=None,
            derandomize=True,  # the suite is green or red for the code alone
            suppress_health_check=list(HealthCheck),
        )
        await asyncio.to_thread(run_state_machine_as_test, Differential, settings=config)
    assert Differential.steps > 1000


class ReportingLlm(BaseLlm):
    """Calls `write_report` with the user's message, then says it is done."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = llm_request.contents[-1].parts or []
        if any(part.function_response for part in parts):
            yield LlmResponse(content=types.Content(role="model", parts=[text("done")]))
            return
        call = types.FunctionCall(name="write_report", args={"draft": parts[0].text})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


async def write_report(draft: str, tool_context: ToolContext) -> dict[str, int]:
    """Save the report; a chart too, when the draft asks for one; and the user's last draft."""
    saved = {"report.txt": await tool_context.save_artifact("report.txt", text(draft))}
    if draft.startswith("chart"):
        chart = inline(draft.encode(), "image/png")
        saved["chart.png"] = await tool_context.save_artifact("chart.png", chart)
    saved["user:last"] = await tool_context.save_artifact("user:last", text(draft))
    return saved


async def run(runner: Runner, session_id: str, message: str) -> None:
    content = types.Content(role="user", parts=[text(message)])
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=content):
        pass


async def test_adks_runner_saves_from_a_tool_and_rewinds_as_the_server_does(
    live_server: str, app_name: str
) -> None:
    """A tool saves through `tool_context.save_artifact`; then twins of the session are
    rewound, one by ADK's `Runner.rewind_async` through the adapter, one by the server's
    `:rewind`: both restore the report, remove the chart the rewound invocation made, leave
    the user's artifact alone, and name the same new versions in their rewind events."""
    sessions = SessionaryService(live_server)
    artifacts = SessionaryArtifactService(client=sessions.client)
    agent = LlmAgent(name="reporter", model=ReportingLlm(), tools=[write_report])
    runner = Runner(
        agent=agent, app_name=app_name, session_service=sessions, artifact_service=artifacts
    )
    session = await sessions.create_session(app_name=app_name, user_id=USER)
    await run(runner, session.id, "first draft")
    await run(runner, session.id, "chart and second draft")
    stored = await sessions.get_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert stored is not None
    assert [e.actions.artifact_delta for e in stored.events if e.actions.artifact_delta] == [
        {"report.txt": 0, "user:last": 0},
        {"report.txt": 1, "chart.png": 0, "user:last": 1},
    ]
    second = list(dict.fromkeys(event.invocation_id for event in stored.events))[1]
    twin = (await sessions.client.fork_session(app_name, USER, session.id))["id"]

    await runner.rewind_async(
        user_id=USER, session_id=session.id, rewind_before_invocation_id=second
    )
    await sessions.client.rewind_session(app_name, USER, twin, second)

    rewinds = []
    for session_id in (session.id, twin):
        where = {"app_name": app_name, "user_id": USER, "session_id": session_id}
        assert await artifacts.load_artifact(**where, filename="report.txt") == text("first draft")
        assert await artifacts.load_artifact(**where, filename="chart.png") is None
        assert await artifacts.list_versions(**where, filename="report.txt") == [0, 1, 2]
        assert await artifacts.list_versions(**where, filename="chart.png") == [0, 1]
        last = await artifacts.load_artifact(**where, filename="user:last")
        assert last == text("chart and second draft")
        rewound = await sessions.get_session(**where)
        assert rewound is not None
        rewinds.append(rewound.events[-1].actions.artifact_delta)
    assert rewinds[0] == rewinds[1] == {"report.txt": 2, "chart.png": 1}
    await sessions.close()
