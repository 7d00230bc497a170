"""The four stages of a build (DESIGN.md §3), each a pure function.

Stages work on ``Entries``: upper-cased key → (key as spelled, value). That
makes every name comparison case-insensitive and guarantees the output never
holds two keys that differ only in case. A stage returns a new mapping and
never mutates its input. Each takes an optional ``Trace``; without one it
does no bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from envscope._declarations import Origin, OriginKind, Tier, norm
from envscope.policy import SecretPolicy
from envscope.surfaces import BaseFilter
from envscope.trace import Action, Reason, Stage, Trace

__all__ = [
    "FORCE_PREFIX",
    "Entries",
    "SanitizeOptions",
    "apply_managed",
    "from_entries",
    "overlay_scope",
    "sanitize",
    "strip_residue",
    "to_entries",
]

FORCE_PREFIX = "_ENVSCOPE_FORCE_"
Entries = dict[str, tuple[str, str]]

_CALLER = Origin(OriginKind.CALLER, "extra")


def to_entries(env: Mapping[str, str], trace: Trace | None = None) -> Entries:
    """Index a mapping case-insensitively; of keys equal ignoring case, keep one.

    The upper-case spelling wins when present, else the first seen; every
    dropped spelling is recorded (``case-duplicate``).
    """
    out: Entries = {}
    for key, value in env.items():
        up = key.upper()
        prev = out.get(up)
        if prev is not None:
            keep_new = key == up and prev[0] != up
            dropped = prev[0] if keep_new else key
            if trace is not None:
                reason = Reason.CASE_DUPLICATE
                dropped_value = prev[1] if keep_new else value
                trace.record(dropped, Action.STRIPPED, Stage.RESIDUE, reason, value=dropped_value)
            if not keep_new:
                continue
        out[up] = (key, value)
    return out


def from_entries(entries: Entries) -> dict[str, str]:
    """The plain env dict of some entries."""
    return dict(entries.values())


def strip_residue(
    entries: Entries,
    *,
    residue: frozenset[str],
    keep: frozenset[str],
    policies: Sequence[SecretPolicy],
    residue_origins: Mapping[str, Origin] | None = None,
    trace: Trace | None = None,
) -> Entries:
    """Stage 1: drop the launch profile's residue, credentials and authorization gates.

    ``residue`` and ``keep`` (global names and managed keys) are upper-cased.
    A name any of ``policies`` declares (Tier 1 or 2) is dropped too: a routed
    child gets its own profile's credentials from the scope, never the
    launch process's, ambient ones included.
    """
    out: Entries = {}
    for up, item in entries.items():
        if up in keep:
            out[up] = item
            continue
        reason: Reason | None = None
        origin: Origin | None = None
        if up in residue:
            reason = Reason.LAUNCH_RESIDUE
            origin = None if residue_origins is None else residue_origins.get(up)
        else:
            for policy in policies:
                decl = policy.declaration(up)
                if decl is not None:
                    reason, origin = Reason.LAUNCH_CREDENTIAL, decl.origin
                    break
                if policy.is_gate(up):
                    reason = Reason.LAUNCH_GATE
                    break
        if reason is None:
            out[up] = item
        elif trace is not None:
            trace.record(item[0], Action.STRIPPED, Stage.RESIDUE, reason, origin, value=item[1])
    return out


def _overlay(
    entries: Entries,
    values: Mapping[str, str],
    stage: Stage,
    reason: Reason,
    origins: Mapping[str, Origin] | None,
    default_origin: Origin,
    trace: Trace | None,
) -> Entries:
    out = dict(entries)
    for key, value in values.items():
        up = key.upper()
        if trace is not None:
            action = Action.OVERRIDDEN if up in out else Action.ADDED
            origin = default_origin if origins is None else origins.get(up, default_origin)
            trace.record(key, action, stage, reason, origin, value=value)
        out[up] = (key, value)
    return out


def overlay_scope(
    entries: Entries,
    scope: Mapping[str, str],
    *,
    origins: Mapping[str, Origin] | None = None,
    home: str = "",
    trace: Trace | None = None,
) -> Entries:
    """Stage 2: the routed home's scope replaces values (any case variant)."""
    origin = Origin(OriginKind.SCOPE, home or "routed scope")
    return _overlay(entries, scope, Stage.OVERLAY, Reason.SCOPE_VALUE, origins, origin, trace)


def apply_managed(
    entries: Entries,
    managed: Mapping[str, str],
    *,
    path: str | None = None,
    trace: Trace | None = None,
) -> Entries:
    """Stage 3: administrator-managed values beat the routed profile's own."""
    origin = Origin(OriginKind.MANAGED, "managed env file", path=path)
    return _overlay(entries, managed, Stage.MANAGED, Reason.MANAGED_VALUE, None, origin, trace)


@dataclass(frozen=True)
class SanitizeOptions:
    """What stage 4 needs besides the entries and the policy."""

    extra: Mapping[str, str] = field(default_factory=dict)
    inherit_credentials: bool = False
    passthrough: Sequence[str] = ()
    passthrough_source: Entries | None = None
    base_filter: BaseFilter | None = None
    drop_shell_functions: bool = False
    pinned: Mapping[str, str] = field(default_factory=dict)
    surface_set: Mapping[str, str] = field(default_factory=dict)


def _is_forced(up: str) -> bool:
    return up.startswith(FORCE_PREFIX)


def sanitize(
    entries: Entries,
    policy: SecretPolicy,
    options: SanitizeOptions,
    *,
    trace: Trace | None = None,
) -> dict[str, str]:
    """Stage 4: allowlist, merge extras, strip tiers, passthrough, unwrap forced names.

    Order: (a) drop base keys the surface's filter rejects (the MCP
    allowlist, a surface policy's inherit/include/exclude); (b) drop
    force-prefixed keys of the base (never unwrapped); (c) merge the surface
    policy's ``set`` values, then the caller's ``extra``, then ``pinned``;
    (d) strip Tier 1 always and Tier 2 unless credentials are inherited;
    (e) resolve passthrough names from ``passthrough_source`` (refused for
    declared names); (f) unwrap the
    caller's force-prefixed extras, never to a Tier 1 name; (g) drop
    exported shell functions where asked.
    """
    out: Entries = {}
    base_filter = options.base_filter
    for up, item in entries.items():
        if base_filter is not None:
            rejected = base_filter.reject(up)
            if rejected is not None:
                if trace is not None:
                    origin = None if rejected is Reason.NOT_ALLOWLISTED else base_filter.origin
                    record = trace.record
                    record(
                        item[0], Action.STRIPPED, Stage.SANITIZE, rejected, origin, value=item[1]
                    )
                continue
            if trace is not None and base_filter.included(up):
                origin = base_filter.origin
                reason = Reason.INCLUDED
                trace.record(item[0], Action.KEPT, Stage.SANITIZE, reason, origin, value=item[1])
        if _is_forced(up):
            if trace is not None:
                reason = Reason.FORCE_PREFIX_IN_BASE
                trace.record(item[0], Action.STRIPPED, Stage.SANITIZE, reason, value=item[1])
            continue
        out[up] = item

    set_origin = None if base_filter is None else base_filter.origin
    for key, value in options.surface_set.items():
        if trace is not None:
            action = Action.OVERRIDDEN if key.upper() in out else Action.ADDED
            reason = Reason.SURFACE_SET
            trace.record(key, action, Stage.EXTRA, reason, set_origin, value=value)
        out[key.upper()] = (key, value)

    forced: list[tuple[str, str]] = []
    for key, value in options.extra.items():
        up = key.upper()
        if _is_forced(up):
            forced.append((key, value))
            continue
        if trace is not None:
            action = Action.OVERRIDDEN if up in out else Action.ADDED
            trace.record(key, action, Stage.EXTRA, Reason.CALLER_EXTRA, _CALLER, value=value)
        out[up] = (key, value)
    for key, value in options.pinned.items():
        if trace is not None:
            origin = Origin(OriginKind.SURFACE, "worker")
            trace.record(key, Action.ADDED, Stage.EXTRA, Reason.HOME_VAR, origin, value=value)
        out[key.upper()] = (key, value)

    _strip_tiers(out, policy, options.inherit_credentials, trace)
    _resolve_passthrough(out, policy, options, trace)
    _unwrap_forced(out, policy, forced, trace)

    if options.drop_shell_functions:
        for up in [u for u, (_, v) in out.items() if v.startswith("()")]:
            if trace is not None:
                key, value = out[up]
                reason = Reason.SHELL_FUNCTION
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)
            del out[up]
    return from_entries(out)


def _strip_tiers(
    out: Entries, policy: SecretPolicy, inherit_credentials: bool, trace: Trace | None
) -> None:
    for up in list(out):
        decl = policy.declaration(up)
        if decl is None:
            continue
        if decl.tier is Tier.TIER2 and inherit_credentials:
            if trace is not None:
                key, value = out[up]
                reason = Reason.TIER2_INHERITED
                trace.record(key, Action.KEPT, Stage.SANITIZE, reason, decl.origin, value=value)
            continue
        if trace is not None:
            reason = Reason.TIER1 if decl.tier is Tier.TIER1 else Reason.TIER2
            key, value = out[up]
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, value=value)
        del out[up]


def _resolve_passthrough(
    out: Entries, policy: SecretPolicy, options: SanitizeOptions, trace: Trace | None
) -> None:
    source = options.passthrough_source
    extra_keys = {k.upper() for k in options.extra}
    for name in options.passthrough:
        if not name:
            continue  # an empty name is ignored
        up = norm(name)
        decl = policy.declaration(up)
        if decl is not None:
            if trace is not None:
                reason = Reason.PASSTHROUGH_REFUSED
                trace.record(name, Action.REFUSED, Stage.SANITIZE, reason, decl.origin)
            continue
        if up in extra_keys or source is None:
            continue
        found = source.get(up)
        if found is not None:
            if trace is not None:
                reason = Reason.PASSTHROUGH
                key, value = found
                trace.record(key, Action.ADDED, Stage.SANITIZE, reason, _CALLER, value=value)
            out[up] = found
        elif up in out:
            if trace is not None:
                reason = Reason.PASSTHROUGH_NOT_IN_SCOPE
                key, value = out[up]
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)
            del out[up]


def _unwrap_forced(
    out: Entries,
    policy: SecretPolicy,
    forced: Iterable[tuple[str, str]],
    trace: Trace | None,
) -> None:
    for key, value in forced:
        target = key[len(FORCE_PREFIX) :]
        if not target:
            continue
        up = target.upper()
        decl = policy.declaration(up)
        if decl is not None and decl.tier is Tier.TIER1:
            if trace is not None:
                reason = Reason.FORCE_REFUSED
                trace.record(
                    target, Action.REFUSED, Stage.SANITIZE, reason, decl.origin, value=value
                )
            out.pop(up, None)
            continue
        if trace is not None:
            trace.record(target, Action.ADDED, Stage.SANITIZE, Reason.FORCED, _CALLER, value=value)
        out[up] = (target, value)
