"""Parsed manifests by content: a bounded, process-wide memo of ``parse_manifest``.

``parse_manifest(data, path)`` is a pure function of the bytes read and the
path they were read from (the path is in the result and in its errors), and
its result is immutable. So a manifest another ``Host`` of this process (or a
scan of another home sharing the file) already parsed is not parsed again:
its bytes are still read and compared whole (the key is ``(path, data)``,
``files._content_memo``), so an edit, however small, is a new key and a new
parse.

Bounded: at most ``MEMO_ENTRIES`` manifests, each at most ``MEMO_MAX_BYTES``
(a larger one is parsed every time); emptied when full. A manifest that fails
to parse is never kept. ``PARSES.clear()`` is the reset seam.
"""

from __future__ import annotations

from envscope.files._content_memo import ContentMemo
from envscope.manifests._schema import Manifest, parse_manifest

__all__ = ["MEMO_ENTRIES", "MEMO_MAX_BYTES", "PARSES", "ParseMemo", "parsed_manifest"]

MEMO_ENTRIES = 512
"""How many parsed manifests the memo keeps (their bytes and paths are the keys)."""

MEMO_MAX_BYTES = 4096
"""A manifest larger than this is parsed every time (it would hold too much memory)."""


class ParseMemo(ContentMemo[Manifest]):
    """``(path, data)`` → the ``Manifest`` parsed from them; thread-safe, bounded."""

    __slots__ = ()

    def __init__(self, entries: int = MEMO_ENTRIES, max_bytes: int = MEMO_MAX_BYTES) -> None:
        super().__init__(entries, max_bytes)

    def parse(self, data: bytes, path: str) -> Manifest:
        """``parse_manifest(data, path)``, from the memo when these bytes were parsed there."""
        return self.answer((path, bytes(data)), len(data), lambda: parse_manifest(data, path))


PARSES = ParseMemo()
"""The process's memo (``PARSES.clear()`` resets it)."""


def parsed_manifest(data: bytes, path: str) -> Manifest:
    """What ``parse_manifest(data, path)`` returns, from the process's memo when it can."""
    return PARSES.parse(data, path)
