"""The services of a running app, built once at start-up from its database handles and
settings.

Each is stateless but for the handles it holds: a unit of work opens its own connection.
"""

from dataclasses import dataclass
from typing import Self

from app.config import Settings
from app.db import DriverPool
from app.services.artifacts import ArtifactService
from app.services.audit import AuditLog
from app.services.auth import AuthService, GrantCache
from app.services.contents import Contents
from app.services.context import ContextService
from app.services.erasures import ErasureService
from app.services.events import EventService
from app.services.group_commit import GroupCommit
from app.services.history import HistoryService
from app.services.lineage import LineageService
from app.services.live import Broker
from app.services.memories import MemoryService, RecallStatus
from app.services.pending import PendingService
from app.services.portability import PortabilityService
from app.services.reads import Reads
from app.services.retention import RetentionService
from app.services.search import SearchService
from app.services.sessions import SessionService
from app.services.shared_state import SharedStateService
from app.services.tool_calls import ToolCallService
from app.services.usage import UsageService
from app.sharding import WorkerPools


@dataclass(frozen=True)
class Services:
    auth: AuthService
    audit: AuditLog
    artifacts: ArtifactService
    erasures: ErasureService
    events: EventService
    sessions: SessionService
    lineage: LineageService
    history: HistoryService
    context: ContextService
    tool_calls: ToolCallService
    pending: PendingService
    portability: PortabilityService
    reads: Reads
    usage: UsageService
    retention: RetentionService
    live: Broker
    memories: MemoryService
    search: SearchService
    shared_state: SharedStateService

    @classmethod
    def create(
        cls,
        pool: DriverPool,
        settings: Settings,
        replica: DriverPool | None = None,
        *,
        sharded: bool = False,
        routed: bool = False,
        workers: WorkerPools | None = None,
        recall: RecallStatus | None = None,
    ) -> Self:
        """`pool`: the one pool every unit of work takes its connection from; `replica`: the
        read replica's pool (DATABASE_READ_URL), if there is one; `sharded`: the database is
        a Citus cluster, where appends to several sessions cannot share a statement;
        `routed`: there, each append goes whole to its user's worker (`sharding`), over
        `workers`' connections when given; `recall`: pgvector's version and the embedding model,
        when memories may be recalled by meaning."""
        live = Broker(pool, settings)
        lanes = None if sharded or not settings.append_lanes else settings.append_lanes
        reads = Reads(pool, replica)
        events = EventService(
            pool,
            settings,
            live.announce_later,
            reads,
            GroupCommit(pool, settings, lanes, routed=routed, workers=workers),
        )
        audit = AuditLog(pool, settings)
        sessions = SessionService(pool, settings, events, audit)
        artifacts = ArtifactService(pool, settings, Contents(pool, settings), live.announce_later)
        return cls(
            auth=AuthService(pool, GrantCache(settings.auth_cache_seconds), audit),
            audit=audit,
            erasures=ErasureService(pool, settings, artifacts.contents, audit),
            artifacts=artifacts,
            events=events,
            sessions=sessions,
            lineage=LineageService(pool, settings, sessions, events),
            history=HistoryService(pool, settings, events, artifacts),
            context=ContextService(pool, settings, events),
            tool_calls=ToolCallService(pool, settings, events),
            pending=PendingService(pool, settings, events),
            portability=PortabilityService(pool, settings, artifacts, audit),
            reads=reads,
            usage=UsageService(pool),
            retention=RetentionService(pool, settings, artifacts.contents, audit),
            search=SearchService(pool, settings, sharded=sharded),
            live=live,
            memories=MemoryService(pool, settings, recall or RecallStatus(None, None)),
            shared_state=SharedStateService(pool, settings),
        )
