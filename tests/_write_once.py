"""Records made once, then only read: a spy on every field a build sets a second time."""

from __future__ import annotations

import pytest


def rebinds_of(monkeypatch: pytest.MonkeyPatch, cls: type) -> list[str]:
    """Every field set on an instance of ``cls`` that already holds it (none, if write-once)."""
    seen: list[str] = []

    def guarded(self: object, name: str, value: object) -> None:
        try:
            getattr(self, name)
        except AttributeError:
            object.__setattr__(self, name, value)
            return
        seen.append(name)
        object.__setattr__(self, name, value)

    monkeypatch.setattr(cls, "__setattr__", guarded)
    return seen
