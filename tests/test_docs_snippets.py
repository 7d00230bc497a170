"""README.md and docs/*.md run as written: every ``python`` block executes in a fresh interpreter.

Each block runs alone, in a minimal env, from the repository root (so the
README can use the demo host in ``fixtures/demo``), and must exit 0 (its own
asserts pass). Two markers, an HTML comment on the line before the fence:

- ``<!-- snippet: continues -->``: the block runs after the file's earlier
  runnable blocks (a page that builds one example step by step);
- ``<!-- snippet: pytest -->``: the block is a test module, run by pytest
  with the ``envscope.testing`` plugin, and its tests must pass;
- ``<!-- snippet: skip (REASON) -->``: the block is not a program (a
  signature listing, a fragment of a host). The exemptions are pinned in
  ``EXEMPT`` below, so a new one is a reviewed change.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"(?:^<!-- snippet: (?P<marker>continues|pytest|skip \((?P<reason>[^)]+)\)) -->\n)?"
    r"^```python\n(?P<code>.*?)^```",
    re.S | re.M,
)
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/home/operator",
       "LANG": "C.UTF-8"}  # fmt: skip

# Every block that does not run, with its reason: (page, reason).
EXEMPT = [
    ("docs/api.md", "a signature listing, not a program"),
    ("docs/api.md", "a signature listing, not a program"),
    ("docs/api.md", "a signature listing, not a program"),
    ("docs/mcp.md", "a fragment of a host's async code; docs/spawning.md runs the whole example"),
]


@dataclass(frozen=True, slots=True)
class Snippet:
    """One python block: where it is, its code, and what to run before it."""

    page: str
    line: int
    code: str
    prelude: str
    skip: str | None
    pytest: bool = False

    @property
    def id(self) -> str:
        """``page:line`` for the test id."""
        return f"{self.page}:{self.line}"


def snippets() -> list[Snippet]:
    """Every python block of the pages, in order."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        rel = str(page.relative_to(ROOT))
        earlier: list[str] = []
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            code = match["code"]
            marker = match["marker"] or ""
            prelude = "".join(earlier) if marker == "continues" else ""
            found.append(Snippet(rel, line, code, prelude, match["reason"], marker == "pytest"))
            if not match["reason"] and marker != "pytest":
                earlier.append(code)
    return found


SNIPPETS = snippets()


def test_exemptions_are_pinned() -> None:
    """The blocks that do not run are exactly the listed ones, each with its reason."""
    assert [(s.page, s.skip) for s in SNIPPETS if s.skip] == EXEMPT


def test_every_page_with_code_is_covered() -> None:
    """The README and the pages that show Python have runnable blocks (the test saw them)."""
    pages = {s.page for s in SNIPPETS if not s.skip}
    assert {"README.md", "docs/spawning.md", "docs/guard.md", "docs/testing.md"} <= pages


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if not s.skip], ids=lambda s: s.id)
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    """The block exits 0 in a fresh interpreter, from the repository root, in a minimal env."""
    argv = [sys.executable, "-c", snippet.prelude + snippet.code]
    if snippet.pytest:
        module = tmp_path / "test_snippet.py"
        module.write_text(snippet.code)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "-p", "envscope.testing", "-W", "error", str(module)]  # fmt: skip
    done = subprocess.run(
        argv,
        env={**ENV, "TMPDIR": str(tmp_path)}, cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    if snippet.pytest:
        assert " passed" in done.stdout
