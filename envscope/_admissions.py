"""What builds handed over as given, per home: the runtime guard's and ``envscope.testing``'s.

A grant or an MCP server's block entry reaches its child as given; the guard
and ``assert_no_secrets`` then pass that exact ``(key, value)`` in an explicit
env. The pair belongs to the home the build was for: a grant admitted in home
A's build never lets the same pair pass in home B's context. Bounded: at most
``MAX_HOMES`` homes (least recently admitted to go first) and
``MAX_PAIRS_PER_HOME`` pairs each (oldest first); ``reset()`` is the seam.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Container, Iterable

__all__ = ["MAX_HOMES", "MAX_PAIRS_PER_HOME", "Admissions"]

MAX_HOMES = 256
MAX_PAIRS_PER_HOME = 1024
_NONE: frozenset[tuple[str, str]] = frozenset()

Pair = tuple[str, str]


class Admissions:
    """Per-home sets of ``(key, value)`` pairs a build handed over as given."""

    __slots__ = ("_homes", "_lock")

    def __init__(self) -> None:
        self._homes: OrderedDict[str, OrderedDict[Pair, None]] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, home: str, pairs: Iterable[Pair]) -> None:
        """Record ``pairs`` for ``home`` (a home identity), within the bounds."""
        pairs = list(pairs)
        if not pairs:
            return
        with self._lock:
            held = self._homes.get(home)
            if held is None:
                held = self._homes[home] = OrderedDict()
                while len(self._homes) > MAX_HOMES:
                    self._homes.popitem(last=False)
            else:
                self._homes.move_to_end(home)
            for pair in pairs:
                held[pair] = None
                held.move_to_end(pair)
            while len(held) > MAX_PAIRS_PER_HOME:
                held.popitem(last=False)

    def admitted(self, home: str, key: str, value: str) -> bool:
        """True when a build for ``home`` handed ``key=value`` over as given."""
        return (key, value) in self.pairs(home)

    def pairs(self, home: str) -> Container[tuple[str, str]]:
        """The ``(key, value)`` pairs builds for ``home`` handed over as given (a live view)."""
        held = self._homes.get(home)
        return _NONE if held is None else held

    def reset(self) -> None:
        """Forget every admission (the test seam; a long-lived host may call it too)."""
        with self._lock:
            self._homes.clear()

    def __repr__(self) -> str:
        return f"Admissions(homes={len(self._homes)})"  # never a pair: it holds values
