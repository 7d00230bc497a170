"""Surfaces: the kinds of child, and what each one inherits.

``terminal`` and ``script`` are denylist surfaces (Tier 1 and Tier 2 stripped);
``worker`` is ``terminal`` plus the target home in ``home_env_var``;
``credentialed`` keeps Tier 2; ``mcp`` is an allowlist surface, merged the way
the MCP SDKs merge: a safe base, the server's ``env:`` block, passthrough names
and the names secret sources supplied.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "MCP_SAFE_NAMES_POSIX",
    "MCP_SAFE_NAMES_WINDOWS",
    "MCP_SAFE_PREFIXES_POSIX",
    "Allowlist",
    "Surface",
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
