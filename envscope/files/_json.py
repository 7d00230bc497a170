"""One strict JSON reader for the files envscope reads (snapshots, MCP server configs).

``json.loads`` accepts duplicate object keys (last wins) and raises
``RecursionError`` on deep nesting; ``decode_json`` refuses both and returns
a problem sentence (never the text) for the caller to raise as its own error.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_json", "shown_key"]

_SHOWN_NAME = 60


class _DuplicateKey(Exception):
    """A JSON object repeats a key (carried out of the json parser, then reported)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


def shown_key(name: str) -> str:
    """A key as it may appear in a message: printable, and short."""
    text = name if name.isprintable() else ascii(name)[1:-1]
    return text if len(text) <= _SHOWN_NAME else f"{text[: _SHOWN_NAME - 3]}..."


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def decode_json(data: bytes) -> tuple[object, str | None, int | None]:
    """``(value, None, None)`` for valid JSON, else ``(None, why, line)``; never the text."""
    try:
        return json.loads(data, object_pairs_hook=_no_duplicates), None, None
    except _DuplicateKey as exc:
        return None, f"the key {shown_key(exc.key)} appears twice in one object", None
    except UnicodeError:  # json.loads detects UTF-8/16/32; anything else is refused
        return None, "not JSON text (not UTF-8, UTF-16 or UTF-32)", None
    except ValueError as exc:  # json.JSONDecodeError names the line, never the text
        return None, "not JSON", getattr(exc, "lineno", None)
    except RecursionError:
        return None, "not JSON: nested too deeply", None
