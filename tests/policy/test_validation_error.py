"""One translation of a schema's pydantic error into a file error, for every YAML file kind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from envscope.cli.config import load_config
from envscope.errors import CatalogError, ConfigFileError, FileError, ManifestError
from envscope.manifests._schema import parse_manifest
from envscope.policy.catalog import Catalog

SECRET = "sk-live-value-never-shown-1234"


def _config(path: Path) -> None:
    load_config(str(path))


def _catalog(path: Path) -> None:
    Catalog.from_file(path)


def _manifest(path: Path) -> None:
    parse_manifest(path.read_bytes(), str(path))


READERS: dict[str, tuple[Callable[[Path], None], type[FileError]]] = {
    "config": (_config, ConfigFileError),
    "catalog": (_catalog, CatalogError),
    "manifest": (_manifest, ManifestError),
}

CASES = [
    # (reader, text, field, line, more)
    (
        "config",
        f"launch_home: a\nknown_safe: [A, 1]\nmultiplex: '{SECRET}'\n",
        "known_safe[1]",
        2,
        1,
    ),
    (
        "config",
        "launch_home: a\nsurfaces:\n  script:\n    inherit: x\n",
        "surfaces.script.inherit",
        4,
        0,
    ),
    ("catalog", f"tier1:\n  - OK_KEY\n  - 1\ntier2: '{SECRET}'\n", "tier1[1]", 3, 1),
    ("catalog", "patterns:\n  - {pattern: 'A_*', tier: 3}\n", "patterns[0].tier", 2, 0),
    (
        "manifest",
        f"name: p\nrequires_env:\n  - A\n  - 3\nkind: [{SECRET!r}]\n",
        "requires_env[1]",
        4,
        1,
    ),
    (
        "manifest",
        "name: p\noptional_env:\n  - {name: A, secret: 'y'}\n",
        "optional_env[0].secret",
        3,
        0,
    ),
]


@pytest.mark.parametrize(("reader", "text", "field", "line", "more"), CASES)
def test_one_field_dialect_and_locator(
    tmp_path: Path, reader: str, text: str, field: str, line: int, more: int
) -> None:
    """Each kind names the earliest problem's field (``a[1].b``) and line, counts the rest."""
    read, error = READERS[reader]
    path = tmp_path / f"{reader}.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error) as info:
        read(path)
    assert type(info.value) is error
    assert (info.value.field, info.value.line) == (field, line)
    assert str(info.value).endswith("more problem)") is (more == 1)
    assert len(info.value.more) == more
    assert SECRET not in str(info.value)
    assert info.value.__context__ is None
    assert info.value.__cause__ is None
