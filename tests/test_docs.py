"""The README documents every setting, with the default the code has."""

import re
from pathlib import Path

from app.config import Settings

README = Path(__file__).parents[1] / "README.md"


def documented_settings() -> dict[str, str]:
    """Variable → default cell, from the README's configuration table."""
    section = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([^|]+) \|", section, re.MULTILINE)
    return {name: default.strip() for name, default in rows}


def test_every_setting_is_in_the_readme_with_its_default() -> None:
    documented = documented_settings()
    for name, field in Settings.model_fields.items():
        variable = "DATABASE_URL" if name == "database_url" else f"SESSIONARY_{name.upper()}"
        assert variable in documented, f"{variable} is missing from the README"
        default = field.default
        shown = documented[variable]
        if default is None:
            assert shown == "unset", (variable, shown)
        else:
            # As one sets it in the environment: `false`, `2`, not `False`, `2.0`.
            value = str(default).lower() if isinstance(default, bool) else str(default)
            value = value.removesuffix(".0")
            assert shown.split()[0].strip("`") == value, (variable, shown, default)
    names = {"DATABASE_URL", *(f"SESSIONARY_{n.upper()}" for n in Settings.model_fields)}
    assert set(documented) <= names, set(documented) - names
