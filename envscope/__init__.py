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

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names below load on first use (PEP 562): ``import envscope`` is cheap
    from collections.abc import Mapping, Sequence

    from envscope._guard import guard
    from envscope._harden import harden_process
    from envscope.audit.trace import Action, Decision, Reason, Stage, Trace
    from envscope.errors import (
        CatalogError,
        ConfigFileError,
        ConfigurationError,
        DotenvError,
        EnvscopeError,
        EnvValueError,
        FileError,
        ManifestError,
        NotConfiguredError,
        PassthroughRefusedError,
        RoutingError,
        SnapshotError,
        SpawnBlockedError,
    )
    from envscope.host import Host, home_identity
    from envscope.pipeline._binding import Binding
    from envscope.pipeline.stages import FORCE_PREFIX
    from envscope.policy._declarations import Origin, OriginKind, Problem, Tier
    from envscope.policy._secret_policy import SecretPolicy
    from envscope.policy.catalog import Catalog
    from envscope.policy.sources import SecretSource, StaticSource
    from envscope.policy.surfaces import Inherit, Surface, SurfacePolicy

__version__ = "0.1.0"

__all__ = [
    "FORCE_PREFIX",
    "Action",
    "Binding",
    "Catalog",
    "CatalogError",
    "ConfigFileError",
    "ConfigurationError",
    "Decision",
    "DotenvError",
    "EnvValueError",
    "EnvscopeError",
    "FileError",
    "Host",
    "Inherit",
    "ManifestError",
    "NotConfiguredError",
    "Origin",
    "OriginKind",
    "PassthroughRefusedError",
    "Problem",
    "Reason",
    "RoutingError",
    "SecretPolicy",
    "SecretSource",
    "SnapshotError",
    "SpawnBlockedError",
    "Stage",
    "StaticSource",
    "Surface",
    "SurfacePolicy",
    "Tier",
    "Trace",
    "__version__",
    "build_subprocess_env",
    "configure",
    "default_host",
    "guard",
    "harden_process",
    "home_identity",
]


# Where each public name lives: resolved on first attribute access (PEP 562), so
# ``import envscope`` runs no module of the package and ``from envscope import Host``
# loads only what a host needs.
_LAZY: dict[str, str] = {
    "Origin": "envscope.policy._declarations",
    "OriginKind": "envscope.policy._declarations",
    "Problem": "envscope.policy._declarations",
    "Tier": "envscope.policy._declarations",
    "harden_process": "envscope._harden",
    "guard": "envscope._guard",
    "Catalog": "envscope.policy.catalog",
    "Binding": "envscope.pipeline._binding",
    "Host": "envscope.host",
    "home_identity": "envscope.host",
    "SecretPolicy": "envscope.policy._secret_policy",
    "SecretSource": "envscope.policy.sources",
    "StaticSource": "envscope.policy.sources",
    "FORCE_PREFIX": "envscope.pipeline.stages",
    "Inherit": "envscope.policy.surfaces",
    "Surface": "envscope.policy.surfaces",
    "SurfacePolicy": "envscope.policy.surfaces",
    "Action": "envscope.audit.trace",
    "Decision": "envscope.audit.trace",
    "Reason": "envscope.audit.trace",
    "Stage": "envscope.audit.trace",
    "Trace": "envscope.audit.trace",
    **{name: "envscope.errors" for name in __all__ if name.endswith("Error")},
}


# Submodules a host reaches as attributes after ``import envscope`` (``envscope.spawn.run``).
_SUBMODULES = frozenset({"spawn", "mcp"})


def __getattr__(name: str) -> object:
    """Import a public name's module (or a submodule) on first use and cache it here."""
    from importlib import import_module

    if name in _SUBMODULES:
        submodule = import_module(f"envscope.{name}")
        globals()[name] = submodule
        return submodule
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envscope' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


class _DefaultHost:
    """Holds the module-level default host; ``configure(None)`` is the reset seam."""

    host: Host | None = None


def configure(host: Host | None) -> None:
    """Set (or with ``None``, clear) the host the module-level ``build_subprocess_env`` uses."""
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
