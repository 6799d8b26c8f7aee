"""The committed spec is what the app generates: `make openapi` after changing the API."""

from app.cli import OPENAPI_PATH, openapi_json
from app.config import Settings
from app.main import create_app


def test_committed_openapi_matches_the_app() -> None:
    generated = openapi_json(create_app(Settings()))
    assert OPENAPI_PATH.read_text() == generated, "openapi/openapi.json is stale: run make openapi"


def test_every_operation_is_named_and_documented() -> None:
    spec = create_app(Settings()).openapi()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            assert operation.get("operationId"), (method, path)
            assert operation.get("description") or operation.get("summary"), (method, path)
