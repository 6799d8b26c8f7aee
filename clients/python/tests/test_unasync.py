"""The committed blocking client is what `scripts/unasync.py` makes of the asyncio one."""

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "unasync.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    unasync = load_script()
    assert unasync.TARGET.read_text() == unasync.generate(), (
        f"{unasync.TARGET.name} is out of date with {unasync.SOURCE.name}: "
        f"run `{unasync.COMMAND}` from the repository root"
    )
