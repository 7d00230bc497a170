"""Stage 4 of a build (DESIGN.md §3): sanitise, a pure function like the others.

Merge the caller's explicit values, strip Tier 1 always and Tier 2 unless
credentials are inherited, resolve passthrough names, unwrap force-prefixed
extras (never to Tier 1), strip value aliases of stripped secrets and, for
MCP children, exported shell functions. Stages 1 to 3 and the block check are
in ``envscope.stages``.
"""

from __future__ import annotations

from envscope._declarations import EMPTY_MAPPING, Origin, OriginKind, Tier, _Record, norm
from envscope.stages import (
    _CALLER,
    FORCE_PREFIX,
    Entries,
    StrippedSecrets,
    _is_forced,
    _refused,
    from_entries,
)
from envscope.trace import Action, Reason, Stage

TYPE_CHECKING = False  # typing itself is not imported at ``import envscope``
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from envscope.policy import SecretPolicy
    from envscope.surfaces import BaseFilter
    from envscope.trace import Trace

__all__ = ["SanitizeOptions", "sanitize"]


class SanitizeOptions(_Record):
    """What stage 4 needs besides the entries and the policy."""

    __slots__ = (
        "base_filter",
        "drop_shell_functions",
        "extra",
        "inherit_credentials",
        "passthrough",
        "passthrough_source",
        "pinned",
        "refuse",
        "stripped",
        "surface_set",
    )
    _fields = (
        "extra",
        "inherit_credentials",
        "passthrough",
        "passthrough_source",
        "base_filter",
        "drop_shell_functions",
        "pinned",
        "surface_set",
        "stripped",
        "refuse",
    )
    extra: Mapping[str, str]
    inherit_credentials: bool
    passthrough: Sequence[str]
    passthrough_source: Entries | None
    base_filter: BaseFilter | None
    drop_shell_functions: bool
    pinned: Mapping[str, str]
    surface_set: Mapping[str, str]
    stripped: StrippedSecrets | None  # set to strip value aliases of stripped secrets
    refuse: Callable[[str], bool] | None  # injection vectors extras/passthrough may not add

    def __init__(
        self,
        *,
        extra: Mapping[str, str] = EMPTY_MAPPING,
        inherit_credentials: bool = False,
        passthrough: Sequence[str] = (),
        passthrough_source: Entries | None = None,
        base_filter: BaseFilter | None = None,
        drop_shell_functions: bool = False,
        pinned: Mapping[str, str] = EMPTY_MAPPING,
        surface_set: Mapping[str, str] = EMPTY_MAPPING,
        stripped: StrippedSecrets | None = None,
        refuse: Callable[[str], bool] | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "extra", extra)
        _set(self, "inherit_credentials", inherit_credentials)
        _set(self, "passthrough", passthrough)
        _set(self, "passthrough_source", passthrough_source)
        _set(self, "base_filter", base_filter)
        _set(self, "drop_shell_functions", drop_shell_functions)
        _set(self, "pinned", pinned)
        _set(self, "surface_set", surface_set)
        _set(self, "stripped", stripped)
        _set(self, "refuse", refuse)


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
    base_filter = options.base_filter
    if base_filter is None:  # the common case, in C-level passes
        out = {up: item for up, item in entries.items() if not up.startswith(FORCE_PREFIX)}
        if trace is not None and len(out) != len(entries):
            for up in [up for up in entries if up not in out]:
                key, value = entries[up]
                reason = Reason.FORCE_PREFIX_IN_BASE
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)
    else:
        out = _filter_base(entries, base_filter, trace)
    _merge_sanitize(out, policy, options, trace)
    return from_entries(out)


def _filter_base(entries: Entries, base_filter: BaseFilter, trace: Trace | None) -> Entries:
    """Stage 4 (a) and (b): the surface filter, and force-prefixed keys of the base dropped."""
    out: Entries = {}
    for up, item in entries.items():
        rejected = base_filter.reject(up)
        if rejected is not None:
            if trace is not None:
                origin = None if rejected is Reason.NOT_ALLOWLISTED else base_filter.origin
                trace.record(
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
    return out


def _merge_sanitize(
    out: Entries, policy: SecretPolicy, options: SanitizeOptions, trace: Trace | None
) -> None:
    """Stage 4 (c) to (g), in place on the filtered entries."""
    base_filter = options.base_filter
    set_origin = None if base_filter is None else base_filter.origin
    for key, value in options.surface_set.items():
        if trace is not None:
            action = Action.OVERRIDDEN if key.upper() in out else Action.ADDED
            reason = Reason.SURFACE_SET
            trace.record(key, action, Stage.EXTRA, reason, set_origin, value=value)
        out[key.upper()] = (key, value)

    forced: list[tuple[str, str]] = []
    extra = options.extra
    if options.refuse is not None:
        extra = _refused(extra, options.refuse, Stage.EXTRA, trace)
    for key, value in extra.items():
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

    _strip_tiers(out, policy, options.inherit_credentials, trace, options.stripped)
    _resolve_passthrough(out, policy, options, trace)
    _unwrap_forced(out, policy, forced, trace)
    if options.stripped is not None and options.stripped.values:
        exempt = {key[len(FORCE_PREFIX) :].upper() for key, _ in forced}
        _strip_aliases(out, options.stripped, exempt, trace)

    if options.drop_shell_functions:
        for up in [u for u, (_, v) in out.items() if v.startswith("()")]:
            if trace is not None:
                key, value = out[up]
                reason = Reason.SHELL_FUNCTION
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)
            del out[up]


def _strip_aliases(
    out: Entries, stripped: StrippedSecrets, exempt: set[str], trace: Trace | None
) -> None:
    """Strip kept keys whose value equals a stripped secret's (the secret named, never shown)."""
    for up, (key, value) in list(out.items()):
        decl = stripped.values.get(value)
        if decl is None or up in exempt or decl.name in out:
            continue  # no match, a caller's forced value, or the secret itself is kept
        if trace is not None:
            note = f"same value as {decl.name}"
            reason = Reason.ALIAS_OF
            trace.record(
                key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, note, value=value
            )
        del out[up]


def _strip_tiers(
    out: Entries,
    policy: SecretPolicy,
    inherit_credentials: bool,
    trace: Trace | None,
    stripped: StrippedSecrets | None,
) -> None:
    declaration = policy.declaration
    declared = [(up, decl) for up in out if (decl := declaration(up)) is not None]
    for up, decl in declared:
        if decl.tier is Tier.TIER2 and inherit_credentials:
            if trace is not None:
                key, value = out[up]
                reason = Reason.TIER2_INHERITED
                trace.record(key, Action.KEPT, Stage.SANITIZE, reason, decl.origin, value=value)
            continue
        key, value = out.pop(up)
        if stripped is not None:
            stripped.add(decl, value)
        if trace is not None:
            reason = Reason.TIER1 if decl.tier is Tier.TIER1 else Reason.TIER2
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, value=value)


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
        if options.refuse is not None and options.refuse(up):
            if trace is not None:
                trace.record(name, Action.REFUSED, Stage.SANITIZE, Reason.INJECTION_VECTOR)
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
