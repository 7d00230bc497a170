"""Stage 4 of a build (DESIGN.md §3): sanitise, a pure function like the others.

Merge the caller's explicit values, strip Tier 1 always and Tier 2 unless
credentials are inherited (an MCP server's env block is the operator's
grant), resolve passthrough names, unwrap force-prefixed extras (never to
Tier 1), strip every value that is or holds a secret this child may not receive
(the build's ``SecretRule`` answers both "declared?" and "secret?") and, for MCP
children, exported shell functions; no force-prefixed key survives. Stages 1
to 3 and the block check are in ``envscope.pipeline.stages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.audit.trace import NULL_TRACE, Action, Reason, Stage
from envscope.errors import ConfigurationError, PassthroughRefusedError
from envscope.pipeline.secret_rule import Grade
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
from envscope.policy._declarations import Origin, OriginKind, Tier, norm

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

    from envscope.audit.trace import Trace
    from envscope.pipeline.secret_rule import SecretRule
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
    grant: frozenset[str] = frozenset()  # exact spellings of extra keys received as given
    resolved: frozenset[str] = frozenset()  # block keys the host resolved: not the operator's

    def __repr__(self) -> str:
        return "SanitizeOptions(...)"  # holds values: never shown


def sanitize(
    entries: Entries, options: SanitizeOptions, *, trace: Trace = NULL_TRACE
) -> dict[str, str]:
    """Stage 4: allowlist, merge extras, strip tiers, passthrough, unwrap, secret values.

    Order: (a) drop base keys the surface's filter rejects (the MCP
    allowlist, a surface policy's inherit/include/exclude); (b) drop
    force-prefixed keys of the base (never unwrapped); (c) merge the surface
    policy's ``set`` values, then the caller's ``extra``, then ``pinned``;
    (d) strip Tier 1 always and Tier 2 unless credentials are inherited
    (a granted key and an MCP server's block entry pass as given); (e)
    resolve passthrough names from ``passthrough_source`` (a declared name is
    a ``PassthroughRefusedError``); (f) unwrap the caller's force-prefixed
    extras, never to a Tier 1 name; (g) strip every value that is or holds a
    secret this child may not receive; (h) drop exported shell functions
    where asked; (i) last, drop any force-prefixed key whatever put it
    there: none reaches a child.
    """
    _check_block(options)
    out = _filter_base(entries, options, trace)
    _merge(out, options, trace)
    admitted = _admitted(out, options)
    _strip_tiers(out, options, admitted, trace)
    _resolve_passthrough(out, options, trace)
    forced = _unwrap_forced(out, options, trace)
    if options.rule.strip_values:
        _strip_secret_values(out, options, admitted, forced, trace)
    if options.drop_shell_functions:
        functions = [idx for idx, (_, value) in out.items() if value.startswith("()")]
        _drop(out, functions, Reason.SHELL_FUNCTION, trace)
    forced_keys = [idx for idx, (key, _) in out.items() if is_forced(key.upper())]
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


class _Admitted:
    """Indexes of the merged entries that hold a value the caller hands over as given.

    ``granted``: a key of ``extra`` named in ``grant`` (its exact spelling), holding
    ``extra``'s value: it passes whatever its tier and whatever secret it holds
    (a secret source's credential excepted). ``block``: an MCP server's env block
    entry as configured: it passes whatever its tier, and a value that holds a
    secret the host holds is still refused. ``literal``: the block entries the
    operator typed (not ``resolved`` by the host): only they may hold a value of
    a credential format.
    """

    __slots__ = ("block", "granted", "literal")

    def __init__(
        self, granted: frozenset[str], block: frozenset[str], literal: frozenset[str]
    ) -> None:
        self.granted = granted
        self.block = block
        self.literal = literal

    def by_name(self, idx: str) -> bool:
        return idx in self.granted or idx in self.block


def _admitted(out: Entries, options: SanitizeOptions) -> _Admitted:
    """What the caller hands over as given; a grant that can never pass is an error.

    A grant of a secret source's credential (the rule's word), or of a key the
    merge did not keep as given (a force-prefixed key, an injection vector the
    host refuses, a spelling another one replaced), is a ``PassthroughRefusedError``.
    """
    fold, extra, rule = options.fold, options.extra, options.rule
    for key in sorted(options.grant):
        if rule.is_ungrantable(key):
            raise PassthroughRefusedError(
                key, "grant refused: a secret source's credential is never grantable"
            )
        if out.get(index(key, fold)) != (key, extra[key]):
            raise PassthroughRefusedError(
                key,
                "grant refused: the build does not hand this key over as given (a force-"
                "prefixed key, an injection vector, or another spelling of it won)",
            )
    granted = frozenset(index(key, fold) for key in options.grant)
    block: frozenset[str] = frozenset()
    literal: frozenset[str] = frozenset()
    if options.extra_is_block:
        given = [
            key
            for key, value in extra.items()
            if out.get(index(key, fold)) == (key, value) and not rule.is_ungrantable(key)
        ]
        block = frozenset(index(key, fold) for key in given)
        literal = frozenset(index(key, fold) for key in given if key not in options.resolved)
    return _Admitted(granted, block, literal)


def _strip_secret_values(
    out: Entries,
    options: SanitizeOptions,
    admitted: _Admitted,
    forced: Collection[str],
    trace: Trace,
) -> None:
    """Stage 4 (g): remove every key whose value is, or holds, a secret this child may not get.

    Decided after every filter, by value, so no filter can hide the original
    (DESIGN.md §3). A granted key keeps its value (unless it is a secret
    source's credential: a ``PassthroughRefusedError``); a forced hand-over keeps a
    Tier 2 credential; the pinned home variable is the child's own.
    """
    rule = options.rule
    if not rule:
        return
    pinned = {k.upper() for k in options.pinned}
    entries = list(out.items())
    matches = rule.find_in([item for _, item in entries])
    for (idx, (key, value)), match in zip(entries, matches, strict=True):
        if match is None or key.upper() in pinned:
            continue
        if match.shape and (idx in admitted.literal or idx in admitted.granted):
            continue  # the operator's literal (never a value the host resolved), or a grant
        if idx in admitted.granted:
            if match.grade is Grade.SOURCE:
                raise PassthroughRefusedError(
                    key,
                    f"grant refused: the value holds {rule.public(match)}, a secret source's "
                    "credential (never grantable, under any key)",
                )
            reason = Reason.GRANTED
            trace.record(key, Action.KEPT, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value)
            continue
        if key.upper() in forced and rule.forced_keeps(match):
            continue  # the caller's forced hand-over (the rule says which secrets it may hand)
        del out[idx]
        if match.shape:
            note = f"holds a {match.name} credential"
            trace.record(
                key, Action.STRIPPED, Stage.SANITIZE, Reason.VALUE_SHAPE, match.origin, note,
                value=value,
            )  # fmt: skip
        else:  # the trace is the host's: it names the secret, never its value
            name = match.name
            note = f"{'same value as' if match.whole else 'holds the value of'} {name}"
            if idx in admitted.block:
                verb = "is" if match.whole else "holds"
                note = f"the value {verb} the host's {name}; grant it to pass"
            trace.record(
                key,
                Action.STRIPPED,
                Stage.SANITIZE,
                Reason.ALIAS_OF,
                match.origin,
                note,
                value=value,
            )


def _drop(out: Entries, indexes: Iterable[str], reason: Reason, trace: Trace) -> None:
    """Remove these indexes from ``out``, each recorded."""
    for idx in indexes:
        key, value = out.pop(idx)
        trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


_POLICY_REJECTIONS = frozenset({Reason.NOT_INHERITED, Reason.EXCLUDED})


def _filter_base(entries: Entries, options: SanitizeOptions, trace: Trace) -> Entries:
    """Stage 4 (a) and (b): the surface filter, and force-prefixed keys of the base dropped.

    An administrator-managed key wins over a surface policy's ``inherit`` and
    ``exclude`` (managed values win everywhere); the MCP allowlist still applies.
    An injection vector a launch secret source put into the process env was
    introduced, not inherited: it is dropped too, unless the entry is the managed
    file's own (its key and value: the administrator's value replaced the source's).
    """
    base_filter, introduced = options.base_filter, options.introduced
    managed_names = {k.upper() for k in options.managed}  # a surface policy never drops one
    out: Entries = {}
    for idx, item in entries.items():
        up = item[0].upper()
        if introduced and up in introduced and not _managed(options, item, up):
            reason = Reason.INJECTION_VECTOR
            trace.record(item[0], Action.STRIPPED, Stage.SANITIZE, reason, value=item[1])
            continue
        if base_filter is not None:
            rejected = base_filter.reject(up)
            if rejected in _POLICY_REJECTIONS and up in managed_names:
                reason = Reason.MANAGED_KEY
                trace.record(item[0], Action.KEPT, Stage.SANITIZE, reason, value=item[1])
                rejected = None
            if rejected is not None:
                origin = None if rejected is Reason.NOT_ALLOWLISTED else base_filter.origin
                key, value = item
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


def _merge(out: Entries, options: SanitizeOptions, trace: Trace) -> None:
    """Stage 4 (c): a surface policy's ``set``, the caller's (unforced) ``extra``, ``pinned``.

    Each layer replaces every spelling of the names it sets.
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
        origin = Origin(OriginKind.SURFACE, "home")
        trace.record(key, Action.ADDED, Stage.EXTRA, Reason.HOME_VAR, origin, value=value)

    if base_filter is not None:  # a platform default the policy's inherit would lose
        defaults = {
            k: v for k, v in base_filter.defaults().items() if not spellings(out, k.upper(), fold)
        }
        for key, value in defaults.items():
            note = "the Windows default (inherit none or core; Codex does the same)"
            reason = Reason.SURFACE_SET
            trace.record(key, Action.ADDED, Stage.EXTRA, reason, set_origin, note, value=value)
        put_layer(out, defaults, fold)
    put_layer(out, options.surface_set, fold, record_set)
    unforced = {k: v for k, v in _extra(options, trace).items() if not is_forced(k.upper())}
    put_layer(out, unforced, fold, record_extra)  # forced keys are unwrapped at (f)
    put_layer(out, options.pinned, fold, record_pinned)


def _extra(options: SanitizeOptions, trace: Trace) -> Mapping[str, str]:
    """The caller's ``extra`` without the injection vectors it may not add (refusals recorded)."""
    if options.refuse is None:
        return options.extra
    return without_refused(options.extra, options.refuse, Stage.EXTRA, trace)


def _strip_tiers(out: Entries, options: SanitizeOptions, admitted: _Admitted, trace: Trace) -> None:
    """Stage 4 (d): Tier 1 always, Tier 2 unless credentials are inherited (the rule's word)."""
    rule = options.rule
    for idx, (key, value) in list(out.items()):
        decl = rule.declaration(key, value)
        if decl is None:
            continue
        if admitted.by_name(idx):
            reason = Reason.SERVER_GRANT if idx in admitted.block else Reason.GRANTED
            trace.record(key, Action.KEPT, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value)
        elif not rule.withholds(decl, value):
            reason = Reason.TIER2_INHERITED
            trace.record(key, Action.KEPT, Stage.SANITIZE, reason, decl.origin, value=value)
        else:
            del out[idx]
            reason = Reason.TIER1 if decl.tier is Tier.TIER1 else Reason.TIER2
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, value=value)


def _resolve_passthrough(out: Entries, options: SanitizeOptions, trace: Trace) -> None:
    """Stage 4 (e): forward passthrough names from their source, never a declared one.

    A name that can never pass (one the rule declares, a force-prefixed name,
    an injection vector the host did not allow) is a ``PassthroughRefusedError``.
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
        launch = [v for k, v in options.launch_env.values() if k.upper() == up]
        if given is not None and given not in launch:
            continue  # the caller's own value wins
        found = [source[i] for i in spellings(source, up, fold)]
        if found:
            remove_spellings(out, (up,), fold)
            for key, value in found:
                reason = Reason.PASSTHROUGH
                trace.record(key, Action.ADDED, Stage.SANITIZE, reason, CALLER_ORIGIN, value=value)
                out[index(key, fold)] = (key, value)
        else:
            for idx in spellings(out, up, fold):
                key, value = out.pop(idx)
                reason = Reason.PASSTHROUGH_NOT_IN_SCOPE
                trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)


def _unwrap_forced(out: Entries, options: SanitizeOptions, trace: Trace) -> list[str]:
    """Stage 4 (f): ``_ENVSCOPE_FORCE_X`` → ``X``, never to a Tier 1 or force-prefixed name,
    nor (routed) with the launch process's own value of a declared name.

    Returns the upper-cased names it handed over.
    """
    handed: list[str] = []
    for key, value in _extra(options, NULL_TRACE).items():
        if not is_forced(key.upper()):
            continue
        target = key[len(FORCE_PREFIX) :]
        if not target:
            continue
        up = target.upper()
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
        out[index(target, options.fold)] = (target, value)
        handed.append(up)
    return handed


def _managed(options: SanitizeOptions, item: tuple[str, str], up: str) -> bool:
    """True when this entry is the managed file's: its key (name, where names fold) and value."""
    key, value = item
    if not options.fold:
        return options.managed.get(key) == value
    return any(v == value and k.upper() == up for k, v in options.managed.items())
