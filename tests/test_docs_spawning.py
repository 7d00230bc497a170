"""docs/spawning.md: every ``python`` block runs as written (one example per spawn site)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "spawning.md"
BLOCK = re.compile(r"^## (?P<title>.+?)\n.*?^```python\n(?P<code>.*?)^```", re.S | re.M)
EXAMPLES = {m["title"]: m["code"] for m in BLOCK.finditer(DOC.read_text())}
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/home/operator",
       "LANG": "C.UTF-8"}  # fmt: skip


def test_every_spawn_site_has_an_example() -> None:
    """The page has one runnable example for each spawn site the issue names."""
    assert sorted(EXAMPLES) == sorted(
        ["The terminal tool", "A cron job for a profile", "A kanban worker in a thread pool",
         "asyncio", "An MCP stdio server"]
    )  # fmt: skip


@pytest.mark.parametrize("title", sorted(EXAMPLES))
def test_example_runs(title: str, tmp_path: Path) -> None:
    """The example exits 0 (its own asserts pass) in a fresh interpreter and a minimal env."""
    done = subprocess.run(
        [sys.executable, "-c", EXAMPLES[title]],
        env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
