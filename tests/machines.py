"""Hypothesis state machines that drive the service over HTTP against a model of its docs.

Hypothesis runs a machine synchronously, so it runs in a thread of its own, and each request
goes to the test's event loop through the test's client (`request`). `run` returns how many
reads of the service the machine checked against its model, which the test asserts is enough
to mean something.
"""

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

T = TypeVar("T")
# Examples per machine; set, the run is random rather than derandomized (`make test-history`).
EXAMPLES = int(os.environ.get("SESSIONARY_HISTORY_EXAMPLES", "15"))


class ServiceMachine(RuleBasedStateMachine):
    client: httpx.AsyncClient
    app_under_test: FastAPI
    loop: asyncio.AbstractEventLoop
    reads: int  # of the service checked against the model, over the run

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        return self.call(self.client.request(method, url, **options))

    @classmethod
    async def run(cls, client: httpx.AsyncClient, app: FastAPI, *, steps: int) -> int:
        """Run EXAMPLES examples of up to `steps` steps; how many reads were checked."""
        cls.client, cls.app_under_test, cls.reads = client, app, 0
        cls.loop = asyncio.get_running_loop()
        config = settings(
            max_examples=EXAMPLES,
            stateful_step_count=steps,
            deadline=None,
            derandomize="SESSIONARY_HISTORY_EXAMPLES" not in os.environ,
            suppress_health_check=list(HealthCheck),
        )
        await asyncio.to_thread(run_state_machine_as_test, cls, settings=config)
        return cls.reads
