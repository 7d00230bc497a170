"""Surfaces: the kinds of child, and what each one inherits.

``terminal`` and ``script`` are denylist surfaces (Tier 1 and Tier 2 stripped);
``worker`` is ``terminal`` plus the target home in ``home_env_var``;
``credentialed`` keeps Tier 2; ``mcp`` is an allowlist surface, merged the way
the MCP SDKs merge: a safe base, the server's ``env:`` block, passthrough names
and the names secret sources supplied.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from envscope._declarations import Origin
from envscope.trace import Reason

__all__ = [
    "CORE_NAMES_POSIX",
    "CORE_NAMES_WINDOWS",
    "MCP_SAFE_NAMES_POSIX",
    "MCP_SAFE_NAMES_WINDOWS",
    "MCP_SAFE_PREFIXES_POSIX",
    "Allowlist",
    "BaseFilter",
    "Inherit",
    "Surface",
    "SurfacePolicy",
    "mcp_allowlist",
]


class Surface(enum.Enum):
    """The kind of child a build is for."""

    TERMINAL = "terminal"
    SCRIPT = "script"
    WORKER = "worker"
    CREDENTIALED = "credentialed"
    MCP = "mcp"

    @property
    def inherits_credentials(self) -> bool:
        """True when the surface keeps Tier 2 credentials by default."""
        return self is Surface.CREDENTIALED

    @property
    def is_allowlist(self) -> bool:
        """True when only allowlisted names of the base reach the child."""
        return self is Surface.MCP

    @property
    def needs_routed_home(self) -> bool:
        """True when, under multiplex, a build without a routed home must refuse."""
        return self in (Surface.CREDENTIALED, Surface.WORKER)


# The safe base an MCP child inherits (SCENARIOS 42). Widening these lists is
# a visible decision: tests pin them as literals.
MCP_SAFE_NAMES_POSIX: frozenset[str] = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR"}
)
MCP_SAFE_PREFIXES_POSIX: tuple[str, ...] = ("XDG_",)
MCP_SAFE_NAMES_WINDOWS: frozenset[str] = frozenset(
    {
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "PROGRAMDATA",
        "PROGRAMFILES",
        "PROGRAMFILES(X86)",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "TMP",
        "USERNAME",
        "USERPROFILE",
        "WINDIR",
        "COMSPEC",
    }
)


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Upper-cased names and prefixes a base key must match to reach an allowlist child."""

    names: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def allows(self, upper_key: str) -> bool:
        """True when an upper-cased key is on the list."""
        return upper_key in self.names or upper_key.startswith(self.prefixes)


def mcp_allowlist(*, windows: bool, supplied: frozenset[str] = frozenset()) -> Allowlist:
    """The MCP safe base for a platform plus the (upper-cased) secret-source-supplied names."""
    if windows:
        return Allowlist(MCP_SAFE_NAMES_WINDOWS | supplied)
    return Allowlist(MCP_SAFE_NAMES_POSIX | supplied, MCP_SAFE_PREFIXES_POSIX)


class Inherit(enum.Enum):
    """How much of the parent env a surface policy inherits."""

    ALL = "all"
    CORE = "core"
    NONE = "none"


# ``inherit: core`` keeps only these (pinned in a test, like the MCP lists).
CORE_NAMES_POSIX: frozenset[str] = frozenset(
    {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP"}
    | {"LANG", "LC_ALL", "TERM", "TZ"}
)
CORE_NAMES_WINDOWS: frozenset[str] = MCP_SAFE_NAMES_WINDOWS


def _glob_regex(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any of some case-insensitive globs (None for no globs)."""
    parts = [fnmatch.translate(p.upper()) for p in patterns]
    return re.compile("|".join(parts)) if parts else None


@dataclass(frozen=True)
class SurfacePolicy:
    """A host's policy for one surface (from ``envscope.yaml``'s ``surfaces``).

    ``inherit`` chooses how much of the parent env is kept (``core`` = a
    pinned per-platform list); ``include`` globs add names back, ``exclude``
    globs remove them (exclude wins); ``set_env`` holds explicit values that
    survive the allowlist. Declared Tier 1 names always win over all of it.
    """

    inherit: Inherit = Inherit.ALL
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    set_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    origin: Origin | None = None


@dataclass(frozen=True)
class BaseFilter:
    """Which keys of the base reach a child: an allowlist and/or a surface policy."""

    allowlist: Allowlist | None = None
    policy: SurfacePolicy | None = None
    windows: bool = False
    _include: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _exclude: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        policy = self.policy
        object.__setattr__(
            self, "_include", None if policy is None else _glob_regex(policy.include)
        )
        object.__setattr__(
            self, "_exclude", None if policy is None else _glob_regex(policy.exclude)
        )

    @property
    def origin(self) -> Origin | None:
        """Where the surface policy came from."""
        return None if self.policy is None else self.policy.origin

    def included(self, upper_key: str) -> bool:
        """True when an ``include`` glob names the key."""
        return self._include is not None and self._include.match(upper_key) is not None

    def reject(self, upper_key: str) -> Reason | None:
        """Why a base key does not reach the child, or None when it does."""
        if self._exclude is not None and self._exclude.match(upper_key):
            return Reason.EXCLUDED
        if self.included(upper_key):
            return None
        if self.allowlist is not None and not self.allowlist.allows(upper_key):
            return Reason.NOT_ALLOWLISTED
        inherit = Inherit.ALL if self.policy is None else self.policy.inherit
        if inherit is Inherit.NONE:
            return Reason.NOT_INHERITED
        if inherit is Inherit.CORE:
            core = CORE_NAMES_WINDOWS if self.windows else CORE_NAMES_POSIX
            if upper_key not in core:
                return Reason.NOT_INHERITED
        return None
