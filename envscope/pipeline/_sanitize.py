"""Stage 4 of a build: sanitise, a pure function like the others.

Merge the caller's explicit values (each key in its layer), resolve passthrough
names, unwrap force-prefixed extras (never to Tier 1), then give every entry its
one verdict (``decision.decide_all``: Tier 1 always, Tier 2 unless credentials
are inherited, every value that is or holds a secret this child may not
receive, each exemption named) and, for MCP children, drop exported shell
functions; no force-prefixed key survives. Stages 1 to 3 and the block check
are in ``envscope.pipeline.stages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.audit.trace import NULL_TRACE, Action, Reason, Stage
from envscope.errors import ConfigurationError, EnvValueError, PassthroughRefusedError
from envscope.pipeline._pins import Pins
from envscope.pipeline.decision import CALLER_ORIGIN, decide_all
from envscope.pipeline.stages import (
    FORCE_PREFIX,
    Entries,
    from_entries,
    index,
    is_forced,
    remove_spellings,
    spellings,
    without_refused,
)
from envscope.policy._declarations import Origin, OriginKind, norm
from envscope.policy._layers import Layer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from envscope.audit.trace import Trace
    from envscope.pipeline._memo import CleanValues
    from envscope.pipeline.decision import Known, Verdict
    from envscope.pipeline.secret_rule import SecretRule
    from envscope.pipeline.stages import Entry
    from envscope.policy.surfaces import BaseFilter

__all__ = ["SanitizeOptions", "sanitize"]


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class SanitizeOptions:
    """What stage 4 needs besides the entries.

    ``rule`` is the build's ``SecretRule``: every "is this name declared" and
    "is this value a secret" question of stage 4 is its. ``launch_env`` is the
    parent env before stage 1 (what the process holds, every spelling), for
    telling a caller's genuine ``extra`` from a repeated launch value.
    ``grant`` holds the exact spellings of ``extra`` keys this child receives
    as given. ``fold`` says whether names fold (Windows: the entries are
    indexed upper-cased and the output holds one spelling per name) or not
    (POSIX: indexed as spelled).
    """

    rule: SecretRule
    fold: bool  # required: a POSIX call site that forgets it would fold case
    extra: Mapping[str, str] = field(default_factory=dict)
    passthrough: Sequence[str] = ()
    passthrough_source: Entries | None = None
    base_filter: BaseFilter | None = None
    drop_shell_functions: bool = False
    pinned: Mapping[str, str] = field(default_factory=dict)
    surface_set: Mapping[str, str] = field(default_factory=dict)
    refuse: Callable[[str], bool] | None = None  # injection vectors extras/passthrough may not add
    introduced: frozenset[str] = frozenset()  # upper-cased: vectors the launch's sources put in
    launch_env: Entries = field(default_factory=dict)
    managed: Mapping[str, str] = field(default_factory=dict)  # the managed file's entries
    # On the mcp surface ``extra`` is the server's env block: the operator's grant.
    extra_is_block: bool = False
    # a declared name in plain extra this child may not get: dropped (traced), else an error
    drop_refused_extra: bool = False
    grant: frozenset[str] = frozenset()  # exact spellings of extra keys received as given
    # the build's view of its memo owner's values known clean of credential formats
    clean: CleanValues | None = None
    known: Known | None = None  # the verdicts of a reused rule (``decision.decide_all``)
    resolved: frozenset[str] = frozenset()  # block keys the host resolved: not the operator's
    own: frozenset[str] = frozenset()  # block keys the routed profile typed in its own config

    def __repr__(self) -> str:
        return "SanitizeOptions(...)"  # holds values: never shown


def sanitize(
    entries: Entries,
    options: SanitizeOptions,
    *,
    trace: Trace = NULL_TRACE,
    decided: list[tuple[Entry, Verdict | None]] | None = None,
) -> dict[str, str]:
    """Stage 4: allowlist, merge extras, passthrough, unwrap, then one verdict per entry.

    Order: (a) drop base keys the surface's filter rejects (the MCP
    allowlist, a surface policy's inherit/include/exclude); (b) drop
    force-prefixed keys of the base (never unwrapped); (c) merge the surface
    policy's ``set`` values, then the caller's ``extra`` (each key in its
    layer: a grant, an MCP block's literal or resolved entry, or plain
    ``extra``), then the child's home; a grant the merge did not keep as given
    is a ``PassthroughRefusedError``; (d) resolve passthrough names from
    ``passthrough_source`` (a declared name is a ``PassthroughRefusedError``);
    (e) unwrap the caller's force-prefixed extras, never to a Tier 1 name.
    Every layer from (c) on is laid through ``Pins.put``: none replaces a name
    the managed file or the child's home variable pinned, in any spelling;
    (f) ``decision.decide_all``: each entry's verdict (its tier, the secret its
    value is or holds, and the named exemption that keeps it), each recorded;
    (g) drop exported shell functions where asked; (h) last, drop any
    force-prefixed key whatever put it there: none reaches a child.
    ``decided``, when given, receives each entry as it reached (f), with its
    verdict: what an incremental build starts from (``_delta``).
    """
    _check_block(options)
    pins = Pins(options.fold)
    pins.pin(options.managed, Layer.MANAGED)  # stage 3 laid them down
    out = _filter_base(entries, options, trace)
    _merge(out, options, pins, trace)
    _check_grants(out, options, pins)
    _resolve_passthrough(out, options, pins, trace)
    _unwrap_forced(out, options, pins, trace)
    _decide(out, options, trace, decided)
    if options.drop_shell_functions:
        functions = [idx for idx, (_, value, _) in out.items() if value.startswith("()")]
        _drop(out, functions, Reason.SHELL_FUNCTION, trace)
    forced_keys = [idx for idx, (key, _, _) in out.items() if is_forced(key.upper())]
    _drop(out, forced_keys, Reason.FORCE_PREFIX_IN_BASE, trace)
    return from_entries(out)


def _check_block(options: SanitizeOptions) -> None:
    """An MCP server's env block never carries a force-prefixed key (a configuration error)."""
    if not options.extra_is_block:
        return
    for key in options.extra:
        if is_forced(key.upper()):
            raise ConfigurationError(
                f"{key!r}: an MCP server's env block may not carry the force prefix "
                f"{FORCE_PREFIX} (the block is the operator's grant already)"
            )


def _caller_layers(options: SanitizeOptions) -> dict[str, Layer]:
    """The layer of each key of ``extra`` that is not plain ``EXTRA``.

    A key ``grant`` names is a ``GRANT``; on the ``mcp`` surface a block entry is
    the operator's ``MCP_LITERAL``, ``MCP_REFERENCE`` when the host resolved
    it (``resolved``), or ``MCP_OWN`` when the routed profile typed it into its
    own config (``own``: compared with its own secrets only); a block key
    naming a secret source's credential is plain ``EXTRA`` (never granted, so
    its tier applies).
    """
    layers = dict.fromkeys(options.grant, Layer.GRANT)
    if options.extra_is_block:
        rule, resolved, own = options.rule, options.resolved, options.own
        for key in options.extra:
            if key in layers or rule.is_ungrantable(key):
                continue
            if key in resolved:
                layers[key] = Layer.MCP_REFERENCE
            else:
                layers[key] = Layer.MCP_OWN if key in own else Layer.MCP_LITERAL
    return layers


def _check_grants(out: Entries, options: SanitizeOptions, pins: Pins) -> None:
    """A grant that can never pass is an error.

    A grant of a secret source's credential (the rule's word), of a managed
    name or the pinned home variable in any spelling (each has one value), or of
    a key the merge did not keep as given (a force-prefixed key, an injection
    vector the host refuses, a spelling another one replaced), is a
    ``PassthroughRefusedError``.
    """
    fold, rule = options.fold, options.rule
    for key in sorted(options.grant):
        if rule.is_ungrantable(key):
            raise PassthroughRefusedError(
                key, "grant refused: a secret source's credential is never grantable"
            )
        pinned = pins.why(key)
        if pinned is not None:  # a managed key, the child's home variable
            raise PassthroughRefusedError(key, f"grant refused: {pinned} (in every spelling)")
        entry = out.get(index(key, fold))
        if entry is None or entry[0] != key or entry[2] is not Layer.GRANT:
            raise PassthroughRefusedError(
                key,
                "grant refused: the build does not hand this key over as given (a force-"
                "prefixed key, an injection vector, or another spelling of it won)",
            )


def _decide(
    out: Entries,
    options: SanitizeOptions,
    trace: Trace,
    decided: list[tuple[Entry, Verdict | None]] | None = None,
) -> None:
    """Stage 4 (f): one verdict per entry (``decision.decide_all``), each recorded.

    Decided after every filter, by name and by value, so no filter can hide
    the original; what keeps an entry the rule would withhold is named. A
    declared name the caller put in plain ``extra`` that this child may not
    get is an ``EnvValueError`` (``_refuse_extra``), unless the host opted
    into ``drop_refused_extra``.
    """
    items = list(out.items())
    entries = [entry for _, entry in items]
    verdicts = decide_all(options.rule, entries, options.clean, options.known)
    if decided is not None:
        decided.extend(zip((entry for _, entry in items), verdicts, strict=True))
    # the caller's own extra (an MCP block is the operator's config: its entries are traced)
    refuse_extra = not (options.drop_refused_extra or options.extra_is_block)
    for (idx, (key, value, layer)), verdict in zip(items, verdicts, strict=True):
        if verdict is None:
            continue
        action = Action.KEPT
        if verdict.withheld:
            if layer is Layer.EXTRA and verdict.reason in _NAME_TIERS and refuse_extra:
                _refuse_extra(key, verdict.reason)
            del out[idx]
            action = Action.STRIPPED
        reason, origin, note = verdict.reason, verdict.origin, verdict.note
        trace.record(key, action, Stage.SANITIZE, reason, origin, note, value=value)


_NAME_TIERS = frozenset({Reason.TIER1, Reason.TIER2})


def _refuse_extra(key: str, reason: Reason) -> None:
    """A declared name the caller put in ``extra`` that this child may not get: an error.

    Dropping it would hand the child an env without what the caller meant it
    to have, in silence. The error names the key and the fix, never the value.
    """
    if reason is Reason.TIER1:
        why = "a Tier 1 secret this child may not get"
        fix = f"hand it over with grant=[{key!r}]"
    else:
        why = "a Tier 2 credential this child does not inherit"
        fix = f"hand it over with grant=[{key!r}] (or inherit_credentials=True)"
    raise EnvValueError(
        key,
        f"extra: {why}; {fix}, or remove it from extra (Host(drop_refused_extra=True) drops "
        "such a name with a trace record instead)",
    )


def _drop(out: Entries, indexes: Iterable[str], reason: Reason, trace: Trace) -> None:
    """Remove these indexes from ``out``, each recorded."""
    for idx in indexes:
        key, value, _ = out.pop(idx)
        trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


_POLICY_REJECTIONS = frozenset({Reason.NOT_INHERITED, Reason.EXCLUDED})
_HOME_ORIGIN = Origin(OriginKind.SURFACE, "home")


def _filter_base(entries: Entries, options: SanitizeOptions, trace: Trace) -> Entries:
    """Stage 4 (a) and (b): the surface filter, and force-prefixed keys of the base dropped.

    An administrator-managed key wins over a surface policy's ``inherit`` and
    ``exclude`` (managed values win everywhere); the MCP allowlist still applies.
    An injection vector a launch secret source put into the process env was
    introduced, not inherited: it is dropped too, unless the entry is the managed
    file's own (its layer: the administrator's value replaced the source's).
    """
    base_filter, introduced = options.base_filter, options.introduced
    out: Entries = {}
    for idx, item in entries.items():
        up = item[0].upper()
        managed = item[2] is Layer.MANAGED  # a surface policy never drops one
        if introduced and up in introduced and not managed:
            reason = Reason.INJECTION_VECTOR
            trace.record(item[0], Action.STRIPPED, Stage.SANITIZE, reason, value=item[1])
            continue
        if base_filter is not None:
            rejected = base_filter.reject(up)
            if rejected in _POLICY_REJECTIONS and managed:
                reason = Reason.MANAGED_KEY
                trace.record(item[0], Action.KEPT, Stage.SANITIZE, reason, value=item[1])
                rejected = None
            if rejected is not None:
                origin = None if rejected is Reason.NOT_ALLOWLISTED else base_filter.origin
                key, value, _ = item
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, rejected, origin, value=value)
                continue
            if base_filter.included(up):
                origin = base_filter.origin
                reason = Reason.INCLUDED
                trace.record(item[0], Action.KEPT, Stage.SANITIZE, reason, origin, value=item[1])
        if is_forced(up):
            reason = Reason.FORCE_PREFIX_IN_BASE
            trace.record(item[0], Action.STRIPPED, Stage.SANITIZE, reason, value=item[1])
            continue
        out[idx] = item
    return out


def _merge(out: Entries, options: SanitizeOptions, pins: Pins, trace: Trace) -> None:
    """Stage 4 (c): a surface policy's ``set``, the caller's (unforced) ``extra``, ``pinned``.

    Each layer replaces every spelling of the names it sets, but a pinned one;
    the child's home variable is pinned from here on.
    """
    base_filter = options.base_filter
    set_origin = None if base_filter is None else base_filter.origin
    fold = options.fold

    def record_set(key: str, value: str, replaced: bool) -> None:
        action = Action.OVERRIDDEN if replaced else Action.ADDED
        trace.record(key, action, Stage.EXTRA, Reason.SURFACE_SET, set_origin, value=value)

    def record_extra(key: str, value: str, replaced: bool) -> None:
        action = Action.OVERRIDDEN if replaced else Action.ADDED
        trace.record(key, action, Stage.EXTRA, Reason.CALLER_EXTRA, CALLER_ORIGIN, value=value)

    def record_pinned(key: str, value: str, replaced: bool) -> None:
        del replaced
        trace.record(key, Action.ADDED, Stage.EXTRA, Reason.HOME_VAR, _HOME_ORIGIN, value=value)

    if base_filter is not None:  # a platform default the policy's inherit would lose
        defaults = {
            k: v for k, v in base_filter.defaults().items() if not spellings(out, k.upper(), fold)
        }
        for key, value in defaults.items():
            note = "the Windows default (an allowlist, or inherit none or core; as Codex)"
            reason = Reason.SURFACE_SET
            trace.record(key, Action.ADDED, Stage.EXTRA, reason, set_origin, note, value=value)
        pins.put(out, defaults, Layer.SURFACE_SET, trace)
    pins.put(out, options.surface_set, Layer.SURFACE_SET, trace, record_set)
    unforced = {k: v for k, v in _extra(options, trace).items() if not is_forced(k.upper())}
    layers = _caller_layers(options)
    # forced keys are unwrapped at (e)
    pins.put(out, unforced, Layer.EXTRA, trace, record_extra, layers=layers)
    pins.put(out, options.pinned, Layer.HOME_VAR, trace, record_pinned)
    pins.pin(options.pinned, Layer.HOME_VAR)


def _extra(options: SanitizeOptions, trace: Trace) -> Mapping[str, str]:
    """The caller's ``extra`` without the injection vectors it may not add (refusals recorded)."""
    if options.refuse is None:
        return options.extra
    return without_refused(options.extra, options.refuse, Stage.EXTRA, trace)


def _resolve_passthrough(out: Entries, options: SanitizeOptions, pins: Pins, trace: Trace) -> None:
    """Stage 4 (e): forward passthrough names from their source, never a declared one.

    A name that can never pass (one the rule declares, a force-prefixed name,
    an injection vector the host did not allow) is a ``PassthroughRefusedError``.
    A name in the caller's ``extra`` keeps the caller's value, unless that
    value merely repeats what the launch process holds for the name: under
    routing the source's (the routed scope's) value wins then, and without
    one the name is dropped. A pinned name (managed, the home variable) keeps
    its pinned value (``Pins``).
    """
    source = options.passthrough_source
    fold = options.fold

    def record_passthrough(key: str, value: str, replaced: bool) -> None:
        del replaced
        reason = Reason.PASSTHROUGH
        trace.record(key, Action.ADDED, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value)

    extra = {k.upper(): v for k, v in options.extra.items()}
    for name in options.passthrough:
        if not name:
            continue  # an empty name is ignored
        up = norm(name)
        decl = options.rule.declaration(up)
        if decl is not None:
            raise PassthroughRefusedError(
                name,
                f"passthrough refused: a {decl.tier.name.replace('TIER', 'Tier ')} "
                f"name ({decl.origin})",
            )
        if is_forced(up):
            raise PassthroughRefusedError(name, "passthrough refused: a force-prefixed name")
        if options.refuse is not None and options.refuse(up):
            raise PassthroughRefusedError(
                name, "passthrough refused: an injection vector the host does not allow"
            )
        if source is None:
            continue
        given = extra.get(up)
        # any spelling the process holds counts: a repeat of a launch value never wins
        launch = [v for k, v, _ in options.launch_env.values() if k.upper() == up]
        if given is not None and given not in launch:
            continue  # the caller's own value wins
        found = [source[i] for i in spellings(source, up, fold)]
        if found:
            # each keeps its source's layer (the routed scope's, routed)
            pins.put(
                out, {k: v for k, v, _ in found}, Layer.PASSTHROUGH, trace, record_passthrough,
                layers={k: layer for k, _, layer in found},
            )  # fmt: skip
        elif not pins.holds(up):
            for idx in spellings(out, up, fold):
                key, value, _ = out.pop(idx)
                reason = Reason.PASSTHROUGH_NOT_IN_SCOPE
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


def _unwrap_forced(out: Entries, options: SanitizeOptions, pins: Pins, trace: Trace) -> None:
    """Stage 4 (e): ``_ENVSCOPE_FORCE_X`` → ``X`` (a ``FORCED`` entry), never to a Tier 1 or
    force-prefixed name, nor (routed) with the launch process's own value of a declared name.
    """
    for key, value in _extra(options, NULL_TRACE).items():
        if not is_forced(key.upper()):
            continue
        target = key[len(FORCE_PREFIX) :]
        if not target:
            continue
        up = target.upper()
        if pins.holds(up):  # the pinned value wins: a forced one never replaces it
            pins.put(out, {target: value}, Layer.FORCED, trace)
            continue
        if is_forced(up) or options.rule.refuses_forcing(up, value):
            decl = options.rule.declaration(up)
            reason = Reason.FORCE_REFUSED
            origin = None if decl is None else decl.origin
            trace.record(target, Action.REFUSED, Stage.SANITIZE, reason, origin, value=value)
            remove_spellings(out, (up,), options.fold)
            continue
        trace.record(
            target, Action.ADDED, Stage.SANITIZE, Reason.FORCED, CALLER_ORIGIN, value=value
        )
        remove_spellings(out, (up,), options.fold)
        out[index(target, options.fold)] = (target, value, Layer.FORCED)
