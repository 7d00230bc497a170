"""Incremental builds: a child made from its owner's last one when only plain values changed.

And the rule a full build reuses from that last build when it reads the same pairs.

A kanban worker passes a new ``extra={"TASK_ID": …}`` on every spawn; a host's
environ gains a new value between two spawns. The build memo cannot answer (an
input changed), yet stages 1-4 would decide every other entry exactly as
before. A ``Template`` is what an untraced full build leaves its memo owner
(from the slot's second full build on: the first leaves ``FIRST_BUILD``, so a
home built once keeps no rule):
the inputs it read, its ``SecretRule``, the child before the block check, and
its *plain* keys: entries of the base (``Layer.BASE``) or of the caller's
``extra`` (``Layer.EXTRA``) that reached the decision with the value given and
about which ``decision.decide`` had nothing to say; and its *inert* base keys,
which no decision read (stage 1 dropped them, the scope, the managed file or
``extra`` replaced them, the surface filtered them).

Why a template answers. Every step before the decision treats an entry by its
name alone (stage 1's verdict, the scope and managed overlays, the surface
filter, the merge of the caller's layers, the force prefix), and the rule
reads the value of a pair only where ``SecretRule.reads_pair`` says so (a
declared name, or a name-context credential). So when a build differs from
the template in the values of plain or inert keys only, each of them a pair
the rule does not read before and after (same keys, same order, every other
input the same object or equal), its child is the template's with each
changed plain entry decided again on the template's rule, then the parent
envs and the block checked as a full build checks them. A changed entry the
rule has anything to say about, and anything else (a new key, another
policy, another format table, a traced build, a surface where values steer
the path: ``mcp``; passthrough; names that fold) runs the full build, which
leaves a new template. The block is checked by resizing the template's
(``stages.entry_bytes`` per changed entry), entry by entry only past a cap.

A rule that outlives a build. A full build of the slot still reuses the
template's rule when the rule would be made from the same inputs: the same
objects, equal maps, and the same pairs read (``read_pairs``: each env's pairs
under a declared name or a name-context credential, in order). A key added or
lost, or a verdict to record, then costs the stages, not the rule
(``reusable_rule``), and decides only the entries the rule never decided: its
verdicts travel with it (``Template.verdicts``, ``decision.decide_all``'s ``known``).

The child's key order is the full build's: a patched entry keeps its place.
``check_incremental(True)`` (``envscope.testing.incremental_builds_checked``)
runs the full build beside every incremental one and raises
``IncrementalMismatch`` (naming keys, never values) when they differ;
``tests/property/test_incremental_differential.py`` pins the two paths equal
over random sequences of changes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from itertools import compress
from operator import eq, ne
from typing import TYPE_CHECKING

from envscope.errors import EnvscopeError
from envscope.pipeline._request import (
    EXTRAS_AT,
    PROCESS_AT,
    SNAPSHOT_AT,
    check_parent_envs,
    undiffed_differ,
)
from envscope.pipeline.decision import decide, known_of
from envscope.pipeline.stages import block_bytes, entry_bytes, validate_block
from envscope.policy._layers import Layer
from envscope.policy.surfaces import Surface

if TYPE_CHECKING:
    from collections.abc import Callable

    from envscope.pipeline._request import BuildRequest
    from envscope.pipeline.decision import Known, Verdict
    from envscope.pipeline.secret_rule import SecretRule
    from envscope.pipeline.stages import Entry

__all__ = [
    "FIRST_BUILD",
    "Evidence",
    "IncrementalMismatch",
    "Template",
    "as_template",
    "check_incremental",
    "checking",
    "compare",
    "eligible",
    "read_pairs",
    "rebuild",
    "reusable_rule",
    "template_of",
]

_CHECKING = [False]  # reset seam: check_incremental(False)
_FORMATS = "envscope.policy.formats"  # loaded with a host's first full build

FIRST_BUILD = "first build"
"""What a slot's first full build leaves in its memo: the next full build leaves a template."""


def check_incremental(on: bool) -> bool:
    """Run the full build beside every incremental one (``on``); returns the previous setting."""
    previous = _CHECKING[0]
    _CHECKING[0] = bool(on)
    return previous


def checking() -> bool:
    """True when every incremental build is compared with the full build."""
    return _CHECKING[0]


class IncrementalMismatch(AssertionError):
    """An incremental build differed from the full build (a bug: the message names keys only)."""


def compare(incremental: dict[str, str], full: Callable[[], dict[str, str]]) -> None:
    """Raise ``IncrementalMismatch`` unless the full build (``full()``) makes the same child.

    Equal as mappings and in key order; a full build that raises where the
    incremental one made a child is a mismatch too (its error is named, never a value).
    """
    try:
        made = full()
    except EnvscopeError as exc:
        raise IncrementalMismatch(
            f"the full build raises {type(exc).__name__} where an incremental build made a child"
        ) from None
    _compare(incremental, made)


def _compare(incremental: dict[str, str], full: dict[str, str]) -> None:
    if list(incremental.items()) == list(full.items()):
        return
    differ = sorted(
        {k for k in (*incremental, *full) if incremental.get(k) != full.get(k)}
        or {"(the key order)"}
    )
    raise IncrementalMismatch(f"an incremental build differs from the full build at {differ}")


@dataclass(slots=True, repr=False, eq=False)
class Evidence:
    """What a full build shows a template: each decided entry and verdict, the rule, the child."""

    decided: list[tuple[Entry, Verdict | None]] = field(default_factory=list)
    rule: SecretRule | None = None
    sanitized: dict[str, str] | None = None  # stage 4's child, before the block check


@dataclass(slots=True, repr=False, eq=False)
class Template:
    """One owner's last full (or incremental) build of a shape: what it read and decided.

    Made on every incremental build, then only read; not frozen, as a frozen
    record's ``__init__`` sets each of its fields through ``object.__setattr__``
    (1.5 µs against 0.2 µs back to back). ``tests/pipeline/test_incremental.py``
    pins that no build rebinds a field.
    """

    snapshot: dict[str, str]
    process: dict[str, str] | None
    extras: dict[str, str]
    rule: SecretRule
    sanitized: dict[str, str]  # the child before the block check
    size: int | None  # its block's bytes when every entry passes as is (``stages.block_bytes``)
    plain_base: frozenset[str]  # base keys (as spelled) decided plain
    plain_extra: frozenset[str]  # extra keys decided plain
    inert_base: frozenset[str]  # base keys no decision read
    read: ReadPairs  # the pairs of the envs its rule read, in order (``read_pairs``)
    verdicts: Known  # its rule's verdicts, for a full build that reuses the rule

    def __repr__(self) -> str:
        return f"Template({len(self.sanitized)} keys)"  # holds values: a count only


def as_template(kept: object) -> Template | None:
    """What a memo holds for a slot, as a template (None: nothing, or ``FIRST_BUILD``).

    The memo holds it untyped: ``_memo`` imports no module that imports it.
    """
    return kept if isinstance(kept, Template) else None


def eligible(request: BuildRequest) -> bool:
    """True when a build's path up to the decision reads names only (see the module)."""
    return not (
        request.options.fold
        or request.passthrough
        or request.surface is Surface.MCP
        or request.granted
        or not request.options.strip_value_aliases
    )


def template_of(
    request: BuildRequest, evidence: Evidence, known: Known | None = None
) -> Template | None:
    """The template a full untraced build of an eligible shape leaves (None: no evidence).

    ``known``: the verdicts of the rule the build reused (it holds this build's
    too); else the build's own verdicts start its rule's table.
    """
    rule, sanitized = evidence.rule, evidence.sanitized
    if rule is None or sanitized is None:  # the build did not reach stage 4's end
        return None
    snapshot, extras = request.snapshot, request.extras
    introduced = {name.upper() for name in request.applied}  # the launch's sources' names
    plain_base, plain_extra, reached = [], [], set()
    for (name, value, layer), verdict in evidence.decided:
        if layer is Layer.BASE:
            reached.add(name)
        if verdict is not None or sanitized.get(name) != value:
            continue
        if layer is Layer.BASE and snapshot.get(name) == value and name.upper() not in introduced:
            plain_base.append(name)
        elif layer is Layer.EXTRA and extras.get(name) == value:
            plain_extra.append(name)
    inert = [n for n in snapshot if n not in reached and n.upper() not in introduced]
    return Template(
        snapshot,
        request.process,
        extras,
        rule,
        sanitized,
        block_bytes(sanitized),
        frozenset(plain_base),
        frozenset(plain_extra),
        frozenset(inert),
        read_pairs(rule, request),
        known_of(evidence.decided) if known is None else known,
    )


ReadPairs = tuple[tuple[tuple[str, str], ...], ...]
"""The pairs a rule reads of a build's parent env, process env and ``extra``, each in order."""


def read_pairs(rule: SecretRule, request: BuildRequest) -> ReadPairs:
    """Each env's pairs the rule reads (``SecretRule.reads_pair``), in order.

    A rule is a function of these (and of inputs a template holds by identity
    or equality): two builds of a slot with equal read pairs make the same rule.
    """
    envs = (request.snapshot, request.process or {}, request.extras)
    return tuple(tuple(p for p in env.items() if rule.reads_pair(*p)) for env in envs)


def reusable_rule(
    template: Template, request: BuildRequest, differs: tuple[bool, ...]
) -> SecretRule | None:
    """The template's rule for a full build of its slot that reads the same pairs (else None).

    A full build the template cannot make (a key added or lost, a plain value
    that copies a secret or holds a credential format) still makes the same
    rule when every input of the rule is the same object or equal and the
    pairs it reads are the same, in the same order: it is not made again.
    """
    if not _same_inputs(template, differs):
        return None
    if (template.process is None) != (request.process is None):
        return None
    check_parent_envs(request.snapshot, request.process)  # the full build's first check
    rule = template.rule
    return rule if read_pairs(rule, request) == template.read else None


def _same_inputs(template: Template, differs: tuple[bool, ...]) -> bool:
    """The template's inputs but the parent envs and ``extra``: equal maps, the same table.

    The same objects are ``BuildMemo.lookup``'s proof (it hands a template over
    only then), and ``differs`` its comparison of each equal field.
    """
    if undiffed_differ(differs):
        return False
    # loaded (the template's rule searched with it): a replaced table searches every value
    formats = sys.modules.get(_FORMATS)
    return formats is not None and template.rule.formats is formats.format_table()


def _changed(old: dict[str, str], new: dict[str, str]) -> list[str] | None:
    """The keys whose value differs, in order, or None when the keys or their order differ.

    Asked of two envs ``BuildMemo.lookup`` found unequal. Every pass is C-level
    (``map``, ``compress``): the parent env has a hundred keys or more, and one
    of them changed.
    """
    if len(old) != len(new) or not all(map(eq, old, new)):
        return None
    return list(compress(new, map(ne, old.values(), new.values())))


def _resized(size: int | None, name: str, old: str, new: str) -> int | None:
    """The block's bytes after ``name``'s value went from ``old`` to ``new`` (None: look closer)."""
    if size is None:
        return None
    grown, shrunk = entry_bytes(name, new), entry_bytes(name, old)
    return None if grown is None or shrunk is None else size + grown - shrunk


def rebuild(
    template: Template, request: BuildRequest, differs: tuple[bool, ...]
) -> tuple[dict[str, str], Template] | None:
    """The child of ``request`` made from ``template``, and the template after it (None: none).

    The parent envs are checked as a full build checks them first, in their
    changed entries only (the others passed that check in the template's
    build), and the block as a full build checks it.
    """
    rule = template.rule
    if not _same_inputs(template, differs):
        return None
    base = _changed(template.snapshot, request.snapshot) if differs[SNAPSHOT_AT] else []
    extra = _changed(template.extras, request.extras) if differs[EXTRAS_AT] else []
    if base is None or extra is None:
        return None
    old_process, process = template.process, request.process
    if (old_process is None) != (process is None):
        return None
    moved = _changed(old_process or {}, process or {}) if differs[PROCESS_AT] else []
    if moved is None:
        return None
    plain_base, plain_extra, inert = template.plain_base, template.plain_extra, template.inert_base
    if not plain_extra.issuperset(extra):
        return None
    if base and not all(name in plain_base or name in inert for name in base):
        return None
    if base or moved:  # the entries that did not change passed in the template's build
        check_parent_envs(
            {name: request.snapshot[name] for name in base},
            None if process is None else {name: process[name] for name in moved},
        )
    plain, reads = rule.is_plain_name, rule.reads_pair
    for old, new, names in (
        (template.snapshot, request.snapshot, base),
        (template.extras, request.extras, extra),
        (old_process or {}, process or {}, moved),
    ):
        for name in names:  # a pair the rule reads, before or after: its secrets would change
            if not plain(name) and (reads(name, old[name]) or reads(name, new[name])):
                return None  # every entry is decided again
    sanitized = dict(template.sanitized)
    size = template.size
    for names, new, layer in (
        (base, request.snapshot, Layer.BASE),
        (extra, request.extras, Layer.EXTRA),
    ):
        for name in names:
            if layer is Layer.BASE and name not in plain_base:
                continue  # an inert key: no decision read it
            value = new[name]
            if decide(rule, name, value, layer) is not None:
                return None  # a verdict to record: the full build says what it is
            size = _resized(size, name, sanitized[name], value)
            sanitized[name] = value  # in its place: the order a full build gives
    limit = request.options.max_env_bytes
    if size is None or size > limit:  # the block checked entry by entry, as a full build does
        child = validate_block(dict(sanitized), max_total_bytes=limit)
        size = block_bytes(sanitized)
    else:
        child = dict(sanitized)  # every entry passes as is: the checks a full build makes
    after = Template(
        request.snapshot,
        process,
        request.extras,
        rule,
        sanitized,
        size,
        plain_base,
        plain_extra,
        inert,
        template.read,  # only pairs the rule does not read changed
        template.verdicts,  # the same rule
    )
    return child, after
