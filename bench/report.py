"""The one table and the target checks, printed as Markdown so a run pastes into bench/README.md."""

import math
from dataclasses import dataclass, field

from bench import mixed
from bench.artifacts import S18
from bench.clients import S17
from bench.cpu import CpuSplit
from bench.mixed import Mixed
from bench.scenarios import Burst

# "Floor": plain asyncpg, no HTTP; "HTTP floor": a bare ASGI app running the same statements.
SYSTEMS = ("Sessionary", "ADK", "Floor", "HTTP floor")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Row:
    key: str
    scenario: str
    metric: str


ROWS = (
    Row("s1_eps", "S1 append", "events/s"),
    Row("s1_p50", "S1 append", "p50 ms"),
    Row("s1_p99", "S1 append", "p99 ms"),
    Row("s2_eps", "S2 batch append", "events/s"),
    Row("s3_ms", "S3 read whole session", "ms"),
    Row("s3_copy_ms", "S3 copy floor: the stored JSON fetched and joined", "ms"),
    Row("s4_ms", "S4 read recent events", "ms"),
    Row("s5_first_ms", "S5 list, first page", "ms"),
    Row("s5_far_ms", "S5 list, far page", "ms"),
    Row("s6_s1_eps", "S6 (big db) S1 append", "events/s"),
    Row("s6_s1_p50", "S6 (big db) S1 append", "p50 ms"),
    Row("s6_s1_p99", "S6 (big db) S1 append", "p99 ms"),
    Row("s6_s4_ms", "S6 (big db) S4 read recent", "ms"),
    Row("s8_read_ms", "S8 read a long session whole", "ms"),
    Row("s8_until_ms", "S8 the same as of the seq before its last", "ms"),
    Row("s8_halfway_ms", "S8 the same as of its middle seq", "ms"),
    Row("s8_fork_ms", "S8 fork it whole", "ms"),
    Row("s9_recent_ms", "S9 read the newest 100 of 10,000 events", "ms"),
    Row("s9_context_ms", "S9 context view, 32k-token budget", "ms"),
    Row("s10_p50", "S10 append's 201 to its frame on 100 streams (other server)", "p50 ms"),
    Row("s10_p99", "S10 append's 201 to its frame on 100 streams (other server)", "p99 ms"),
    Row("s10_alone_eps", "S10 S1 on one worker, no stream open", "events/s"),
    Row("s10_watched_eps", "S10 S1 on one worker, 100 of its sessions streamed", "events/s"),
    Row("s11_common_ms", "S11 search 1M events, two common words, first 20 hits", "ms"),
    Row("s11_rare_ms", "S11 search 1M events, two rarer words, first 20 hits", "ms"),
    Row("s12_export_eps", "S12 `sessionary export` of S11's events", "events/s"),
    Row("s12_export_rss", "S12 `sessionary export` of S11's events", "peak RSS MB"),
    Row("s12_import_eps", "S12 `sessionary import` of them", "events/s"),
    Row("s12_import_rss", "S12 `sessionary import` of them", "peak RSS MB"),
    Row("s13_s3_ms", "S13 S3 through PgBouncer (transaction pooling)", "ms"),
    Row("s13_s1_eps", "S13 S1 through PgBouncer (transaction pooling)", "events/s"),
    Row("s13_s1_p99", "S13 S1 through PgBouncer (transaction pooling)", "p99 ms"),
    Row(
        "s14_eps",
        "S14 `sessionary import-adk` of ADK's database (ADK: its own reads of it)",
        "events/s",
    ),
    Row("s14_rss", "S14 `sessionary import-adk`", "peak RSS MB"),
    Row("s15_single_s3_ms", "S15 S3 on one PostgreSQL 15 node", "ms"),
    Row("s15_cluster_s3_ms", "S15 S3 on Citus, a coordinator and 2 workers", "ms"),
    Row("s15_single_s1_eps", "S15 S1 on one PostgreSQL 15 node", "events/s"),
    Row("s15_cluster_s1_eps", "S15 S1 on Citus, a coordinator and 2 workers", "events/s"),
    Row("s15_single_s1_p99", "S15 S1 on one PostgreSQL 15 node", "p99 ms"),
    Row("s15_cluster_s1_p99", "S15 S1 on Citus, a coordinator and 2 workers", "p99 ms"),
    Row("s15_single_pg_cpu", "S15 S1 on one PostgreSQL 15 node: PostgreSQL CPU", "µs/append"),
    Row("s15_cluster_pg_cpu", "S15 S1 on Citus: PostgreSQL CPU, every node", "µs/append"),
    Row(
        "s15_cluster_pg_cpu_coordinator",
        "S15 S1 on Citus: PostgreSQL CPU, coordinator",
        "µs/append",
    ),
    Row("s15_single_s11_common_ms", "S15 S11 on one node, two common words", "ms"),
    Row("s15_cluster_s11_common_ms", "S15 S11 on Citus, two common words", "ms"),
    Row("s15_single_s11_rare_ms", "S15 S11 on one node, two rarer words", "ms"),
    Row("s15_cluster_s11_rare_ms", "S15 S11 on Citus, two rarer words", "ms"),
    Row("s15_ungrouped_s1_eps", "S15 S1 on one node, appends not grouped", "events/s"),
    Row(
        "s15_ungrouped_pg_cpu",
        "S15 S1 on one node, appends not grouped: PostgreSQL CPU",
        "µs/append",
    ),
    Row("s15_relayed_s1_eps", "S15 S1 on Citus, appends through the coordinator", "events/s"),
    Row(
        "s15_relayed_pg_cpu",
        "S15 S1 on Citus, appends through the coordinator: PostgreSQL CPU",
        "µs/append",
    ),
    Row(
        "s15_relayed_pg_cpu_coordinator",
        "S15 S1 on Citus, appends through the coordinator: coordinator",
        "µs/append",
    ),
    Row("s15_one_worker_s1_eps", "S15 S1 on Citus, a coordinator and 1 worker", "events/s"),
    Row("s15_one_worker_pg_cpu", "S15 S1 on Citus, 1 worker: PostgreSQL CPU", "µs/append"),
)


@dataclass
class Results:
    """Figures by row key and system, plus the run's side measurements."""

    figures: dict[str, dict[str, float]] = field(default_factory=dict)
    ceiling_rps: float = math.nan
    generator: str = ""
    sustained: list[Burst] = field(default_factory=list)
    s1_cpu: dict[str, CpuSplit] = field(default_factory=dict)
    cores: int = 1
    worker_peak_rss: dict[int, int] = field(default_factory=dict)
    read_growth_bytes: int = 0
    read_response_bytes: int = 0
    s6_scans: dict[str, tuple[int, int]] = field(default_factory=dict)
    mixed: Mixed | None = None
    clients: S17 | None = None
    artifacts: S18 | None = None
    notes: list[str] = field(default_factory=list)

    def put(self, key: str, system: str, value: float) -> None:
        self.figures.setdefault(key, {})[system] = value

    def get(self, key: str, system: str = "Sessionary") -> float:
        return self.figures.get(key, {}).get(system, math.nan)


def _figure(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _ratio(numerator: float, denominator: float) -> str:
    if math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return "n/a"
    return f"{numerator / denominator:.2f}x"


def table(results: Results, scenario: str | None = None) -> str:
    """Every row; `scenario`'s alone when it is given."""
    lines = [
        "| Scenario | Metric | "
        + " | ".join(SYSTEMS)
        + " | "
        + " | ".join(f"Sessionary/{other}" for other in SYSTEMS[1:])
        + " |",
        "|---|---|" + "--:|" * (2 * len(SYSTEMS) - 1),
    ]
    for row in ROWS:
        if scenario is not None and not row.scenario.startswith(scenario):
            continue
        values = [results.get(row.key, system) for system in SYSTEMS]
        lines.append(
            f"| {row.scenario} | {row.metric} | "
            + " | ".join(_figure(value) for value in values)
            + " | "
            + " | ".join(_ratio(values[0], other) for other in values[1:])
            + " |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Target:
    name: str
    met: bool
    detail: str


def targets(results: Results) -> list[Target]:
    r = results.get
    checks = [
        Target("S1 ≥ 2,500 events/s", r("s1_eps") >= 2500, f"{r('s1_eps'):,.0f} events/s"),
        Target(
            "S1 ≥ 8x ADK events/s",
            r("s1_eps") >= 8 * r("s1_eps", "ADK"),
            f"{r('s1_eps') / r('s1_eps', 'ADK'):.2f}x",
        ),
        Target(
            "S1 ≥ 70% of Floor events/s",
            r("s1_eps") >= 0.7 * r("s1_eps", "Floor"),
            f"{r('s1_eps') / r('s1_eps', 'Floor'):.0%}",
        ),
        Target(
            "S1 ≥ 70% of the HTTP floor's events/s",
            r("s1_eps") >= 0.7 * r("s1_eps", "HTTP floor"),
            f"{r('s1_eps') / r('s1_eps', 'HTTP floor'):.0%}",
        ),
        Target("S1 p99 < 50 ms", r("s1_p99") < 50, f"{r('s1_p99'):.1f} ms"),
        Target(
            "S2 ≥ 5x S1 events/s",
            r("s2_eps") >= 5 * r("s1_eps"),
            f"{r('s2_eps') / r('s1_eps'):.2f}x",
        ),
        Target(
            "S3 within 1.3x of the copy floor",
            r("s3_ms") <= 1.3 * r("s3_copy_ms", "Floor"),
            f"{r('s3_ms') / r('s3_copy_ms', 'Floor'):.2f}x",
        ),
        Target(
            "S3 ≥ 20x faster than ADK get_session",
            r("s3_ms", "ADK") >= 20 * r("s3_ms"),
            f"{r('s3_ms', 'ADK') / r('s3_ms'):.1f}x faster",
        ),
        Target(
            "S4 no slower than ADK in-process",
            r("s4_ms") <= r("s4_ms", "ADK"),
            f"{r('s4_ms'):.2f} ms vs {r('s4_ms', 'ADK'):.2f} ms",
        ),
        Target(
            "S5 far page within 1.5x of first page",
            r("s5_far_ms") <= 1.5 * r("s5_first_ms"),
            f"{r('s5_far_ms') / r('s5_first_ms'):.2f}x",
        ),
        Target(
            "S6 S1 events/s within 1.5x of small db",
            r("s6_s1_eps") * 1.5 >= r("s1_eps"),
            f"{r('s1_eps') / r('s6_s1_eps'):.2f}x slower",
        ),
        Target(
            "S6 S4 within 1.5x of small db",
            r("s6_s4_ms") <= 1.5 * r("s4_ms"),
            f"{r('s6_s4_ms') / r('s4_ms'):.2f}x",
        ),
    ]
    checks += [
        Target(
            "S8 fork within 3x of a plain read",
            r("s8_fork_ms") <= 3 * r("s8_read_ms"),
            f"{r('s8_fork_ms') / r('s8_read_ms'):.2f}x",
        ),
        Target(
            "S8 point-in-time read within 1.5x of a plain read",
            r("s8_until_ms") <= 1.5 * r("s8_read_ms"),
            f"{r('s8_until_ms') / r('s8_read_ms'):.2f}x",
        ),
        Target(
            "S9 context view within 2x of reading the newest 100 events",
            r("s9_context_ms") <= 2 * r("s9_recent_ms"),
            f"{r('s9_context_ms') / r('s9_recent_ms'):.2f}x",
        ),
        Target("S10 stream p99 < 50 ms", r("s10_p99") < 50, f"{r('s10_p99'):.1f} ms"),
        Target(
            "S11 two-word search p50 < 50 ms",
            max(r("s11_common_ms"), r("s11_rare_ms")) < 50,
            f"{r('s11_common_ms'):.1f} ms (common words), {r('s11_rare_ms'):.1f} ms (rarer)",
        ),
        Target(
            "S12 export and import each under 300 MB of memory",
            max(r("s12_export_rss"), r("s12_import_rss")) < 300,
            f"{r('s12_export_rss'):.0f} MB (export), {r('s12_import_rss'):.0f} MB (import)",
        ),
        Target(
            "S10 appends with 100 streams open within 1.2x of none",
            r("s10_alone_eps") <= 1.2 * r("s10_watched_eps"),
            f"{r('s10_alone_eps') / r('s10_watched_eps'):.2f}x",
        ),
    ]
    if results.mixed is not None:
        operations = results.mixed.operations
        append_p99 = operations["append"][2]
        failed = sum(figures[4] for figures in operations.values())
        checks += [
            Target("S16 append p99 < 100 ms", append_p99 < 100, f"{append_p99:.1f} ms"),
            Target(
                "S16: no append lost or doubled, no request failed",
                results.mixed.lost == 0 and failed == 0,
                f"{results.mixed.lost} lost or doubled, {failed} failed",
            ),
        ]
    if not math.isnan(r("s15_cluster_pg_cpu")):
        cluster, ungrouped = r("s15_cluster_pg_cpu"), r("s15_ungrouped_pg_cpu")
        coordinator = r("s15_cluster_pg_cpu_coordinator")
        checks += [
            Target(
                "S15 PostgreSQL CPU per append on Citus ≤ 2x one node's (not grouped)",
                cluster <= 2 * ungrouped,
                f"{cluster / ungrouped:.2f}x ({cluster:,.0f} µs against {ungrouped:,.0f}; "
                f"grouped {r('s15_single_pg_cpu'):,.0f})",
            ),
            Target(
                "S15 the coordinator ≤ 15% of it",
                coordinator <= 0.15 * cluster,
                f"{coordinator / cluster:.0%} ({coordinator:,.0f} µs)",
            ),
            Target(
                "S15 S1 on Citus ≥ 40% of one node's events/s, p99 < 100 ms",
                r("s15_cluster_s1_eps") >= 0.4 * r("s15_single_s1_eps")
                and r("s15_cluster_s1_p99") < 100,
                f"{r('s15_cluster_s1_eps') / r('s15_single_s1_eps'):.0%}, "
                f"p99 {r('s15_cluster_s1_p99'):.0f} ms",
            ),
        ]
    if results.sustained:
        first, last = results.sustained[0], results.sustained[-1]
        checks.append(
            Target(
                "S7: the last minute's events/s within 1.2x of the first's",
                first.events_per_second <= 1.2 * last.events_per_second,
                f"{last.events_per_second:,.0f} events/s in the last minute, "
                f"{first.events_per_second:,.0f} in the first",
            )
        )
    peak = max(results.worker_peak_rss.values(), default=0)
    checks.append(
        Target(
            "Each worker's RSS < 300 MB",
            0 < peak < 300 * MiB,
            ", ".join(f"{value / MiB:.0f} MB" for value in results.worker_peak_rss.values()),
        )
    )
    copies = results.read_growth_bytes / max(1, results.read_response_bytes)
    checks.append(
        Target(
            "S3 read holds ≤ 5 copies of its response",
            copies <= 5,
            f"peak +{results.read_growth_bytes / MiB:.1f} MB for a "
            f"{results.read_response_bytes / MiB:.2f} MB response ({copies:.1f} copies)",
        )
    )
    if results.s6_scans:
        seq = {name: counts[0] for name, counts in results.s6_scans.items()}
        checks.append(
            Target(
                "S6: no sequential scan of sessions/events (Sessionary)",
                not any(seq.values()),
                ", ".join(f"{name}: {count} seq scans" for name, count in sorted(seq.items())),
            )
        )
    if results.clients is not None:
        checks += [Target(*target) for target in results.clients.targets()]
    if results.artifacts is not None:
        checks += [Target(*target) for target in results.artifacts.targets()]
    top_rate = max(r("s1_eps"), r("s6_s1_eps"))
    checks.append(
        Target(
            "Load generator ceiling ≥ 2x the highest request rate measured",
            results.ceiling_rps >= 2 * top_rate,
            f"{results.ceiling_rps:,.0f} req/s vs {top_rate:,.0f} req/s",
        )
    )
    return checks


def sustained(bursts: list[Burst]) -> str:
    """S7, Sessionary alone: one row per minute."""
    lines = ["| S7 minute | events/s | p50 ms | p99 ms |", "|--:|--:|--:|--:|"]
    for minute, burst in enumerate(bursts, 1):
        lines.append(
            f"| {minute} | {_figure(burst.events_per_second)} | {_figure(burst.p50_ms)} "
            f"| {_figure(burst.p99_ms)} |"
        )
    return "\n".join(lines)


def cpu_split(splits: dict[str, CpuSplit], cores: int) -> str:
    """S1's CPU per append by process, and the rate the cores allow at that cost."""
    lines = [
        "| S1: CPU per append, µs | server workers | PostgreSQL | wrk | rest of the host | all "
        f"| cores busy | events/s {cores} cores allow at this cost |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for system, split in splits.items():
        parts = (split.server, split.postgres, split.generator, split.rest, split.total)
        lines.append(
            f"| {system} | "
            + " | ".join(f"{part:,.0f}" for part in parts)
            + f" | {split.busy:.0%} | {split.ceiling(cores):,.0f} |"
        )
    return "\n".join(lines)


def render(results: Results, header: str, scenario: str | None = None) -> str:
    """The report; of `scenario`'s targets alone when it is given (a scenario run alone)."""
    lines = [header, ""]
    if scenario is None or any(row.scenario.startswith(scenario) for row in ROWS):
        lines += [table(results, scenario), ""]
    if results.s1_cpu:
        lines += [cpu_split(results.s1_cpu, results.cores), ""]
    if results.sustained:
        lines += [sustained(results.sustained), ""]
    if results.mixed is not None:
        lines += [mixed.report(results.mixed), ""]
    if results.clients is not None:
        lines += [*results.clients.lines(), ""]
    if results.artifacts is not None:
        lines += [*results.artifacts.lines(), ""]
    if not math.isnan(results.ceiling_rps):
        lines.append(
            f"Load generator: {results.generator}; its ceiling (GET /healthz, same clients): "
            f"{results.ceiling_rps:,.0f} req/s."
        )
    lines.extend(f"- {note}" for note in results.notes)
    lines += ["", "| Target | Met | Measured |", "|---|---|---|"]
    for target in targets(results):
        if scenario is not None and not target.name.startswith(scenario):
            continue
        lines.append(f"| {target.name} | {'yes' if target.met else '**no**'} | {target.detail} |")
    return "\n".join(lines)
