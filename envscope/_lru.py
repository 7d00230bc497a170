"""``LRU``: the one bounded-by-count cache of envscope (the caller holds its lock).

Every cache that keeps at most so many homes, entries or names by recency is
one of these: an ``OrderedDict`` whose hit and eviction are C-level calls
(``move_to_end``, ``popitem``). A hit sits on the path of every build (the
home's manifests, its policy, its share, its scope), where a lookup through
``cachetools.LRUCache`` costs five Python frames. The one cache bounded by
time too, a secret source's answers (``_launch``), is one of these whose
entries carry the time they expire.
Not thread-safe: each owner reads and writes it under its own lock.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["LRU"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class LRU(Generic[_K, _V]):
    """At most ``maxsize`` entries; a hit or a put makes its key the most recent."""

    __slots__ = ("_data", "maxsize")

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("an LRU holds at least one entry")
        self.maxsize = maxsize
        self._data: OrderedDict[_K, _V] = OrderedDict()

    def hit(self, key: _K) -> _V | None:
        """The value under ``key`` (now the most recent), or None."""
        data = self._data
        found = data.get(key)
        if found is not None:
            data.move_to_end(key)
        return found

    def put(self, key: _K, value: _V) -> None:
        """Hold ``value`` under ``key`` (the most recent); the least recent go past the bound."""
        data = self._data
        data[key] = value
        data.move_to_end(key)
        while len(data) > self.maxsize:
            data.popitem(last=False)

    def pop(self, key: _K) -> _V | None:
        """Forget ``key``; its value, or None."""
        return self._data.pop(key, None)

    def clear(self) -> None:
        self._data.clear()

    def items(self) -> list[tuple[_K, _V]]:
        """Every entry, least recent first (a copy; recency left as it is)."""
        return list(self._data.items())

    def values(self) -> list[_V]:
        """Every value, least recent first (a copy; recency left as it is)."""
        return list(self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:  # it holds values: a count only
        return f"LRU({len(self._data)} entries, maxsize={self.maxsize})"
