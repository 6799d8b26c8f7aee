"""Failover under load: a primary with a synchronous standby, the primary killed and the standby
promoted while appends run. The server, given both hosts in a multi-host DATABASE_URL with
`target_session_attrs=read-write`, goes on against the new primary without a restart, and no
acknowledged event is lost."""

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx

from tests.fixtures import start_server, stop_server
from tests.helpers import APP, USER, session_url
from tests.replication import primary_and_standby, write_until


def test_promoting_the_standby_under_load_loses_no_acknowledged_event():
    with primary_and_standby(synchronous=True) as (primary, standby):
        migrate = [str(Path(sys.executable).with_name("sessionary")), "migrate"]
        subprocess.run(migrate, env={"DATABASE_URL": primary.dsn()}, check=True, timeout=120)
        both = (
            f"postgresql://postgres@127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
            "/postgres?target_session_attrs=read-write"
        )
        process, base_url = start_server(both, "--workers", "2")
        try:
            created = httpx.post(
                f"{base_url}/apps/{APP}/users/{USER}/sessions", json={"sessionId": "s"}
            )
            assert created.status_code == 201, created.text
            acknowledged: set[str] = set()

            async def scenario() -> tuple[int, int]:
                stop = asyncio.Event()
                writing = asyncio.create_task(write_until(base_url, stop, acknowledged))
                await asyncio.sleep(1.5)
                before = len(acknowledged)
                await asyncio.to_thread(primary.stop, "immediate")  # the primary dies
                await asyncio.to_thread(standby.promote)
                promoted = len(acknowledged)
                await asyncio.sleep(3)
                stop.set()
                await writing
                return before, promoted

            before, promoted = asyncio.run(scenario())
            assert before > 50  # appends ran before the failover
            assert len(acknowledged) > promoted + 50  # and after it, through the same server
            session = httpx.get(f"{base_url}{session_url('s')}", timeout=30).json()
            stored = [event["id"] for event in session["events"]]
            assert acknowledged <= set(stored), acknowledged - set(stored)
            assert [event["seq"] for event in session["events"]] == list(range(1, len(stored) + 1))
            assert len(stored) == len(set(stored))
        finally:
            stop_server(process)
