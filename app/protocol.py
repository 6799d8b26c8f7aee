"""The HTTP/1.1 connection, past uvicorn's own handling of the request head: uvicorn's
httptools protocol subclassed with a cap on the head, and problem+json for every request
refused before it reaches the app.

httptools buffers a request line or a header until it ends, however long: a 256 MB header was
read whole while the worker's other requests waited. Here the head (request line and headers)
is counted as it arrives and refused with 431 once one line passes `max_line_bytes` or the
whole head `max_head_bytes`; at most one read from the socket beyond the cap is buffered.

The one module that uses uvicorn's internals: `uvicorn.protocols.http.httptools_impl`'s
`HttpToolsProtocol` (its parser callbacks, `url`, `transport`, `server_state` and
`send_400_response`, which it calls when a callback raises) and `STATUS_LINE`. pyproject.toml
holds uvicorn below its next minor version, and tests/test_fast_paths.py checks each of these.
It takes the problem document from `app.errors`, and nothing from `app.api`.
"""

import json
from functools import partial
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.errors import PROBLEM_JSON, BadRequest, HeadersTooLarge, SessionaryError
from app.observability import NOSNIFF

# What separates a header's name and value, and ends its line, on the wire.
HEADER_FRAMING = len(b": \r\n")


class _Refused(Exception):
    """Stops the parser from inside a callback; uvicorn then calls `send_400_response`."""


class CappedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, max_line_bytes: int, max_head_bytes: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_line_bytes = max_line_bytes
        self.max_head_bytes = max_head_bytes
        self._in_head = False
        self._head_bytes = 0  # url and complete headers: exact
        self._unparsed_bytes = 0  # every read since the head began: bounds a header in progress
        self._refusal: SessionaryError | None = None

    def data_received(self, data: bytes) -> None:
        if self._in_head:  # a read that began a message is judged by the exact count instead
            self._unparsed_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._unparsed_bytes > self.max_head_bytes:
            self._refuse(self._head_too_large())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = self._unparsed_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.max_line_bytes:
            self._stop(
                HeadersTooLarge(
                    f"The request line is longer than {self.max_line_bytes} bytes "
                    "(SESSIONARY_MAX_HEADER_LINE_BYTES)."
                )
            )

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value) + HEADER_FRAMING
        if size > self.max_line_bytes:
            self._stop(
                HeadersTooLarge(
                    f"The header {name.decode('latin-1')[:64]!r} is longer than "
                    f"{self.max_line_bytes} bytes (SESSIONARY_MAX_HEADER_LINE_BYTES)."
                )
            )
        self._head_bytes += size
        if len(self.url) + self._head_bytes > self.max_head_bytes:
            self._stop(self._head_too_large())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refuses, as problem+json instead of plain text."""
        self._refuse(
            self._refusal
            or BadRequest(
                "The request is not valid HTTP/1.1: its request line or a header holds raw "
                "spaces, control characters or non-ASCII bytes, or its framing is broken."
            )
        )

    def _head_too_large(self) -> HeadersTooLarge:
        return HeadersTooLarge(
            f"The request line and headers exceed {self.max_head_bytes} bytes "
            "(SESSIONARY_MAX_HEADER_BYTES)."
        )

    def _stop(self, refusal: SessionaryError) -> None:
        self._refusal = refusal
        raise _Refused(refusal.detail)

    def _refuse(self, error: SessionaryError) -> None:
        """Answer and close: the rest of the request is never read."""
        self._in_head = False
        if self.transport.is_closing():
            return
        body = json.dumps(error.problem_body()).encode()
        head = [STATUS_LINE[error.status]]
        for name, value in (*self.server_state.default_headers, NOSNIFF):
            head.append(name + b": " + value + b"\r\n")
        head.append(
            f"content-type: {PROBLEM_JSON}\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n".encode()
        )
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def capped_protocol(max_line_bytes: int, max_head_bytes: int) -> Any:
    """The protocol class for uvicorn's `http` option, with its caps bound (picklable, so that
    worker processes can be given it)."""
    return partial(
        CappedHttpToolsProtocol, max_line_bytes=max_line_bytes, max_head_bytes=max_head_bytes
    )
