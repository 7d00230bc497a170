"""Parsed manifests by content: a bounded, process-wide memo of ``parse_manifest``.

``parse_manifest(data, path)`` is a pure function of the bytes read and the
path they were read from (the path is in the result and in its errors), and
its result is immutable. So a manifest another ``Host`` of this process (or a
scan of another home sharing the file) already parsed is not parsed again:
its bytes are still read and compared whole (the key is ``(path, data)``), so
an edit, however small, is a new key and a new parse. No file system state
is trusted here: only equal bytes give the earlier answer.

Bounded: at most ``MEMO_ENTRIES`` manifests, each at most ``MEMO_MAX_BYTES``
(a larger one is parsed every time); when full the memo is emptied and fills
again (no order to keep, nothing to lock: every operation is one dict call).
A manifest that fails to parse is never kept (its ``ManifestError`` is raised
anew each time). ``clear()`` is the reset seam.
"""

from __future__ import annotations

from envscope.manifests._schema import Manifest, parse_manifest

__all__ = ["MEMO_ENTRIES", "MEMO_MAX_BYTES", "ParseMemo", "parsed_manifest"]

MEMO_ENTRIES = 512
"""How many parsed manifests the memo keeps (their bytes and paths are the keys)."""

MEMO_MAX_BYTES = 4096
"""A manifest larger than this is parsed every time (it would hold too much memory)."""


class ParseMemo:
    """``(path, data)`` → the ``Manifest`` parsed from them; thread-safe, bounded."""

    __slots__ = ("_found", "entries", "max_bytes")

    def __init__(self, entries: int = MEMO_ENTRIES, max_bytes: int = MEMO_MAX_BYTES) -> None:
        self._found: dict[tuple[str, bytes], Manifest] = {}
        self.entries = entries
        self.max_bytes = max_bytes

    def parse(self, data: bytes, path: str) -> Manifest:
        """``parse_manifest(data, path)``, from the memo when these bytes were parsed there."""
        if len(data) > self.max_bytes:
            return parse_manifest(data, path)
        key = (path, bytes(data))
        found = self._found.get(key)
        if found is None:
            found = parse_manifest(data, path)  # ManifestError: never kept
            if len(self._found) >= self.entries:
                self._found.clear()
            self._found[key] = found
        return found

    def clear(self) -> None:
        """Forget every parsed manifest (a reset seam for tests)."""
        self._found.clear()

    def __len__(self) -> int:
        return len(self._found)


PARSES = ParseMemo()
"""The process's memo (``PARSES.clear()`` resets it)."""


def parsed_manifest(data: bytes, path: str) -> Manifest:
    """What ``parse_manifest(data, path)`` returns, from the process's memo when it can."""
    return PARSES.parse(data, path)
