"""What a caller hands a build, checked and copied: homes, ``extra`` values, the parent env."""

from __future__ import annotations

import os
import sys

from envscope.errors import EnvscopeError, EnvValueError

TYPE_CHECKING = False  # typing itself is not imported at ``import envscope``
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_MAX_ENV_BYTES", "WINDOWS", "coerce_extra", "home_identity", "snapshot_env"]

WINDOWS = sys.platform == "win32"
DEFAULT_MAX_ENV_BYTES = 1024 * 1024  # half of Linux's usual ARG_MAX, leaving room for argv


def home_identity(path: str | os.PathLike[str]) -> str:
    """A home's identity: its resolved real path (case-folded on Windows)."""
    resolved = os.path.realpath(os.fspath(path))
    return os.path.normcase(resolved) if WINDOWS else resolved


def coerce_extra(extra: Mapping[str, object] | None) -> dict[str, str]:
    """Validate the caller's explicit values (an MCP ``env:`` block): scalars only."""
    if not extra:
        return {}
    out: dict[str, str] = {}
    for key, value in extra.items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
            raise EnvValueError(str(key), "not a valid environment variable name")
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = str(value)
        else:
            raise EnvValueError(key, f"must be a string or a number, not {type(value).__name__}")
        if "\x00" in out[key]:
            raise EnvValueError(key, "value holds a NUL byte")
    return out


def snapshot_env(environ: Mapping[str, str]) -> dict[str, str]:
    """One consistent copy of a (possibly live, possibly churning) mapping."""
    if type(environ) is dict:
        return environ.copy()  # atomic under the GIL
    for _ in range(8):
        try:
            return dict(environ)
        except RuntimeError:  # changed size during iteration: another thread wrote it
            continue
    raise EnvscopeError("the environ mapping kept changing while it was copied")
