"""The committed spec reads right in the generators people use (openapi-generator, oapi-codegen,
openapi-python-client, openapi-typescript): numbers as doubles and integers as 64-bit, every
schema named, NDJSON described as lines, nullable where the server takes null, an API key
that may be left out when keys are off, and each 2xx of an operation readable by the schema
a generator types the call with."""

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from app.cli import OPENAPI_PATH
from app.limits import INT64_MAX

SPEC: dict[str, Any] = json.loads(OPENAPI_PATH.read_text())
SCHEMAS: dict[str, Any] = SPEC["components"]["schemas"]
OPERATIONS = [
    (method, path, operation)
    for path, operations in SPEC["paths"].items()
    for method, operation in operations.items()
]
NULL = {"type": "null"}
NDJSON = "application/x-ndjson"
EXPORT = "/apps/{app_name}/users/{user_id}/sessions/{session_id}:export"
IMPORT = "/apps/{app_name}/users/{user_id}/sessions:import"
APPEND = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"


def nodes(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of the document, with where it is."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from nodes(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from nodes(value, f"{where}/{index}")


def typed(kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [(where, node) for where, node in nodes(SPEC) if node.get("type") == kind]


def bodies() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every media type of a request or an answer: where, media type, its schema."""
    for method, path, operation in OPERATIONS:
        request = operation.get("requestBody", {}).get("content", {})
        for media_type, content in request.items():
            yield f"{method} {path} request", media_type, content["schema"]
        for status, answer in operation["responses"].items():
            for media_type, content in answer.get("content", {}).items():
                yield f"{method} {path} {status}", media_type, content["schema"]


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rpartition("/")[2]]
    return schema


def validates(schema: dict[str, Any], value: Any) -> list[str]:
    checker = jsonschema.Draft202012Validator({**schema, "components": SPEC["components"]})
    return [error.message for error in checker.iter_errors(value)]


def test_every_number_is_a_double() -> None:
    """Without a format, both Go generators make a number a float32: epoch seconds would step
    by 128 s."""
    numbers = typed("number")
    assert numbers
    assert [where for where, node in numbers if node.get("format") != "double"] == []


def test_every_integer_is_64_bit_with_integer_bounds() -> None:
    """Without a format, openapi-generator's Go makes an integer an int32, which a session's
    token counts pass; bounds written as floats (`9.223372036854776e+18`) are not integers."""
    integers = typed("integer")
    assert integers
    assert [where for where, node in integers if node.get("format") != "int64"] == []
    for where, node in integers:
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if bound in node:
                assert type(node[bound]) is int, (where, bound, node[bound])
    assert SCHEMAS["Event"]["properties"]["seq"]["maximum"] == INT64_MAX


def test_no_default_is_null() -> None:
    """openapi-typescript types a property with a default as always present."""
    assert [where for where, node in nodes(SPEC) if node.get("default", ...) is None] == []


def test_problem_fields_are_optional_but_never_null() -> None:
    problem = SCHEMAS["Problem"]
    optional = set(problem["properties"]) - set(problem["required"])
    assert optional == {"instance", "errors", "currentVersion", "currentRevision", "callIds"}
    for name in optional:
        assert "anyOf" not in problem["properties"][name], name


def test_every_body_is_a_named_schema() -> None:
    """An inline schema gets a name the generator makes up (`ExportSession200Response`)."""
    inline = [
        (where, media_type)
        for where, media_type, schema in bodies()
        if "$ref" not in schema
        and not (media_type.startswith("text/") and schema == {"type": "string"})
        and schema != {"type": "string", "format": "binary"}  # bytes: a primitive, no name
    ]
    assert inline == []


def plain_or_named(schema: dict[str, Any]) -> bool:
    """A reference to a named schema, a JSON primitive, or an array of one of those."""
    if "$ref" in schema:
        return True
    if schema.get("type") == "array":
        return plain_or_named(schema.get("items", {}))
    return schema.get("type") in ("string", "number", "integer", "boolean", "null")


def test_no_object_schema_is_inline() -> None:
    """Properties are declared at the top of a named schema only, and a union inside one (or
    in an operation) is a named schema or a primitive, or null (openapi-generator names any
    other itself: `ValidationErrorItemLocInner`)."""
    places = [(f"#/components/schemas/{name}", schema) for name, schema in SCHEMAS.items()]
    places.append(("#/paths", SPEC["paths"]))
    for root, document in places:
        for where, node in nodes(document, root):
            if where != root and not where.endswith("/properties"):
                assert "properties" not in node, where
            if where != root and "/x-" not in where:  # an extension is not read as a schema
                for union in ("anyOf", "oneOf", "allOf"):
                    options = [option for option in node.get(union, []) if option != NULL]
                    # Nothing but `X or null`: any other union is a schema of its own, named.
                    assert len(options) <= 1, (where, node[union])
                    for option in options:
                        assert plain_or_named(option), (where, option)


def test_parameters_are_not_nullable() -> None:
    """A parameter left out is absent, never null: no `anyOf` with null in its schema."""
    for method, path, operation in OPERATIONS:
        for parameter in operation.get("parameters", []):
            assert "anyOf" not in parameter["schema"], (method, path, parameter["name"])
            assert parameter["schema"].get("type") != "null", (method, path, parameter["name"])


def test_no_schema_has_a_property_of_its_own_name() -> None:
    """openapi-python-client's models then clash with their own field (`StateDelta`)."""

    def plain(name: str) -> str:
        return name.replace("_", "").lower()

    clashes = [
        (name, field)
        for name, schema in SCHEMAS.items()
        for field in schema.get("properties", {})
        if plain(field) == plain(name)
    ]
    assert clashes == []


def test_labels_are_a_map_of_strings() -> None:
    labels = SCHEMAS["Labels"]
    assert labels["type"] == "object"
    assert labels["additionalProperties"] == {"type": "string", "maxLength": 256}
    assert labels["propertyNames"]["pattern"] == r"^[^:\x00-\x1f\x7f-\x9f]{1,63}$"
    assert [where for where, node in nodes(SPEC) if "patternProperties" in node] == []


def test_events_declare_content_and_usage_and_keep_unknown_fields() -> None:
    for name in ("EventIn", "Event", "PartialEvent", "QueuedEvent"):
        schema = SCHEMAS[name]
        assert schema["additionalProperties"] is True, name
        properties = schema["properties"]
        assert properties["content"]["anyOf"] == [{"$ref": "#/components/schemas/Content"}, NULL]
        assert properties["usageMetadata"]["anyOf"] == [
            {"$ref": "#/components/schemas/UsageMetadata"},
            NULL,
        ]
    content = SCHEMAS["Content"]
    assert content["additionalProperties"] is True
    assert set(content["properties"]) == {"role", "parts"}
    part = resolve(content["properties"]["parts"]["anyOf"][0]["items"])
    assert part["additionalProperties"] is True
    assert {"text", "functionCall", "functionResponse", "inlineData", "fileData"} <= set(
        part["properties"]
    )
    usage = SCHEMAS["UsageMetadata"]
    assert {"promptTokenCount", "candidatesTokenCount", "totalTokenCount"} <= set(
        usage["properties"]
    )
    event = {
        "id": "e1",
        "timestamp": 1795000001.5,
        "seq": 1,
        "author": "model",
        "content": {
            "role": "model",
            "parts": [
                {"text": "Sunny."},
                {"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Oslo"}}},
                {"functionResponse": {"id": "c1", "name": "weather", "response": {"sky": "sun"}}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "text/plain", "fileUri": "gs://b/o.txt"}},
                {"text": "new", "someFuturePartField": 1},
            ],
        },
        "usageMetadata": {"promptTokenCount": 2**31, "totalTokenCount": 2**31 + 5},
        "someFutureEventField": {"x": 1},
    }
    assert validates({"$ref": "#/components/schemas/Event"}, event) == []


def test_export_and_import_are_ndjson_lines_or_one_json_document() -> None:
    """NDJSON is a string of lines, each described by a named schema (`x-itemSchema`, as
    OpenAPI 3.2's `itemSchema`: the header a `SessionExport`, the others `Event`s), and the
    same export also comes as one JSON document, for the generators that read no NDJSON.
    JSON is listed first: openapi-generator asks for the first media type with `json` in its
    name, which `application/x-ndjson` has too."""
    export = SPEC["paths"][EXPORT]["get"]["responses"]["200"]["content"]
    request = SPEC["paths"][IMPORT]["post"]["requestBody"]["content"]
    for content in (export, request):
        assert list(content) == ["application/json", NDJSON]
        assert content["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ExportedSession"
        }
        ndjson = content[NDJSON]
        assert resolve(ndjson["schema"])["type"] == "string"
        assert ndjson["x-itemSchema"]["oneOf"] == [
            {"$ref": "#/components/schemas/SessionExport"},
            {"$ref": "#/components/schemas/Event"},
            {"$ref": "#/components/schemas/ExportedArtifact"},
        ]
    exported = SCHEMAS["ExportedSession"]
    assert exported["properties"]["header"]["$ref"] == "#/components/schemas/SessionExport"
    assert exported["properties"]["events"]["items"] == {"$ref": "#/components/schemas/Event"}
    artifacts = exported["properties"]["artifacts"]["items"]
    assert artifacts == {"$ref": "#/components/schemas/ExportedArtifact"}
    assert set(exported["required"]) == {"header", "events"}


def test_an_api_key_is_optional_where_keys_may_be_off() -> None:
    """One requirement for the document, met by a bearer key or by none (keys off); operations
    declare none of their own but the public ones, which need no key (openapi-python-client
    asks for a token for any operation that declares one)."""
    assert SPEC["security"] == [{}, {"HTTPBearer": []}]
    declared = {path for _, path, operation in OPERATIONS if "security" in operation}
    assert declared == {"/healthz", "/readyz", "/metrics", "/embeddings"}
    assert all(operation["security"] == [] for _, path, operation in OPERATIONS if path in declared)


def success_schemas(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        status: answer["content"]["application/json"]["schema"]
        for status, answer in operation["responses"].items()
        if status.startswith("2") and "application/json" in answer.get("content", {})
    }


def test_the_first_success_schema_reads_every_success_body() -> None:
    """openapi-generator's Go decodes every 2xx with the schema of the lowest one: an append's
    200 must read a 202's partial event as well as a stored event."""
    stored = {"id": "e1", "timestamp": 1795000001.5, "seq": 3, "author": "model"}
    partial = {"author": "model", "partial": True, "content": {"parts": [{"text": "Sun"}]}}
    for path, one, many in [
        (APPEND, stored, partial),
        (APPEND + ":batch", {"events": [stored]}, {"events": [partial]}),
    ]:
        schemas = success_schemas(SPEC["paths"][path]["post"])
        assert set(schemas) == {"200", "201", "202"}
        assert validates(schemas["200"], one) == [], path
        assert validates(schemas["200"], many) == [], path
        assert validates(schemas["201"], one) == [], path
        assert validates(schemas["202"], many) == [], path
    for method, path, operation in OPERATIONS:
        schemas = success_schemas(operation)
        if len({json.dumps(schema) for schema in schemas.values()}) > 1:
            assert path in (APPEND, APPEND + ":batch"), (method, path)


def test_every_nullable_request_field_is_named_in_the_docs() -> None:
    """docs/api.md says what null means for every field of a create or an update."""
    text = (OPENAPI_PATH.parents[1] / "docs" / "api.md").read_text()
    section = text.split("\n## Nulls\n", 1)[1].split("\n## ", 1)[0]
    for name in ("SessionCreate", "SessionUpdate"):
        for field, schema in SCHEMAS[name]["properties"].items():
            if NULL in schema.get("anyOf", []):
                assert re.search(rf"`{field}`", section), (name, field)
