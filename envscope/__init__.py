"""envscope: build the environment of every child process an agent host spawns.

A child gets what it needs and never a secret it must not see::

    from envscope import Host, Surface

    host = Host("/srv/agent/home")
    host.load_launch_env()
    with host.routed("/srv/agent/profiles/work"):
        env = host.build_subprocess_env(surface=Surface.TERMINAL)

See ``docs/concepts.md`` for the stages, tiers and surfaces.
"""

from __future__ import annotations

from types import FunctionType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use (PEP 562)
    from collections.abc import Mapping, Sequence

    from envscope._guard import guard as guard
    from envscope._harden import harden_process as harden_process
    from envscope._inputs import home_identity as home_identity
    from envscope.audit.trace import Decision as Decision
    from envscope.audit.trace import Trace as Trace
    from envscope.errors import CatalogError as CatalogError
    from envscope.errors import ConfigFileError as ConfigFileError
    from envscope.errors import ConfigurationError as ConfigurationError
    from envscope.errors import DotenvError as DotenvError
    from envscope.errors import EnvscopeError as EnvscopeError
    from envscope.errors import EnvValueError as EnvValueError
    from envscope.errors import FileError as FileError
    from envscope.errors import GuardFailedError as GuardFailedError
    from envscope.errors import ManifestError as ManifestError
    from envscope.errors import NotConfiguredError as NotConfiguredError
    from envscope.errors import PassthroughRefusedError as PassthroughRefusedError
    from envscope.errors import RoutingError as RoutingError
    from envscope.errors import SnapshotError as SnapshotError
    from envscope.errors import SourceError as SourceError
    from envscope.errors import SpawnBlockedError as SpawnBlockedError
    from envscope.host import Host as Host
    from envscope.pipeline._binding import Binding as Binding
    from envscope.pipeline.stages import FORCE_PREFIX as FORCE_PREFIX
    from envscope.policy._declarations import Origin as Origin
    from envscope.policy._declarations import OriginKind as OriginKind
    from envscope.policy._declarations import Problem as Problem
    from envscope.policy._declarations import Tier as Tier
    from envscope.policy._reasons import Action as Action
    from envscope.policy._reasons import Reason as Reason
    from envscope.policy._reasons import Stage as Stage
    from envscope.policy._secret_policy import SecretPolicy as SecretPolicy
    from envscope.policy.catalog import Catalog as Catalog
    from envscope.policy.sources import AgeFileSource as AgeFileSource
    from envscope.policy.sources import AwsSecretsSource as AwsSecretsSource
    from envscope.policy.sources import BitwardenSource as BitwardenSource
    from envscope.policy.sources import KeyringSource as KeyringSource
    from envscope.policy.sources import OnePasswordSource as OnePasswordSource
    from envscope.policy.sources import PassSource as PassSource
    from envscope.policy.sources import SecretSource as SecretSource
    from envscope.policy.sources import StaticSource as StaticSource
    from envscope.policy.sources import VaultSource as VaultSource
    from envscope.policy.surfaces import Inherit as Inherit
    from envscope.policy.surfaces import Surface as Surface
    from envscope.policy.surfaces import SurfacePolicy as SurfacePolicy

__version__ = "0.1.0"

# The one table of the public names that live in other modules: each name and the
# module that defines it. ``__all__``, the loader below and tests/test_api.py read it;
# the TYPE_CHECKING block above is its static mirror (a test holds the two equal).
_PUBLIC: dict[str, str] = {
    "Action": "envscope.policy._reasons",
    "AgeFileSource": "envscope.policy.sources",
    "AwsSecretsSource": "envscope.policy.sources",
    "Binding": "envscope.pipeline._binding",
    "BitwardenSource": "envscope.policy.sources",
    "Catalog": "envscope.policy.catalog",
    "CatalogError": "envscope.errors",
    "ConfigFileError": "envscope.errors",
    "ConfigurationError": "envscope.errors",
    "Decision": "envscope.audit.trace",
    "DotenvError": "envscope.errors",
    "EnvValueError": "envscope.errors",
    "EnvscopeError": "envscope.errors",
    "FORCE_PREFIX": "envscope.pipeline.stages",
    "FileError": "envscope.errors",
    "GuardFailedError": "envscope.errors",
    "Host": "envscope.host",
    "Inherit": "envscope.policy.surfaces",
    "KeyringSource": "envscope.policy.sources",
    "ManifestError": "envscope.errors",
    "NotConfiguredError": "envscope.errors",
    "OnePasswordSource": "envscope.policy.sources",
    "Origin": "envscope.policy._declarations",
    "OriginKind": "envscope.policy._declarations",
    "PassSource": "envscope.policy.sources",
    "PassthroughRefusedError": "envscope.errors",
    "Problem": "envscope.policy._declarations",
    "Reason": "envscope.policy._reasons",
    "RoutingError": "envscope.errors",
    "SecretPolicy": "envscope.policy._secret_policy",
    "SecretSource": "envscope.policy.sources",
    "SnapshotError": "envscope.errors",
    "SourceError": "envscope.errors",
    "SpawnBlockedError": "envscope.errors",
    "Stage": "envscope.policy._reasons",
    "StaticSource": "envscope.policy.sources",
    "Surface": "envscope.policy.surfaces",
    "SurfacePolicy": "envscope.policy.surfaces",
    "Tier": "envscope.policy._declarations",
    "Trace": "envscope.audit.trace",
    "VaultSource": "envscope.policy.sources",
    "guard": "envscope._guard",
    "harden_process": "envscope._harden",
    "home_identity": "envscope._inputs",
}

# The public names defined in this module.
_HERE = ("__version__", "build_subprocess_env", "configure", "default_host")

__all__ = sorted([*_PUBLIC, *_HERE])

# Submodules a host reaches as attributes after ``import envscope`` (``envscope.spawn.run``).
_SUBMODULES = frozenset({"spawn", "mcp", "redact"})


def __getattr__(name: str) -> object:
    """Import a public name's module (or a submodule) on first use and cache it here."""
    from importlib import import_module

    if name in _SUBMODULES:
        submodule = import_module(f"envscope.{name}")
        globals()[name] = submodule
        return submodule
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'envscope' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    _publish_loaded()
    return value


def _publish_loaded() -> None:
    """Cache every public name whose module is loaded, its type or function named ``envscope.X``.

    As httpx does, a public class or function says it is ``envscope``'s
    (``repr(envscope.Host)``, tracebacks, pickles), not its private module's.
    Pickles name ``envscope.Host``, which this module resolves.
    """
    import sys

    here = globals()
    for name, module in _PUBLIC.items():
        loaded = sys.modules.get(module)
        if name in here or loaded is None:
            continue
        # vars(), not getattr(): a module still being imported may lack the name, and a
        # module with a lazy __getattr__ (policy.sources) must not load it here
        value = vars(loaded).get(name)
        if value is None:
            continue
        if isinstance(value, (type, FunctionType)):
            value.__module__ = __name__
        here[name] = value


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


class _DefaultHost:
    """Holds the module-level default host; ``configure(None)`` is the reset seam."""

    host: Host | None = None


def configure(host: Host | None) -> None:
    """Set (or with ``None``, clear) the host the module-level ``build_subprocess_env`` uses.

    Anything but a ``Host`` or ``None`` is a ``ConfigurationError`` here, not at
    the first build.
    """
    if host is not None:
        from envscope.host import Host as _Host

        if not isinstance(host, _Host):
            from envscope.errors import ConfigurationError

            raise ConfigurationError(
                f"configure: expected a Host or None, got a {type(host).__name__}"
            )
    _DefaultHost.host = host


def default_host() -> Host:
    """The configured default host; a ``NotConfiguredError`` when there is none."""
    host = _DefaultHost.host
    if host is None:
        from envscope.errors import NotConfiguredError

        raise NotConfiguredError(
            "envscope.build_subprocess_env() called before envscope.configure(host): "
            "refusing to pass the parent env through unscrubbed"
        )
    return host


def build_subprocess_env(
    base: Mapping[str, str] | None = None,
    *,
    surface: Surface | str = "terminal",
    extra: Mapping[str, object] | None = None,
    inherit_credentials: bool = False,
    strip_launch_profile: bool = True,
    passthrough: Sequence[str] = (),
    scrub: bool = True,
    trace: Trace | None = None,
    grant: Sequence[str] = (),
) -> dict[str, str]:
    """Build a child env with the default host (see ``Host.build_subprocess_env``)."""
    return default_host().build_subprocess_env(
        base,
        surface=surface,
        extra=extra,
        inherit_credentials=inherit_credentials,
        strip_launch_profile=strip_launch_profile,
        passthrough=passthrough,
        scrub=scrub,
        trace=trace,
        grant=grant,
    )
