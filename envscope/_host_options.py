"""``host_options``: a ``Host``'s keyword arguments, checked once, when the host is made.

The constructor's keywords become one frozen ``HostOptions`` (the record a
build reads through its request, in ``pipeline._request``); a mistake is a
``ConfigurationError`` naming the keyword, never a value.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from envscope._inputs import WINDOWS, check_flags, name_list, text_path, valid_name
from envscope.errors import ConfigurationError
from envscope.pipeline.build import HostOptions
from envscope.pipeline.stages import FORCE_PREFIX
from envscope.policy._declarations import norm
from envscope.policy.surfaces import Surface, SurfacePolicy

if TYPE_CHECKING:
    from envscope.files._fs import FileSystem

__all__ = ["HostOptions", "host_options"]


def host_options(
    *,
    catalog: object,
    managed_env_file: str | os.PathLike[str] | None,
    bundled_plugins: str | os.PathLike[str] | None,
    home_env_var: str,
    global_names: Iterable[str] | None,
    fs: FileSystem | None,
    on_unreadable_platform: Literal["raise", "deny"],
    windows: bool | None,
    surface_policies: Mapping[Surface | str, SurfacePolicy] | None,
    strip_value_aliases: bool,
    max_env_bytes: int,
    allow_injection: Iterable[str],
    known_safe: Iterable[str],
    mcp_network_trust: bool,
    change_notification: bool | None,
    refuse_redirecting: bool,
    mcp_families: Iterable[str],
    drop_refused_extra: bool = False,
    name_context: bool = True,
) -> HostOptions:
    """The ``Host`` keywords checked into one record (see ``Host`` for each one)."""
    _check_seams(catalog, fs)
    if not isinstance(home_env_var, str) or not valid_name(home_env_var):
        raise ConfigurationError("home_env_var: not a valid environment name")
    if home_env_var.upper().startswith(FORCE_PREFIX):
        raise ConfigurationError("home_env_var: may not start with the force prefix")
    flags = {
        "strip_value_aliases": strip_value_aliases,
        "mcp_network_trust": mcp_network_trust,
        "refuse_redirecting": refuse_redirecting,
        "drop_refused_extra": drop_refused_extra,
        "name_context": name_context,
    }
    flags |= {"windows": windows} if windows is not None else {}
    flags |= {"change_notification": change_notification} if change_notification is not None else {}
    check_flags(flags)
    if on_unreadable_platform not in ("raise", "deny"):
        raise ConfigurationError("on_unreadable_platform: must be 'raise' or 'deny'")
    if isinstance(max_env_bytes, bool) or not isinstance(max_env_bytes, int) or max_env_bytes < 1:
        raise ConfigurationError("max_env_bytes: must be a positive whole number of bytes")
    return HostOptions(
        home_env_var=home_env_var,
        managed_path=(
            None if managed_env_file is None else text_path(managed_env_file, "managed_env_file")
        ),
        bundled_root=(
            None if bundled_plugins is None else text_path(bundled_plugins, "bundled_plugins")
        ),
        global_names_given=(
            None
            if global_names is None
            else frozenset(map(norm, name_list(global_names, "global_names")))
        ),
        # inotify in front of the manifest stamp (docs/manifests.md): on by default on Linux
        # over the real file system; a file-system seam (tests, fakes) gets the stamp unless asked.
        change_notification=fs is None if change_notification is None else change_notification,
        on_unreadable_platform=on_unreadable_platform,
        fold=WINDOWS if windows is None else windows,
        surface_policies=_surface_policies(surface_policies, mcp_families),
        strip_value_aliases=strip_value_aliases,
        max_env_bytes=max_env_bytes,
        allow_injection=frozenset(map(norm, name_list(allow_injection, "allow_injection"))),
        known_safe=frozenset(map(norm, name_list(known_safe, "known_safe"))),
        mcp_network_trust=mcp_network_trust,
        refuse_redirecting=refuse_redirecting,
        drop_refused_extra=drop_refused_extra,
        name_context=name_context,
    )


def _check_seams(catalog: object, fs: object) -> None:
    """``catalog`` is a ``Catalog`` and ``fs`` a ``FileSystem`` (or None), else an error.

    Checked when the host is made: either mistake would otherwise be an
    ``AttributeError`` at the first build.
    """
    if catalog is not None:
        from envscope.policy.catalog import Catalog  # loaded already: the caller made one

        if not isinstance(catalog, Catalog):
            raise ConfigurationError(
                f"catalog: expected a Catalog (Catalog.default(), Catalog.from_file(path)), "
                f"got a {type(catalog).__name__}"
            )
    if fs is not None:
        from envscope.files._fs import FileSystem

        methods = [n for n, v in vars(FileSystem).items() if callable(v) and n[0] != "_"]
        missing = [m for m in methods if not callable(getattr(fs, m, None))]
        if missing:
            raise ConfigurationError(
                f"fs: expected a FileSystem, got a {type(fs).__name__} without {', '.join(missing)}"
            )


def _surface_policies(
    given: Mapping[Surface | str, SurfacePolicy] | None, mcp_families: Iterable[str]
) -> dict[Surface, SurfacePolicy]:
    """The host's surface policies, the MCP families folded into the ``mcp`` one.

    ``inherit: all`` on the ``mcp`` surface is a configuration error: the
    surface is an allowlist, and the field would silently do nothing there.
    """
    from envscope.policy.surfaces import Inherit, surface_of, with_mcp_families

    if given is not None and not isinstance(given, Mapping):
        raise ConfigurationError(
            f"surface_policies: expected a mapping of surface to SurfacePolicy, "
            f"got a {type(given).__name__}"
        )
    policies: dict[Surface, SurfacePolicy] = {}
    for key, policy in (given or {}).items():
        try:
            surface = surface_of(key)
        except ConfigurationError as exc:
            raise ConfigurationError(f"surface_policies: {exc}") from None
        if not isinstance(policy, SurfacePolicy):
            raise ConfigurationError(
                f"surface_policies.{surface.value}: expected a SurfacePolicy, "
                f"got a {type(policy).__name__}"
            )
        policies[surface] = policy
    mcp = policies.get(Surface.MCP)
    if mcp is not None and mcp.inherit_given and mcp.inherit is Inherit.ALL:
        raise ConfigurationError(
            "surfaces.mcp.inherit: 'all' does nothing on the mcp surface (an allowlist: "
            "a safe base plus the server's env block); widen it with include, or name "
            "mcp_families"
        )
    if isinstance(mcp_families, str):
        raise ConfigurationError("mcp_families: a list of family names, not a string")
    widened = with_mcp_families(mcp, mcp_families)
    if widened is not None:
        policies[Surface.MCP] = widened
    return policies
