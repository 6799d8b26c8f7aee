"""The docs stand alone: docs/operations.md documents every setting with the default the code
has, every relative link between the docs resolves (to a file, and to a heading when it names
one), every table is whole, the README leads to every doc, and no doc points outside the
repository's own docs."""

import re
from pathlib import Path

import pytest
from pydantic import AliasChoices

from app.config import Settings

ROOT = Path(__file__).parents[1]
OPERATIONS = ROOT / "docs" / "operations.md"
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "SCALING.md",
        ROOT / "bench" / "README.md",
        ROOT / "clients" / "python" / "README.md",
        ROOT / "clients" / "typescript" / "README.md",
        ROOT / "clients" / "go" / "README.md",
        ROOT / "clients" / "ruby" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)


def documented_settings() -> dict[str, str]:
    """Variable → default cell, from the tables of docs/operations.md's "Configuration"."""
    section = OPERATIONS.read_text().split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| ([^|]+) \|", section, re.MULTILINE)
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a setting is documented twice"
    return {name: default.strip() for name, default in rows}


def variables() -> dict[str, str]:
    """Setting → its variable: the conventional name where it has one (`DATABASE_URL`), else
    the prefixed one."""
    names = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names[name] = (
            str(alias.choices[0])
            if isinstance(alias, AliasChoices)
            else f"SESSIONARY_{name.upper()}"
        )
    return names


def test_every_setting_is_documented_with_its_default() -> None:
    documented = documented_settings()
    for name, variable in variables().items():
        field = Settings.model_fields[name]
        assert variable in documented, f"{variable} is missing from docs/operations.md"
        default = field.default
        shown = documented[variable]
        if default is None:
            assert shown == "unset", (variable, shown)
        elif default in ([], ""):
            assert shown == "empty", (variable, shown)
        else:
            # As one sets it in the environment: `false`, `2`, not `False`, `2.0`.
            value = str(default).lower() if isinstance(default, bool) else str(default)
            value = value.removesuffix(".0")
            assert shown.split()[0].strip("`") == value, (variable, shown, default)
    unknown = set(documented) - set(variables().values())
    assert not unknown, unknown


def prose(text: str) -> str:
    """The text without its fenced code blocks, where `#` and `](` mean something else."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation but `-` and `_`
    dropped, spaces as `-`, a repeated one numbered."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in found:
            n += 1
            anchor = f"{slug}-{n}"
        found.add(anchor)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_links_resolve(doc: Path) -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", prose(doc.read_text()))
    for link in links:
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        assert path.exists(), f"{doc.relative_to(ROOT)}: {link} leads nowhere"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{doc.relative_to(ROOT)}: no heading for {link}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_docs_cite_only_what_a_reader_has(doc: Path) -> None:
    """No design document, no sibling folder, no tracker numbers: a reader has this repository."""
    text = doc.read_text()
    for cited in (r"DESIGN\s*§", r"\.\./shared", r"\bissues? #?\d+", r"\bthe coming\b"):
        assert not re.search(cited, text), f"{doc.relative_to(ROOT)} cites {cited}"


def tables(text: str) -> list[list[str]]:
    """The Markdown tables of a text, outside its code blocks: each its rows, in order."""
    found: list[list[str]] = []
    previous = ""
    for line in prose(text).splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                found.append([])
            found[-1].append(line)
        previous = line
    return found


def cells(row: str) -> int:
    """How many cells a table row has: GitHub splits it at each `|` not escaped as `\\|`, even
    within code."""
    return len(re.split(r"(?<!\\)\|", row.strip().removeprefix("|").removesuffix("|")))


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_table_is_whole(doc: Path) -> None:
    """A header, its delimiter row, and rows of as many cells as the header: a row that has
    more or fewer is text pasted into the wrong place, which GitHub shows cut or shifted."""
    for rows in tables(doc.read_text()):
        header, *rest = rows
        assert rest and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rest[0]), f"{doc.name}: {header}"
        for row in rest:
            assert cells(row) == cells(header), f"{doc.relative_to(ROOT)}: {row}"


def test_the_readme_leads_to_every_doc() -> None:
    """Its "Where to read next" names each document of docs/: none is found only by chance."""
    section = (ROOT / "README.md").read_text().split("\n## Where to read next\n", 1)[1]
    [rows] = tables(section.split("\n## ", 1)[0])
    listed = set(re.findall(r"^\| \[[^]]+\]\(([^)]+)\)", "\n".join(rows), re.MULTILINE))
    missing = {f"docs/{doc.name}" for doc in (ROOT / "docs").glob("*.md")} - listed
    assert not missing, f"README.md's Where to read next lacks {sorted(missing)}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_installs_are_from_the_checkout(doc: Path) -> None:
    """No package is published to a registry: an install names the checkout's folder or a file
    built from it (`pip install '.[mcp]'`), never the package's name, which a registry would not
    have."""
    by_name = r"(pip install|npm install|npm i|gem install) +['\"]?sessionary(-client)?\b"
    assert not re.search(by_name, doc.read_text()), f"{doc.relative_to(ROOT)}: {by_name}"
