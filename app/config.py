"""Settings: every knob of the service, read once from the environment."""

import importlib
import re
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, PostgresDsn, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.limits import MAX_LIFETIME, MIN_LIFETIME
from app.rules.context import TokenEstimator
from app.rules.events import EventLimits

MiB = 1024 * 1024


class Settings(BaseSettings):
    """Environment variables are `SESSIONARY_<NAME>`, except the conventional `DATABASE_URL`."""

    model_config = SettingsConfigDict(env_prefix="SESSIONARY_", extra="ignore")

    database_url: PostgresDsn | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "SESSIONARY_DATABASE_URL"),
        description="PostgreSQL to use. Unset: `serve` starts an embedded PostgreSQL.",
    )
    database_direct_url: PostgresDsn | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_DIRECT_URL", "SESSIONARY_DATABASE_DIRECT_URL"),
        description="PostgreSQL itself, when DATABASE_URL goes through a transaction pooler: "
        "each worker's one listening connection for live streams (LISTEN needs a connection "
        "of its own). Unset: DATABASE_URL.",
    )
    database_read_url: PostgresDsn | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_READ_URL", "SESSIONARY_DATABASE_READ_URL"),
        description="A read replica of DATABASE_URL for session reads (`GET …/sessions/{id}` "
        "and its events' pages); a read with `minVersion` falls back to the primary while the "
        "replica lacks that version, one with `minPosition` while it has not replayed that "
        "far. Unset: every read goes to DATABASE_URL.",
    )
    db_transaction_pooling: bool = Field(
        default=False,
        description="DATABASE_URL goes through a transaction pooler (PgBouncer with "
        "`pool_mode = transaction`): no prepared statement outlives its transaction. Needs "
        "DATABASE_DIRECT_URL. `statement_cache_size=0` in DATABASE_URL also turns it on.",
    )
    data_dir: Path = Field(
        default=Path(".sessionary"),
        description="Where the embedded PostgreSQL keeps its data (only without DATABASE_URL).",
    )
    db_pool_size: int = Field(
        default=20,
        ge=1,
        description="Connections each worker keeps open, for every request that reads or "
        "writes; a request beyond them waits for one (503 after SESSIONARY_DB_CONNECT_TIMEOUT).",
    )
    append_lanes: int = Field(
        default=2,
        ge=0,
        description="Appends each worker writes at once. Appends that arrive while all of "
        "them are busy are written together, in one statement and one commit, each still all "
        "or nothing and answered on its own (group commit): PostgreSQL's cost per append "
        "falls as load rises. 0: every append is written on its own, at once (as on Citus).",
    )
    citus_direct_appends: bool = Field(
        default=True,
        description="On Citus, send each append straight to the worker holding its user's "
        "shard, over connections of its own (SESSIONARY_DB_POOL_SIZE to each worker), rather "
        "than through the coordinator. The workers must accept the service's connections at "
        "the addresses Citus's metadata gives them; one that cannot be reached gets its "
        "appends through the coordinator. Off behind a transaction pooler.",
    )
    citus_custom_plans: bool = Field(
        default=True,
        description="On Citus, plan every statement for its own values "
        "(`plan_cache_mode = force_custom_plan`). Citus 13.2.2, and any release without "
        "citusdata/citus#8824, plans a statement prepared on a node holding its shard anew on "
        "each run and keeps every plan: without this, the service's connections to such a "
        "node grow by ~230 kB per append. `false` only on a Citus with that fix, where an "
        "append then costs its worker about half the CPU.",
    )
    db_connect_timeout: float = Field(
        default=5.0, gt=0, description="Seconds to wait for a database connection."
    )

    db_command_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds one database statement may take before the request gets a 503.",
    )
    ready_timeout: float = Field(
        default=2.0,
        gt=0,
        description="Seconds `/readyz` waits for the database before answering 503.",
    )
    opentelemetry: bool = Field(
        default=False,
        description="Turn on FastAPI's OpenTelemetry spans, metrics and logs of each request, "
        "sent to the OpenTelemetry SDK the process configures. Off, requests skip the checks.",
    )
    log_level: str = Field(default="INFO", description="Log level of the JSON logs on stderr.")
    shutdown_timeout: int = Field(
        default=30, gt=0, description="Seconds in-flight requests get to finish on SIGTERM."
    )
    keep_alive_timeout: int = Field(
        default=75,
        gt=0,
        description="Seconds an idle client connection is kept open. Longer than clients' "
        "pools keep theirs (httpx 5 s, Node 4 s), so that a client never sends a request into "
        "a connection the server is closing; a proxy in front must close its idle ones sooner.",
    )

    auth: bool | None = Field(
        default=None,
        description="Require API keys. Unset: on whenever DATABASE_URL is set (off for the "
        "embedded development database).",
    )
    auth_cache_seconds: float = Field(
        default=0.0,
        ge=0,
        description="How long a worker trusts a verified key without asking the database again; "
        "a revocation takes effect within it. 0: every request checks its key.",
    )

    max_header_line_bytes: int = Field(
        default=8 * 1024,
        ge=1024,
        description="Longest request line or single header line; longer is a 431.",
    )
    max_header_bytes: int = Field(
        default=64 * 1024,
        ge=4096,
        description="Largest request head (request line and every header); larger is a 431.",
    )
    max_body_bytes: int = Field(
        default=16 * MiB, ge=1024, description="Largest request body; larger is a 413."
    )
    max_json_depth: int = Field(default=64, ge=2, description="Deepest JSON nesting accepted.")
    max_artifact_bytes: int = Field(
        default=512 * MiB,
        ge=1024,
        description="Largest artifact version one save may upload (streamed, never held whole); "
        "larger is a 413 and nothing is kept. Artifacts are the one body past "
        "SESSIONARY_MAX_BODY_BYTES.",
    )
    max_import_bytes: int = Field(
        default=4 * 1024 * MiB,
        ge=1024,
        description="Largest export a user's import (`POST /apps/{app}/users/{user}:import`) "
        "takes (streamed into one transaction, never held whole); larger is a 413 and "
        "nothing is kept.",
    )
    artifact_store: str | None = Field(
        default=None,
        pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$",
        description="Where artifacts' bytes go: unset, PostgreSQL; `s3://bucket/prefix/`, an "
        "S3-compatible object store (SESSIONARY_S3_*), everything else staying in PostgreSQL.",
    )
    s3_endpoint: str = Field(
        default="https://s3.amazonaws.com",
        description="The object store's URL (MinIO, SeaweedFS, R2, …: theirs), reached "
        "path-style: `{endpoint}/{bucket}/{key}`.",
    )
    s3_region: str = Field(default="us-east-1", description="The region requests are signed for.")
    s3_access_key_id: str = Field(default="", description="The object store's access key id.")
    s3_secret_access_key: str = Field(
        default="", repr=False, description="The object store's secret access key."
    )
    artifact_orphan_grace: float = Field(
        default=3600.0,
        gt=0,
        description="Seconds after which an object of the object store that no artifact "
        "points at (a save that failed before it was recorded, bytes of a deleted artifact) is "
        "deleted by the sweeper; longer than any upload takes.",
    )
    artifact_chunk_bytes: int = Field(
        default=1 * MiB,
        ge=4096,
        le=64 * MiB,
        description="The size of the rows an artifact's bytes are stored in, and so about the "
        "memory each upload or download holds at once.",
    )
    max_event_bytes: int = Field(
        default=4 * MiB, ge=1024, description="Largest single event (serialized JSON)."
    )
    max_state_bytes: int = Field(
        default=4 * MiB,
        ge=1024,
        description="Largest stored state of one scope (session, user or app) after a merge.",
    )
    max_events_per_request: int = Field(
        default=1000, ge=1, description="Most events accepted in one request."
    )
    tool_call_timeout: float = Field(
        default=300.0,
        gt=0,
        description="Seconds after which an unanswered function call (not one of ADK's "
        "`longRunningToolIds`) counts as orphaned, when `timeoutSeconds` is not given.",
    )
    max_streams: int = Field(
        default=1000,
        ge=1,
        description="Live streams one worker serves at once; past it a new one is a 503.",
    )
    stream_buffer: int = Field(
        default=1000,
        ge=1,
        description="Frames a live stream may fall behind its session before it is dropped "
        "(the client reconnects with Last-Event-ID and loses nothing).",
    )
    stream_heartbeat: float = Field(
        default=15.0,
        gt=0,
        description="Seconds of quiet after which a live stream sends a heartbeat comment.",
    )
    default_ttl: float | None = Field(
        default=None,
        ge=MIN_LIFETIME,
        le=MAX_LIFETIME,
        description="Seconds a new session lives (forks and children too) when its create "
        "gives neither `ttl` nor `expireTime`. Unset: sessions are kept until deleted.",
    )
    sweep_interval: float = Field(
        default=60.0,
        gt=0,
        description="Seconds between two sweeps of expired sessions by each worker (one "
        "sweeper at a time across workers and replicas).",
    )
    sweep_batch: int = Field(
        default=100,
        ge=1,
        description="Expired sessions deleted per transaction by a sweep, so that a sweep "
        "never holds many locks for long.",
    )
    search_config: str = Field(
        default="english",
        pattern=r"^[a-z_][a-z0-9_.]*$",
        description="PostgreSQL text-search configuration of search (`simple`, `english`, "
        "`french`, …): how words are split and stemmed. Events are indexed with the one set "
        "when they are written: set it before storing events.",
    )
    search_candidates: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="Matches a search ranks together: hits come best first among the newest "
        "this many matches, then among the next this many older ones, and so on, so that a "
        "search costs about the same whatever the words and however many events the app has.",
    )
    copy_concurrency: int = Field(
        default=1,
        ge=1,
        description="History copies one worker makes at once (a fork, a child that inherits "
        "its parent's events): more wait their turn, before they take a connection, so that "
        "forks of long sessions cannot take the cores and connections appends need.",
    )
    search_concurrency: int = Field(
        default=2,
        ge=1,
        description="Searches one worker runs at once; past it a search is refused at once "
        "(503 `search_busy`), so that searches never take the cores appends need.",
    )
    search_timeout: float = Field(
        default=2.0,
        gt=0,
        description="Seconds a search may run in PostgreSQL before it is stopped (503 "
        "`search_timeout`, which says how to narrow it).",
    )
    embeddings: Literal["wordllama", "openai", "none"] = Field(
        default="wordllama",
        description="Who embeds memories for recall by meaning, off the request path: "
        "`wordllama`, the model that ships with the `wordllama` package (256 dimensions, on "
        "the server's CPU, no key, no download); `openai`, any OpenAI-compatible "
        "`/v1/embeddings` endpoint (`SESSIONARY_EMBEDDINGS_URL`, `_MODEL`, `_KEY`); `none`, "
        "only the vectors clients send. Each vector records its model: a change of model "
        "re-embeds every memory in the background, and recall compares like with like.",
    )
    embeddings_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        description="The OpenAI-compatible endpoint's base URL, the part before `/embeddings` "
        "(`https://api.openai.com/v1`, `http://localhost:11434/v1` for Ollama).",
    )
    embeddings_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The endpoint's model (`text-embedding-3-small`, `nomic-embed-text`).",
    )
    embeddings_key: str = Field(
        default="", repr=False, description="The endpoint's API key (a bearer token), if any."
    )
    embeddings_dimensions: int | None = Field(
        default=None,
        ge=1,
        le=16_000,
        description="Dimensions to ask the endpoint for, where its model can shorten its "
        "vectors (OpenAI's `text-embedding-3-*`); unset, the model's own.",
    )
    embeddings_batch: int = Field(
        default=64,
        ge=1,
        le=2048,
        description="Texts embedded per call to the model.",
    )
    embeddings_pace: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="The share of its time the embedding worker works while the database is "
        "busy (two or more other connections running statements): it rests the rest, so that "
        "a backfill takes no more than this of what appends need. Otherwise it works "
        "throughout. 1: never rests.",
    )
    memory_from: Literal["user", "all"] = Field(
        default="user",
        description="What a session adds to memory (`add_session_to_memory`): `user`, the "
        "text of the events the user wrote; `all`, the text of every event. The users' own "
        "statements are recalled better (docs/memory.md: S19).",
    )
    audit_secret: str = Field(
        default="",
        repr=False,
        description="The key of the audit log's pseudonyms (a keyed hash names each user), 32 "
        "bytes or more of randomness. Unset: one the server makes once and keeps in the "
        "database; set it to keep it out of the database and its backups.",
    )
    audit_retention_days: float = Field(
        default=400,
        gt=0,
        description="Days an audit record is kept before the sweeper deletes it.",
    )
    erase_batch: int = Field(
        default=5000,
        ge=1,
        le=1_000_000,
        description="Rows of a table an erase deletes in one transaction: a user with a million "
        "events is erased in many short transactions, none holding the app's other users back.",
    )
    erase_pace: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The share of its time an erase works while the database is busy (two "
        "or more other connections running statements); it rests the rest, so that the app's "
        "other users keep their share of the cores. Otherwise it works throughout. 1: never "
        "rests.",
    )
    erase_wait: float = Field(
        default=5,
        ge=0,
        le=300,
        description="Seconds `DELETE /apps/{app}/users/{user}` (or `DELETE /apps/{app}`) waits "
        "for the erase to finish before it answers 202 with the erase running (its status: "
        "GET …/erasure).",
    )
    user_self_erase: bool = Field(
        default=False,
        description="Whether a key made for one user may erase that user (by default only "
        "app-wide and admin keys erase users).",
    )
    token_estimator: str = Field(
        default="app.rules.context:estimate_tokens",
        pattern=r"^[\w.]+:\w+$",
        description="The context view's token estimate of an event, as `module:function`: a "
        "function of the event (a dict, as stored) to a number of tokens, taken when the event "
        "is stored. The default counts the UTF-8 bytes of text, function calls and responses, "
        "over 4.",
    )

    cors_origins: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="Browser origins allowed to call the API (CORS), comma-separated, e.g. "
        "`https://app.example.com,http://localhost:5173`; `*` for any. Empty: CORS is off and "
        "browsers refuse cross-origin calls.",
    )

    allowed_hosts: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description="Host names the server answers for (the `Host` header, without its port), "
        "comma-separated; `*` for any. Others get a 400, so that a page of another site whose "
        "name resolves to this server (DNS rebinding) cannot read it. Unset: any, but "
        "`sessionary serve` on a loopback address takes `localhost,127.0.0.1,[::1]`.",
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_names(cls, value: object) -> object:
        if isinstance(value, str):
            value = [host.strip().lower() for host in value.split(",") if host.strip()]
        return value

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            value = [origin.strip() for origin in value.split(",") if origin.strip()]
        for origin in value if isinstance(value, list) else ():
            # A browser sends `Origin: https://host[:port]`, never a path or a trailing slash.
            if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", str(origin)):
                raise ValueError(f"{origin!r} is not an origin like https://app.example.com")
        return value

    @cached_property
    def event_limits(self) -> EventLimits:
        """What an event may be, for the rules that prepare it (`app.rules.events`)."""
        module, _, name = self.token_estimator.partition(":")
        estimate: TokenEstimator = getattr(importlib.import_module(module), name)
        return EventLimits(self.max_event_bytes, self.max_json_depth, estimate)

    @property
    def auth_enabled(self) -> bool:
        return self.auth if self.auth is not None else self.database_url is not None


@lru_cache
def get_settings() -> Settings:
    return Settings()
