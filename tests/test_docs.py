"""The README documents every setting, with the default the code has."""

import re
from pathlib import Path

from pydantic import AliasChoices

from app.config import Settings

README = Path(__file__).parents[1] / "README.md"


def documented_settings() -> dict[str, str]:
    """Variable → default cell, from the README's configuration table."""
    section = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([^|]+) \|", section, re.MULTILINE)
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


def test_every_setting_is_in_the_readme_with_its_default() -> None:
    documented = documented_settings()
    for name, variable in variables().items():
        field = Settings.model_fields[name]
        assert variable in documented, f"{variable} is missing from the README"
        default = field.default
        shown = documented[variable]
        if default is None:
            assert shown == "unset", (variable, shown)
        elif default == []:
            assert shown == "empty", (variable, shown)
        else:
            # As one sets it in the environment: `false`, `2`, not `False`, `2.0`.
            value = str(default).lower() if isinstance(default, bool) else str(default)
            value = value.removesuffix(".0")
            assert shown.split()[0].strip("`") == value, (variable, shown, default)
    unknown = set(documented) - set(variables().values())
    assert not unknown, unknown
