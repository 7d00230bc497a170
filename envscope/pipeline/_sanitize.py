"""Stage 4 of a build (DESIGN.md §3): sanitise, a pure function like the others.

Merge the caller's explicit values, strip Tier 1 always and Tier 2 unless
credentials are inherited (an MCP server's env block is the operator's
grant), resolve passthrough names, unwrap force-prefixed extras (never to
Tier 1), strip value aliases of secrets (``envscope.pipeline._aliases``) and, for MCP
children, exported shell functions; no force-prefixed key survives. Stages 1
to 3 and the block check are in ``envscope.pipeline.stages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.audit.trace import Action, Reason, Stage
from envscope.pipeline._aliases import SecretValues, strip_aliases
from envscope.pipeline.stages import (
    CALLER_ORIGIN,
    FORCE_PREFIX,
    Entries,
    from_entries,
    index,
    is_forced,
    put_layer,
    remove_spellings,
    spellings,
    without_refused,
)
from envscope.policy._declarations import Declaration, Origin, OriginKind, Tier, norm

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from envscope.audit.trace import Trace
    from envscope.policy._secret_policy import SecretPolicy
    from envscope.policy.surfaces import BaseFilter

__all__ = ["SanitizeOptions", "sanitize"]


@dataclass(frozen=True, slots=True, repr=False)
class SanitizeOptions:
    """What stage 4 needs besides the entries and the policy.

    ``launch_policy`` is set under routing when the launch home's policy is
    another object: a name it declares is as declared as the target's, for
    everything but the routed profile's own values (``own``: upper-cased
    name → the values its spellings hold). ``launch_env`` is the parent env before stage 1 (what the
    process holds, every spelling), for telling a caller's genuine ``extra``
    from a repeated launch value. ``secrets`` turns the value-alias rule on. ``fold`` says
    whether names fold (Windows: the entries are indexed upper-cased and the
    output holds one spelling per name) or not (POSIX: indexed as spelled).
    """

    extra: Mapping[str, str] = field(default_factory=dict)
    inherit_credentials: bool = False
    passthrough: Sequence[str] = ()
    passthrough_source: Entries | None = None
    base_filter: BaseFilter | None = None
    drop_shell_functions: bool = False
    pinned: Mapping[str, str] = field(default_factory=dict)
    surface_set: Mapping[str, str] = field(default_factory=dict)
    refuse: Callable[[str], bool] | None = None  # injection vectors extras/passthrough may not add
    launch_policy: SecretPolicy | None = None
    own: Mapping[str, frozenset[str]] = field(default_factory=dict)
    launch_env: Entries = field(default_factory=dict)
    secrets: SecretValues | None = None
    # On the mcp surface ``extra`` is the server's env block: the operator's grant.
    extra_is_grant: bool = False
    grant: frozenset[str] = frozenset()  # upper-cased block keys whose host-secret value passes
    ungrantable: frozenset[str] = frozenset()  # a secret source's own credentials: never granted
    fold: bool = True

    def __repr__(self) -> str:
        return "SanitizeOptions(...)"  # holds values: never shown

    def declaration(
        self, policy: SecretPolicy, up: str, value: str | None = None
    ) -> Declaration | None:
        """How the build declares a name: the target's policy, else (routed) the launch's.

        A routed profile's own value (``value`` equal to ``own[up]``) answers
        to the target's policy only: the launch home's plugin secret is not
        the routed profile's.
        """
        decl = policy.declaration(up)
        launch = self.launch_policy
        if launch is None or (value is not None and value in self.own.get(up, ())):
            return decl
        other = launch.declaration(up)
        if other is None or (decl is not None and decl.tier is Tier.TIER1):
            return decl
        if decl is None or other.tier is Tier.TIER1:
            return other  # the stricter tier wins
        return decl


def sanitize(
    entries: Entries,
    policy: SecretPolicy,
    options: SanitizeOptions,
    *,
    trace: Trace | None = None,
) -> dict[str, str]:
    """Stage 4: allowlist, merge extras, strip tiers, passthrough, unwrap, aliases.

    Order: (a) drop base keys the surface's filter rejects (the MCP
    allowlist, a surface policy's inherit/include/exclude); (b) drop
    force-prefixed keys of the base (never unwrapped); (c) merge the surface
    policy's ``set`` values, then the caller's ``extra``, then ``pinned``;
    (d) strip Tier 1 always and Tier 2 unless credentials are inherited;
    (e) resolve passthrough names from ``passthrough_source`` (refused for
    declared names); (f) unwrap the caller's force-prefixed extras, never to
    a Tier 1 name; (g) strip value aliases of secrets; (h) drop exported
    shell functions where asked; (i) last, drop any force-prefixed key
    whatever put it there: none reaches a child.
    """
    out = _filter_base(entries, options.base_filter, trace)
    _merge(out, options, trace)
    _strip_tiers(out, policy, options, trace)
    _resolve_passthrough(out, policy, options, trace)
    forced = _unwrap_forced(out, policy, options, trace)
    if options.secrets is not None:
        granted = _granted(out, options)  # the server's block, as configured
        exempt = {*forced, *(k.upper() for k in options.pinned), *(granted & options.grant)}

        def declare(up: str) -> Declaration | None:
            return options.declaration(policy, up)

        strip_aliases(
            out,
            options.secrets,
            declare=declare,
            own=options.own,
            exempt=exempt,
            granted=granted,
            trace=trace,
        )
    if options.drop_shell_functions:
        functions = [idx for idx, (_, value) in out.items() if value.startswith("()")]
        _drop(out, functions, Reason.SHELL_FUNCTION, trace)
    forced_keys = [idx for idx, (key, _) in out.items() if is_forced(key.upper())]
    _drop(out, forced_keys, Reason.FORCE_PREFIX_IN_BASE, trace)
    return from_entries(out)


def _granted(out: Entries, options: SanitizeOptions) -> frozenset[str]:
    """Indexes of ``out`` that hold the server's env block value as configured."""
    if not options.extra_is_grant:
        return frozenset()
    fold = options.fold
    block = {index(k, fold): v for k, v in options.extra.items()}
    return frozenset(
        idx
        for idx, (key, value) in out.items()
        if block.get(idx) == value and key.upper() not in options.ungrantable
    )


def _drop(out: Entries, indexes: Iterable[str], reason: Reason, trace: Trace | None) -> None:
    """Remove these indexes from ``out``, each recorded."""
    for idx in indexes:
        key, value = out.pop(idx)
        if trace is not None:
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


def _filter_base(entries: Entries, base_filter: BaseFilter | None, trace: Trace | None) -> Entries:
    """Stage 4 (a) and (b): the surface filter, and force-prefixed keys of the base dropped."""
    out: Entries = {}
    for idx, item in entries.items():
        up = item[0].upper()
        if base_filter is not None:
            rejected = base_filter.reject(up)
            if rejected is not None:
                if trace is not None:
                    origin = None if rejected is Reason.NOT_ALLOWLISTED else base_filter.origin
                    key, value = item
                    trace.record(
                        key, Action.STRIPPED, Stage.SANITIZE, rejected, origin, value=value
                    )
                continue
            if trace is not None and base_filter.included(up):
                origin = base_filter.origin
                reason = Reason.INCLUDED
                trace.record(item[0], Action.KEPT, Stage.SANITIZE, reason, origin, value=item[1])
        if is_forced(up):
            if trace is not None:
                reason = Reason.FORCE_PREFIX_IN_BASE
                trace.record(item[0], Action.STRIPPED, Stage.SANITIZE, reason, value=item[1])
            continue
        out[idx] = item
    return out


def _merge(out: Entries, options: SanitizeOptions, trace: Trace | None) -> None:
    """Stage 4 (c): a surface policy's ``set``, the caller's (unforced) ``extra``, ``pinned``.

    Each layer replaces every spelling of the names it sets.
    """
    base_filter = options.base_filter
    set_origin = None if base_filter is None else base_filter.origin
    fold = options.fold
    record_set = record_extra = record_pinned = None
    if trace is not None:

        def record_set(key: str, value: str, replaced: bool) -> None:
            action = Action.OVERRIDDEN if replaced else Action.ADDED
            trace.record(key, action, Stage.EXTRA, Reason.SURFACE_SET, set_origin, value=value)

        def record_extra(key: str, value: str, replaced: bool) -> None:
            action = Action.OVERRIDDEN if replaced else Action.ADDED
            trace.record(key, action, Stage.EXTRA, Reason.CALLER_EXTRA, CALLER_ORIGIN, value=value)

        def record_pinned(key: str, value: str, replaced: bool) -> None:
            del replaced
            origin = Origin(OriginKind.SURFACE, "home")
            trace.record(key, Action.ADDED, Stage.EXTRA, Reason.HOME_VAR, origin, value=value)

    if base_filter is not None:  # a platform default the policy's inherit would lose
        defaults = {
            k: v for k, v in base_filter.defaults().items() if not spellings(out, k.upper(), fold)
        }
        if trace is not None:
            for key, value in defaults.items():
                note = "the Windows default (inherit none or core; Codex does the same)"
                reason = Reason.SURFACE_SET
                trace.record(key, Action.ADDED, Stage.EXTRA, reason, set_origin, note, value=value)
        put_layer(out, defaults, fold)
    put_layer(out, options.surface_set, fold, record_set)
    unforced = {k: v for k, v in _extra(options, trace).items() if not is_forced(k.upper())}
    put_layer(out, unforced, fold, record_extra)  # forced keys are unwrapped at (f)
    put_layer(out, options.pinned, fold, record_pinned)


def _extra(options: SanitizeOptions, trace: Trace | None) -> Mapping[str, str]:
    """The caller's ``extra`` without the injection vectors it may not add (refusals recorded)."""
    if options.refuse is None:
        return options.extra
    return without_refused(options.extra, options.refuse, Stage.EXTRA, trace)


def _strip_tiers(
    out: Entries, policy: SecretPolicy, options: SanitizeOptions, trace: Trace | None
) -> None:
    """Stage 4 (d): Tier 1 always, Tier 2 unless credentials are inherited."""
    inherit = options.inherit_credentials
    granted = _granted(out, options)
    for idx, (key, value) in list(out.items()):
        decl = options.declaration(policy, key.upper(), value)
        if decl is None:
            continue
        if idx in granted:
            if trace is not None:
                reason = Reason.SERVER_GRANT
                trace.record(key, Action.KEPT, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value)
            continue
        if decl.tier is Tier.TIER2 and inherit:
            if trace is not None:
                reason = Reason.TIER2_INHERITED
                trace.record(key, Action.KEPT, Stage.SANITIZE, reason, decl.origin, value=value)
            continue
        del out[idx]
        if trace is not None:
            reason = Reason.TIER1 if decl.tier is Tier.TIER1 else Reason.TIER2
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, value=value)


def _resolve_passthrough(
    out: Entries, policy: SecretPolicy, options: SanitizeOptions, trace: Trace | None
) -> None:
    """Stage 4 (e): forward passthrough names from their source, never a declared one.

    A name in the caller's ``extra`` keeps the caller's value, unless that
    value merely repeats what the launch process holds for the name: under
    routing the source's (the routed scope's) value wins then, and without
    one the name is dropped.
    """
    source = options.passthrough_source
    fold = options.fold
    extra = {k.upper(): v for k, v in options.extra.items()}
    for name in options.passthrough:
        if not name:
            continue  # an empty name is ignored
        up = norm(name)
        decl = options.declaration(policy, up)
        if decl is not None or is_forced(up):
            if trace is not None:
                reason = Reason.PASSTHROUGH_REFUSED
                origin = None if decl is None else decl.origin
                trace.record(name, Action.REFUSED, Stage.SANITIZE, reason, origin)
            continue
        if options.refuse is not None and options.refuse(up):
            if trace is not None:
                trace.record(name, Action.REFUSED, Stage.SANITIZE, Reason.INJECTION_VECTOR)
            continue
        if source is None:
            continue
        given = extra.get(up)
        # any spelling the process holds counts: a repeat of a launch value never wins
        launch = [v for k, v in options.launch_env.values() if k.upper() == up]
        if given is not None and given not in launch:
            continue  # the caller's own value wins
        found = [source[i] for i in spellings(source, up, fold)]
        if found:
            remove_spellings(out, (up,), fold)
            for key, value in found:
                if trace is not None:
                    reason = Reason.PASSTHROUGH
                    trace.record(
                        key, Action.ADDED, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value
                    )
                out[index(key, fold)] = (key, value)
        else:
            for idx in spellings(out, up, fold):
                key, value = out.pop(idx)
                if trace is not None:
                    reason = Reason.PASSTHROUGH_NOT_IN_SCOPE
                    trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


def _unwrap_forced(
    out: Entries, policy: SecretPolicy, options: SanitizeOptions, trace: Trace | None
) -> list[str]:
    """Stage 4 (f): ``_ENVSCOPE_FORCE_X`` → ``X``, never to a Tier 1 or force-prefixed name.

    Returns the upper-cased names it handed over.
    """
    handed: list[str] = []
    for key, value in _extra(options, None).items():
        if not is_forced(key.upper()):
            continue
        target = key[len(FORCE_PREFIX) :]
        if not target:
            continue
        up = target.upper()
        decl = options.declaration(policy, up)
        if is_forced(up) or (decl is not None and decl.tier is Tier.TIER1):
            if trace is not None:
                reason = Reason.FORCE_REFUSED
                origin = None if decl is None else decl.origin
                trace.record(target, Action.REFUSED, Stage.SANITIZE, reason, origin, value=value)
            remove_spellings(out, (up,), options.fold)
            continue
        if trace is not None:
            trace.record(
                target, Action.ADDED, Stage.SANITIZE, Reason.FORCED, CALLER_ORIGIN, value=value
            )
        remove_spellings(out, (up,), options.fold)
        out[index(target, options.fold)] = (target, value)
        handed.append(up)
    return handed
