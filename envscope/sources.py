"""Secret sources: where a host fetches values that are in no file (a vault, 1Password)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ["SecretSource", "StaticSource"]


@runtime_checkable
class SecretSource(Protocol):
    """A named provider of secret values for a home."""

    @property
    def name(self) -> str:
        """A short name that says where values came from (it appears in traces)."""
        ...

    def fetch(self, home: str) -> Mapping[str, str]:
        """The values this source supplies for ``home`` (a resolved home path)."""
        ...


class StaticSource:
    """A secret source over fixed per-home values (tests, and hosts with values in code)."""

    def __init__(self, name: str, values: Mapping[str, Mapping[str, str]]) -> None:
        self._name = name
        self._values = {k: dict(v) for k, v in values.items()}

    @property
    def name(self) -> str:
        """The source's name."""
        return self._name

    def fetch(self, home: str) -> Mapping[str, str]:
        """The values for ``home`` (``"*"`` applies to every home), as a new dict."""
        merged = dict(self._values.get("*", {}))
        merged.update(self._values.get(home, {}))
        return merged
