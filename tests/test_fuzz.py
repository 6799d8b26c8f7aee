"""Property-based fuzzing from our own committed OpenAPI spec against a real server process:
no 5xx, and every answer (status, content type, headers, body) is one the spec documents.

The server runs with auth on and the cases carry an admin key, so schemathesis' auth checks
are real: the same request without a key, or with a made-up one, must be a 401.

Left out: schemathesis' "positive data acceptance" check. It expects every schema-valid request
to succeed, but some refusals cannot be written in JSON Schema: `\\u0000` or lone surrogates
anywhere in a nested value, a page token this server did not issue, a session that does not
exist yet. Those are correct 4xx answers (each is tested in test_bad_input.py).

Left out too: the live streams (`…:stream`), whose answer to a valid request never ends; their
refusals (401, 403, 404, 422, 503) are tested in test_live.py and test_auth.py.
"""

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.cli import OPENAPI_PATH
from tests.fixtures import keys_command, start_server, stop_server

pytestmark = pytest.mark.fuzz

schema = schemathesis.openapi.from_path(OPENAPI_PATH).exclude(path_regex=r":stream$")

# An import's body, NDJSON: lines of JSON objects (valid or not as exports), or any bytes.
schemathesis.openapi.media_type(
    "application/x-ndjson",
    st.one_of(
        st.binary(max_size=300),
        st.lists(
            st.dictionaries(st.text(max_size=12), st.integers() | st.text(max_size=12)),
            max_size=4,
        ).map(lambda lines: "\n".join(json.dumps(line) for line in lines).encode()),
    ),
)


@schemathesis.deserializer("application/x-ndjson")
def ndjson_as_text(context: object, response: Any) -> str:
    """An export, as the spec has it: a string (its lines are checked in test_rendering.py)."""
    return str(response.content.decode())


FRAMING_HEADERS = {"content-length", "transfer-encoding", "host", "connection"}


@schema.hook("map_headers")
def drop_framing_headers(context: object, headers: dict[str, Any] | None) -> dict[str, Any] | None:
    """Negative cases may invent any header, framing ones included. A `Content-Length: |` is
    malformed HTTP that uvicorn's parser answers with a plain 400 before the app sees it: it
    tests the HTTP library, not this service."""
    if headers is None:
        return None
    return {name: value for name, value in headers.items() if name.lower() not in FRAMING_HEADERS}


@schema.hook("filter_query")
def within_the_request_line(context: object, query: dict[str, Any] | None) -> bool:
    """A query longer than a request line may be is refused with 431 before the app sees it,
    whatever the operation (tested in test_bad_input.py): it tests the guard, not the
    operation, and schemathesis does not count 431 among the refusals of invalid data."""
    return query is None or len(urlencode(query, doseq=True)) < 4096


@pytest.fixture(scope="module")
def secured_server(database_url: str) -> Iterator[tuple[str, str]]:
    """A real server with auth on, and an admin key for it."""
    key = keys_command(database_url, "create", "--admin", "--name", "fuzz")
    process, base_url = start_server(database_url, env={"SESSIONARY_AUTH": "true"})
    try:
        yield base_url, key
    finally:
        stop_server(process)


@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("SESSIONARY_FUZZ_EXAMPLES", "60")),
    # `make test` replays one fixed exploration, so the suite is green or red for the code alone;
    # SESSIONARY_FUZZ_ROAM=1 explores afresh on every run.
    derandomize=not os.environ.get("SESSIONARY_FUZZ_ROAM"),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_within_its_spec(
    case: schemathesis.Case, secured_server: tuple[str, str]
) -> None:
    base_url, key = secured_server
    headers = {"Authorization": f"Bearer {key}"}
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    if negative and "authorization" not in {name.lower() for name in case.headers or {}}:
        headers = {}  # the case leaves the key out on purpose: the answer must be a refusal
    case.call_and_validate(
        base_url=base_url, headers=headers, excluded_checks=[positive_data_acceptance]
    )
