"""One build: ``build`` asks the memo, runs stages 1-4 on a miss, remembers the child.

The host checks the caller's arguments and reads what only it may read (the
process env, the launch residue, the managed file, the policies); everything
a build needs then travels in one ``BuildRequest`` (``_request``: its
``HostOptions`` are the host's configuration). ``run_build`` is pure: it
reads no file and no ``os.environ``. Read top to bottom: ``build`` (the memo;
on an untraced miss ``_untraced``: an incremental build, ``_delta``, else) →
``run_build`` → stages 1-3 (``_routed_stages``) → stage 4 (``sanitize``, asking
the build's ``secret_rule``) → the block check → the trace's findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from envscope.audit.trace import (
    NULL_TRACE,
    Action,
    BuildWarning,
    Reason,
    Stage,
    Trace,
    keep_value,
)
from envscope.pipeline import stages
from envscope.pipeline._delta import (
    FIRST_BUILD,
    Evidence,
    as_template,
    checking,
    compare,
    eligible,
    rebuild,
    reusable_rule,
    template_of,
)
from envscope.pipeline._request import (
    BuildRequest,
    HostOptions,
    check_parent_envs,
    memo_key,
)
from envscope.pipeline._residue_rule import ResidueRule
from envscope.pipeline._sanitize import SanitizeOptions, sanitize
from envscope.pipeline.decision import Known, RuleVerdicts
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy._declarations import OriginKind, norm
from envscope.policy._layers import Layer
from envscope.policy.surfaces import BaseFilter, Surface, mcp_allowlist

if TYPE_CHECKING:
    from envscope.pipeline._binding import Binding
    from envscope.pipeline._memo import BuildMemo, FormatMemo
    from envscope.policy._declarations import Origin

__all__ = [
    "BuildRequest",
    "HostOptions",
    "build",
    "check_parent_envs",
    "context_rule",
    "own_values",
    "parent_env",
    "run_build",
    "secret_rule",
    "unscrubbed",
]


def build(
    request: BuildRequest, memo: BuildMemo | None, trace: Trace = NULL_TRACE
) -> dict[str, str]:
    """One child env: the memo asked, on a miss the stages run, the child remembered.

    ``memo`` is the owner's (a routed binding's home share, or the host's for
    unbound builds; ``None``: never remembered). An untraced miss is an
    incremental build where only plain values changed (``_untraced``); a full
    build searches only the values its owner's last build did not find clean
    of credential formats. A traced hit replays the decisions kept with the
    child into ``trace``; a traced miss always runs in full, records values
    where fingerprints go, keeps the recording with the child and replays it.
    """
    if memo is None:
        return run_build(request, trace)
    key = memo_key(request, traced=trace.enabled)
    child, recording, left, differs = memo.lookup(*key)
    if child is not None:
        if recording is not None:  # a traced build's own slot: trace is enabled
            trace.replay(recording)
        return child
    if not trace.enabled:
        child, left = _untraced(request, memo, left, differs)
        memo.put(*key, child, left=left)
        return child
    capture = Trace(fingerprint=keep_value)
    child = run_build(request, capture, formats=memo.formats)
    recording = capture.recording()
    trace.replay(recording)
    # Stored under the identities read *before* the build: should another thread
    # replace the managed values meanwhile, the next build misses, never goes stale.
    memo.put(*key, child, recording)
    return child


def _untraced(
    request: BuildRequest, memo: BuildMemo, left: object, differs: tuple[bool, ...]
) -> tuple[dict[str, str], object]:
    """An untraced miss: from the slot's last build where only plain values changed, else full.

    ``left`` and ``differs`` are the memo's answer (``BuildMemo.lookup``): what
    the slot's last build left, when it read these very objects, and which of
    its equal inputs differ. A slot's first full build leaves a mark
    (``_delta.FIRST_BUILD``), its later ones a template (``_delta``): a template
    holds the build's rule, so a home built once (a host touching thousands of
    homes) keeps none. Returns the child and what this build leaves. With
    ``_delta.checking()`` every incremental child is compared with the full build's.
    """
    if not eligible(request):
        return run_build(request, formats=memo.formats), None
    template = as_template(left)
    if template is not None:
        done = rebuild(template, request, differs)
        if done is not None:
            child, after = done
            if checking():
                compare(child, lambda: run_build(request))
            return child, after
    evidence = Evidence() if left is not None else None
    rule = None if template is None else reusable_rule(template, request, differs)
    known = None if rule is None or template is None else template.verdicts
    child = run_build(request, formats=memo.formats, evidence=evidence, rule=rule, known=known)
    if rule is not None and checking():
        compare(child, lambda: run_build(request))  # the same as with a rule of its own
    made = FIRST_BUILD if evidence is None else template_of(request, evidence, known)
    return child, made


def own_values(binding: Binding | None) -> dict[str, frozenset[str]]:
    """The routed profile's own values: upper-cased name → the values of its spellings.

    Its scope minus the managed keys; every spelling counts (POSIX keeps case twins).
    """
    if binding is None:
        return {}
    origins = binding.scope_origins
    managed = OriginKind.MANAGED
    own: dict[str, frozenset[str]] = {}
    for key, value in binding.scope.items():
        origin = origins.get(up := norm(key))
        if origin is None or origin.kind is not managed:
            own[up] = own.get(up, frozenset()) | {value}
    return own


def _routed_stages(request: BuildRequest, entries: stages.Entries, trace: Trace) -> stages.Entries:
    """Stages 1-3: strip the launch residue, overlay the routed scope, apply the managed keys."""
    options, binding = request.options, request.binding
    rule = _residue_rule(request)
    if rule is not None:
        entries = stages.strip_residue(entries, rule=rule, trace=trace)
    origins: Mapping[str, Origin] | None = None if binding is None else binding.scope_origins
    entries = stages.overlay_scope(
        entries,
        {} if binding is None else binding.scope,
        origins=origins,
        home=request.target,
        trace=trace,
        refuse=request.refuses,
        fold=options.fold,
    )
    return _managed_stage(request, entries, trace)


def _managed_stage(request: BuildRequest, entries: stages.Entries, trace: Trace) -> stages.Entries:
    """Stage 3: the managed file's values over every spelling of their names (layer MANAGED)."""
    options = request.options
    return stages.apply_managed(
        entries, request.managed, path=options.managed_path, trace=trace, fold=options.fold
    )


def _residue_rule(request: BuildRequest) -> ResidueRule | None:
    """Stage 1's rule (``None`` when stage 1 does not run): the binding's, memoised per home."""
    if not request.strip_launch_profile:
        return None
    policy, launch_policy = request.policy, request.launch_policy
    policies = (
        (policy,) if launch_policy is None or launch_policy is policy else (policy, launch_policy)
    )
    binding = request.binding
    if binding is not None:
        return binding.residue_rule(request.keep, policies)
    residue, origins = request.launch_residue or (frozenset(), {})
    return ResidueRule(residue, request.keep, policies, origins)  # unbound multiplex


def _base_filter(request: BuildRequest) -> BaseFilter | None:
    """The surface's filter of the base env (its allowlist and the host's surface policy)."""
    options = request.options
    surface_policy = options.surface_policies.get(request.surface)
    allowlist = None
    if request.supplied is not None:
        trust = request.catalog.network_trust if options.mcp_network_trust else frozenset()
        allowlist = mcp_allowlist(
            windows=options.fold,
            supplied=frozenset(map(norm, request.supplied)),
            network_trust=trust,
        )
    if allowlist is None and surface_policy is None:
        return None
    return BaseFilter(allowlist, surface_policy, options.fold)


def secret_rule(request: BuildRequest) -> SecretRule:
    """The build's one secret rule: its policies, and every value the host knows of.

    The caller's ``extra`` counts as the host's values except on the ``mcp``
    surface, where it is the server's block: the operator's literals. The rule
    searches the current format table; which values a build need not search
    again is the build's (``_sanitize_options``), not the rule's.
    """
    from envscope.policy.formats import format_table  # with a host's first build

    table = format_table() if request.options.strip_value_aliases else None

    surface, binding, routed = request.surface, request.binding, request.routed
    surface_policy = request.options.surface_policies.get(surface)
    caller: list[Mapping[str, str]] = [] if surface_policy is None else [surface_policy.set_env]
    if surface is not Surface.MCP:
        caller.append(request.extras)
    return SecretRule(
        request.policy,
        launch_policy=request.launch_policy,
        routed=routed,
        inherit_credentials=request.inherit_credentials or surface.inherits_credentials,
        launch_values=(request.snapshot, request.process_env, request.launch_values),
        managed=request.managed,
        caller_values=caller,
        scope=None if binding is None else binding.scope,
        own=own_values(binding) if routed else None,
        ungrantable=request.ungrantable,
        formats=table,
        known_safe=request.options.known_safe,
        strip_values=request.options.strip_value_aliases,
        home=(request.options.home_env_var, request.target),
        name_context=request.options.name_context,
    )


def context_rule(request: BuildRequest, memo: BuildMemo | None) -> RuleVerdicts:
    """The rule of this context with its verdicts, kept by ``memo`` while its inputs stay.

    The rule a build of ``request`` applies (``secret_rule``), made once per
    shape and inputs (the memo key's, and the format table) and then found by
    one key comparison: the runtime guard asks it on every spawn.
    """
    from envscope.policy.formats import format_table  # with a host's first build

    if memo is None:
        return RuleVerdicts(secret_rule(request))
    shape, same, equal = memo_key(request, traced=False)
    same = (*same, format_table() if request.options.strip_value_aliases else None)
    kept = memo.rule(shape, same, equal)
    if isinstance(kept, RuleVerdicts):
        return kept
    made = RuleVerdicts(secret_rule(request))
    memo.keep_rule(shape, same, equal, made)
    return made


def _sanitize_options(
    request: BuildRequest,
    parent: stages.Entries,
    entries: stages.Entries,
    formats: FormatMemo | None,
    rule: SecretRule | None = None,
    known: Known | None = None,
) -> SanitizeOptions:
    """What stage 4 needs besides the entries (``formats``: the memo owner's, or None).

    ``rule``: the slot's last rule where this build reads nothing it did not
    (``_delta.reusable_rule``), with ``known``, its verdicts; else this build's own is made.
    """
    options, surface, passthrough = request.options, request.surface, request.passthrough
    fold, routed = options.fold, request.routed
    surface_policy = options.surface_policies.get(surface)
    scope: Mapping[str, str] = {} if request.binding is None else request.binding.scope
    rule = secret_rule(request) if rule is None else rule
    table = rule.formats  # the values the owner found clean under it are not searched again
    return SanitizeOptions(
        rule=rule,
        clean=None if formats is None or table is None else formats.under(table),
        known=known,
        extra=request.extras,
        passthrough=tuple(passthrough),
        passthrough_source=(
            None
            if not passthrough
            else stages.to_entries(scope, fold=fold, layer=Layer.SCOPE)
            if routed
            else entries
        ),
        base_filter=_base_filter(request),
        drop_shell_functions=surface is Surface.MCP,
        # A routed child is told its own home on every surface; a worker always.
        pinned=(
            {options.home_env_var: request.target} if routed or surface is Surface.WORKER else {}
        ),
        surface_set={} if surface_policy is None else surface_policy.set_env,
        refuse=request.refuses,
        introduced=frozenset(n.upper() for n in request.applied if request.refuses(n.upper())),
        # every spelling, even where names fold (passthrough compares against each)
        launch_env=(
            parent
            if not fold or not passthrough
            else stages.to_entries(request.snapshot, fold=False)
        ),
        managed=request.managed,
        extra_is_block=surface is Surface.MCP,
        drop_refused_extra=options.drop_refused_extra,
        grant=request.granted,
        resolved=request.resolved,
        own=request.own,
        fold=fold,
    )


def run_build(
    request: BuildRequest,
    trace: Trace = NULL_TRACE,
    *,
    formats: FormatMemo | None = None,
    evidence: Evidence | None = None,
    rule: SecretRule | None = None,
    known: Known | None = None,
) -> dict[str, str]:
    """The parent envs checked, the four stages, the block check (and the findings if traced).

    ``formats`` is the memo owner's record of values clean of credential formats
    (None: every value is searched). ``evidence``, when given, receives what an
    incremental build starts from: each decided entry, the rule, stage 4's child.
    ``rule``: a rule this build may reuse (``_delta.reusable_rule``; None: its own),
    and ``known``, the verdicts it gave before (``decision.decide_all``).
    """
    check_parent_envs(request.snapshot, request.process)
    options = request.options
    parent = entries = stages.to_entries(request.snapshot, trace, fold=options.fold)
    if request.routed:
        entries = _routed_stages(request, entries, trace)
    elif request.managed:  # the launch applied them: stage 3 gives them their layer
        entries = _managed_stage(request, entries, trace)
    stage4 = _sanitize_options(request, parent, entries, formats, rule, known)
    decided = None if evidence is None else evidence.decided
    sanitized = sanitize(entries, stage4, trace=trace, decided=decided)
    if evidence is not None:
        evidence.rule, evidence.sanitized = stage4.rule, dict(sanitized)
    child = stages.validate_block(sanitized, max_total_bytes=options.max_env_bytes, trace=trace)
    if trace.enabled:
        _finish_trace(trace, child, request)
    return child


def _finish_trace(trace: Trace, child: Mapping[str, str], request: BuildRequest) -> None:
    """Close a traced build: ``kept`` for every untouched key, the warnings and the context."""
    from envscope.audit._findings import (  # loads re: only a traced build
        find_credential_names,
        find_credential_values,
    )

    global_names, policy, ctx = request.global_names, request.policy, trace.context
    for key in trace.record_untouched(child, global_names):
        # A global name (TMPDIR is on glibc's list) is an ordinary process-wide setting.
        if request.catalog.is_injection_vector(key) and key.upper() not in global_names:
            message = (
                f"{key}: the launch env carries a name that changes how a child's "
                "loader, shell or interpreter starts (kept: it was not introduced)"
            )
            ctx.warnings.append(BuildWarning(key, "injection-vector", message))
    for finding in find_credential_values(child, policy=policy):
        if finding.key.upper() in request.options.known_safe:
            continue  # the operator said once that children may have it
        message = (
            f"{finding.key}: the value looks like a {finding.kind} but no rule declares "
            "the name (kept; declare it in the catalog or a manifest if it is a secret)"
        )
        ctx.warnings.append(BuildWarning(finding.key, f"value-shape:{finding.kind}", message))
    known_safe = request.options.known_safe
    launch = request.launch_policy if request.routed else None
    for name_finding in find_credential_names(child, policy=policy, known_safe=known_safe):
        key, kind = name_finding.key, name_finding.kind
        if launch is not None and launch.tier_of(key) is not None:
            name_finding = replace(name_finding, launch_declared=True)
        ctx.warnings.append(BuildWarning(key, kind, str(name_finding)))
    for problem in policy.warnings:  # a manifest key near a known one: the build read on
        ctx.warnings.append(BuildWarning(problem.field or "", "manifest-unknown-key", str(problem)))
    ctx.home, ctx.surface, ctx.routed = request.target, request.surface.value, request.routed
    ctx.fold = request.options.fold
    ctx.complete, ctx.problems = policy.complete, policy.problems
    ctx.child_keys = tuple(child)


def parent_env(request: BuildRequest) -> dict[str, str]:
    """The env a child's build starts from: the base after stages 1-3 (no trace, no stage 4).

    Under routing: the launch residue stripped, the routed scope and the
    managed keys applied; else the base with the managed keys applied (as a
    build lays them). What ``${NAME}`` in an MCP server's env block resolves
    against (never a launch profile's value, never a managed key's other value).
    """
    entries = stages.to_entries(request.snapshot, fold=request.options.fold)
    if request.routed:
        entries = _routed_stages(request, entries, NULL_TRACE)
    elif request.managed:
        entries = _managed_stage(request, entries, NULL_TRACE)
    return stages.from_entries(entries)


def unscrubbed(given: Mapping[str, str], trace: Trace = NULL_TRACE) -> dict[str, str]:
    """``scrub=False``: the base and the extras as given, without a force-prefixed key.

    The one thing an unscrubbed build still does: no force-prefixed key (any
    case) reaches a child, and none is unwrapped. Each key is traced.
    """
    child = {k: v for k, v in given.items() if not stages.is_forced(k.upper())}
    for key, value in given.items():
        if key in child:
            trace.record(key, Action.KEPT, Stage.SANITIZE, Reason.UNSCRUBBED, value=value)
        else:
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, Reason.FORCE_PREFIX_IN_BASE)
    return child
