"""Every relative link in the docs, the README, the CHANGELOG and the benchmark notes resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "CHANGELOG.md",
     ROOT / "benchmarks/README.md"]
)  # fmt: skip
_FENCED = re.compile(r"```.*?```", re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def relative_links(text: str) -> list[str]:
    """The targets of a page's markdown links outside code, without URLs and same-page anchors."""
    prose = _CODE.sub("", _FENCED.sub("", text))
    return [t for t in _LINK.findall(prose) if not re.match(r"[a-z]+:|#", t)]


def test_relative_links_finds_what_a_page_links() -> None:
    text = "see [a](a.md#x), [b](https://b), [c](#c), `[d](d.md)`\n```\n[e](e.md)\n```"
    assert relative_links(text) == ["a.md#x"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    missing = [
        link
        for link in relative_links(page.read_text(encoding="utf-8"))
        if not (page.parent / link.split("#")[0]).exists()
    ]
    assert missing == []
