"""A pooled connection that the server closes as the client reuses it (its idle timeout ran out
just then): an append sent into it is resent, with the same event id, on a new connection."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from sessionary_client import AsyncSessionaryClient, SessionaryClient
from sessionary_client.errors import APIConnectionError


class ClosesTheSecondRequest(BaseHTTPRequestHandler):
    """Keeps connections open, and answers every request as an append or a create would, but
    the second one, which it reads and then closes the connection on, without a word."""

    protocol_version = "HTTP/1.1"  # keep-alive
    bodies: list[dict[str, object]]

    def do_GET(self) -> None:
        self.bodies.append({})
        self.answer(200, {"state": {}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        if len(self.bodies) == 2:
            self.close_connection = True
            return
        self.answer(201, {"id": "s", "seq": 1, **body})

    def answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def closing_server() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """The server's base URL, and the bodies it read, in order."""
    bodies: list[dict[str, object]] = []
    handler = type("Handler", (ClosesTheSecondRequest,), {"bodies": bodies})
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", bodies
        finally:
            server.shutdown()
            thread.join()


async def test_an_append_into_a_connection_closed_under_it_is_resent(
    transport: httpx.AsyncBaseTransport,
) -> None:
    with closing_server() as (base_url, bodies):
        async with AsyncSessionaryClient(base_url, backoff=0.01, transport=transport) as client:
            await client.get_app_state("app")  # opens the connection that the append reuses
            event = await client.append_event("app", "u", "s", {"author": "user"})
    _, sent, resent = bodies
    assert sent == resent and sent["id"]  # the id the client gave it, kept across sends
    assert event["id"] == sent["id"]


def test_the_sync_client_resends_it_too() -> None:
    with closing_server() as (base_url, bodies):
        with SessionaryClient(base_url, backoff=0.01) as client:
            client.get_app_state("app")
            client.append_events("app", "u", "s", [{"author": "user"}, {"author": "agent"}])
    _, sent, resent = bodies
    assert sent == resent


async def test_a_create_is_not_resent_the_server_may_have_stored_it(
    transport: httpx.AsyncBaseTransport,
) -> None:
    with closing_server() as (base_url, bodies):
        async with AsyncSessionaryClient(base_url, backoff=0.01, transport=transport) as client:
            await client.get_app_state("app")
            with pytest.raises(APIConnectionError):
                await client.create_session("app", "u")
    assert len(bodies) == 2
