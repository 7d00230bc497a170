"""Surfaces: the kinds of child, and what each one inherits.

``terminal`` and ``script`` are denylist surfaces (Tier 1 and Tier 2 stripped);
``worker`` is ``terminal`` plus the target home in ``home_env_var``;
``credentialed`` keeps Tier 2; ``mcp`` is an allowlist surface, merged the way
the MCP SDKs merge: a safe base, the server's ``env:`` block, passthrough names
and the names secret sources supplied.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope.policy._declarations import EMPTY_MAPPING, Origin, glob_source, record_repr
from envscope.policy._reasons import Reason

if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Mapping

_set = object.__setattr__

__all__ = [
    "CORE_NAMES_POSIX",
    "CORE_NAMES_WINDOWS",
    "DEFAULT_EXCLUDES",
    "MCP_FAMILIES",
    "MCP_SAFE_NAMES_POSIX",
    "MCP_SAFE_NAMES_WINDOWS",
    "MCP_SAFE_PREFIXES_POSIX",
    "WINDOWS_DEFAULT_PATHEXT",
    "WINDOWS_DEFAULT_SYSTEMROOT",
    "Allowlist",
    "BaseFilter",
    "Inherit",
    "Surface",
    "SurfacePolicy",
    "glob_regex",
    "mcp_allowlist",
    "with_mcp_families",
]


class Surface(enum.Enum):
    """The kind of child a build is for."""

    TERMINAL = "terminal"
    SCRIPT = "script"
    WORKER = "worker"
    CREDENTIALED = "credentialed"
    MCP = "mcp"

    # Hashed by identity, in C (a member is its only instance; ``Enum``'s own hash is a
    # Python call): a surface sits in the memo key every build hashes.
    __hash__ = object.__hash__

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


# The safe base an MCP child inherits (docs/concepts.md, "Surfaces"). Widening these lists is
# a visible decision: tests pin them as literals.
MCP_SAFE_NAMES_POSIX: frozenset[str] = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR", "TZ"}
)
# Capabilities, not a safe base (docs/concepts.md, "MCP families"): the desktop
# session lets a child draw windows and read the clipboard, the SSH agent lets it
# sign as the operator. A host turns a family on by name (Host(mcp_families=...),
# mcp_families: in envscope.yaml).
MCP_FAMILIES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "desktop": frozenset({"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"}),
        "ssh-agent": frozenset({"SSH_AUTH_SOCK"}),
    }
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
        "PROGRAMW6432",  # the 64-bit Program Files a 32-bit process is told (MCP SDKs, hermes)
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


def surface_of(surface: Surface | str) -> Surface:
    """A surface by enum or by name (any case); anything else is a ``ConfigurationError``."""
    found = None
    if isinstance(surface, Surface):
        return surface
    if isinstance(surface, str):
        found = Surface.__members__.get(surface.upper())
    if found is None:
        names = ", ".join(s.value for s in Surface)
        shown = repr(surface) if isinstance(surface, str) else f"a {type(surface).__name__}"
        from envscope.errors import ConfigurationError

        raise ConfigurationError(f"surface: {shown} is not one of {names}")
    return found


@dataclass(frozen=True, slots=True, eq=False)
class Allowlist:
    """Upper-cased names and prefixes a base key must match to reach an allowlist child."""

    names: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def allows(self, upper_key: str) -> bool:
        """True when an upper-cased key is on the list."""
        return upper_key in self.names or upper_key.startswith(self.prefixes)


def mcp_allowlist(
    *,
    windows: bool,
    supplied: frozenset[str] = frozenset(),
    network_trust: frozenset[str] = frozenset(),
) -> Allowlist:
    """The MCP safe base for a platform plus the (upper-cased) secret-source-supplied names.

    ``network_trust`` (the catalog's proxy and CA family, unless the host
    turned it off) is forwarded too: a corporate proxy or CA bundle is what
    lets an ``npx``-launched server reach the network at all.
    """
    if windows:
        return Allowlist(MCP_SAFE_NAMES_WINDOWS | supplied | network_trust)
    return Allowlist(MCP_SAFE_NAMES_POSIX | supplied | network_trust, MCP_SAFE_PREFIXES_POSIX)


class Inherit(enum.Enum):
    """How much of the parent env a surface policy inherits."""

    ALL = "all"
    CORE = "core"
    NONE = "none"


# ``inherit: core`` keeps only these (pinned in a test, like the MCP lists): Codex's
# core list, the locale (LC_CTYPE: macOS terminals often set only that), TERM and TZ.
CORE_NAMES_POSIX: frozenset[str] = frozenset(
    {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP"}
    | {"LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"}
)
CORE_NAMES_WINDOWS: frozenset[str] = MCP_SAFE_NAMES_WINDOWS
# What a Windows child of ``inherit: none|core`` gets when it would have no PATHEXT
# (Codex does the same): without it cmd.exe and CreateProcess find no ``npm.cmd``.
# The default of a Windows 10/11 install.
WINDOWS_DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC"
# SYSTEMROOT is kept under ``inherit: none|core`` on Windows (without it Winsock, CryptoAPI
# and so Python's socket and random fail to load), or defaulted when the parent has none.
WINDOWS_DEFAULT_SYSTEMROOT = "C:\\Windows"
_WINDOWS_KEPT = frozenset({"SYSTEMROOT"})
# ``default_excludes: true``: Codex's default excludes (case-insensitive).
DEFAULT_EXCLUDES: tuple[str, ...] = ("*KEY*", "*SECRET*", "*TOKEN*")


def glob_regex(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any of some globs over upper-cased names (None for no globs).

    Each glob follows ``glob_source`` (the one dialect: ``*`` any run, ``?``
    one character, everything else literal) and matches the whole name, in
    any case.
    """
    parts = [glob_source(p) for p in patterns]
    if not parts:
        return None
    import re

    return re.compile("|".join(parts))


@dataclass(frozen=True, slots=True, repr=False)
class SurfacePolicy:
    """A host's policy for one surface (from ``envscope.yaml``'s ``surfaces``).

    ``inherit`` chooses how much of the parent env is kept (``core`` = a
    pinned per-platform list); ``include`` globs add names back, ``exclude``
    globs remove them (exclude wins); ``set_env`` holds explicit values that
    survive the allowlist; ``default_excludes`` adds Codex's ``*KEY*``,
    ``*SECRET*`` and ``*TOKEN*`` to ``exclude``. Globs follow ``glob_regex``;
    a glob with whitespace in it is a ``ConfigurationError`` (no name holds
    one). ``inherit_given`` says whether ``inherit`` was given (the ``mcp``
    surface refuses ``inherit: all``: an allowlist surface cannot inherit
    everything). Declared Tier 1 names always win over all of it.
    ``__post_init__`` checks and normalises what it is given: ``inherit`` by
    value or name, the globs through ``name_list``, ``set_env`` through
    ``coerce_extra`` (held read-only).
    """

    inherit: Inherit | str | None = None
    """Given by value or name, or None (not given: ``all``); always an ``Inherit`` once built."""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    set_env: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAPPING)
    origin: Origin | None = None
    default_excludes: bool = False
    inherit_given: bool = field(init=False)

    def __post_init__(self) -> None:
        from envscope._inputs import coerce_extra, name_list

        given = self.inherit
        if not isinstance(self.default_excludes, bool):
            from envscope.errors import ConfigurationError

            raise ConfigurationError("default_excludes: must be True or False")
        _set(self, "inherit", Inherit.ALL if given is None else Inherit(given))
        _set(self, "inherit_given", given is not None)
        _set(self, "include", _globs(name_list(self.include, "include"), "include"))
        _set(self, "exclude", _globs(name_list(self.exclude, "exclude"), "exclude"))
        _set(self, "set_env", MappingProxyType(_literal(coerce_extra(self.set_env))))

    def __repr__(self) -> str:
        return record_repr(self, masked=("set_env",))


def _literal(set_env: dict[str, str]) -> dict[str, str]:
    """``set_env`` unchanged, or an ``EnvValueError`` naming the first key whose value refers.

    A ``set`` value is given to the child as written: ``${NAME}`` in it is
    never expanded, so a value that holds one (found by the dotenv reader's own
    scanner) is refused rather than handed over literally. The error names the
    key and the referenced name, never the value or a default.
    """
    from envscope.files._dotenv import references

    for key, value in set_env.items():
        names = references(value)
        if names:
            from envscope.errors import EnvValueError

            raise EnvValueError(
                key,
                f"the value refers to ${{{names[0]}}}, but a surface's set values are "
                "literal (the child would get the reference as written); write the value "
                "itself, or set the name in the managed file, whose ${VAR} expands",
            )
    return set_env


def _globs(globs: tuple[str, ...], field_name: str) -> tuple[str, ...]:
    """``globs`` unchanged, or a ``ConfigurationError`` naming the first with whitespace."""
    for i, glob in enumerate(globs):
        if any(c.isspace() for c in glob):
            from envscope.errors import ConfigurationError

            raise ConfigurationError(
                f"{field_name}: item {i} ({glob!r}) holds whitespace (no variable name does; "
                "a glob with it never matches: list each name as its own item)"
            )
    return globs


def with_mcp_families(
    policy: SurfacePolicy | None, families: Iterable[str]
) -> SurfacePolicy | None:
    """The ``mcp`` surface policy that also forwards the named families' variables.

    A family's names join the policy's ``include`` (so they pass the
    allowlist; ``exclude`` and the tiers still win). An unknown family is a
    ``ConfigurationError`` naming it.
    """
    names: set[str] = set()
    for family in families:
        found = MCP_FAMILIES.get(family) if isinstance(family, str) else None
        if found is None:
            from envscope.errors import ConfigurationError

            known = ", ".join(sorted(MCP_FAMILIES))
            shown = repr(family) if isinstance(family, str) else f"a {type(family).__name__}"
            raise ConfigurationError(f"mcp_families: {shown} is not one of {known}")
        names |= found
    if not names:
        return policy
    if policy is None:
        return SurfacePolicy(include=tuple(sorted(names)))
    return SurfacePolicy(
        inherit=policy.inherit if policy.inherit_given else None,
        include=policy.include + tuple(sorted(names - set(policy.include))),
        exclude=policy.exclude,
        set_env=policy.set_env,
        origin=policy.origin,
        default_excludes=policy.default_excludes,
    )


@dataclass(frozen=True, slots=True, eq=False)
class BaseFilter:
    """Which keys of the base reach a child: an allowlist and/or a surface policy.

    Made per build and never compared (no ``__eq__``); the policy's globs are compiled
    once, in ``__post_init__``.
    """

    allowlist: Allowlist | None = None
    policy: SurfacePolicy | None = None
    windows: bool = False
    _include: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _exclude: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        policy = self.policy
        _set(self, "_include", None if policy is None else glob_regex(policy.include))
        excludes: tuple[str, ...] = ()
        if policy is not None:
            excludes = policy.exclude + (DEFAULT_EXCLUDES if policy.default_excludes else ())
        _set(self, "_exclude", glob_regex(excludes))

    @property
    def origin(self) -> Origin | None:
        """Where the surface policy came from."""
        return None if self.policy is None else self.policy.origin

    def included(self, upper_key: str) -> bool:
        """True when an ``include`` glob names the key."""
        return self._include is not None and self._include.match(upper_key) is not None

    def defaults(self) -> dict[str, str]:
        """Values a child gets when it would have none: Windows' PATHEXT and SYSTEMROOT.

        Only on Windows, for an allowlist surface (MCP) or under ``inherit:
        none|core``, and never for a name the policy excludes.
        """
        policy = self.policy
        narrowed = self.allowlist is not None or (
            policy is not None and policy.inherit is not Inherit.ALL
        )
        if not self.windows or not narrowed:
            return {}
        wanted = {"PATHEXT": WINDOWS_DEFAULT_PATHEXT, "SYSTEMROOT": WINDOWS_DEFAULT_SYSTEMROOT}
        exclude = self._exclude
        return {k: v for k, v in wanted.items() if exclude is None or not exclude.match(k)}

    def reject(self, upper_key: str) -> Reason | None:
        """Why a base key does not reach the child, or None when it does."""
        if self._exclude is not None and self._exclude.match(upper_key):
            return Reason.EXCLUDED
        if self.included(upper_key):
            return None
        if self.allowlist is not None and not self.allowlist.allows(upper_key):
            return Reason.NOT_ALLOWLISTED
        if self.windows and upper_key in _WINDOWS_KEPT:
            return None  # kept under none|core, like the PATHEXT a child cannot start without
        inherit = Inherit.ALL if self.policy is None else self.policy.inherit
        if inherit is Inherit.NONE:
            return Reason.NOT_INHERITED
        if inherit is Inherit.CORE:
            core = CORE_NAMES_WINDOWS if self.windows else CORE_NAMES_POSIX
            if upper_key not in core:
                return Reason.NOT_INHERITED
        return None
