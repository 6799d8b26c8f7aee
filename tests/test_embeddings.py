"""The embedders: WordLlama from its wheel, offline, and an OpenAI-compatible endpoint (WordLlama
behind a real HTTP server that the tests start), through failures; no database."""

import asyncio
import math
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.embeddings import (
    EmbeddingsUnavailable,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    embedder_from,
)
from tests.embedding_server import EmbeddingServer, serve_embeddings

ROOT = Path(__file__).resolve().parent.parent

TEXTS = [
    "I'm vegetarian",
    "what food do I like to eat?",
    "my dog is called Rex",
    "The quarterly report is due on Friday, and the figures for March are still missing.",
    "ok",
    "Mon vol pour Lisbonne part à 7 h 40 du terminal 2.",
    "   ",
    "def handler(event): return {'status': 200}",
    "🙂",
    "We moved to Oslo last spring; the kids started at the new school in August.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def assert_close(actual: list[list[float]], expected: list[list[float]]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a == pytest.approx(e, abs=1e-6)


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def _server() -> Iterator[EmbeddingServer]:
    with serve_embeddings() as server:
        yield server


@pytest.fixture
def endpoint(_server: EmbeddingServer) -> EmbeddingServer:
    """The module's endpoint, with no request seen and no failure planned."""
    _server.reset()
    return _server


def fast(server: EmbeddingServer, **options: object) -> OpenAIEmbedder:
    """An embedder of the endpoint that retries without the production's patience."""
    settings: dict[str, object] = {"backoff": 0.01, "timeout": 10.0, **options}
    return OpenAIEmbedder(server.url, server.model, **settings)  # type: ignore[arg-type]


# WordLlama, from the wheel


def without_network() -> list[str]:
    """A command's prefix that runs it in a network namespace of its own (no interface but a
    loopback that is down), where the system lets a user make one; else nothing."""
    command = ["unshare", "--map-root-user", "--net"]
    if shutil.which("unshare") and subprocess.run([*command, "true"]).returncode == 0:
        return command
    return []


@pytest.mark.parametrize("hub_offline", [True, False], ids=["HF_HUB_OFFLINE", "hub-online"])
def test_wordllama_loads_from_the_wheel_with_no_network_and_no_cache(
    tmp_path: Path, hub_offline: bool
) -> None:
    """With no network (and every proxy pointing nowhere besides), an empty home (no cache)
    that stays empty, and Hugging Face's hub told it is offline or not: a download attempted
    would fail, and a cache would appear."""
    home = tmp_path / "home"
    home.mkdir()
    script = textwrap.dedent(
        """
        import asyncio, logging
        from app.embeddings import WordLlamaEmbedder
        vectors = asyncio.run(WordLlamaEmbedder().embed(["offline"]))
        print(len(vectors), len(vectors[0]), logging.getLogger().handlers)
        """
    )
    nowhere = "http://127.0.0.1:9"  # discard: nothing listens there
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("HF_")},
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        **{name: nowhere for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
        "NO_PROXY": "",
        "no_proxy": "",
    }
    if hub_offline:
        env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        [*without_network(), sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    # wordllama's import configures the root logger: the embedder puts it back as it was.
    assert done.stdout.split() == ["1", "256", "[]"]
    assert list(home.iterdir()) == []


def test_without_the_package_the_reason_says_what_to_install() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.modules["wordllama"] = None  # as if the `embeddings` extra were not installed
        from app.embeddings import EmbeddingsUnavailable, WordLlamaEmbedder
        embedder = WordLlamaEmbedder()
        for _ in range(2):
            try:
                asyncio.run(embedder.embed(["x"]))
            except EmbeddingsUnavailable as error:
                print(error.reason)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    reasons = done.stdout.splitlines()
    assert len(reasons) == 2
    assert "pip install 'sessionary[embeddings]'" in reasons[0]
    assert reasons[0] == reasons[1]


async def test_wordllama_gives_256_unit_vectors_named_for_the_model(
    wordllama: WordLlamaEmbedder,
) -> None:
    vectors = await wordllama.embed(TEXTS)
    assert wordllama.model == "wordllama/l2_supercat_256"
    assert wordllama.dimensions == 256
    assert [len(vector) for vector in vectors] == [256] * len(TEXTS)
    for vector in vectors:
        assert all(isinstance(x, float) for x in vector)
        assert math.hypot(*vector) == pytest.approx(1.0, abs=1e-5)
    assert await wordllama.embed([]) == []


async def test_wordllama_is_deterministic(wordllama: WordLlamaEmbedder) -> None:
    assert await wordllama.embed(TEXTS) == await wordllama.embed(TEXTS)
    # In another process, from a fresh load.
    script = "import asyncio; from app.embeddings import WordLlamaEmbedder; "
    script += f"print(asyncio.run(WordLlamaEmbedder().embed({TEXTS[:3]!r})))"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    output, _ = await process.communicate()
    assert process.returncode == 0
    assert output.decode().strip() == str(await wordllama.embed(TEXTS[:3]))


async def test_batches_keep_each_text_in_its_place(wordllama: WordLlamaEmbedder) -> None:
    alone = [(await wordllama.embed([text]))[0] for text in TEXTS]
    for batch in (1, 3, 64):
        assert_close(await WordLlamaEmbedder(batch=batch).embed(TEXTS), alone)
    assert_close(await wordllama.embed(TEXTS[::-1]), alone[::-1])


async def test_a_statement_is_nearer_the_question_it_answers(
    wordllama: WordLlamaEmbedder,
) -> None:
    statement, question, unrelated = await wordllama.embed(
        ["I'm vegetarian", "what food do I like to eat?", "my dog is called Rex"]
    )
    assert cosine(statement, question) > cosine(statement, unrelated) + 0.1


async def test_a_question_is_embedded_by_its_content_words(
    wordllama: WordLlamaEmbedder,
) -> None:
    assert wordllama.query_text("What is my job?") == "job"
    assert wordllama.query_text("Where did I park the car?") == "park car"
    assert wordllama.query_text("Who am I?") == "Who am I?"  # nothing but function words
    assert OpenAIEmbedder.query_text(wordllama, "What is my job?") == "What is my job?"
    statement, unrelated = await wordllama.embed(
        ["I work as a nurse, mostly night shifts.", "I have an interview tomorrow, any advice?"]
    )
    question = await wordllama.embed_query("What do I do for a living?")
    assert cosine(statement, question) > cosine(unrelated, question)
    assert question == (await wordllama.embed(["living"]))[0]


async def test_a_long_text_is_cut_to_its_first_tokens() -> None:
    embedder = WordLlamaEmbedder(max_tokens=16)
    head = "the meeting with the accountants moved to Thursday morning at nine o'clock sharp"
    cut, whole, other = await embedder.embed([head, head + " but bring the dog", "the dog"])
    assert cut == pytest.approx(whole, abs=1e-6)
    assert cut != pytest.approx(other, abs=1e-3)


async def test_a_huge_text_costs_no_more_than_a_long_one(wordllama: WordLlamaEmbedder) -> None:
    huge = "lorem ipsum dolor sit amet " * 200_000  # 5.4 MB
    started = time.monotonic()
    [vector] = await wordllama.embed([huge])
    assert time.monotonic() - started < 5
    assert math.hypot(*vector) == pytest.approx(1.0, abs=1e-5)


async def test_an_empty_text_or_a_lone_string_is_refused(wordllama: WordLlamaEmbedder) -> None:
    with pytest.raises(ValueError, match="empty text"):
        await wordllama.embed(["fine", ""])
    with pytest.raises(TypeError, match="sequence of texts"):
        await wordllama.embed("one text")


# An OpenAI-compatible endpoint


async def test_the_endpoint_gives_what_the_model_behind_it_gives(
    endpoint: EmbeddingServer, wordllama: WordLlamaEmbedder
) -> None:
    embedder = fast(endpoint)
    try:
        # The endpoint answers out of order, with vectors 2.5 long: sorted, normalized.
        assert_close(await embedder.embed(TEXTS), await wordllama.embed(TEXTS))
    finally:
        await embedder.close()
    assert embedder.model == "wordllama"
    assert embedder.dimensions == 256  # learned from the answer
    [request] = endpoint.requests()
    assert request == {
        "model": "wordllama",
        "inputs": len(TEXTS),
        "dimensions": None,
        "encoding_format": "float",
        "authorization": None,
        "query": "",
    }


async def test_a_query_in_the_url_stays_on_the_endpoint(endpoint: EmbeddingServer) -> None:
    """As Azure OpenAI's `?api-version=` must."""
    embedder = OpenAIEmbedder(f"{endpoint.url}/?api-version=2024-02-01", endpoint.model)
    try:
        assert len(await embedder.embed(["x"])) == 1
    finally:
        await embedder.close()
    assert endpoint.requests()[0]["query"] == "api-version=2024-02-01"


async def test_texts_go_in_batches(endpoint: EmbeddingServer, wordllama: WordLlamaEmbedder) -> None:
    embedder = fast(endpoint, batch=4)
    try:
        assert_close(await embedder.embed(TEXTS), await wordllama.embed(TEXTS))
    finally:
        await embedder.close()
    assert [request["inputs"] for request in endpoint.requests()] == [4, 4, 2]


async def test_dimensions_are_asked_for_and_named_in_the_model(
    endpoint: EmbeddingServer, wordllama: WordLlamaEmbedder
) -> None:
    embedder = fast(endpoint, dimensions=64)
    try:
        vectors = await embedder.embed(TEXTS[:3])
    finally:
        await embedder.close()
    assert embedder.model == "wordllama@64"
    assert endpoint.requests()[0]["dimensions"] == 64
    # WordLlama's first 64 values, normalized (it was trained for that: Matryoshka).
    full = await wordllama.embed(TEXTS[:3])
    shortened = [[x / math.hypot(*v[:64]) for x in v[:64]] for v in full]
    assert_close(vectors, shortened)


async def test_transient_500s_and_429s_are_retried_honouring_retry_after(
    endpoint: EmbeddingServer, wordllama: WordLlamaEmbedder
) -> None:
    endpoint.fail_next(2, status=500)
    endpoint.fail_next(1, status=429, retry_after=0.5, message="Rate limit reached")
    embedder = fast(endpoint)
    started = time.monotonic()
    try:
        vectors = await embedder.embed(TEXTS[:2])
    finally:
        await embedder.close()
    assert time.monotonic() - started >= 0.5
    assert_close(vectors, await wordllama.embed(TEXTS[:2]))
    assert len(endpoint.requests()) == 4


async def test_a_timeout_is_retried(endpoint: EmbeddingServer) -> None:
    endpoint.stall_next(1, seconds=3)
    embedder = fast(endpoint, timeout=0.5)
    try:
        [vector] = await embedder.embed(["slow at first"])
    finally:
        await embedder.close()
    assert len(vector) == 256
    assert len(endpoint.requests()) == 2


async def test_an_endpoint_that_keeps_failing_is_unavailable_saying_how(
    endpoint: EmbeddingServer,
) -> None:
    endpoint.fail_next(3, status=503, message="The engine is currently overloaded")
    embedder = fast(endpoint, retries=2)
    try:
        with pytest.raises(EmbeddingsUnavailable) as failed:
            await embedder.embed(["x"])
    finally:
        await embedder.close()
    assert failed.value.status == 503
    assert failed.value.reason == (
        f"{endpoint.url}/embeddings answered HTTP 503: The engine is currently overloaded "
        "(tried 3 times)"
    )
    assert str(failed.value) == failed.value.reason
    assert len(endpoint.requests()) == 3


async def test_a_retry_after_longer_than_the_embedder_waits_is_passed_on(
    endpoint: EmbeddingServer,
) -> None:
    endpoint.fail_next(1, status=429, retry_after=120, message="Rate limit reached")
    embedder = fast(endpoint, max_wait=30)
    try:
        with pytest.raises(EmbeddingsUnavailable, match="asks to wait 120 s") as failed:
            await embedder.embed(["x"])
    finally:
        await embedder.close()
    assert failed.value.retry_after == 120
    assert failed.value.status == 429
    assert len(endpoint.requests()) == 1


async def test_an_endpoint_that_is_down_is_unavailable() -> None:
    with serve_embeddings() as server:
        embedder = fast(server, retries=2)
        try:
            assert len(await embedder.embed(["up"])) == 1
            server.stop()
            with pytest.raises(EmbeddingsUnavailable) as failed:
                await embedder.embed(["down"])
        finally:
            await embedder.close()
    assert failed.value.reason.startswith(f"{server.url}/embeddings cannot be reached (")
    assert failed.value.reason.endswith("(tried 3 times)")
    assert failed.value.status is None

    with socket.socket() as bound:  # a port of ours where nothing listens: refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        nobody = OpenAIEmbedder(f"http://me:secret@127.0.0.1:{port}/v1?key=secret", "m", retries=0)
        try:
            with pytest.raises(EmbeddingsUnavailable) as failed:
                await nobody.embed(["x"])
        finally:
            await nobody.close()
    # Without what a URL may carry of credentials.
    assert failed.value.reason.startswith(
        f"http://127.0.0.1:{port}/v1/embeddings cannot be reached (ConnectError: "
    )
    assert "secret" not in failed.value.reason


async def test_a_key_is_sent_as_a_bearer_and_a_wrong_one_is_a_clear_401() -> None:
    with serve_embeddings(key="sk-right") as server:
        right = fast(server, key="sk-right")
        wrong = fast(server, key="sk-wrong-and-secret")
        try:
            assert len(await right.embed(["x"])) == 1
            with pytest.raises(EmbeddingsUnavailable) as failed:
                await wrong.embed(["x"])
        finally:
            await right.close()
            await wrong.close()
        requests = server.requests()
    assert [request["authorization"] for request in requests] == [
        "Bearer sk-right",
        "Bearer sk-wrong-and-secret",
    ]  # a 401 is not retried
    assert failed.value.status == 401
    assert failed.value.reason == (
        f"{server.url}/embeddings answered HTTP 401: Incorrect API key provided: ***. "
        "(check SESSIONARY_EMBEDDINGS_KEY)"
    )


async def test_an_unknown_model_is_a_clear_404(endpoint: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder(endpoint.url, "text-embedding-9", backoff=0.01)
    try:
        with pytest.raises(EmbeddingsUnavailable, match="`text-embedding-9` does not exist") as e:
            await embedder.embed(["x"])
    finally:
        await embedder.close()
    assert e.value.status == 404
    assert e.value.reason.endswith(
        "(check SESSIONARY_EMBEDDINGS_URL and SESSIONARY_EMBEDDINGS_MODEL)"
    )
    assert len(endpoint.requests()) == 1


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"object": "list"}, "not OpenAI's embeddings (KeyError)"),
        ({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}, "embeddings indexed [0] for 2 texts"),
        ({"data": [{"index": 0, "embedding": [0.0]}, {"index": 1, "embedding": [1]}]}, "non-zero"),
        ({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1]}]}, "finite"),
        (
            {"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]},
            "embeddings of 1, 2 dimensions",
        ),
    ],
)
async def test_an_answer_that_is_not_embeddings_is_unavailable(
    endpoint: EmbeddingServer, answer: object, says: str
) -> None:
    endpoint.reply_next(answer)
    embedder = fast(endpoint)
    try:
        with pytest.raises(EmbeddingsUnavailable, match="is it an embeddings API") as failed:
            await embedder.embed(["one", "two"])
    finally:
        await embedder.close()
    assert says in failed.value.reason


async def test_vectors_of_another_size_than_asked_are_refused(endpoint: EmbeddingServer) -> None:
    endpoint.reply_next({"data": [{"index": 0, "embedding": [0.6, 0.8]}]})
    embedder = fast(endpoint, dimensions=3)
    try:
        with pytest.raises(EmbeddingsUnavailable, match="2 dimensions; 3 expected"):
            await embedder.embed(["x"])
    finally:
        await embedder.close()


# Choosing one


async def test_the_settings_choose_the_embedder() -> None:
    assert embedder_from(Settings(embeddings="none")) is None
    default = embedder_from(Settings(embeddings_batch=16))
    assert isinstance(default, WordLlamaEmbedder)
    assert default.batch == 16
    openai = embedder_from(
        Settings(
            embeddings="openai",
            embeddings_url="https://api.openai.com/v1",
            embeddings_model="text-embedding-3-small",
            embeddings_key="sk-x",
            embeddings_dimensions=512,
        )
    )
    assert isinstance(openai, OpenAIEmbedder)
    assert openai.model == "text-embedding-3-small@512"
    assert openai.dimensions == 512
    await openai.close()


def test_openai_without_its_url_or_model_is_refused_naming_them() -> None:
    with pytest.raises(
        ValueError, match="needs SESSIONARY_EMBEDDINGS_URL and SESSIONARY_EMBEDDINGS_MODEL:"
    ):
        embedder_from(Settings(embeddings="openai"))
    with pytest.raises(ValueError, match="needs SESSIONARY_EMBEDDINGS_MODEL:"):
        embedder_from(Settings(embeddings="openai", embeddings_url="http://127.0.0.1:1/v1"))
