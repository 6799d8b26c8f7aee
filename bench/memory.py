"""S19, memory: what recall by meaning adds to recall by words, on an evaluation set of its
own, and what it costs at a million memories.

- Quality. `bench/memory_eval.json`, written for S19: users who state facts about themselves
  in ordinary turns ("I can't stand cilantro"), each answered by the model, often echoing the
  fact's words; around them chit-chat drawn from a shared pool and tool calls (a function call,
  its response, the model's summary) made from templates, all shuffled with a seed of the
  user's own into a few sessions. Each session is appended through the API, then added to
  memory (`POST …:remember`). Every fact is asked about four ways: a paraphrase, synonyms, an
  indirect question that needs the fact, and a control that shares its distinctive words. A
  fact counts as recalled when one of the first five memories answered is the event in which
  the user stated it (`source.eventIds`). Each question is asked by words alone, by meaning
  and words, and by meaning alone, on two servers: one that adds what the users said to
  memory (`SESSIONARY_MEMORY_FROM=user`, the default), one every text of the session (`all`).
- Speed. An app of `memory_app` memories, `memory_user` of them one user's, their texts
  generated and embedded by WordLlama through `app.embeddings` (the model's throughput on
  this host), loaded into `memories` and `memory_vectors` in bulk with the HNSW index dropped,
  then indexed by `sessionary migrate` (as one recreates an index after a bulk load; its
  statements given an hour) and analysed; they are marked embedded by the server's model, so
  its worker has nothing to do.
  Recall over HTTP, one request at a time; each half's own statement on a connection of its
  own, the meaning half two ways: as the server runs it and as an exact scan (index scans
  off), with how many of the exact ten nearest each finds and how often it used the HNSW
  index. Revisions are not loaded: recall never reads them.
- Backfill. `memory_backfill` events of sessions appended and added to memory through a
  server that embeds nothing, then a server with the default model, whose worker embeds them:
  its progress (`GET /embeddings`) and rate; S1's appends (bench/scenarios.py) on the first
  server, then while the worker embeds, then once it is done, with the CPU each part spent.
"""

import asyncio
import io
import itertools
import json
import math
import os
import random
import resource
import statistics
import string
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import httpx
import numpy as np
from sqlalchemy.engine import make_url

from app import vectors
from app.config import Settings
from app.domain import RecallQuery
from app.embeddings import WordLlamaEmbedder
from app.repositories import memories as memory_rows
from app.services.memories import CANDIDATES_PER_RESULT, MIN_CANDIDATES
from bench import cpu, databases, scenarios
from bench.clients import postmaster_of
from bench.scenarios import Burst
from bench.server import Server
from bench.sessionary_side import Sessionary
from bench.workload import Sizes as LoadSizes

EVALUATION = Path(__file__).with_name("memory_eval.json")
APP = "bench-memory"
KINDS = ("paraphrase", "synonym", "indirect", "keyword")
MODES = {"words": "words", "hybrid": "meaning+words", "meaning": "meaning"}
SOURCES = {"user": "users' statements", "all": "every text"}
TOP = 5  # recall@5
SPEED_LIMIT = 10  # what the timed recalls ask for
# What each half of such a recall ranks, as the service asks for it.
CANDIDATES = max(MIN_CANDIDATES, SPEED_LIMIT * CANDIDATES_PER_RESULT)
HEAVY_USER = "heavy"
PER_OTHER_USER = 1000  # memories of each other user of the speed app
CHUNK = 20_000  # texts embedded, and rows loaded, at a time
MiB = 1024 * 1024
EMBEDDING_WAIT = 3600.0  # seconds a server may take to embed what it was given


@dataclass(frozen=True)
class Sizes:
    """S19's sizes, each a flag (`--memory-users`, …)."""

    # Quality: users of the evaluation set loaded (it has 40), and what each one's sessions
    # hold beside the facts: chit-chat turns from the pool, tool calls.
    memory_users: int = 40
    memory_chat: int = 20
    memory_tools: int = 4
    # Speed: memories of the app, of them the one user's; timed recalls per mode; queries
    # compared with the exact scan.
    memory_app: int = 1_000_000
    memory_user: int = 100_000
    memory_recalls: int = 200
    memory_exact: int = 50
    # Backfill: events the worker embeds; S1 bursts while it embeds (and as many after).
    memory_backfill: int = 100_000
    memory_bursts: int = 5


QUICK = Sizes(
    memory_users=6,
    memory_chat=8,
    memory_tools=2,
    memory_app=20_000,
    memory_user=2_000,
    memory_recalls=20,
    memory_exact=10,
    memory_backfill=2_000,
    memory_bursts=2,
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Meter:
    """The CPU spent while S19 times something, over every block measured: this process's,
    the server's workers', the bench PostgreSQL's, and the host's busy and whole time; what
    other work took is the host's busy time less those three (the host is shared, and S19's
    timings move with it)."""

    pids: Callable[[], list[int]]
    postmaster: int
    spent: list[float] = field(default_factory=lambda: [0.0] * 5)

    def _read(self) -> list[float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        servers = sum(cpu.process_seconds(pid) for pid in self.pids())
        postgres = cpu.postgres_by_server().get(self.postmaster, 0.0)
        return [usage.ru_utime + usage.ru_stime, servers, postgres, *cpu.host_seconds()]

    @contextmanager
    def measure(self) -> Iterator[None]:
        before = self._read()
        yield
        for n, (was, now) in enumerate(zip(before, self._read(), strict=True)):
            self.spent[n] += now - was

    @property
    def elsewhere(self) -> float:
        """The share of the host's cores other work kept busy."""
        client, server, postgres, busy, whole = self.spent
        return max(0.0, busy - client - server - postgres) / whole if whole else math.nan

    def each(self, count: int) -> tuple[float, float, float]:
        """Microseconds of this process, the server and PostgreSQL per one of `count`."""
        client, server, postgres = (part / count * 1e6 for part in self.spent[:3])
        return client, server, postgres


# The evaluation set, as sessions and questions.


@dataclass(frozen=True)
class Question:
    user: str
    kind: str
    text: str
    fact: str  # the id of the event in which the user stated the fact
    ack: str  # the id of the model's answer to it
    said: str


@dataclass(frozen=True)
class Session:
    user: str
    id: str
    events: list[dict[str, Any]]


def _filled(template: Any, values: dict[str, str]) -> Any:
    """A tool template's strings with its slots filled, through dicts and lists."""
    if isinstance(template, str):
        return template.format_map(values)
    if isinstance(template, dict):
        return {key: _filled(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [_filled(value, values) for value in template]
    return template


def _said(event_id: str, author: str, text: str, invocation: str) -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {
        "id": event_id,
        "author": author,
        "invocationId": invocation,
        "content": {"role": role, "parts": [{"text": text}]},
    }


def _tool_call(
    ids: Callable[[], str], agent: str, tool: dict[str, Any], values: dict[str, str]
) -> list[dict[str, Any]]:
    """A user's request, the model's function call, its response, the model's summary."""
    invocation = ids()
    call = {"id": f"call-{invocation}", "name": tool["name"], "args": _filled(tool["args"], values)}
    answer = {"id": call["id"], "name": tool["name"], "response": _filled(tool["result"], values)}
    return [
        _said(ids(), "user", _filled(tool["ask"], values), invocation),
        {
            "id": ids(),
            "author": agent,
            "invocationId": invocation,
            "content": {"role": "model", "parts": [{"functionCall": call}]},
        },
        {
            "id": ids(),
            "author": agent,
            "invocationId": invocation,
            "content": {"role": "user", "parts": [{"functionResponse": answer}]},
        },
        _said(ids(), agent, _filled(tool["reply"], values), invocation),
    ]


def conversations(evaluation: dict[str, Any], sizes: Sizes) -> tuple[list[Session], list[Question]]:
    """Each user's sessions (two facts a session), their chit-chat and tool calls dealt among
    them and shuffled with a seed of the user's own; and the questions about each fact."""
    agent, chat, tools, slots = (evaluation[k] for k in ("agent", "chat", "tools", "slots"))
    sessions: list[Session] = []
    questions: list[Question] = []
    for user in evaluation["users"][: sizes.memory_users]:
        name, facts = user["id"], user["facts"]
        rng = random.Random(name)
        count = math.ceil(len(facts) / 2)
        turns: list[list[tuple[str, Any]]] = [[] for _ in range(count)]
        for n, fact in enumerate(facts):
            turns[n * count // len(facts)].append(("fact", fact))
        for n, item in enumerate(rng.sample(chat, sizes.memory_chat)):
            turns[n % count].append(("chat", item))
        for n in range(sizes.memory_tools):
            values = {slot: rng.choice(choices) for slot, choices in slots.items()}
            turns[n % count].append(("tool", (rng.choice(tools), values)))
        for number, told in enumerate(turns, start=1):
            rng.shuffle(told)
            session = f"{name}-s{number}"
            serial = itertools.count(1)

            def ids(session: str = session, serial: Iterator[int] = serial) -> str:
                return f"{session}-e{next(serial)}"

            events: list[dict[str, Any]] = []
            for kind, item in told:
                if kind == "tool":
                    events += _tool_call(ids, agent, *item)
                    continue
                invocation = ids()
                said = _said(ids(), "user", item["say" if kind == "fact" else "user"], invocation)
                reply = _said(ids(), agent, item["ack" if kind == "fact" else "model"], invocation)
                events += [said, reply]
                if kind == "fact":
                    questions += [
                        Question(name, k, item["ask"][k], said["id"], reply["id"], item["say"])
                        for k in KINDS
                    ]
            sessions.append(Session(name, session, events))
    return sessions, questions


# Quality.


def _user_path(user: str) -> str:
    return f"/apps/{APP}/users/{quote(user)}"


async def _expect(answer: Awaitable[httpx.Response], status: int = 200) -> Any:
    response = await answer
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.url} answered {response.status_code}: {response.text}"
        )
    return response.json()


async def load(http: httpx.AsyncClient, sessions: list[Session]) -> int:
    """Create each session with its events, then add it to memory: how many memories."""
    remembered = 0
    for session in sessions:
        path = f"{_user_path(session.user)}/sessions"
        await _expect(http.post(path, json={"sessionId": session.id}), 201)
        await _expect(
            http.post(f"{path}/{session.id}/events:batch", json={"events": session.events}), 201
        )
        added = await _expect(http.post(f"{path}/{session.id}:remember"))
        remembered += added["remembered"]
    return remembered


async def embedded(http: httpx.AsyncClient) -> dict[str, Any]:
    """The embeddings' status once nothing waits to be embedded; an error if the server
    recalls by words alone (S19 measures the model)."""
    async with asyncio.timeout(EMBEDDING_WAIT):
        while True:
            status: dict[str, Any] = await _expect(http.get("/embeddings"))
            if status["recall"] != "meaning+words":
                raise RuntimeError(f"the server cannot recall by meaning: {status['note']}")
            if status["pending"] == 0:
                return status
            await asyncio.sleep(0.5)


async def recall(
    http: httpx.AsyncClient, user: str, query: str, mode: str, limit: int
) -> list[dict[str, Any]]:
    body = {"query": query, "limit": limit, "mode": mode}
    found = await _expect(http.post(f"{_user_path(user)}/memories:recall", json=body))
    if found["recalledBy"] != MODES[mode]:
        raise RuntimeError(f"asked {mode}, recalled by {found['recalledBy']}: {found['note']}")
    answers: list[dict[str, Any]] = found["memories"]
    return answers


def _event_ids(answer: dict[str, Any]) -> list[str]:
    source = answer["memory"]["source"] or {}
    ids: list[str] = source.get("eventIds", [])
    return ids


@dataclass
class Quality:
    """Recall@5 by (source, mode, kind), and what was recalled instead, for the misses."""

    facts: int
    users: int
    asked: Counter[str]  # how often each question's text is asked
    remembered: dict[str, int] = field(default_factory=dict)
    hits: dict[tuple[str, str, str], list[bool]] = field(default_factory=dict)
    # (source, mode) → misses: the question, and the first text recalled
    misses: dict[tuple[str, str], list[tuple[Question, str]]] = field(default_factory=dict)
    # (source, mode) → misses where the model's acknowledgement was in the top five
    acks_instead: dict[tuple[str, str], int] = field(default_factory=dict)

    def recall_at(self, source: str, mode: str, kind: str | None = None) -> float:
        kinds = KINDS if kind is None else (kind,)
        found = [hit for k in kinds for hit in self.hits[(source, mode, k)]]
        return sum(found) / len(found)


async def ask_all(
    http: httpx.AsyncClient, questions: list[Question], source: str, quality: Quality
) -> None:
    """Every question in every mode, eight at a time; scored in the set's order."""
    gate = asyncio.Semaphore(8)

    async def ask(question: Question, mode: str) -> list[dict[str, Any]]:
        async with gate:
            return await recall(http, question.user, question.text, mode, TOP)

    asked = [(question, mode) for question in questions for mode in MODES]
    answered = await asyncio.gather(*(ask(question, mode) for question, mode in asked))
    for (question, mode), answers in zip(asked, answered, strict=True):
        recalled = [_event_ids(answer) for answer in answers]
        hit = any(question.fact in ids for ids in recalled)
        quality.hits.setdefault((source, mode, question.kind), []).append(hit)
        if hit:
            continue
        first = answers[0]["memory"]["text"] if answers else "(nothing)"
        quality.misses.setdefault((source, mode), []).append((question, first))
        if any(question.ack in ids for ids in recalled):
            quality.acks_instead[(source, mode)] = quality.acks_instead.get((source, mode), 0) + 1


async def run_quality(dsns: dict[str, str], sizes: Sizes) -> Quality:
    evaluation = json.loads(EVALUATION.read_text())
    sessions, questions = conversations(evaluation, sizes)
    users = len({session.user for session in sessions})
    asked = Counter(question.text for question in questions)
    quality = Quality(len(questions) // len(KINDS), users, asked)
    for source, dsn in dsns.items():
        env = {"SESSIONARY_AUTH": "false", "SESSIONARY_MEMORY_FROM": source}
        with Server(dsn, 2, env) as serve:
            base = f"http://{serve.host}:{serve.port}"
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                log(f"S19 quality, memory from {source}: {len(sessions)} sessions of {users} users")
                quality.remembered[source] = await load(http, sessions)
                await embedded(http)
                log(f"S19 quality: {len(questions)} questions, {len(MODES)} modes")
                await ask_all(http, questions, source, quality)
    return quality


# Speed: generated memories, as an agent's notes about a user's life would read.

NAMES = (
    "Ana Ben Chloe Dev Elif Farah Gus Hana Ivo Jin Kofi Lena Milo Nadia Omar Pia Quinn Rosa "
    "Sven Tara Umar Vera Wes Yusuf Zoe Arjun Bea Carlos Dina Emil Fatou Greta Hugo Ines Jonas"
).split()
CITIES = (
    "Porto Lisbon Berlin Munich Edinburgh Toronto Vancouver Seville Milan Zurich Vienna Cairo "
    "Nairobi Lagos Lyon Oslo Prague Madrid Delhi Boston Denver Brussels Accra Amman Marseille"
).split()
FOODS = (
    "sushi ramen tacos falafel pho curry lasagne paella dumplings risotto kebab salad burgers "
    "pancakes oysters goulash tapas bibimbap couscous pierogi"
).split()
PLACES = [
    "the corner cafe", "Luigi's", "the market hall", "the harbour bar", "the rooftop terrace",
    "the gym", "the library", "the station", "the airport", "the garden centre", "the office",
    "the school", "the clinic", "the bakery",
]  # fmt: skip
THINGS = [
    "keys", "passport", "laptop charger", "umbrella", "blue folder", "spare tyre", "bike lock",
    "camera", "headphones", "tent", "board game", "printer", "coffee machine", "winter coat",
]  # fmt: skip
ROOMS = ["office", "flat", "cabin", "studio", "guest house", "parents' house"]
PROJECTS = [
    "budget", "website redesign", "quarterly report", "kitchen renovation", "garden shed",
    "conference talk", "tax return", "wedding plans", "move", "hiring plan",
]  # fmt: skip
HOBBIES = (
    "climbing pottery chess sailing jazz baking photography gardening tennis yoga astronomy "
    "knitting"
).split()
DAYS = [
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow",
    "next week", "the 3rd", "the 17th", "the 28th",
]  # fmt: skip
HOURS = ["7:30", "9:00", "11:15", "13:00", "15:30", "18:45", "20:00"]
SKIES = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy"]
# Each with hundreds of thousands of fillings or more, so that few of a million repeat.
NOTES = [
    "{name} prefers {food} and can't stand {food2}; noted at {place} on {day}.",
    "Booked a table at {place} for {count} people on {day} at {hour}, under {name}'s name.",
    "The meeting with {name} about the {project} moved to {day} at {hour}, in {city}.",
    "Flight to {city} leaves on {day} at {hour}, seat {number}C.",
    "Remind {name} to bring the {thing} to {place} on {day} at {hour}.",
    "The {thing} in the {room} needs fixing before {day}; {name} quoted {number} euros.",
    "{name}'s birthday is on {day}; they live in {city} and love {hobby} and {food}.",
    "Paid {number} euros for the {thing} at {place} on {day}.",
    "Weather in {city} on {day} at {hour}: {sky}, {degrees} degrees.",
    "Called {name} in {city} about the {project}, follow up on {day} at {hour}.",
    "Reading a book about {hobby} that {name} recommended; up to page {number}.",
    "Parked on level {count} at {place} on {day}, bay {number}.",
    "The wifi password for the {room} is {code}.",
    "Ordered {food} from {place} for {name}; it arrives {day} around {hour}.",
    "Went {hobby} with {name} in {city}, back on {day} at {hour}.",
    "{name} moved to {city} and works on the {project} with {name2} now.",
    "Lent my {thing} to {name} at {place} on {day}; back by {day2}.",
    "Dinner at {place} in {city} with {name} on {day}: the {food} was excellent.",
]
QUERIES = [
    "What does {name} like to eat?",
    "When is my flight to {city}?",
    "Where did I park?",
    "What's the wifi password at the {room}?",
    "When is the meeting about the {project}?",
    "How much did I pay for the {thing}?",
    "Who recommended the book about {hobby}?",
    "When is {name}'s birthday?",
    "Which restaurant did I book for {day}?",
    "What was the weather like in {city}?",
    "Who has my {thing}?",
    "Where does {name} live now?",
]


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "name": rng.choice(NAMES),
        "name2": rng.choice(NAMES),
        "city": rng.choice(CITIES),
        "food": rng.choice(FOODS),
        "food2": rng.choice(FOODS),
        "place": rng.choice(PLACES),
        "thing": rng.choice(THINGS),
        "room": rng.choice(ROOMS),
        "project": rng.choice(PROJECTS),
        "hobby": rng.choice(HOBBIES),
        "day": rng.choice(DAYS),
        "day2": rng.choice(DAYS),
        "hour": rng.choice(HOURS),
        "sky": rng.choice(SKIES),
        "count": str(rng.randint(2, 9)),
        "number": str(rng.randint(10, 500)),
        "degrees": str(rng.randint(-5, 35)),
        "code": "".join(rng.choices(string.ascii_lowercase + string.digits, k=8)),
    }


def notes(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(NOTES).format_map(_slots(rng)) for _ in range(count)]


def queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUERIES).format_map(_slots(rng)) for _ in range(count)]


def owner_of(n: int, sizes: Sizes) -> str:
    """The speed app's memory `n`: the heavy user's first, then a thousand per other user."""
    if n < sizes.memory_user:
        return HEAVY_USER
    return f"u{(n - sizes.memory_user) // PER_OTHER_USER}"


@dataclass
class Throughput:
    """The model's, through `app.embeddings`: its calls alone timed."""

    texts_per_second: float
    cores: float  # this process's CPU over the calls' time: the cores the model kept busy
    elsewhere: float  # the share of the host's cores other work kept busy meanwhile


async def embed_all(
    texts: list[str], embedder: WordLlamaEmbedder, meter: Meter
) -> tuple[np.ndarray, Throughput]:
    """The texts' vectors, and how fast the model made them."""
    await embedder.embed(["warm up: the model loads on first use"])
    matrix = np.empty((len(texts), WordLlamaEmbedder.DIMENSIONS), dtype=np.float32)
    spent = used = 0.0
    with meter.measure():
        for start in range(0, len(texts), CHUNK):
            cpu_before, began = time.process_time(), time.perf_counter()
            embedded_chunk = await embedder.embed(texts[start : start + CHUNK])
            spent += time.perf_counter() - began
            used += time.process_time() - cpu_before
            matrix[start : start + CHUNK] = embedded_chunk
    return matrix, Throughput(len(texts) / spent, used / spent, meter.elsewhere)


def _copy_text(value: str) -> bytes:
    encoded = value.encode()
    return struct.pack(">i", len(encoded)) + encoded


def vector_rows(keys: list[tuple[str, str]], model: str, matrix: np.ndarray) -> bytes:
    """`memory_vectors` rows in COPY's binary format, built with numpy: asyncpg's encoding of
    a million arrays of 256 floats takes longer than embedding them."""
    rows, dimensions = matrix.shape
    cells = np.empty((rows, dimensions), dtype=[("size", ">i4"), ("value", ">f4")])
    cells["size"], cells["value"] = 4, matrix
    flat, width = cells.tobytes(), dimensions * 8
    # A one-dimensional real[] (element type 700, float4) of `dimensions` from index 1.
    array_head = struct.pack(">iiiiii", 20 + width, 1, 0, 700, dimensions, 1)
    app, named = _copy_text(APP), _copy_text(model)
    parts = [b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)]
    for n, (user, memory_id) in enumerate(keys):
        parts += (b"\x00\x05", app, _copy_text(user), _copy_text(memory_id), named, array_head)
        parts.append(flat[n * width : (n + 1) * width])
    parts.append(b"\xff\xff")
    return b"".join(parts)


def migrate_at_length(dsn: str) -> None:
    """`sessionary migrate`, its statements allowed an hour: the HNSW index of a million
    vectors takes minutes to build, and the service's 30 s (`SESSIONARY_DB_COMMAND_TIMEOUT`)
    would cancel it."""
    command = [str(Path(sys.executable).parent / "sessionary"), "migrate"]
    env = {**os.environ, "DATABASE_URL": dsn, "SESSIONARY_DB_COMMAND_TIMEOUT": "3600"}
    subprocess.run(command, check=True, env=env, capture_output=True)


@dataclass
class Loaded:
    memories_s: float
    index_s: float
    index_bytes: int
    analyze_s: float


async def load_app(
    dsn: str, texts: list[str], matrix: np.ndarray, model: str, sizes: Sizes
) -> Loaded:
    """The speed app's memories and vectors in bulk, then the HNSW index, as the service
    makes it, built by `sessionary migrate` (with memory enough to build it in memory)."""
    index = vectors.index_name(WordLlamaEmbedder.DIMENSIONS)
    config = Settings().search_config
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(f"DROP INDEX {index}")
        started = time.monotonic()
        for start in range(0, len(texts), CHUNK):
            ids = [f"m{n}" for n in range(start, min(start + CHUNK, len(texts)))]
            users = [owner_of(n, sizes) for n in range(start, start + len(ids))]
            async with connection.transaction():
                await connection.execute(
                    f"""INSERT INTO memories (app_name, user_id, id, kind, revision, text, search,
                            embedded_model)
                        SELECT $1, r.user_id, r.id, 'text', 1, r.text,
                            to_tsvector('{config}'::regconfig, r.text), $2
                        FROM unnest($3::text[], $4::text[], $5::text[]) AS r(user_id, id, text)""",
                    APP,
                    model,
                    users,
                    ids,
                    texts[start : start + len(ids)],
                )
                keys = list(zip(users, ids, strict=True))
                rows = vector_rows(keys, model, matrix[start : start + len(ids)])
                await connection.copy_to_table(
                    "memory_vectors",
                    source=io.BytesIO(rows),
                    columns=["app_name", "user_id", "memory_id", "model", "embedding"],
                    format="binary",
                )
        memories_s = time.monotonic() - started
        # pgvector builds the graph in memory when it fits: about 2 KiB a vector of 256.
        database = databases.database_name(dsn)
        memory = max(256, len(texts) * 2 // 1024 + 256)
        await connection.execute(
            f"ALTER DATABASE \"{database}\" SET maintenance_work_mem = '{memory}MB'"
        )
        started = time.monotonic()
        await asyncio.to_thread(migrate_at_length, dsn)
        index_s = time.monotonic() - started
        await connection.execute(f'ALTER DATABASE "{database}" RESET maintenance_work_mem')
        index_bytes = await connection.fetchval("SELECT pg_relation_size($1::regclass)", index)
        started = time.monotonic()
        await connection.execute("VACUUM ANALYZE memories, memory_vectors")
        analyze_s = time.monotonic() - started
    finally:
        await connection.close()
    return Loaded(memories_s, index_s, index_bytes, analyze_s)


@dataclass
class Latency:
    p50: float
    p95: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> "Latency":
        return cls(statistics.median(seconds) * 1000, percentile(seconds, 0.95) * 1000)


async def http_latency(base: str, asked: list[str], mode: str, meter: Meter) -> Latency:
    """Recalls of the heavy user, one at a time on one connection, after ten untimed."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for query in asked[:10]:
            await recall(http, HEAVY_USER, query, mode, SPEED_LIMIT)
        samples = []
        with meter.measure():
            for query in asked:
                began = time.perf_counter()
                await recall(http, HEAVY_USER, query, mode, SPEED_LIMIT)
                samples.append(time.perf_counter() - began)
    return Latency.of(samples)


# The meaning half's statement, two ways, each on a connection of its own: as the server
# runs it (planned for each query's vector: a prepared statement's generic plan skipped the
# index); with index scans off, which leaves the exact scan of every one of the user's vectors.
WAYS = {  # the setting of each, and what the report calls it
    "served": ("", "as the server runs it (planned for each query)"),
    "exact": ("SET LOCAL enable_indexscan = off", "exact scan (`enable_indexscan = off`)"),
}


@dataclass
class Way:
    latency: Latency
    found: list[list[float]]  # the similarity of each query's ten nearest
    index_scans: int  # of the HNSW index, by these statements


async def meaning_half(dsn: str, setting: str, asked: list[list[float]], model: str) -> Way:
    """`by_meaning` as a recall of the heavy user with limit 10 runs it."""
    index = vectors.index_name(WordLlamaEmbedder.DIMENSIONS)
    scans = "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = $1"
    connection = await asyncpg.connect(dsn)
    try:
        before = await connection.fetchval(scans, index)
        timed, found = [], []
        for vector in asked:
            query = RecallQuery(
                None, vector, model, SPEED_LIMIT, 0.0, 0.0, [], None, None, True, "meaning"
            )
            async with connection.transaction():
                if setting:
                    await connection.execute(setting)
                began = time.perf_counter()
                rows = await memory_rows.by_meaning(
                    connection, APP, [HEAVY_USER, ""], vector, model, query, CANDIDATES
                )
                timed.append(time.perf_counter() - began)
            found.append([similarity for _, _, similarity in rows[:SPEED_LIMIT]])
        await connection.execute("SELECT pg_stat_force_next_flush()")
        used = await connection.fetchval(scans, index) - before
    finally:
        await connection.close()
    return Way(Latency.of(timed), found, used)


@dataclass
class Nearest:
    ways: dict[str, Way]

    def recall_at_10(self, way: str) -> float:
        """The share of `way`'s ten that are among the exact ten nearest, on average: by
        similarity, not id, as two memories of one text are equally near."""
        exact = self.ways["exact"].found
        pairs = zip(self.ways[way].found, exact, strict=True)
        return statistics.mean(
            sum(similarity >= best[-1] - 1e-6 for similarity in found) / len(best)
            for found, best in pairs
        )


async def words_half(dsn: str, asked: list[str]) -> Latency:
    """`by_words` as a recall of the heavy user by meaning and words runs it (every word)."""
    config = Settings().search_config
    connection = await asyncpg.connect(dsn)
    try:
        timed = []
        for text in asked:
            query = RecallQuery(
                text, None, None, SPEED_LIMIT, 0.0, 0.0, [], None, None, True, "hybrid"
            )
            async with connection.transaction():
                began = time.perf_counter()
                await memory_rows.by_words(
                    connection,
                    APP,
                    [HEAVY_USER, ""],
                    text,
                    query,
                    config,
                    CANDIDATES,
                    beside_meaning=True,
                )
                timed.append(time.perf_counter() - began)
    finally:
        await connection.close()
    return Latency.of(timed)


async def nearest(dsn: str, asked: list[str], embedder: WordLlamaEmbedder) -> Nearest:
    query_vectors = [await embedder.embed_query(text) for text in asked]
    return Nearest(
        {
            way: await meaning_half(dsn, setting, query_vectors, embedder.model)
            for way, (setting, _) in WAYS.items()
        }
    )


@dataclass
class Speed:
    app: int
    user: int
    model: str
    throughput: Throughput
    text_chars: float
    loaded: Loaded
    http: dict[str, Latency]
    elsewhere: float  # the share of the cores other work kept busy during the recalls
    nearest: Nearest
    words: Latency  # the words half's statement beside meaning
    shared_buffers: str


async def run_speed(dsn: str, sizes: Sizes) -> Speed:
    embedder = WordLlamaEmbedder()
    texts = notes(sizes.memory_app, seed=19)
    log(f"S19 speed: embedding {len(texts):,} generated texts through app.embeddings")
    matrix, throughput = await embed_all(texts, embedder, Meter(list, await postmaster_of(dsn)))
    log(f"S19 speed: {throughput.texts_per_second:,.0f} texts/s; loading, then indexing them")
    loaded = await load_app(dsn, texts, matrix, embedder.model, sizes)
    del matrix  # a gigabyte at the default size
    asked = queries(sizes.memory_recalls, seed=91)
    with Server(dsn, 2, {"SESSIONARY_AUTH": "false"}) as serve:
        base = f"http://{serve.host}:{serve.port}"
        async with httpx.AsyncClient(base_url=base, timeout=600) as http:
            await embedded(http)
        meter = Meter(serve.worker_pids, await postmaster_of(dsn))
        latency = {}
        for mode in MODES:
            log(f"S19 speed: {len(asked)} recalls over HTTP, {MODES[mode]}")
            latency[mode] = await http_latency(base, asked, mode, meter)
    log(f"S19 speed: the meaning half by the HNSW index and exact, {sizes.memory_exact} queries")
    found = await nearest(dsn, asked[: sizes.memory_exact], embedder)
    words = await words_half(dsn, asked[: sizes.memory_exact])
    connection = await asyncpg.connect(dsn)
    try:
        shared_buffers = await connection.fetchval("SHOW shared_buffers")
    finally:
        await connection.close()
    chars = statistics.mean(len(text) for text in texts)
    return Speed(
        sizes.memory_app,
        sizes.memory_user,
        embedder.model,
        throughput,
        chars,
        loaded,
        latency,
        meter.elsewhere,
        found,
        words,
        shared_buffers,
    )


# Backfill, and appends while the worker embeds.


@dataclass
class Backfill:
    memories: int
    progress: list[tuple[float, int]]  # (seconds since the server was ready, pending)
    seconds: float
    rate_with_appends: float
    rate_alone: float
    # S1's bursts, and the CPU they spent: before the worker (a server without a model),
    # while it embeds, after it (nothing left to embed)
    phases: dict[str, tuple[list[Burst], Meter]]
    appends: int  # of each burst, its warm-up's with it


EVENTS_PER_SESSION = 100


async def bursts(
    system: Sessionary, appends: LoadSizes, count: int, label: str, meter: Meter
) -> list[Burst]:
    with meter.measure():
        return [await scenarios.append(system, appends, f"{label}{n}") for n in range(count)]


async def settle(dsn: str) -> None:
    """What a load leaves to do, done before anything is measured, as the other scenarios
    do: vacuumed and analysed (the search indexes' pending entries merged), checkpointed.
    Otherwise autovacuum takes the load's tables while the worker embeds, and the appends
    meanwhile pay for it."""
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()
    await databases.checkpoint(dsn)


async def seed_backfill(
    dsn: str, count: int, appends: LoadSizes, times: int
) -> tuple[list[Burst], Meter]:
    """Sessions of generated turns, appended and added to memory through a server that
    embeds nothing: every event waits for the next server's worker. Then S1's bursts on it."""
    texts = notes(count, seed=7)
    env = {
        "SESSIONARY_AUTH": "false",
        "SESSIONARY_EMBEDDINGS": "none",
        "SESSIONARY_MEMORY_FROM": "all",
    }
    with Server(dsn, 2, env) as serve:
        base = f"http://{serve.host}:{serve.port}"
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            sessions = []
            for first in range(0, count, EVENTS_PER_SESSION):
                number = first // EVENTS_PER_SESSION
                turns = texts[first : first + EVENTS_PER_SESSION]
                events = [
                    _said(
                        f"b{number}-e{n}", "user" if n % 2 == 0 else "assistant", text, f"i{n // 2}"
                    )
                    for n, text in enumerate(turns)
                ]
                sessions.append(Session(f"b{number % 100}", f"backfill-{number}", events))
            remembered = await load(http, sessions)
        if remembered != count:
            raise RuntimeError(f"{remembered} memories of {count} events")
        await settle(dsn)
        log(f"S19 backfill: {times} S1 bursts before the worker")
        meter = Meter(serve.worker_pids, await postmaster_of(dsn))
        system = Sessionary(serve.host, serve.port)
        return await bursts(system, appends, times, "s19-before", meter), meter


async def run_backfill(dsn: str, sizes: Sizes, appends: LoadSizes) -> Backfill:
    count = sizes.memory_backfill
    log(f"S19 backfill: {count:,} events appended and added to memory, not embedded")
    once = replace(appends, repeat=1)
    before = await seed_backfill(dsn, count, once, sizes.memory_bursts)
    env = {"SESSIONARY_AUTH": "false", "SESSIONARY_MEMORY_FROM": "all"}
    with Server(dsn, 2, env) as serve:
        started = time.monotonic()
        system = Sessionary(serve.host, serve.port)
        base = f"http://{serve.host}:{serve.port}"
        postmaster = await postmaster_of(dsn)
        busy_meter, idle_meter = (Meter(serve.worker_pids, postmaster) for _ in range(2))
        busy: list[Burst] = []
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            progress: list[tuple[float, int]] = []

            async def pending() -> int:
                status = await _expect(http.get("/embeddings"))
                progress.append((time.monotonic() - started, status["pending"]))
                return int(status["pending"])

            async def watch() -> None:
                while True:
                    if not await pending():
                        return
                    await asyncio.sleep(2)

            while True:  # until the worker has loaded its model and embedded a first batch
                first = await pending()
                if first < count:
                    break
                await asyncio.sleep(0.2)
            log(f"S19 backfill: the worker embeds; {sizes.memory_bursts} S1 bursts meanwhile")
            watcher = asyncio.create_task(watch())
            bursting = time.monotonic() - started
            for n in range(sizes.memory_bursts):
                if progress[-1][1] < count / 5:
                    break  # a burst now might outlast the worker's work
                busy += await bursts(system, once, 1, f"s19-busy{n}-", busy_meter)
            appended = time.monotonic() - started
            left = await pending()
            await watcher
            done = next(seconds for seconds, waiting in progress if waiting == 0)
            log("S19 backfill: done; as many S1 bursts with the worker idle")
            idle = await bursts(system, once, max(1, len(busy)), "s19-after", idle_meter)
    return Backfill(
        count,
        progress,
        done,
        (first - left) / (appended - bursting),
        left / (done - appended) if left else math.nan,
        {"before": before, "embedding": (busy, busy_meter), "after": (idle, idle_meter)},
        once.clients * 5 + once.append_events,
    )


# The report.

PHASES = {
    "before": "before the worker: a server without a model",
    "embedding": "while the worker embeds",
    "after": "after it: nothing left to embed",
}


@dataclass
class S19:
    sizes: Sizes
    quality: Quality
    speed: Speed
    backfill: Backfill
    minutes: float

    def lines(self) -> list[str]:
        q, s = self.quality, self.speed
        columns = [(source, mode) for source in SOURCES for mode in MODES]
        lines = [
            f"S19 memory: recall@{TOP} of {q.facts} facts stated by {q.users} users "
            f"(`bench/memory_eval.json`), each asked four ways; a fact is recalled when the "
            f"event in which the user stated it is among the first {TOP} memories answered.",
            "",
            "| S19 recall@5 | "
            + " | ".join(f"{MODES[mode]}, {SOURCES[source]}" for source, mode in columns)
            + " |",
            "|---|" + "--:|" * len(columns),
        ]
        for kind in (*KINDS, None):
            label = f"{kind} ({q.facts})" if kind else f"all kinds ({q.facts * len(KINDS)})"
            cells = [f"{q.recall_at(source, mode, kind):.2f}" for source, mode in columns]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        acks = ", ".join(
            f"{MODES[mode]} {q.acks_instead.get(('all', mode), 0)} of "
            f"{len(q.misses.get(('all', mode), []))}"
            for mode in MODES
        )
        lines += [
            "",
            f"- S19: memories added: {q.remembered['user']:,} from the users' statements, "
            f"{q.remembered['all']:,} from every text (acknowledgements, chit-chat replies, "
            "tool calls and responses, which add their function's name).",
            f"- S19: misses over every text where the model's acknowledgement of the fact was "
            f"in the top {TOP} instead: {acks}.",
        ]
        misses = q.misses.get(("user", "hybrid"), [])
        repeated = Counter(question.text for question, _ in misses).most_common(3)
        often = ", ".join(f'"{text}" {n} of {q.asked[text]}' for text, n in repeated if n > 1)
        lines.append(
            f"- S19: misses by {MODES['hybrid']} over the users' statements"
            + (f", the questions missed most often: {often}" if often else "")
            + "; the first two of each kind (question → the first memory recalled; the fact):"
        )
        for kind in KINDS:
            for question, first in [m for m in misses if m[0].kind == kind][:2]:
                lines.append(
                    f'  - {kind}: "{question.text}" → "{first}"; the fact: "{question.said}"'
                )
        n = s.nearest
        queried = len(n.ways["exact"].found)
        lines += [
            "",
            f"S19 speed: recall of one user holding {s.user:,} memories in an app of {s.app:,}, "
            f"limit {SPEED_LIMIT}, one request at a time over HTTP ({self.sizes.memory_recalls} "
            f"queries); each half's statement on a connection of its own (asyncpg, "
            f"{queried} queries), the meaning half two ways: recall@10 is how many of the exact "
            "ten nearest it found, index scans how often it used the HNSW index; PostgreSQL's "
            f"shared_buffers {s.shared_buffers}.",
            "",
            "| S19 recall | p50 ms | p95 ms | recall@10 | index scans |",
            "|---|--:|--:|--:|--:|",
            *(
                f"| over HTTP, {MODES[mode]} | {lat.p50:.1f} | {lat.p95:.1f} | | |"
                for mode, lat in s.http.items()
            ),
            *(
                f"| the meaning half, {WAYS[name][1]} | {way.latency.p50:.1f} "
                f"| {way.latency.p95:.1f} | {n.recall_at_10(name):.2f} "
                f"| {way.index_scans} of {queried} |"
                for name, way in n.ways.items()
            ),
            f"| the words half beside meaning (every word) | {s.words.p50:.1f} "
            f"| {s.words.p95:.1f} | | |",
            "",
            f"- S19: other work on the host kept {s.elsewhere:.0%} of its cores busy during the "
            "recalls over HTTP.",
            f"- S19: the model ({s.model}) embedded {s.app:,} texts of {s.text_chars:.0f} "
            f"characters on average at {s.throughput.texts_per_second:,.0f} texts/s through "
            f"`app.embeddings` (batches of 64, as the worker's), keeping "
            f"{s.throughput.cores:.2f} cores busy; other work kept "
            f"{s.throughput.elsewhere:.0%} of the host's busy meanwhile.",
            f"- S19: loaded {s.app:,} memories with their vectors in {s.loaded.memories_s:.0f} s; "
            f"the HNSW index built in {s.loaded.index_s / 60:.1f} min "
            f"({s.loaded.index_bytes / MiB:,.0f} MB); VACUUM ANALYZE {s.loaded.analyze_s:.0f} s.",
            "",
            *self.backfill_lines(),
            "",
            f"- S19 took {self.minutes:.1f} min.",
        ]
        return lines

    def backfill_lines(self) -> list[str]:
        b = self.backfill
        polled = list(dict.fromkeys((round(seconds), left) for seconds, left in b.progress))
        marks = sorted({polled[round(i * (len(polled) - 1) / 8)] for i in range(9)})
        shown = ", ".join(f"{seconds} s: {left:,}" for seconds, left in marks)
        whole = 1_000_000 / b.rate_alone / 60 if b.rate_alone == b.rate_alone else math.nan
        lines = [
            f"S19 backfill: the worker embedded {b.memories:,} events (memories of kind `event`) "
            f"in {b.seconds:.0f} s: {b.rate_with_appends:,.0f}/s while S1's bursts ran, "
            f"{b.rate_alone:,.0f}/s alone after them; at that rate 1,000,000 would take "
            f"{whole:.0f} min (extrapolated, not measured). Pending over time: {shown}.",
            "",
            "| S19 appends (S1, the Python generator) | events/s | p50 ms | p99 ms "
            "| CPU µs per append: this process | server | PostgreSQL | other work's share |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for phase, (made, meter) in b.phases.items():
            label = f"{PHASES[phase]} ({len(made)} bursts)"
            if not made:
                lines.append(f"| {label} | n/a | n/a | n/a | n/a | n/a | n/a | n/a |")
                continue
            m = scenarios.median_burst(made)
            parts = " | ".join(f"{part:,.0f}" for part in meter.each(len(made) * b.appends))
            lines.append(
                f"| {label} | {m.events_per_second:,.0f} | {m.p50_ms:.1f} | {m.p99_ms:.1f} "
                f"| {parts} | {meter.elsewhere:.0%} |"
            )
        lines += [
            "",
            "- S19: the CPU per append is all that each part spent during the bursts over the "
            "appends made (the worker's embedding is in the server's, its vectors' inserts in "
            "PostgreSQL's); other work's share, of the host's cores meanwhile.",
        ]
        return lines

    def append_ratio(self) -> float:
        """S1's events/s while the worker embeds over its rate before and after, the median
        burst each: the idle bursts on either side in time, as the host's load drifts."""
        phases = self.backfill.phases
        if not phases["embedding"][0]:
            return math.nan
        idle = [*phases["before"][0], *phases["after"][0]]
        busy = scenarios.median_burst(phases["embedding"][0]).events_per_second
        return busy / scenarios.median_burst(idle).events_per_second

    def targets(self) -> list[tuple[str, bool, str]]:
        q, s = self.quality, self.speed
        paraphrase = q.recall_at("user", "hybrid", "paraphrase")
        keyword, words = (
            q.recall_at("user", "hybrid", "keyword"),
            q.recall_at("user", "words", "keyword"),
        )
        p95 = s.http["hybrid"].p95
        ratio = self.append_ratio()
        return [
            (
                "S19: recall@5 ≥ 0.8 on paraphrases, meaning+words (the default model and source)",
                paraphrase >= 0.8,
                f"{paraphrase:.2f}",
            ),
            (
                "S19: keyword questions, meaning+words no worse than words alone",
                keyword >= words,
                f"{keyword:.2f} against {words:.2f}",
            ),
            (
                f"S19: recall p95 ≤ 50 ms, meaning+words, {s.user:,} memories of a user, "
                f"{s.app:,} in the app",
                p95 <= 50,
                f"{p95:.1f} ms (p50 {s.http['hybrid'].p50:.1f})",
            ),
            (
                "S19: appends while the worker embeds ≥ 0.9x their rate before and after",
                ratio >= 0.9,
                f"{ratio:.2f}x",
            ),
        ]

    def report(self) -> str:
        """Its lines, then its targets' table."""
        lines = [*self.lines(), "", "| Target | Met | Measured |", "|---|---|---|"]
        for name, met, detail in self.targets():
            lines.append(f"| {name} | {'yes' if met else '**no**'} | {detail} |")
        return "\n".join(lines)


def _dsn(database_url: str, name: str) -> str:
    url = make_url(database_url.replace("postgres://", "postgresql://", 1))
    return url.set(drivername="postgresql", database=name).render_as_string(hide_password=False)


async def recreate(database_url: str, dsns: Sequence[str]) -> None:
    """Drop and create S19's databases (never the one DATABASE_URL names), then migrate."""
    admin_dsn = _dsn(database_url, make_url(database_url).database or "postgres")
    admin = await asyncpg.connect(admin_dsn)
    try:
        for dsn in dsns:
            name = databases.database_name(dsn)
            if name == databases.database_name(admin_dsn):
                raise SystemExit(f"refusing to drop {name!r}: it is the DATABASE_URL database")
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    for dsn in dsns:
        await asyncio.to_thread(databases.migrate, dsn)


async def run(database_url: str, prefix: str, sizes: Sizes, appends: LoadSizes) -> S19:
    """S19 on databases of its own on the server of `database_url`: `<prefix>_memory_user`
    and `_all` (quality), `_speed` and `_backfill`."""
    started = time.monotonic()
    names = {
        part: _dsn(database_url, f"{prefix}_memory_{part}")
        for part in ("user", "all", "speed", "backfill")
    }
    await recreate(database_url, list(names.values()))
    quality = await run_quality({"user": names["user"], "all": names["all"]}, sizes)
    speed = await run_speed(names["speed"], sizes)
    backfill = await run_backfill(names["backfill"], sizes, appends)
    return S19(sizes, quality, speed, backfill, (time.monotonic() - started) / 60)
