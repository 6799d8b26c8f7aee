"""An OpenAI-compatible `/v1/embeddings` endpoint for the tests: WordLlama behind it, in a
uvicorn process of its own on a loopback port, with knobs to make it fail.

    with serve_embeddings(key="k") as server:
        embedder = OpenAIEmbedder(server.url, server.model, key="k")
        server.fail_next(2, status=429, retry_after=0.1)
        ...
        server.requests()  # what it was asked, oldest first

It answers as OpenAI does (`{"data": [{"index", "embedding"}], …}`, errors as
`{"error": {"message", "type", "code"}}`), with two twists that a client must survive: its
`data` come in reverse order, and its vectors are not of unit length (WordLlama's times
`scale`), as some servers' are. `dimensions` keeps a vector's first values, as OpenAI's
text-embedding-3 models do (WordLlama was trained for it: Matryoshka). A wrong key gets a 401
whose message repeats the key it was given, as careless endpoints do.

Run alone: `python -m tests.embedding_server --port 8100 [--key K]`.
"""

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.embeddings import WordLlamaEmbedder

MODEL = "wordllama"
ROOT = Path(__file__).resolve().parent.parent


def create_app(embedder: WordLlamaEmbedder, key: str | None, scale: float) -> Starlette:
    # What the next requests get instead of an answer of embeddings, in order; and each
    # embeddings request as it came.
    planned: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []

    def error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return JSONResponse(body, status_code=status)

    async def embeddings(request: Request) -> Response:
        body = await request.json()
        seen.append(
            {
                "model": body.get("model"),
                "inputs": len(body.get("input") or []),
                "dimensions": body.get("dimensions"),
                "encoding_format": body.get("encoding_format"),
                "authorization": request.headers.get("authorization"),
                "query": request.url.query,
            }
        )
        if planned:
            plan = planned.pop(0)
            await asyncio.sleep(plan.get("stall", 0))
            if "status" in plan:
                return JSONResponse(
                    plan["body"], status_code=plan["status"], headers=plan["headers"]
                )
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            given = request.headers.get("authorization", "").removeprefix("Bearer ")
            return error(
                401, f"Incorrect API key provided: {given}.", "invalid_request_error", "401"
            )
        if body.get("model") != MODEL:
            return error(
                404,
                f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts):
            return error(400, "'input' must be non-empty strings.", "invalid_request_error")
        dimensions = body.get("dimensions") or embedder.DIMENSIONS
        if not 1 <= dimensions <= embedder.DIMENSIONS:
            return error(400, f"dimensions must be 1 to {embedder.DIMENSIONS}.", "invalid_request")
        vectors = await embedder.embed(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": [x * scale for x in v[:dimensions]]}
            for i, v in enumerate(vectors)
        ]
        data.reverse()
        tokens = sum(len(text.split()) for text in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": MODEL,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def plan(request: Request) -> Response:
        planned.extend(await request.json())
        return Response(status_code=204)

    async def requests(request: Request) -> Response:
        if request.method == "DELETE":
            seen.clear()
            planned.clear()
            return Response(status_code=204)
        return JSONResponse(seen)

    return Starlette(
        routes=[
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/control/plan", plan, methods=["POST"]),
            Route("/control/requests", requests, methods=["GET", "DELETE"]),
        ]
    )


class EmbeddingServer:
    """The endpoint's process, its base URL (`url`, ending `/v1`), and its knobs."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, key: str | None) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}/v1"
        self.model = MODEL
        self.key = key
        self._control = f"http://127.0.0.1:{port}/control"

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        retry_after: float | None = None,
        message: str = "The server had an error while processing your request.",
    ) -> None:
        """The next `count` requests get `status`, with OpenAI's error body and Retry-After
        (seconds) when given."""
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        body = {"error": {"message": message, "type": "server_error", "code": None}}
        self._plan([{"status": status, "body": body, "headers": headers}] * count)

    def reply_next(self, body: Any, *, status: int = 200, count: int = 1) -> None:
        """The next `count` requests get this JSON body instead of embeddings."""
        self._plan([{"status": status, "body": body, "headers": {}}] * count)

    def stall_next(self, count: int = 1, *, seconds: float) -> None:
        """The next `count` requests wait `seconds` before they are answered as usual."""
        self._plan([{"stall": seconds}] * count)

    def requests(self) -> list[dict[str, Any]]:
        """The embeddings requests so far, oldest first: `model`, `inputs` (how many texts),
        `dimensions`, `encoding_format`, `authorization` and the URL's `query`, as sent."""
        answer = httpx.get(f"{self._control}/requests", timeout=10)
        answer.raise_for_status()
        seen: list[dict[str, Any]] = answer.json()
        return seen

    def reset(self) -> None:
        """Forget the requests so far and any failure still planned."""
        httpx.delete(f"{self._control}/requests", timeout=10).raise_for_status()

    def stop(self) -> None:
        """End the process: from then on the endpoint refuses connections."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _plan(self, plans: list[dict[str, Any]]) -> None:
        httpx.post(f"{self._control}/plan", json=plans, timeout=10).raise_for_status()


@contextmanager
def serve_embeddings(
    *, key: str | None = None, scale: float = 2.5, start_timeout: float = 60.0
) -> Iterator[EmbeddingServer]:
    """The endpoint on a free loopback port, answering (its model loaded) when this yields;
    stopped after. It listens on a socket bound here and handed to it, so no other process
    can take the port in between."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    command = [sys.executable, "-m", "tests.embedding_server", "--fd", str(listener.fileno())]
    command += ["--scale", str(scale)]
    env = dict(os.environ)
    if key is not None:
        env["EMBEDDING_SERVER_KEY"] = key  # not on the command line, where `ps` shows it
    with listener:
        process = subprocess.Popen(command, cwd=ROOT, env=env, pass_fds=[listener.fileno()])
    server = EmbeddingServer(process, port, key)
    try:
        _wait_until_ready(server, start_timeout)
        yield server
    finally:
        server.stop()


def _wait_until_ready(server: EmbeddingServer, timeout: float) -> None:
    started = time.monotonic()
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"the embeddings server exited with {server.process.returncode}")
        try:
            server.requests()
            return
        except httpx.TransportError:
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the embeddings server did not answer in {timeout} s") from None
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, help="a listening socket to serve on")
    parser.add_argument("--port", type=int, default=8100, help="else, a loopback port")
    parser.add_argument("--key", default=os.environ.get("EMBEDDING_SERVER_KEY"))
    parser.add_argument("--scale", type=float, default=2.5)
    args = parser.parse_args()
    embedder = WordLlamaEmbedder()

    async def run() -> None:
        await embedder.embed(["loaded before the first request"])
        config = uvicorn.Config(
            create_app(embedder, args.key, args.scale),
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            lifespan="off",
        )
        if args.fd is None:
            await uvicorn.Server(config).serve()
        else:
            await uvicorn.Server(config).serve(sockets=[socket.socket(fileno=args.fd)])

    asyncio.run(run())


if __name__ == "__main__":
    main()
