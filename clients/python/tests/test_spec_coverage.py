"""The client has what the spec names, as the generated `_spec` lists it (clients/generate.py):
a class for each problem code, which an answer with that code raises (and the package
exports), and for each operation the method docs/clients.md's table names, on both clients."""

import re
from pathlib import Path

import httpx
import pytest
import sessionary_client
from sessionary_client import AsyncSessionaryClient, SessionaryClient, errors
from sessionary_client._spec import ERROR_CLASSES, OPERATIONS

TABLE = Path(__file__).parents[3] / "docs" / "clients.md"


def python_methods() -> dict[str, str]:
    """Each operationId with the method the table's Python column names ("" for none)."""
    lines = TABLE.read_text().splitlines()
    header = next(line for line in lines if line.startswith("| Operation |"))
    column = [cell.strip() for cell in header.split("|")].index("Python")
    named = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [re.search(r"`([^`]+)`", cell) for cell in line.split("|")]
        if cells[1]:
            named[cells[1].group(1)] = cells[column].group(1) if cells[column] else ""
    return named


@pytest.mark.parametrize(("code", "name"), ERROR_CLASSES.items(), ids=list(ERROR_CLASSES))
def test_each_problem_code_raises_its_own_class(code: str, name: str) -> None:
    kind = getattr(errors, name, None)
    assert isinstance(kind, type) and issubclass(kind, errors.APIError), (
        f"the spec's code {code!r} has no class {name} in sessionary_client.errors"
    )
    # 418: a status with no class of its own, which would stand in for `http_error`'s
    answer = httpx.Response(
        418, json={"code": code, "detail": "d"}, request=httpx.Request("GET", "http://s/x")
    )
    assert type(errors.error_for(answer)) is kind


def test_the_package_exports_every_error_class() -> None:
    classes = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.SessionaryError)
    }
    assert sorted(classes - set(sessionary_client.__all__)) == []


@pytest.mark.parametrize(
    ("operation_id", "method", "path"), OPERATIONS, ids=[op[0] for op in OPERATIONS]
)
def test_each_operation_has_a_method(operation_id: str, method: str, path: str) -> None:
    name = python_methods().get(operation_id)
    assert name, f"{method} {path} ({operation_id}): docs/clients.md names no Python method"
    for client in (AsyncSessionaryClient, SessionaryClient):
        assert callable(getattr(client, name, None)), f"{client.__name__} has no {name}()"
