"""The broken-manifest corpus: every file in fixtures/manifests/bad fails as its README says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

import envscope.files._yaml as yaml_reader
from envscope.errors import ManifestError
from envscope.manifests._schema import parse_manifest

BAD = Path(__file__).resolve().parents[2] / "fixtures" / "manifests" / "bad"
README = BAD / "README.md"

# Words that may appear both in a corpus file (as keys or YAML literals) and in an error message.
MESSAGE_WORDS = frozenset(
    {"name", "kind", "requires_env", "optional_env", "secret", "password", "description",
     "category", "prompt", "true", "false", "null", "YAML", "manifest"}
)  # fmt: skip


class Row(NamedTuple):
    file: str
    line: int | None
    field: str | None
    message: str


def read_rows() -> list[Row]:
    """The corpus table in README.md: | `file` | mistake | line | `field` | message |."""
    rows = []
    for text in README.read_text(encoding="utf-8").splitlines():
        if not text.startswith("| `"):
            continue
        cells = [cell.strip() for cell in text.strip().strip("|").split(" | ")]
        file, _mistake, line, field, message = cells
        rows.append(
            Row(
                file=file.strip("`"),
                line=None if line == "-" else int(line),
                field=None if field == "-" else field.strip("`"),
                message=message,
            )
        )
    return rows


ROWS = read_rows()


def document_tokens(data: bytes) -> set[str]:
    """Words (4+ characters) of a corpus file, read as UTF-8, Latin-1 and UTF-16."""
    texts = [data.decode("utf-8", "replace"), data.decode("latin-1")]
    if b"\x00" in data:
        texts += [data.decode("utf-16-le", "replace"), data.decode("utf-16-be", "replace")]
    tokens = set()
    for text in texts:
        tokens.update(re.findall(r"[A-Za-z0-9_./+-]{4,}", text))
    return tokens - MESSAGE_WORDS


@pytest.fixture(
    params=[
        pytest.param(getattr(yaml, "CSafeLoader", yaml.SafeLoader), id="libyaml"),
        pytest.param(yaml.SafeLoader, id="pure-python"),
    ]
)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Run each corpus case with libyaml's loader and with the pure-Python loader."""
    cls: type = request.param
    monkeypatch.setattr(yaml_reader, "_loader_class", lambda: cls)
    return cls


def test_corpus_is_large_and_fully_described() -> None:
    """The corpus has at least 40 files and README.md has exactly one row per file."""
    files = sorted(p.name for p in BAD.iterdir() if p.name != "README.md")
    assert len(files) >= 40
    assert sorted(row.file for row in ROWS) == files


@pytest.mark.parametrize("row", ROWS, ids=[row.file for row in ROWS])
def test_corpus_file_fails_as_described(loader: type, row: Row) -> None:
    """Each corpus file raises ManifestError naming the file, its line and field, as listed."""
    path = BAD / row.file
    with pytest.raises(ManifestError) as info:
        parse_manifest(path.read_bytes(), str(path))
    err = info.value
    assert err.path == str(path)
    assert err.line == row.line
    if row.field is not None and row.field.endswith("…"):
        assert err.field is not None
        assert err.field.startswith(row.field[:-1])
    else:
        assert err.field == row.field
    assert row.message in err.message
    rendered = str(err)
    assert rendered.startswith(str(path))
    if err.line is not None:
        assert f":{err.line}: " in rendered
    if err.field is not None:
        assert f" {err.field}: " in rendered


@pytest.mark.parametrize("row", ROWS, ids=[row.file for row in ROWS])
def test_corpus_error_holds_no_value_from_the_file(loader: type, row: Row) -> None:
    """No word of the broken file (other than its field path and schema keys) is in the error."""
    path = BAD / row.file
    data = path.read_bytes()
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, str(path))
    err = info.value
    rendered = str(err).replace(err.path, "")
    if err.field:
        rendered = rendered.replace(err.field, "")
    leaked = sorted(token for token in document_tokens(data) if token in rendered)
    assert leaked == []


def test_planted_values_never_appear() -> None:
    """Files with a planted credential-like value never echo it (guards the check itself)."""
    planted = "xoxb-4471-planted-secret"
    holders = [row for row in ROWS if planted.encode() in (BAD / row.file).read_bytes()]
    assert len(holders) >= 3
    for row in holders:
        path = BAD / row.file
        with pytest.raises(ManifestError) as info:
            parse_manifest(path.read_bytes(), str(path))
        assert planted not in str(info.value)
        assert planted in document_tokens(path.read_bytes())
