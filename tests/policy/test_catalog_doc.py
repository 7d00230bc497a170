"""docs/catalog.md is generated from the default catalog and never drifts from it (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Catalog
from envscope.policy._catalog_doc import DOC_PATH, main, render


def test_docs_catalog_md_is_current() -> None:
    """The committed page is exactly what the generator renders (regenerate, never edit)."""
    assert DOC_PATH.read_text(encoding="utf-8") == render(Catalog.default()), (
        "docs/catalog.md is stale: run python -m envscope.policy._catalog_doc"
    )


def test_page_lists_every_entry_with_tier_and_source() -> None:
    """Every category and every entry appears with its tier and its source."""
    text = render(Catalog.default())
    for cat in Catalog.default().categories:
        assert f"## {cat.title} (Tier {cat.tier.value})" in text
        for entry in cat.entries:
            assert f"| `{entry.name}` | Tier {cat.tier.value} |" in text
            assert entry.source in text


def test_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check exits 1 on a stale or missing page and 0 once the page is written."""
    page = tmp_path / "catalog.md"
    assert main(["--check", "--output", str(page)]) == 1
    page.write_text("stale\n")
    assert main(["--check", "--output", str(page)]) == 1
    assert main(["--output", str(page)]) == 0
    assert main(["--check", "--output", str(page)]) == 0
    assert "stale" in capsys.readouterr().err


def test_a_pipe_in_a_description_is_escaped() -> None:
    """A '|' in a description cannot break the table."""
    cat = Catalog.from_yaml(
        "categories:\n  - {id: x, title: X, tier: 1, about: 'a | b',"
        " entries: [{name: X_KEY, about: 'c | d', source: 'envscope: x'}]}\n"
    )
    text = render(cat, source="x.yaml")
    assert "a \\| b" in text
    assert "c \\| d" in text
