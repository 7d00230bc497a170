"""The catalog's small records: patterns, documented entries and categories, vector rows.

Below both ``catalog`` (the ``Catalog`` value) and ``_catalog_schema`` (the
file's schema), so neither imports the other's module to name them.
"""

from __future__ import annotations

from dataclasses import dataclass

from envscope.policy._declarations import Declaration, Origin, Tier

__all__ = [
    "CatalogCategory",
    "CatalogEntry",
    "CatalogPattern",
    "VectorCategory",
    "VectorRow",
    "strict_first",
    "stricter",
]


@dataclass(frozen=True, slots=True)
class CatalogPattern:
    """A glob over upper-cased names (``glob_source``'s dialect) with its tier."""

    pattern: str
    tier: Tier
    origin: Origin


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One documented catalog entry: a name (or a ``*`` glob), what it is, where that is said.

    ``examples`` are real names a glob matches (the hygiene tests check each one).
    """

    name: str
    about: str
    source: str
    examples: tuple[str, ...] = ()
    provider: str | None = None

    @property
    def is_pattern(self) -> bool:
        """True when the entry is a glob over names rather than one name."""
        return "*" in self.name


@dataclass(frozen=True, slots=True)
class CatalogCategory:
    """A category of the catalog: its id, title, tier (every entry's), description, entries."""

    id: str
    title: str
    tier: Tier
    about: str
    entries: tuple[CatalogEntry, ...]


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One injection-vector row: a name (or ``PREFIX*``), its platform and its source keys."""

    name: str
    platform: str
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VectorCategory:
    """A category of the injection-vector table; ``opt_in`` for the redirecting family."""

    id: str
    title: str
    opt_in: bool
    about: str
    rows: tuple[VectorRow, ...]


def stricter(a: Declaration, b: Declaration) -> Declaration:
    """Of two declarations of one name, the one with the stricter tier (first on a tie)."""
    return b if b.tier.value < a.tier.value else a


def strict_first(patterns: tuple[CatalogPattern, ...]) -> tuple[CatalogPattern, ...]:
    """Patterns with Tier 1 first (stable): a name two patterns match gets the stricter tier."""
    return tuple(sorted(patterns, key=lambda p: p.tier.value))
