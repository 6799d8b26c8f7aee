"""Embedders: the models that turn memories' text into unit vectors, for recall by meaning.

    Embedder                 batches, orders and checks; one per process, shared by tasks
    ├── WordLlamaEmbedder    the model inside the `wordllama` wheel, on this CPU, offline
    └── OpenAIEmbedder       any OpenAI-compatible `POST {url}/embeddings`, over httpx

`embedder_from(settings)` picks one (`SESSIONARY_EMBEDDINGS`). Every vector is recorded with
its embedder's `model`, so that a change of model is seen and recall compares like with like.
An embedder that cannot embed now raises `EmbeddingsUnavailable`, whose reason is for people:
the caller keeps recalling by words and says why.
"""

import asyncio
import contextlib
import logging
import math
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from email.utils import parsedate_to_datetime
from importlib.util import find_spec
from pathlib import Path
from time import time
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from app.config import Settings

if TYPE_CHECKING:
    from wordllama import WordLlamaInference

# Characters of a text that are embedded: the rest is cut before tokenizing, so that a huge
# text costs no more than a long one. A token is about 4 characters of English (1 or 2 of
# Chinese or Japanese), so this is past WordLlama's MAX_TOKENS for most text, and within the
# 8,191 tokens of OpenAI's models for all but text of emoji or rare scripts.
MAX_CHARS = 8192
# Tokens of a text that WordLlama averages. wordllama 0.4 tokenizes without truncation and
# pads each batch to its longest text, so one long text would cost its whole batch. The model
# was trained on texts cut at 256 tokens; an average over twice that keeps more of a long
# text while its cost stays bounded.
MAX_TOKENS = 512
# English function words (the Snowball list, which PostgreSQL's `english` search configuration
# also drops), left out of a question before WordLlama embeds it.
FUNCTION_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now""".split()
)


class EmbeddingsUnavailable(Exception):
    """The embedder cannot embed now: its package is missing, its endpoint is down, refuses
    the key or the model, or answers what is not embeddings. `reason` says which, for people
    (never the key); `status` is the endpoint's HTTP status when it gave one; `retry_after`,
    the seconds it asked to be left alone for, when it asked for longer than the embedder
    waits by itself."""

    def __init__(
        self, reason: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after


class Embedder(ABC):
    """Embeds texts into unit-length vectors, one per text, in order, `batch` texts a call.

    `model` names the vectors (stored with each); `dimensions` is their length, when known
    before the first answer. `embed` never blocks the event loop; `close` releases what the
    embedder holds.
    """

    model: str
    dimensions: int | None

    def __init__(self, *, batch: int) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.batch = batch

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in the order given. An empty text is a ValueError: it
        means nothing (and OpenAI's endpoint refuses it)."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one text")
        if any(not text for text in texts):
            raise ValueError("an empty text has nothing to embed")
        # Texts of like length go together: WordLlama pads a batch to its longest.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch):
            chunk = order[start : start + self.batch]
            embedded = await self._embed_batch([texts[i][:MAX_CHARS] for i in chunk])
            if len(embedded) != len(chunk):
                raise EmbeddingsUnavailable(
                    f"{self.model} gave {len(embedded)} vectors for {len(chunk)} texts"
                )
            for i, vector in zip(chunk, embedded, strict=True):
                vectors[i] = vector
        return vectors

    async def embed_query(self, text: str) -> list[float]:
        """The unit vector a recall compares memories with, for a query (not a memory)."""
        (vector,) = await self.embed([self.query_text(text)])
        return vector

    def query_text(self, text: str) -> str:
        """What of a query is embedded: all of it, unless the model is better served."""
        return text

    @abstractmethod
    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        """Unit vectors of at most `batch` texts, none empty, none past MAX_CHARS."""

    async def close(self) -> None:  # noqa: B027 - most embedders hold nothing to release
        """Release what the embedder holds (connections); it is not used after."""


class WordLlamaEmbedder(Embedder):
    """WordLlama's `l2_supercat` at 256 dimensions: token embeddings distilled from Llama 2,
    averaged, on this CPU with numpy. Its weights and tokenizer ship inside the `wordllama`
    wheel (the `embeddings` extra) and are loaded from there, once, on first use: nothing is
    downloaded, ever. Loading and embedding run in a thread."""

    CONFIG = "l2_supercat"
    DIMENSIONS = 256

    def __init__(self, *, batch: int = 64, max_tokens: int = MAX_TOKENS) -> None:
        super().__init__(batch=batch)
        self.model = f"wordllama/{self.CONFIG}_{self.DIMENSIONS}"
        self.dimensions = self.DIMENSIONS
        self.max_tokens = max_tokens
        self._inference: WordLlamaInference | None = None
        self._failed: EmbeddingsUnavailable | None = None
        self._loading = asyncio.Lock()

    def query_text(self, text: str) -> str:
        """The query's words without the function words, when it has others. WordLlama
        averages its tokens' vectors, so in a short question "what is my" weighs as much as
        "job" and the question lies nearest the user's other questions, not the statement that
        answers it (S19's paraphrases: recall@5 0.76 with them, 0.86 without)."""
        content = [word for word in re.findall(r"\w+", text) if word.lower() not in FUNCTION_WORDS]
        return " ".join(content) if content else text

    @staticmethod
    def installed() -> bool:
        """Whether the `wordllama` package is there to load (without importing it)."""
        return find_spec("wordllama") is not None

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        inference = await self._load()
        return await asyncio.to_thread(self._embed_now, inference, texts)

    @staticmethod
    def _embed_now(inference: "WordLlamaInference", texts: list[str]) -> list[list[float]]:
        import numpy as np

        # Normalized here, checked, rather than by `norm=True`, which makes NaN of a zero.
        pooled = inference.embed(texts, norm=False, batch_size=len(texts))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        if not np.all(norms > 0):  # only a text of no token, which `embed` has refused
            raise ValueError("a text without a token has no vector")
        vectors: list[list[float]] = (pooled / norms).tolist()
        return vectors

    async def _load(self) -> "WordLlamaInference":
        if self._inference is not None:
            return self._inference
        async with self._loading:
            if self._failed is not None:
                raise self._failed
            if self._inference is None:
                try:
                    self._inference = await asyncio.to_thread(self._load_now)
                except EmbeddingsUnavailable as error:
                    self._failed = error  # a missing package or file stays missing
                    raise
            return self._inference

    def _load_now(self) -> "WordLlamaInference":
        try:
            with _logging_untouched():
                import wordllama
        except ImportError as error:
            raise EmbeddingsUnavailable(
                f"WordLlama is not installed ({error}): install the `embeddings` extra "
                "(`pip install 'sessionary[embeddings]'`), or set SESSIONARY_EMBEDDINGS to "
                "`openai` or `none`"
            ) from error
        folder = Path(wordllama.__file__).parent
        try:
            # The wheel's weights are found under the package; its tokenizer only under a
            # cache folder's `tokenizers/`, which the package's own folder is. Without
            # `disable_download`, a file not found would be fetched from a model hub.
            inference = wordllama.WordLlama.load(
                config=self.CONFIG, dim=self.DIMENSIONS, cache_dir=folder, disable_download=True
            )
        except (OSError, ValueError) as error:
            raise EmbeddingsUnavailable(
                f"WordLlama's {self.CONFIG}_{self.DIMENSIONS} could not be loaded from "
                f"{folder} ({error}): reinstall the `embeddings` extra"
            ) from error
        inference.tokenizer.enable_truncation(max_length=self.max_tokens)
        return inference


@contextlib.contextmanager
def _logging_untouched() -> Iterator[None]:
    """wordllama's `inference` module calls `logging.basicConfig(level=INFO)` when imported,
    which would give the root logger a plain handler beside the service's JSON one (or
    before it is configured): what it changes is put back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)


class OpenAIEmbedder(Embedder):
    """Any endpoint that answers OpenAI's `POST /v1/embeddings`: OpenAI, Gemini's
    OpenAI-compatible endpoint, Ollama, vLLM, Hugging Face's TEI (started with
    `--auto-truncate`, as texts reach MAX_CHARS).

    `url` is the part before `/embeddings`. Connection errors, timeouts, 429 and 5xx are
    retried `retries` times with exponential backoff and jitter, waiting what the endpoint's
    Retry-After asks when it asks no more than `max_wait`; then, or on any other status, or
    an answer that is not embeddings, `EmbeddingsUnavailable` says what happened.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        key: str = "",
        dimensions: int | None = None,
        batch: int = 64,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_wait: float = 30.0,
    ) -> None:
        super().__init__(batch=batch)
        # `model@dimensions`: the same model shortened gives other vectors.
        self.model = f"{model}@{dimensions}" if dimensions else model
        self.dimensions = dimensions
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        base = httpx.URL(url)  # its query stays on the endpoint (Azure's `api-version`)
        self._endpoint = base.copy_with(path=base.path.rstrip("/") + "/embeddings")
        self._shown = _shown(self._endpoint)
        self._model = model
        self._key = key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout))

    async def close(self) -> None:
        await self._client.aclose()

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self._model, "input": texts, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        content = orjson.dumps(body)
        response = await self._post(content)
        # A batch's answer is megabytes of JSON: parsed and checked off the event loop.
        vectors = await asyncio.to_thread(self._vectors, response.content, len(texts))
        if self.dimensions is None:
            self.dimensions = len(vectors[0])
        return vectors

    async def _post(self, content: bytes) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        attempt = 0
        while True:
            asked: float | None = None
            status: int | None = None
            try:
                response = await self._client.post(self._endpoint, content=content, headers=headers)
            except httpx.TransportError as error:
                reason = f"{self._shown} {_transport_failure(error)}"
            else:
                if response.is_success:
                    return response
                status = response.status_code
                reason = (
                    f"{self._shown} answered HTTP {status}: "
                    f"{self._message(response)}{_hint(status)}"
                )
                if status != 429 and status < 500:
                    # The key, the model or the request: trying again would change nothing.
                    raise EmbeddingsUnavailable(reason, status=status)
                asked = _retry_after(response.headers)
                if asked is not None and asked > self.max_wait:
                    raise EmbeddingsUnavailable(
                        f"{reason} (it asks to wait {asked:g} s)", status=status, retry_after=asked
                    )
            if attempt == self.retries:
                tried = f" (tried {attempt + 1} times)" if attempt else ""
                raise EmbeddingsUnavailable(reason + tried, status=status)
            await asyncio.sleep(asked if asked is not None else self._pause(attempt))
            attempt += 1

    def _pause(self, attempt: int) -> float:
        """Exponential, with jitter so that workers that failed together retry apart."""
        return min(self.backoff * 2.0**attempt, self.max_wait) * random.uniform(0.75, 1.0)

    def _message(self, response: httpx.Response) -> str:
        """The endpoint's own words: OpenAI's `error.message`, TEI's `error`, FastAPI's
        `detail`, else its text; short, on one line, and never the key."""
        said: Any = None
        with contextlib.suppress(ValueError):
            answer = orjson.loads(response.content)
            if isinstance(answer, dict):
                said = answer.get("error") or answer.get("detail") or answer.get("message")
                if isinstance(said, dict):
                    said = said.get("message")
        text = str(said) if said else response.text or response.reason_phrase
        text = " ".join(text.split())
        if self._key:
            text = text.replace(self._key, "***")
        return text[:300] + ("…" if len(text) > 300 else "")

    def _vectors(self, content: bytes, count: int) -> list[list[float]]:
        try:
            data = orjson.loads(content)["data"]
            pairs = sorted((item["index"], item["embedding"]) for item in data)
        except (ValueError, TypeError, KeyError) as error:
            raise self._malformed(f"not OpenAI's embeddings ({type(error).__name__})") from error
        indices = [index for index, _ in pairs]
        if indices != list(range(count)):
            shown = f"{indices[:8]}"[:-1] + (", …]" if len(indices) > 8 else "]")
            raise self._malformed(f"embeddings indexed {shown} for {count} texts")
        vectors = [_unit(embedding) for _, embedding in pairs]
        if any(vector is None for vector in vectors):
            raise self._malformed("an embedding that is not a non-zero list of finite numbers")
        sizes = {len(vector) for vector in vectors if vector is not None}
        expected = self.dimensions
        if len(sizes) != 1 or (expected is not None and sizes != {expected}):
            shown = ", ".join(map(str, sorted(sizes)))
            asked = f"; {expected} expected" if expected is not None else ""
            raise self._malformed(f"embeddings of {shown} dimensions{asked}")
        return [vector for vector in vectors if vector is not None]

    def _malformed(self, what: str) -> EmbeddingsUnavailable:
        return EmbeddingsUnavailable(f"{self._shown} answered {what}: is it an embeddings API?")


def _unit(embedding: object) -> list[float] | None:
    if not isinstance(embedding, list) or not embedding:
        return None
    if not all(type(x) in (float, int) for x in embedding):
        return None
    norm = math.hypot(*embedding)
    if not math.isfinite(norm) or norm == 0:
        return None
    return [x / norm for x in embedding]


def _shown(url: httpx.URL) -> str:
    """The endpoint as a reason names it: no user, password or query, where a key may be."""
    return str(url.copy_with(username=None, password=None, query=None, fragment=None))


def _transport_failure(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.TimeoutException):
        return f"did not answer in time ({type(error).__name__})"
    return f"cannot be reached ({type(error).__name__}: {error or 'no detail'})"


def _hint(status: int) -> str:
    if status in (401, 403):
        return " (check SESSIONARY_EMBEDDINGS_KEY)"
    if status == 404:
        return " (check SESSIONARY_EMBEDDINGS_URL and SESSIONARY_EMBEDDINGS_MODEL)"
    return ""


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the endpoint asks to wait: OpenAI's `retry-after-ms`, or Retry-After in seconds
    or as an HTTP date."""
    with contextlib.suppress(ValueError):
        if "retry-after-ms" in headers:
            return max(float(headers["retry-after-ms"]) / 1000, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        return float(value)
    try:
        return max(parsedate_to_datetime(value).timestamp() - time(), 0.0)
    except (TypeError, ValueError):
        return None


def embedder_from(settings: Settings) -> Embedder | None:
    """The embedder the settings name; None for `none` (only the vectors clients send).

    `openai` without its URL or model is a ValueError naming what to set, for start-up to
    refuse; a missing WordLlama package is not: its embedder says so when asked to embed,
    and the service recalls by words meanwhile.
    """
    if settings.embeddings == "none":
        return None
    if settings.embeddings == "wordllama":
        return WordLlamaEmbedder(batch=settings.embeddings_batch)
    missing = [
        name
        for name, value in (
            ("SESSIONARY_EMBEDDINGS_URL", settings.embeddings_url),
            ("SESSIONARY_EMBEDDINGS_MODEL", settings.embeddings_model),
        )
        if not value
    ]
    if missing or settings.embeddings_url is None or settings.embeddings_model is None:
        raise ValueError(
            f"SESSIONARY_EMBEDDINGS=openai needs {' and '.join(missing)}: the endpoint's base "
            "URL (the part before /embeddings, e.g. https://api.openai.com/v1) and its model "
            "(e.g. text-embedding-3-small)"
        )
    return OpenAIEmbedder(
        settings.embeddings_url,
        settings.embeddings_model,
        key=settings.embeddings_key,
        dimensions=settings.embeddings_dimensions,
        batch=settings.embeddings_batch,
    )
