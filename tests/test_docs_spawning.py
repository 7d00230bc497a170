"""docs/spawning.md: one runnable example per spawn site (tests/test_docs_snippets.py runs them)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "spawning.md"
BLOCK = re.compile(r"^## (?P<title>.+?)\n.*?^```python\n(?P<code>.*?)^```", re.S | re.M)
EXAMPLES = {m["title"]: m["code"] for m in BLOCK.finditer(DOC.read_text())}


def test_every_spawn_site_has_an_example() -> None:
    """The page has one runnable example for each spawn site the issue names."""
    assert sorted(EXAMPLES) == sorted(
        ["The terminal tool", "A cron job for a profile", "A kanban worker in a thread pool",
         "asyncio", "An MCP stdio server", "Tracing a spawn", "Masking what a child prints"]
    )  # fmt: skip


def test_every_example_spawns_through_envscope() -> None:
    """Each example imports its spawner from envscope (no bare subprocess call)."""
    for title, code in EXAMPLES.items():
        assert "from envscope" in code, title
        assert "subprocess.run(" not in code, title
