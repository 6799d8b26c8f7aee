"""The OpenAPI document as generators read it: FastAPI's, finished.

What FastAPI writes is valid OpenAPI 3.1, but SDK generators read some of it wrong: a number
without a format is a float32 to both Go generators, an integer without one an int32 to
openapi-generator's; `default: null` makes openapi-typescript type a field as always there;
an inline schema gets a name the generator makes up; a security requirement on an operation
makes openapi-python-client demand a token even from a server whose keys are off. `finish`
fixes each in the one document every client is generated from, and adds the schemas no
route's JSON names: problems, an export's lines, the shapes of google-genai's content.
"""

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from app.limits import INT64_MAX
from app.schemas import (
    EventIn,
    ExportedSession,
    MemoryExport,
    Problem,
    SessionExport,
    UserArtifactsExport,
    UserStateExport,
)
from app.schemas.genai import GENAI_SCHEMAS

COMPONENTS = "#/components/schemas/"
NULL = {"type": "null"}
BEARER = "HTTPBearer"

# Named schemas no route's JSON names (a problem+json answer, an export's header line), and
# the shapes of an event's `content` and `usageMetadata`.
MODELS: tuple[type[BaseModel], ...] = (
    Problem,
    SessionExport,
    ExportedSession,
    UserStateExport,
    UserArtifactsExport,
    MemoryExport,
    *GENAI_SCHEMAS,
)

# The schema of an export's NDJSON form (`app.api.portability`).
NDJSON_SCHEMAS: dict[str, dict[str, Any]] = {
    "SessionNdjson": {
        # Bytes to generators (a file, a byte array), which read no NDJSON: UTF-8 text.
        "type": "string",
        "format": "binary",
        "contentMediaType": "application/x-ndjson",
        "description": "A session's export as NDJSON: one JSON object per line, the first a "
        "`SessionExport` (the header), then `eventCount` lines each an `Event` as stored, in "
        "seq order. Read it line by line: an export may be larger "
        "than memory.",
    },
    "UserNdjson": {
        "type": "string",
        "format": "binary",
        "contentMediaType": "application/x-ndjson",
        "description": "A user's export as NDJSON: one JSON object per line, each a "
        "`UserStateExport`, a session's export (`SessionExport`, then its events and artifact "
        "lines), a `UserArtifactsExport` and its artifact lines, or a `MemoryExport`. Read it "
        "line by line: an export may be larger than memory.",
    },
}

# Each event schema declares these, though the service stores them as sent, unchecked: so
# that generated SDKs type them (rather than leave them to additional properties).
EVENT_FIELDS = {
    "content": {
        "anyOf": [{"$ref": COMPONENTS + "Content"}, NULL],
        "description": "What was said: google-genai's `Content`, its `role` and `parts`.",
    },
    "usageMetadata": {
        "anyOf": [{"$ref": COMPONENTS + "UsageMetadata"}, NULL],
        "description": "The token counts the model reported, which the session's `usage` sums.",
    },
}

# With keys on, a request needs a bearer key; with keys off, none: either meets it.
SECURITY: list[dict[str, list[str]]] = [{}, {BEARER: []}]


def finish(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec`, FastAPI's document, finished for the generators (in place)."""
    components = spec["components"]["schemas"]
    for model in MODELS:
        generated = model.model_json_schema(ref_template=COMPONENTS + "{model}")
        for name, definition in generated.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components[model.__name__] = generated
    components.update(NDJSON_SCHEMAS)
    for name in _event_schemas():
        _declare_event_fields(components[name])
    for operations in spec["paths"].values():
        for operation in operations.values():
            _finish_operation(operation)
    spec["security"] = SECURITY
    for _, node in _nodes(spec):
        _finish_schema(node)
    spec["components"]["schemas"] = dict(sorted(components.items()))
    return spec


def _event_schemas() -> Iterator[str]:
    """The names of `EventIn` and of every schema made from it."""
    pending: list[type[EventIn]] = [EventIn]
    while pending:
        model = pending.pop()
        yield model.__name__
        pending.extend(model.__subclasses__())


def _declare_event_fields(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    after = {name: properties.pop(name) for name in list(properties) if name in ("actions", "seq")}
    properties.update(EVENT_FIELDS)
    properties.update(after)


def _finish_operation(operation: dict[str, Any]) -> None:
    """No security of its own but `[]` (no key at all, for the probes); no parameter or body
    schema that is null, for a parameter left out or a body not sent is absent, not null."""
    if operation.get("security") == [{BEARER: []}]:
        del operation["security"]
    for parameter in operation.get("parameters", []):
        parameter["schema"] = _not_null(parameter["schema"])
    for content in operation.get("requestBody", {}).get("content", {}).values():
        content["schema"] = _not_null(content["schema"])


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema `anyOf: [X, null]` as X, with what it said besides (its description, title
    and pattern are the parameter's) but a title FastAPI made up for a body (`Body`)."""
    options = schema.get("anyOf")
    if options is None or NULL not in options or len(options) != 2:
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    option: dict[str, Any] = next(option for option in options if option != NULL)
    if "$ref" in option:
        return option
    return {**option, **rest}


def _finish_schema(node: dict[str, Any]) -> None:
    """Numbers are doubles, integers 64-bit with integer bounds; no default is null."""
    kind = node.get("type")
    if kind == "number":
        node.setdefault("format", "double")
    elif kind == "integer":
        node.setdefault("format", "int64")
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(node.get(bound), float):
                node[bound] = _integer(node[bound])
    if "default" in node and node["default"] is None:
        del node["default"]


def _integer(bound: float) -> int:
    """A bound FastAPI's document model turned into a float, as the integer it was: 2^63 - 1,
    the only one past 2^53, comes out as the float 2^63."""
    return INT64_MAX if bound == float(2**63) else int(bound)


def _nodes(node: Any) -> Iterator[tuple[str | int, dict[str, Any]]]:
    """Every object in the document, without recursion."""
    stack: list[tuple[str | int, Any]] = [("", node)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            yield key, value
            stack.extend(value.items())
        elif isinstance(value, list):
            stack.extend(enumerate(value))
