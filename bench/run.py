"""`make bench`: Sessionary vs ADK's DatabaseSessionService vs a plain-asyncpg Floor.

Needs DATABASE_URL naming a PostgreSQL server; the bench creates (and recreates on each run)
its own databases there, `<prefix>`, `<prefix>_adk` and `<prefix>_floor`, and leaves them
behind for EXPLAIN. See bench/README.md.
"""

import argparse
import asyncio
import dataclasses
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

if __package__ in (None, ""):  # run as `python bench/run.py`: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from bench import (
    artifacts,
    citus,
    clients,
    cpu,
    databases,
    erasure,
    live,
    loadgen,
    memory,
    mixed,
    pgbouncer,
    portability,
    scenarios,
    server,
    wrk,
)
from bench.adk_side import Adk, context_ms
from bench.databases import Databases, Schema, seeded_key
from bench.floor import Floor, copy_read_ms
from bench.report import Results, render
from bench.sessionary_side import Sessionary, context_times, lineage_times, session_path
from bench.systems import System
from bench.workload import (
    CONTEXT_APP,
    GROWTH_APP,
    LINEAGE_APP,
    LIST_APP,
    READ_APP,
    SEARCH_APP,
    SEARCH_QUERIES,
    Sizes,
    conversation,
)

QUICK = Sizes(
    append_sessions=8,
    appends_per_session=10,
    clients=4,
    batch=20,
    long_session=200,
    recent=20,
    list_sessions=500,
    page_size=20,
    far_page=5,
    growth_events=20_000,
    growth_sessions=200,
    repeat=2,
    read_repeat=5,
    append_seconds=2,
    sustained_minutes=0,
    mixed_minutes=1,
    lineage_events=500,
    context_events=500,
    live_appends=20,
    search_events=20_000,
    artifact_tasks=4,
    artifact_rounds=2,
    artifact_large_mib=8,
    artifact_large_tasks=2,
    artifact_large_rounds=1,
    artifact_memory_transfers=2,
    artifact_memory_mib=16,
    artifact_names=50,
)
LIST_USERS = 100


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--db-prefix", default="sessionary_bench")
    parser.add_argument("--workers", type=int, default=2, help="sessionary serve --workers")
    parser.add_argument("--skip-adk", action="store_true", help="no ADK column")
    parser.add_argument("--skip-growth", action="store_true", help="no S6")
    parser.add_argument("--skip-clients", action="store_true", help="no S17")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--only",
        choices=["s15", "s18", "s19", "s20"],
        help="this scenario alone (S15 needs no DATABASE_URL; the others do)",
    )
    for sizes, quick in (
        (Sizes, QUICK),
        (memory.Sizes, memory.QUICK),
        (erasure.Sizes, erasure.QUICK),
    ):
        for sizing in dataclasses.fields(sizes):
            parser.add_argument(
                "--" + sizing.name.replace("_", "-"),
                type=int,
                help=f"default {sizing.default} ({getattr(quick, sizing.name)} with --quick)",
            )
    return parser.parse_args(argv)


def sizes_from(args: argparse.Namespace) -> Sizes:
    chosen = {
        sizing.name: getattr(args, sizing.name)
        for sizing in dataclasses.fields(Sizes)
        if getattr(args, sizing.name) is not None
    }
    return dataclasses.replace(QUICK if args.quick else Sizes(), **chosen)


def memory_sizes_from(args: argparse.Namespace) -> memory.Sizes:
    return _chosen(args, memory.Sizes, memory.QUICK)


def erasure_sizes_from(args: argparse.Namespace) -> erasure.Sizes:
    return _chosen(args, erasure.Sizes, erasure.QUICK)


def _chosen(args: argparse.Namespace, sizes: Any, quick: Any) -> Any:
    """A scenario's sizes (a dataclass) as the flags set them, from its defaults (or
    `quick`'s, with --quick)."""
    chosen = {
        sizing.name: getattr(args, sizing.name)
        for sizing in dataclasses.fields(sizes)
        if getattr(args, sizing.name) is not None
    }
    return dataclasses.replace(quick if args.quick else sizes(), **chosen)


READ_KEY = seeded_key(READ_APP, 1, users=1, user_prefix="reader", session_prefix="long")
LINEAGE_KEY = seeded_key(LINEAGE_APP, 1, users=1, user_prefix="brancher", session_prefix="tree")
CONTEXT_KEY = seeded_key(CONTEXT_APP, 1, users=1, user_prefix="talker", session_prefix="chat")


def _schemas(dbs: Databases, with_adk: bool) -> list[tuple[str, Schema]]:
    schemas: list[tuple[str, Schema]] = [(dbs.sessionary, "sessionary"), (dbs.floor, "sessionary")]
    return [*schemas, (dbs.adk, "adk")] if with_adk else schemas


async def seed_read(dsn: str, schema: Schema, sizes: Sizes) -> None:
    """S3/S4's long session (`READ_KEY`)."""
    await databases.seed(
        dsn,
        schema,
        app=READ_APP,
        sessions=1,
        events_per_session=sizes.long_session,
        users=1,
        user_prefix="reader",
        session_prefix="long",
    )


async def seed_small(dbs: Databases, sizes: Sizes, with_adk: bool) -> None:
    """S3/S4's long session and S5's listed sessions, the same rows in every database."""
    for dsn, schema in _schemas(dbs, with_adk):
        await seed_read(dsn, schema, sizes)
        await databases.seed(
            dsn,
            schema,
            app=LIST_APP,
            sessions=sizes.list_sessions,
            events_per_session=2,
            users=LIST_USERS,
        )
    # S8's session, for Sessionary alone: lineage is not in ADK's service.
    await databases.seed(
        dbs.sessionary,
        "sessionary",
        app=LINEAGE_APP,
        sessions=1,
        events_per_session=sizes.lineage_events,
        users=1,
        user_prefix="brancher",
        session_prefix="tree",
    )
    # S9's conversation, for Sessionary's context view and ADK's own context assembly.
    talk = conversation("chat", sizes.context_events)
    await databases.seed_conversation(dbs.sessionary, "sessionary", CONTEXT_KEY, talk)
    if with_adk:
        await databases.seed_conversation(dbs.adk, "adk", CONTEXT_KEY, talk)


async def seed_growth(dbs: Databases, sizes: Sizes, with_adk: bool) -> None:
    """S6: a million events in every database at once (one loader connection each)."""
    per_session = sizes.growth_events // sizes.growth_sessions
    await asyncio.gather(
        *(
            databases.seed(
                dsn,
                schema,
                app=GROWTH_APP,
                sessions=sizes.growth_sessions,
                events_per_session=per_session,
                users=max(1, sizes.growth_sessions // 10),
            )
            for dsn, schema in _schemas(dbs, with_adk)
        )
    )


async def memory_probe(serve: server.Server, sizes: Sizes, results: Results) -> None:
    """The peak memory one whole-session read costs a worker, against its response size.

    Runs before any other work, so no earlier request has already grown the heap; several
    connections so that every worker serves some of the reads.
    """
    key = READ_KEY
    before = {pid: server.rss(pid) for pid in serve.worker_pids()}
    for pid in before:
        server.reset_peak(pid)
    for _ in range(4 * serve.workers):
        async with loadgen.Connection(serve.host, serve.port) as connection:
            for _ in range(3):
                response = await connection.call("GET", session_path(key))
                results.read_response_bytes = len(response.body)
    results.read_growth_bytes = max(
        server.peak_rss(pid) - rss_before for pid, rss_before in before.items()
    )


async def append(system: System, sizes: Sizes, label: str) -> scenarios.Burst:
    """S1 with wrk for the systems served over HTTP when it is installed, else in Python."""
    if isinstance(system, Sessionary) and wrk.available():
        return await wrk.s1(system, sizes, label)
    return await scenarios.append(system, sizes, label)


def put_burst(results: Results, prefix: str, system: str, burst: scenarios.Burst) -> None:
    results.put(f"{prefix}_eps", system, burst.events_per_second)
    results.put(f"{prefix}_p50", system, burst.p50_ms)
    results.put(f"{prefix}_p99", system, burst.p99_ms)
    if prefix == "s1" and burst.cpu is not None:
        results.s1_cpu[system] = burst.cpu


async def run_small(system: System, sizes: Sizes, results: Results, label: str) -> None:
    key = READ_KEY

    async def s1() -> None:
        put_burst(results, "s1", system.name, await append(system, sizes, f"{label}-s1"))

    async def s2() -> None:
        burst = await scenarios.batch_append(system, sizes, f"{label}-s2")
        results.put("s2_eps", system.name, burst.events_per_second)

    async def s3() -> None:
        results.put("s3_ms", system.name, await scenarios.read(system, sizes, key, None))

    async def s4() -> None:
        results.put("s4_ms", system.name, await scenarios.read(system, sizes, key, sizes.recent))

    async def s5() -> None:
        paged = system.name != "ADK"
        first, far = await scenarios.list_pages(system, sizes, LIST_APP, paged=paged)
        results.put("s5_first_ms", system.name, first)
        results.put("s5_far_ms", system.name, far)

    # Reads first: the writes' after-effects (autovacuum, the checkpointer) would otherwise
    # land on one system's reads and not on another's.
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("S3", s3),
        ("S4", s4),
        ("S5", s5),
        ("S1", s1),
        ("S2", s2),
    ]
    for name, step in steps:
        log(f"{system.name}: {name}")
        await step()


async def run_http_floor(system: System, sizes: Sizes, results: Results) -> None:
    """The scenarios the HTTP floor serves: the hot routes, reads first as for the others."""
    log(f"{system.name}: S3, S4, S1")
    results.put("s3_ms", system.name, await scenarios.read(system, sizes, READ_KEY, None))
    results.put("s4_ms", system.name, await scenarios.read(system, sizes, READ_KEY, sizes.recent))
    put_burst(results, "s1", system.name, await append(system, sizes, "small-s1-http-floor"))


async def run_growth(system: System, sizes: Sizes, results: Results, label: str) -> None:
    log(f"{system.name}: S6 (S4, then S1 on the big database)")
    results.put(
        "s6_s4_ms", system.name, await scenarios.read(system, sizes, READ_KEY, sizes.recent)
    )
    put_burst(results, "s6_s1", system.name, await append(system, sizes, f"{label}-s6"))


async def phase(
    systems: Sequence[Callable[[], Awaitable[System]]],
    body: Callable[[System], Awaitable[None]],
) -> None:
    """Run `body` on each system in turn, holding only one system's connections at a time
    (the server's max_connections is shared with Sessionary's own pools)."""
    for open_system in systems:
        system = await open_system()
        try:
            await body(system)
        finally:
            await system.close()


def pool_share(args: argparse.Namespace) -> int:
    """Each worker's pool: its share of the clients, so that Sessionary's idle connections
    and ADK's pool fit under PostgreSQL's default max_connections (100)."""
    return -(-sizes_from(args).clients // args.workers)


async def bench(args: argparse.Namespace) -> str:
    if args.only == "s15":
        results = Results(cores=os.cpu_count() or 1)
        env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": str(pool_share(args))}
        await run_sharded(sizes_from(args), args.workers, results, env)
        return render(results, header(), "S15")
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        raise SystemExit("Set DATABASE_URL to a PostgreSQL server (see bench/README.md).")
    sizes = sizes_from(args)
    if args.only == "s18":
        results = Results(cores=os.cpu_count() or 1)
        await run_artifacts(database_url, args.db_prefix, sizes, results)
        return render(results, header(), "S18")
    if args.only == "s19":
        s19 = await run_memory(database_url, args.db_prefix, sizes, memory_sizes_from(args))
        return f"{header()}\n\n{s19.report()}"
    if args.only == "s20":
        s20 = await run_erasure(database_url, args.db_prefix, sizes, erasure_sizes_from(args))
        return f"{header()}\n\n{s20.report()}"
    dbs = Databases.on(database_url, args.db_prefix)
    results = Results(cores=os.cpu_count() or 1)
    started = time.monotonic()

    log("creating and migrating the bench databases")
    await databases.recreate(dbs)
    databases.migrate(dbs.sessionary)
    databases.migrate(dbs.floor)
    databases.migrate(dbs.adopted)
    adk = None if args.skip_adk else Adk(dbs.adk, pool=sizes.clients)
    if adk is not None:
        await adk.prepare()
    log("seeding the long session and the listed sessions")
    await seed_small(dbs, sizes, with_adk=adk is not None)
    await databases.checkpoint(dbs.sessionary)

    server_env = {"SESSIONARY_AUTH": "false", "SESSIONARY_DB_POOL_SIZE": str(pool_share(args))}
    with server.Server(dbs.sessionary, args.workers, server_env) as serve:
        log(f"sessionary serve --workers {args.workers} on port {serve.port}")
        sessionary = Sessionary(serve.host, serve.port, worker_pids=serve.worker_pids)
        if wrk.available():
            results.generator = f"{wrk.version()}, {wrk.THREADS} thread (S1, S6's S1, S7)"
            results.ceiling_rps = await wrk.ceiling_of(sessionary, sizes)
        else:
            results.generator = "bench/loadgen.py (wrk is not installed: `apt install wrk`)"
            results.ceiling_rps = await loadgen.ceiling(
                serve.host,
                serve.port,
                clients=sizes.clients,
                requests=20_000 if not args.quick else 500,
            )
        await memory_probe(serve, sizes, results)

        async def open_sessionary() -> System:
            return sessionary

        async def open_adk() -> System:
            assert adk is not None
            return adk

        async def open_floor() -> System:
            floor = Floor(dbs.floor, pool=sizes.clients)
            await floor.open()
            return floor

        log("Sessionary: S8 (a plain read, a point-in-time read and a fork of one session)")
        plain, until, halfway, fork = await lineage_times(sessionary, LINEAGE_KEY, sizes)
        results.put("s8_read_ms", sessionary.name, plain)
        results.put("s8_until_ms", sessionary.name, until)
        results.put("s8_halfway_ms", sessionary.name, halfway)
        results.put("s8_fork_ms", sessionary.name, fork)
        log("S9: the context view of a long conversation, and ADK's context assembly")
        recent, view = await context_times(sessionary, CONTEXT_KEY, sizes)
        results.put("s9_recent_ms", sessionary.name, recent)
        results.put("s9_context_ms", sessionary.name, view)
        if adk is not None:
            results.put("s9_context_ms", adk.name, await context_ms(adk, CONTEXT_KEY, sizes))

        systems = [open_sessionary] + ([open_adk] if adk else []) + [open_floor]
        await phase(systems, lambda system: run_small(system, sizes, results, "small"))
        log("Floor: S3's copy floor")
        copied = await copy_read_ms(dbs.floor, READ_KEY, sizes.long_session, sizes.read_repeat)
        results.put("s3_copy_ms", "Floor", copied)
        with server.HttpFloorServer(dbs.floor, args.workers, server_env) as floor_serve:
            http_floor = Sessionary(
                floor_serve.host,
                floor_serve.port,
                name="HTTP floor",
                worker_pids=floor_serve.worker_pids,
            )
            await run_http_floor(http_floor, sizes, results)

        if wrk.available():
            await run_live(dbs, sizes, results, server_env)
        else:
            results.notes.append("S10 not run: it needs wrk (`apt install wrk`).")

        await run_search(dbs, sessionary, sizes, results)
        await run_portability(dbs, sizes, results)
        await run_pooled(dbs, args.workers, sizes, results, server_env)
        await run_sharded(sizes, args.workers, results, server_env)
        if adk is not None:
            await run_adoption(dbs, results)
        if not args.skip_clients:
            log("S17: through the clients (Python, ADK, OpenAI Agents, TypeScript)")
            appends = 10 if args.quick else 60
            results.clients = await clients.run(database_url, args.db_prefix, appends, 1000)
        await run_artifacts(database_url, args.db_prefix, sizes, results)
        s19 = await run_memory(database_url, args.db_prefix, sizes, memory_sizes_from(args))
        s20 = await run_erasure(database_url, args.db_prefix, sizes, erasure_sizes_from(args))

        if not args.skip_growth:
            log(f"S6: loading {sizes.growth_events:,} events into each database")
            loading = time.monotonic()
            await seed_growth(dbs, sizes, with_adk=adk is not None)
            if not await databases.checkpoint(dbs.sessionary):
                results.notes.append("CHECKPOINT refused: S6 may measure a checkpoint.")
            results.notes.append(
                f"S6 load: {sizes.growth_events:,} events over {sizes.growth_sessions:,} "
                f"sessions per database, by INSERT … SELECT, {time.monotonic() - loading:.0f} s."
            )
            before = await databases.scan_counts(dbs.sessionary)
            await run_growth(sessionary, sizes, results, "big")
            await asyncio.sleep(11)  # idle backends flush their table statistics within 10 s
            after = await databases.scan_counts(dbs.sessionary)
            results.s6_scans = {
                table: (after[table][0] - before[table][0], after[table][1] - before[table][1])
                for table in after
            }
            await phase(systems[1:], lambda system: run_growth(system, sizes, results, "big"))
        if sizes.mixed_minutes:
            log(f"Sessionary: S16, a mixed load for {sizes.mixed_minutes} minutes")
            results.mixed = await mixed.run(
                sessionary,
                clients=sizes.clients,
                minutes=sizes.mixed_minutes,
                sessions=sizes.mixed_sessions,
            )
        if sizes.sustained_minutes and wrk.available():
            log(f"Sessionary: S7, S1 for {sizes.sustained_minutes} minutes")
            results.sustained = await wrk.sustained(sessionary, sizes, "s7")
            await asyncio.sleep(11)  # idle backends flush their table statistics within 10 s
            updates, hot, autovacuum = await databases.hot_updates(dbs.sessionary)
            results.notes.append(
                f"After S7: {hot:,} of {updates:,} updates of `sessions` were HOT; the "
                f"server's autovacuum is {autovacuum}."
            )
        elif sizes.sustained_minutes:
            results.notes.append("S7 not run: it needs wrk (`apt install wrk`).")
        results.worker_peak_rss = serve.peak_per_worker()

    results.notes.append(f"Sizes: {dataclasses.asdict(sizes)}.")
    results.notes.append(f"Whole run: {(time.monotonic() - started) / 60:.1f} min.")
    return f"{render(results, header())}\n\n{s19.report()}\n\n{s20.report()}"


async def run_live(
    dbs: Databases, sizes: Sizes, results: Results, server_env: dict[str, str]
) -> None:
    """S10 on two single-worker servers: streams on one, writes through the other."""
    with (
        server.Server(dbs.sessionary, 1, server_env) as watched,
        server.Server(dbs.sessionary, 1, server_env) as written,
    ):
        reader = Sessionary(watched.host, watched.port)
        writer = Sessionary(written.host, written.port)
        log("S10: latency from an append's 201 to its frame on 100 streams")
        p50, p99 = live.summary(await live.latency(reader, writer, sizes.live_appends))
        results.put("s10_p50", "Sessionary", p50)
        results.put("s10_p99", "Sessionary", p99)
        log("S10: S1 on one worker, without and with 100 streams open")
        alone = await live.throughput(reader, writer, sizes, streams=0)
        watched_burst = await live.throughput(reader, writer, sizes, streams=live.STREAMS)
        results.put("s10_alone_eps", "Sessionary", alone.events_per_second)
        results.put("s10_watched_eps", "Sessionary", watched_burst.events_per_second)


async def search_medians(system: Sessionary, sizes: Sizes, results: Results, label: str) -> None:
    """S11's searches of `SEARCH_APP`: the median time of each, as `{label}_{name}_ms`."""
    async with loadgen.Connection(system.host, system.port) as connection:
        for name, words in SEARCH_QUERIES.items():
            path = f"/apps/{SEARCH_APP}/search?{urlencode({'q': words, 'pageSize': 20})}"

            async def search(path: str = path) -> None:
                await connection.call("GET", path)

            median = await scenarios.median_call(sizes.read_repeat, search)
            results.put(f"{label}_{name}_ms", "Sessionary", median)


async def seed_search(dsn: str, sizes: Sizes, events: int) -> None:
    """S11's events of words to search, `events` of them, 100 a session."""
    sessions = max(1, events // 100)
    await databases.seed_search(
        dsn,
        SEARCH_APP,
        sessions=sessions,
        events_per_session=events // sessions,
        vocabulary=sizes.search_vocabulary,
        config=Settings().search_config,
    )


async def run_search(
    dbs: Databases, sessionary: Sessionary, sizes: Sizes, results: Results
) -> None:
    """S11: two-word searches of one app's events (`GET /apps/{app}/search`)."""
    log(f"S11: loading {sizes.search_events:,} events of words to search")
    await seed_search(dbs.sessionary, sizes, sizes.search_events)
    await search_medians(sessionary, sizes, results, "s11")
    index = await databases.search_index_bytes(dbs.sessionary)
    results.notes.append(
        f"S11: {sizes.search_events:,} events of 12 words from {sizes.search_vocabulary:,}; "
        f"queries {SEARCH_QUERIES}; the search index (GIN, every event of the database) "
        f"is {index / 1024 / 1024:.0f} MB."
    )


async def run_portability(dbs: Databases, sizes: Sizes, results: Results) -> None:
    """S12: S11's events exported by `sessionary export`, imported into the floor's database
    (the same schema, none of that app) by `sessionary import`."""
    log(f"S12: sessionary export and import of S11's {sizes.search_events:,} events")
    exported, imported, moved = await asyncio.to_thread(
        portability.export_import, dbs.sessionary, dbs.floor, SEARCH_APP
    )
    for name, run in (("export", exported), ("import", imported)):
        results.put(f"s12_{name}_eps", "Sessionary", moved / run.seconds)
        results.put(f"s12_{name}_rss", "Sessionary", run.peak_rss_mb)
    results.notes.append(f"S12: {exported.summary}; {imported.summary}.")


async def run_pooled(
    dbs: Databases, workers: int, sizes: Sizes, results: Results, server_env: dict[str, str]
) -> None:
    """S13: S3 and S1 of a server whose every statement goes through PgBouncer in
    transaction mode, as deployed (one server connection per client), next to the direct
    server's S3 and S1 of this run."""
    if not pgbouncer.available():
        results.notes.append("S13 not run: it needs PgBouncer (`apt install pgbouncer`).")
        return
    pooling = {"SESSIONARY_DB_TRANSACTION_POOLING": "true", "DATABASE_DIRECT_URL": dbs.sessionary}
    with (
        pgbouncer.pgbouncer(dbs.sessionary, pool_size=sizes.clients, strict=False) as url,
        server.Server(url, workers, {**server_env, **pooling}) as serve,
    ):
        pooled = Sessionary(serve.host, serve.port)
        log("S13: S3 and S1 through PgBouncer (transaction pooling)")
        results.put("s13_s3_ms", "Sessionary", await scenarios.read(pooled, sizes, READ_KEY, None))
        put_burst(results, "s13_s1", "Sessionary", await append(pooled, sizes, "s13"))
    appends = results.get("s13_s1_eps") / results.get("s1_eps")
    reads = results.get("s13_s3_ms") / results.get("s3_ms")
    results.notes.append(
        f"S13: through PgBouncer, S1 at {appends:.0%} of the direct server's events/s, S3 in "
        f"{reads:.2f}x its time; PgBouncer itself is one process, on the same two cores."
    )


async def _s15_server(
    dsn: str,
    sizes: Sizes,
    workers: int,
    server_env: dict[str, str],
    label: str,
    results: Results,
    cluster: citus.Cluster | None = None,
    *,
    read: bool = True,
) -> None:
    """S1 on a server of `dsn`, after S3 and S11's searches if `read`; with `cluster`, where
    its PostgreSQL CPU went, node by node."""
    with server.Server(dsn, workers, server_env) as serve:
        system = Sessionary(serve.host, serve.port, worker_pids=serve.worker_pids)
        log(f"S15: {label}")
        if read:
            found = await scenarios.read(system, sizes, READ_KEY, None)
            results.put(f"{label}_s3_ms", "Sessionary", found)
            await search_medians(system, sizes, results, f"{label}_s11")
        before = cpu.postgres_by_server()
        burst = await append(system, sizes, label)
        spent = {
            pid: seconds - before.get(pid, 0.0) for pid, seconds in cpu.postgres_by_server().items()
        }
    put_burst(results, f"{label}_s1", "Sessionary", burst)
    if burst.cpu is None:
        return
    results.put(f"{label}_pg_cpu", "Sessionary", burst.cpu.postgres)
    if cluster is not None:
        nodes = cluster.postmasters()
        on_nodes = sum(spent.get(pid, 0.0) for pid in nodes)
        for pid, name in nodes.items():
            share = spent.get(pid, 0.0) / on_nodes * burst.cpu.postgres
            results.put(f"{label}_pg_cpu_{name.replace(' ', '')}", "Sessionary", share)
        split = ", ".join(
            f"{name} {spent.get(pid, 0.0) / on_nodes * burst.cpu.postgres:.0f}"
            for pid, name in nodes.items()
        )
        results.notes.append(f"S15: {label}, PostgreSQL µs per append: {split}.")


def s15_searched(sizes: Sizes) -> int:
    """The events S15 searches on each kind of server: a tenth of S11's, for the time it takes
    to load them into a cluster on this host."""
    return max(1_000, sizes.search_events // 10)


async def run_sharded(
    sizes: Sizes, workers: int, results: Results, server_env: dict[str, str]
) -> None:
    """S15: S3 and S1 on a Citus cluster started on this host (a coordinator and two workers,
    the tables sharded by `sessionary migrate`), next to one PostgreSQL started the same way
    without Citus (S1 with appends grouped, as served, and not), in this run; where the
    cluster's PostgreSQL CPU went, node by node; S11's searches over a tenth of its events on
    each; S1 again on the cluster with every append sent through the coordinator rather than
    straight to its worker; and S1 on a cluster of one worker."""
    missing = citus.citus_missing()
    if missing is not None:
        results.notes.append(f"S15 not run: {missing}.")
        return
    single_options = {"max_connections": citus.NODE_OPTIONS["max_connections"]}
    with citus.citus_cluster(workers=0, options=single_options) as single:
        dsn = await asyncio.to_thread(single.create_database, sharded=False)
        await asyncio.to_thread(databases.migrate, dsn)
        await seed_read(dsn, "sessionary", sizes)
        await seed_search(dsn, sizes, s15_searched(sizes))
        await _s15_server(dsn, sizes, workers, server_env, "s15_single", results)
        ungrouped = {**server_env, "SESSIONARY_APPEND_LANES": "0"}
        await _s15_server(dsn, sizes, workers, ungrouped, "s15_ungrouped", results, read=False)
    for nodes, label in ((2, "s15_cluster"), (1, "s15_one_worker")):
        with citus.citus_cluster(workers=nodes, options=citus.NODE_OPTIONS) as cluster:
            dsn = await asyncio.to_thread(cluster.create_database)
            await asyncio.to_thread(databases.migrate, dsn)
            await seed_read(dsn, "sessionary", sizes)
            if nodes == 2:
                await seed_search(dsn, sizes, s15_searched(sizes))
            await _s15_server(
                dsn, sizes, workers, server_env, label, results, cluster, read=nodes == 2
            )
            if nodes == 2:  # the same cluster, each append passed on by the coordinator
                relayed = {**server_env, "SESSIONARY_CITUS_DIRECT_APPENDS": "false"}
                await _s15_server(
                    dsn, sizes, workers, relayed, "s15_relayed", results, cluster, read=False
                )
    appends = results.get("s15_cluster_s1_eps") / results.get("s15_single_s1_eps")
    reads = results.get("s15_cluster_s3_ms") / results.get("s15_single_s3_ms")
    cost = results.get("s15_cluster_pg_cpu") / results.get("s15_ungrouped_pg_cpu")
    coordinator = results.get("s15_cluster_pg_cpu_coordinator") / results.get("s15_cluster_pg_cpu")
    results.notes.append(f"S15: S11's searches over {s15_searched(sizes):,} events.")
    results.notes.append(
        f"S15: on a Citus coordinator and two workers, all on this host's {os.cpu_count()} "
        f"cores, S1 at {appends:.0%} of one node's events/s, S3 in {reads:.2f}x its time; "
        f"PostgreSQL CPU per append {cost:.2f}x one node's ungrouped, the coordinator "
        f"{coordinator:.0%} of it."
    )


async def run_artifacts(database_url: str, prefix: str, sizes: Sizes, results: Results) -> None:
    """S18: artifacts saved and loaded through a server of its own, on databases of its own,
    next to ADK's FileArtifactService and the copy floor; memory; listing."""
    log(
        f"S18: artifacts, {sizes.artifact_tasks} tasks saving then loading 1 KiB and 1 MiB, "
        f"{sizes.artifact_large_tasks} {sizes.artifact_large_mib} MiB; memory; listing "
        f"{sizes.artifact_names:,} names"
    )
    started = time.monotonic()
    results.artifacts = await artifacts.run(database_url, prefix, sizes)
    results.artifacts.notes.append(f"S18 took {(time.monotonic() - started) / 60:.1f} min.")


async def run_memory(
    database_url: str, prefix: str, sizes: Sizes, memory_sizes: memory.Sizes
) -> memory.S19:
    """S19: recall by meaning and by words, its quality on an evaluation set and its speed
    at a million memories; the embedding worker's backfill, and appends meanwhile."""
    log(
        f"S19: memory, {memory_sizes.memory_users} users' facts asked four ways; recall among "
        f"{memory_sizes.memory_app:,} memories; a backfill of {memory_sizes.memory_backfill:,}"
    )
    return await memory.run(database_url, prefix, memory_sizes, sizes)


async def run_erasure(
    database_url: str, prefix: str, sizes: Sizes, erasure_sizes: erasure.Sizes
) -> erasure.S20:
    """S20: a user of a million events erased, and the app's other users' appends meanwhile."""
    log(
        f"S20: erasing a user of {erasure_sizes.erase_sessions:,} sessions of "
        f"{erasure_sizes.erase_events_per_session:,} events"
    )
    return await erasure.run(database_url, prefix, erasure_sizes, sizes)


async def run_adoption(dbs: Databases, results: Results) -> None:
    """S14: `sessionary import-adk` of the ADK database as the small scenarios left it, next
    to ADK reading the same sessions itself (what the import reads them with)."""
    log("S14: ADK's own reads of its database, then sessionary import-adk of it")
    started = time.monotonic()
    read = await portability.adk_reads(dbs.adk)
    results.put("s14_eps", "ADK", read / (time.monotonic() - started))
    run = await asyncio.to_thread(portability.command, dbs.adopted, "import-adk", "--from", dbs.adk)
    imported = portability.events_in(run.summary)
    if imported != read:
        raise RuntimeError(f"import-adk stored other than ADK read: {run.summary}")
    results.put("s14_eps", "Sessionary", imported / run.seconds)
    results.put("s14_rss", "Sessionary", run.peak_rss_mb)
    results.notes.append(f"S14: {read:,} events read by ADK; import-adk {run.summary}.")


def header() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_kib = int(line.split()[1])
    return (
        f"Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPUs ({cpu}), "
        f"{memory_kib / 1024 / 1024:.0f} GiB RAM, Python {platform.python_version()}."
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    report = asyncio.run(bench(args))
    print(report)
    if args.output:
        args.output.write_text(report + "\n")


if __name__ == "__main__":
    main()
