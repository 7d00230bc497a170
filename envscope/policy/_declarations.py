"""Plain frozen records shared by the catalog, the manifest scanner and the policy.

Nothing here does I/O; these are the values that flow between the parts.

The records are hand-written immutable ``__slots__`` classes (``_Record``)
rather than frozen dataclasses: this module is imported by ``import
envscope``, and generating a dataclass costs about a millisecond per class at
import. They keep the dataclass behaviour: keyword or positional
construction, equality and hashing by value, a readable repr, and no
assignment after construction.
"""

from __future__ import annotations

import enum
from types import MappingProxyType

TYPE_CHECKING = False  # typing itself is not imported at ``import envscope``
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NoReturn

SECRET_SUFFIXES: tuple[str, ...] = ("_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_JSON")

EMPTY_MAPPING: Mapping[str, NoReturn] = MappingProxyType({})
"""The one empty read-only mapping, a default for any ``Mapping[str, ...]`` field."""


def norm(name: str) -> str:
    """The form every declared name is compared in (case-insensitive matching)."""
    return name.upper()


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


class _Record:
    """An immutable value: ``_fields`` names its fields in order (``__slots__`` holds them).

    ``_masked`` names the fields that map names to *values* (a scope, a
    surface policy's ``set``): ``repr`` shows their keys, never their values.
    """

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _masked: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, _Record)
        return other is self or self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{n}={masked_repr(getattr(self, n)) if n in self._masked else repr(getattr(self, n))}"
            for n in self._fields
        )
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (type(self), self._values())


_set = object.__setattr__
MASK = "********"


def masked_repr(values: Mapping[str, object]) -> str:
    """``{'KEY': ********, ...}``: the keys of a mapping of values, never a value."""
    return "{" + ", ".join(f"{key!r}: {MASK}" for key in values) + "}"


class Origin(_Record):
    """Where a rule came from: a catalog entry, a manifest path and line, an adapter, …"""

    __slots__ = ("detail", "kind", "line", "path")
    _fields = ("kind", "detail", "path", "line")
    kind: OriginKind
    detail: str
    path: str | None
    line: int | None

    def __init__(
        self, kind: OriginKind, detail: str, path: str | None = None, line: int | None = None
    ) -> None:
        _set(self, "kind", kind)
        _set(self, "detail", detail)
        _set(self, "path", path)
        _set(self, "line", line)

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where = f" ({where})"
        return f"{self.kind.value}: {self.detail}{where}"


class Problem(_Record):
    """One reason a manifest scan is partial (never holds a value)."""

    __slots__ = ("field", "line", "message", "path", "plugin")
    _fields = ("path", "message", "line", "field", "plugin")
    path: str
    message: str
    line: int | None
    field: str | None
    plugin: str | None

    def __init__(
        self,
        path: str,
        message: str,
        line: int | None = None,
        field: str | None = None,
        plugin: str | None = None,
    ) -> None:
        _set(self, "path", path)
        _set(self, "message", message)
        _set(self, "line", line)
        _set(self, "field", field)
        _set(self, "plugin", plugin)

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


class Declaration(_Record):
    """One declared name (upper-cased) with its tier and where it came from."""

    __slots__ = ("name", "origin", "tier")
    _fields = ("name", "tier", "origin")
    name: str
    tier: Tier
    origin: Origin

    def __init__(self, name: str, tier: Tier, origin: Origin) -> None:
        _set(self, "name", name)
        _set(self, "tier", tier)
        _set(self, "origin", origin)


class HomeDeclarations(_Record):
    """What the plugin manifests of one home (plus the bundled root) declare.

    ``secrets`` maps upper-cased names to their declaration (Tier 1);
    ``plugin_prefixes`` are the env prefixes of platform plugins (the gate rule);
    ``deny_prefixes`` come from plugins that could not be read: every
    secret-suffixed name under one of them is denied. ``complete`` is False
    when any part of the scan failed; ``problems`` says what and where.
    Unhashable (it holds mappings), like the dataclass it was.
    """

    __slots__ = (
        "complete",
        "deny_prefixes",
        "generation",
        "plugin_prefixes",
        "problems",
        "secrets",
    )
    _fields = ("secrets", "plugin_prefixes", "deny_prefixes", "complete", "problems", "generation")
    secrets: Mapping[str, Declaration]
    plugin_prefixes: frozenset[str]
    deny_prefixes: Mapping[str, Origin]
    complete: bool
    problems: tuple[Problem, ...]
    generation: int

    def __init__(
        self,
        secrets: Mapping[str, Declaration] = EMPTY_MAPPING,
        plugin_prefixes: frozenset[str] = frozenset(),
        deny_prefixes: Mapping[str, Origin] = EMPTY_MAPPING,
        complete: bool = True,
        problems: tuple[Problem, ...] = (),
        generation: int = 0,
    ) -> None:
        _set(self, "secrets", secrets)
        _set(self, "plugin_prefixes", plugin_prefixes)
        _set(self, "deny_prefixes", deny_prefixes)
        _set(self, "complete", complete)
        _set(self, "problems", problems)
        _set(self, "generation", generation)

    __hash__ = None  # type: ignore[assignment]

    def replace(self, **changes: object) -> HomeDeclarations:
        """A copy with some fields changed (``dataclasses.replace``)."""
        values = dict(zip(self._fields, self._values(), strict=True))
        values.update(changes)
        return HomeDeclarations(**values)  # type: ignore[arg-type]


EMPTY_DECLARATIONS = HomeDeclarations()
