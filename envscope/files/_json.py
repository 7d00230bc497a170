"""One strict JSON reader for the files envscope reads (snapshots, MCP server configs).

``json.loads`` accepts duplicate object keys (last wins), raises
``RecursionError`` on deep nesting and decodes an escaped lone surrogate
(``"\\ud800"``) into a string no UTF-8 can hold; ``decode_json`` refuses all
three (RFC 7493, I-JSON) and returns a problem sentence (never the text) for
the caller to raise as its own error. These are rules of the JSON text, which
no JSON Schema can state: a schema checks the document they leave.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["decode_json", "shown_key"]

_SHOWN_NAME = 60
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


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


def _may_hold_surrogates(data: bytes) -> bool:
    """Whether ``data`` may escape a surrogate: UTF-16 or UTF-32 text, or a ``\\uD8..`` escape."""
    wide = data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4]
    return wide or _SURROGATE_ESCAPE.search(data) is not None


def decode_json(data: bytes) -> tuple[object, str | None, int | None]:
    """``(value, None, None)`` for valid JSON, else ``(None, why, line)``; never the text."""
    try:
        value = json.loads(data, object_pairs_hook=_no_duplicates)
        if _may_hold_surrogates(data):  # a pair is one character once decoded; a lone one
            json.dumps(value, ensure_ascii=False).encode("utf-8")  # cannot be encoded
        return value, None, None
    except _DuplicateKey as exc:
        return None, f"the key {shown_key(exc.key)} appears twice in one object", None
    except UnicodeEncodeError:
        return None, "not JSON text: a \\u escape names half a surrogate pair", None
    except UnicodeError:  # json.loads detects UTF-8/16/32; anything else is refused
        return None, "not JSON text (not UTF-8, UTF-16 or UTF-32)", None
    except ValueError as exc:  # json.JSONDecodeError names the line, never the text
        return None, "not JSON", getattr(exc, "lineno", None)
    except RecursionError:
        return None, "not JSON: nested too deeply", None
