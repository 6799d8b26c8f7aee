"""Each client's generated file (clients/generate.py) is what the committed spec makes of it: a
spec that gained an operation or a problem code fails here until `make clients` is run."""

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
GENERATOR = runpy.run_path(str(ROOT / "clients" / "generate.py"))
WANTED = GENERATOR["outputs"](json.loads(GENERATOR["SPEC"].read_text()))


@pytest.mark.parametrize("path", WANTED, ids=lambda path: path.name)
def test_the_generated_file_is_what_the_spec_makes(path: Path) -> None:
    assert path.read_text() == WANTED[path], f"{path.relative_to(ROOT)}: run `make clients`"
