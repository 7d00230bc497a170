"""Answers by content: a bounded, process-wide memo of a pure function of a file's bytes.

A reader that still reads a file whole can skip *parsing* it when this
process parsed the very same content before: the key holds the content
itself (and whatever else the answer depends on, such as the path named in
its errors), so an edit however small is a new key and a new parse. No file
system state is trusted here: only equal content gives the earlier answer.

Bounded: at most ``entries`` answers, each for content of at most
``max_size`` (longer content is parsed every time); when full the memo is
emptied and fills again (no order to keep, nothing to lock: every operation
is one dict call). A parse that raises is never kept (its error is raised
anew each time). ``clear()`` is the reset seam. Answers must be immutable (or
copied by the caller before use).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ContentMemo"]

T = TypeVar("T")


class ContentMemo(Generic[T]):
    """``key`` (content and the rest of the inputs) → the answer computed from them."""

    __slots__ = ("_found", "entries", "max_size")

    def __init__(self, entries: int, max_size: int) -> None:
        self._found: dict[Hashable, T] = {}
        self.entries = entries
        self.max_size = max_size

    def answer(self, key: Hashable, size: int, compute: Callable[[], T]) -> T:
        """``compute()``, or the memo's answer for ``key`` (``size``: the content's length)."""
        if size > self.max_size:
            return compute()
        found = self._found.get(key)
        if found is None:
            found = compute()  # an error: never kept
            if len(self._found) >= self.entries:
                self._found.clear()
            self._found[key] = found
        return found

    def clear(self) -> None:
        """Forget every answer (a reset seam for tests)."""
        self._found.clear()

    def __len__(self) -> int:
        return len(self._found)
