"""Plain frozen records shared by the catalog, the manifest scanner and the policy.

Nothing here does I/O; these are the values that flow between the parts.

Every record of envscope is a frozen, slotted dataclass: keyword or
positional construction, equality and hashing by value, no assignment after
construction. A record that holds values (a scope, a surface policy's
``set``) has an explicit ``__repr__`` through ``record_repr``, which shows the
keys of those fields and never a value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NoReturn

SECRET_SUFFIXES: tuple[str, ...] = ("_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_JSON")

EMPTY_MAPPING: Mapping[str, NoReturn] = MappingProxyType({})
"""The one empty read-only mapping, a default for any ``Mapping[str, ...]`` field."""


def norm(name: str) -> str:
    """The form every declared name is compared in (case-insensitive matching)."""
    return name.upper()


def glob_source(glob: str) -> str:
    """The regex source matching a whole upper-cased name against one glob (any case).

    The one glob dialect of envscope, Codex's wildmatch: ``*`` is any run of
    characters (possibly empty), ``?`` one character, and everything else,
    ``[`` and ``]`` included, is literal. Catalog patterns and surface
    ``include``/``exclude`` globs both compile through it.
    """
    import re

    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in norm(glob))
    return f"(?s:{body})\\Z"


def has_secret_suffix(name: str) -> bool:
    """True when the upper-cased name ends in one of the secret suffixes."""
    return norm(name).endswith(SECRET_SUFFIXES)


def plugin_prefix(directory_name: str) -> str:
    """A plugin's env prefix: its directory name upper-cased, ``-``/``.`` → ``_``, plus ``_``."""
    cleaned = directory_name.lstrip(".").upper().replace("-", "_").replace(".", "_")
    return f"{cleaned}_"


class Tier(enum.Enum):
    """How strictly a declared name is kept from children."""

    TIER1 = 1  # never reaches any child
    TIER2 = 2  # a credential: only children that inherit credentials get it


class OriginKind(enum.Enum):
    """Where a rule or a value came from."""

    CATALOG = "catalog"
    CATALOG_PATTERN = "catalog-pattern"
    MANIFEST = "manifest"
    PARTIAL_SCAN = "partial-scan"
    ADAPTER = "adapter"
    LAUNCH_DOTENV = "launch-dotenv"
    SECRET_SOURCE = "secret-source"
    MANAGED = "managed"
    SCOPE = "scope"
    CALLER = "caller"
    SURFACE = "surface"
    GLOBAL = "global"
    BASE = "base"
    NAME_CONTEXT = "name-context"  # an undeclared credential name with a credential's value


def record_repr(record: object, masked: tuple[str, ...] = ()) -> str:
    """A dataclass record's repr; each ``masked`` field (names to values) shows its keys only."""
    parts = []
    for f in fields(record):  # type: ignore[arg-type]
        if f.repr:
            value = getattr(record, f.name)
            parts.append(f"{f.name}={masked_repr(value) if f.name in masked else repr(value)}")
    return f"{type(record).__name__}({', '.join(parts)})"


MASK = "********"


def masked_repr(values: Mapping[str, object]) -> str:
    """``{'KEY': ********, ...}``: the keys of a mapping of values, never a value."""
    return "{" + ", ".join(f"{key!r}: {MASK}" for key in values) + "}"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a rule came from: a catalog entry, a manifest path and line, an adapter, …"""

    kind: OriginKind
    detail: str
    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where = f" ({where})"
        return f"{self.kind.value}: {self.detail}{where}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a manifest scan is partial (never holds a value)."""

    path: str
    message: str
    line: int | None = None
    field: str | None = None
    plugin: str | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Declaration:
    """One declared name (upper-cased) with its tier and where it came from."""

    name: str
    tier: Tier
    origin: Origin


@dataclass(frozen=True, slots=True)
class HomeDeclarations:
    """What the plugin manifests of one home (plus the bundled root) declare.

    ``secrets`` maps upper-cased names to their declaration (Tier 1);
    ``plugin_prefixes`` are the env prefixes of platform plugins (the gate rule);
    ``deny_prefixes`` come from plugins that could not be read: every
    secret-suffixed name under one of them is denied. ``complete`` is False
    when any part of the scan failed; ``problems`` says what and where.
    ``ignored`` maps each readable manifest that declares nothing (a flat
    plugin not of kind ``platform``) to why, in words. Unhashable: it holds mappings.
    """

    secrets: Mapping[str, Declaration] = field(default_factory=lambda: EMPTY_MAPPING)
    plugin_prefixes: frozenset[str] = frozenset()
    deny_prefixes: Mapping[str, Origin] = field(default_factory=lambda: EMPTY_MAPPING)
    complete: bool = True
    problems: tuple[Problem, ...] = ()
    generation: int = 0
    ignored: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAPPING)
    warnings: tuple[Problem, ...] = ()  # keys near a known one (``secert``): read on, reported

    __hash__ = None  # type: ignore[assignment]

    def replace(self, **changes: object) -> HomeDeclarations:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


EMPTY_DECLARATIONS = HomeDeclarations()
