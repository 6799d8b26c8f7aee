"""docs/clients.md's table of the operations and their methods in the four clients: it names
every operation of the committed spec, with its method and path, and no other; each method it
names is one its client has (a blank cell: the client lacks one)."""

import json
import re
from pathlib import Path

import pytest
from sessionary_client import AsyncSessionaryClient

ROOT = Path(__file__).parents[1]
CLIENTS = ROOT / "clients"
LANGUAGES = ("Python", "TypeScript", "Go", "Ruby")


def spec_operations() -> dict[str, str]:
    """Each operationId of openapi/openapi.json, with its `METHOD /path`."""
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    return {
        operation["operationId"]: f"{method.upper()} {path}"
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "operationId" in operation
    }


def first_name(cell: str) -> str:
    """The first name in backticks in a cell; "" for a blank one."""
    found = re.search(r"`([^`]+)`", cell)
    return found.group(1) if found else ""


def table() -> dict[str, dict[str, str]]:
    """The table's rows by operationId: its `HTTP` cell and each language's method ("" for
    none)."""
    lines = (ROOT / "docs" / "clients.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| Operation |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    rows = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip("|").split("|")
        named = {column: first_name(cell) for column, cell in zip(columns, cells, strict=True)}
        rows[named.pop("Operation")] = named
    return rows


def methods(language: str) -> set[str]:
    """The public methods of a language's client."""
    if language == "Python":
        return {name for name in dir(AsyncSessionaryClient) if not name.startswith("_")}
    if language == "Go":
        source = "".join(path.read_text() for path in (CLIENTS / "go").glob("*.go"))
        return set(re.findall(r"^func \(c \*Client\) ([A-Z]\w*)\(", source, re.MULTILINE))
    if language == "TypeScript":
        source = (CLIENTS / "typescript" / "src" / "client.ts").read_text()
        body = source.split("\nexport class Sessionary {", 1)[1].split("\n}\n", 1)[0]
        return set(re.findall(r"^  (?:async )?([a-z]\w*)\(", body, re.MULTILINE))
    source = (CLIENTS / "ruby" / "lib" / "sessionary" / "client.rb").read_text()
    public = source.split("\n    private\n", 1)[0]
    return set(re.findall(r"^    def ([a-z]\w*)", public, re.MULTILINE))


def test_the_table_names_every_operation_of_the_spec_and_no_other() -> None:
    operations, rows = spec_operations(), table()
    assert sorted(set(operations) - set(rows)) == [], "operations the table lacks"
    assert sorted(set(rows) - set(operations)) == [], "rows of operations the spec lacks"
    assert {name: row["HTTP"] for name, row in rows.items()} == operations


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_method_the_table_names_is_one_its_client_has(language: str) -> None:
    has = methods(language)
    named = {row[language] for row in table().values()} - {""}
    assert sorted(named - has) == [], f"the {language} client has no such method"
