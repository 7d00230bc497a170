"""CHANGELOG.md is written for users: every entry says what kind of change it is, none cites
the tracker."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def _text() -> str:
    return (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_every_entry_names_its_kind() -> None:
    headings = re.findall(r"^### (.*)$", _text(), re.M)
    assert headings
    assert [h for h in headings if not h.startswith(tuple(f"{k}: " for k in KINDS))] == []


def test_no_entry_cites_an_issue_or_a_commit() -> None:
    text = _text()
    assert re.findall(r"(?i)\bissues? #?\d+|#\d+\b", text) == []
    assert re.findall(r"`[0-9a-f]{7,40}`", text) == []
