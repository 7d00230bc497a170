"""``BuildMemo``: the last child env built per shape of build; its ``FormatMemo``; ``same_objects``.

A warm spawn repeats the same build: the same parent env, the same bound
home, the same policy (proven unchanged by the manifest stamp that every
build still checks), the same options. ``BuildMemo`` remembers the last
child env built for each *shape* of build and hands back a copy when every
input is the same again. Where a build sits in the memo comes from its
request's fields (``_request.memo_key``, each field's ``Role``):

- the *shape* (surface, flags, passthrough, the ``extra`` block's keys, grants,
  and whether the build is traced) picks the slot; on the ``mcp`` surface the
  block's items (each server its own slot). A per-call value (a task id in
  ``extra``) is compared by equality, so it replaces its slot's child instead
  of filling the memo and starting it over;
- by identity (``same_objects``), the objects immutable once made: the host's
  settings, the bound home's policy (a new object whenever a manifest or the
  adapter census changes), the launch loads, the managed values, the keep-set;
- by equality, what changes per build: the env snapshot, the ``extra``
  values, the names secret sources supplied or applied.

Each slot's entry also holds what its last untraced build left the next one
(``_delta``'s template: an incremental build's start): one ``lookup`` answers
a hit, or hands a miss that read the very same objects that template and
which equal fields differ (the incremental build diffs only those).

The memo's *owner* holds it: a routed home's share (every binding made from
the same scope and residue objects uses it), or the host for unbound builds;
an unbound multiplexed build never uses one (its residue is re-read per
build). A traced build keeps its decisions too (a ``trace.Recording``) and
replays them into the caller's trace, fingerprinted with that trace's function.
The owner also keeps, in ``formats``, the values its last build found to hold no
credential format (``FormatMemo``, below): a build that misses searches only the
values that are new to it.

**The format memo.** A build searches every value its child may receive for a credential format
(``SecretRule.find_in``, docs/credential-formats.md). Between two spawns the parent env is
nearly the same, so nearly every value was searched by the owner's previous
build already, and the search is a pure function of the value and the format
table. Each ``BuildMemo`` holds a ``FormatMemo`` (its owner is a routed home's
share, or the host for unbound builds; an unbound multiplexed build has no
memo and searches every value):

- ``under(table)`` is one build's ``CleanValues``: the values remembered under
  that very table object (``policy.formats.format_table()``; a set remembered
  under another table, such as the one before ``reset_table()``, is ignored);
- ``SecretRule.find_in``, given that view by the build (``SanitizeOptions.clean``:
  the view is the build's, never the rule's, so one rule serves many builds),
  searches only the values not among them: once for the
  lot, and value by value only when that search finds a format. It then
  remembers (``CleanValues.remember``) the values of *this* build that hold no
  format, replacing the last set wholesale: nothing accumulates across builds.
  A value that holds a format is never remembered, and the rule hands over
  only the values it still has to decide (no value that is or holds a
  declared secret, none under a ``known_safe`` name): the set holds values of
  the owner's last build in which the rule found no secret;
- thread-safe: the table and its values are one tuple, read and replaced as
  one attribute (bindings on several threads share an owner).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping, Sequence

    from envscope.audit.trace import Recording
    from envscope.policy.formats import FormatTable

__all__ = ["BuildMemo", "CleanValues", "FormatMemo", "Found", "MemoKey", "same_objects"]

MemoKey = tuple[tuple[object, ...], tuple[object, ...], tuple[object, ...]]
"""Where a build sits in the memo: its shape, the objects it read (compared by
identity), the maps it read (compared by value). A plain tuple: built on every
spawn, before the memo is asked."""


def same_objects(old: Sequence[object], new: Sequence[object]) -> bool:
    """True when two sequences hold the very same objects, in order (``is``, not ``==``)."""
    return len(old) == len(new) and all(map(operator.is_, old, new))  # C-level: per build


_Built = tuple[tuple[object, ...], tuple[object, ...], dict[str, str], "Recording | None", object]
"""One remembered build: the objects and maps it read, the child env, a traced build's
decisions, what it left an incremental build (a plain tuple, as the key is)."""

Found = tuple[dict[str, str] | None, "Recording | None", object, tuple[bool, ...]]
"""``BuildMemo.lookup``'s answer: a hit's child and decisions, else what a miss may build on."""

_NOT_FOUND: Found = (None, None, None, ())


class BuildMemo:
    """The last child env per build shape; thread-safe (each read and write is one dict op)."""

    MAX_SHAPES = 16  # surfaces x flags a host really uses; more and the memo starts over

    __slots__ = ("_built", "_rules", "formats")

    def __init__(self) -> None:
        self._built: dict[Hashable, _Built] = {}
        # a context's rule per shape, with the inputs it was made from (``build.context_rule``)
        self._rules: dict[Hashable, tuple[tuple[object, ...], tuple[object, ...], object]] = {}
        self.formats = FormatMemo()  # the clean values of the last build that searched

    def lookup(self, shape: Hashable, same: tuple[object, ...], equal: tuple[object, ...]) -> Found:
        """The slot ``shape``'s last build, against one build's inputs: one comparison of each.

        A hit (the very same objects, equal maps): ``(a copy of the child, its
        decisions, None, ())``. A miss where the slot's last build read these
        very objects: ``(None, None, left, differs)``: what that build left
        (``put``'s ``left``: ``_delta`` reads it) and, per equal field, whether
        it differs (an incremental build diffs only those). Else ``(None, None, None, ())``.
        """
        built = self._built.get(shape)
        if built is None:
            return _NOT_FOUND
        built_same, built_equal, child, recording, left = built
        if not same_objects(built_same, same):
            return _NOT_FOUND
        differs = tuple(map(operator.ne, built_equal, equal))  # C-level: one pass, no short cut
        if True in differs:
            return None, None, left, differs
        return dict(child), recording, None, ()

    def put(
        self,
        shape: Hashable,
        same: tuple[object, ...],
        equal: tuple[object, ...],
        child: dict[str, str],
        recording: Recording | None = None,
        left: object = None,
    ) -> None:
        """Remember a private copy of the child built for ``shape`` from these inputs.

        ``left``: what the build leaves the slot's next one (untyped: ``_delta``
        owns it; this module imports none that imports it), found by ``lookup``
        only with these very objects.
        """
        if len(self._built) >= self.MAX_SHAPES and shape not in self._built:
            self._built.clear()
        self._built[shape] = (same, equal, dict(child), recording, left)

    def holds(self, env: Mapping[str, str]) -> bool:
        """True when ``env`` is a child kept here: the same pairs, in the same order.

        What the runtime guard asks first of an explicit env: a child its
        context's build made passes as built (docs/guard.md, ``factory-built``).
        """
        for _, _, child, _, _ in list(self._built.values()):  # a copy: a build may add meanwhile
            if child == env and all(map(operator.eq, child, env)):
                return True
        return False

    def rule(self, shape: Hashable, same: tuple[object, ...], equal: tuple[object, ...]) -> object:
        """What ``keep_rule`` kept for ``shape`` from these very inputs (None: nothing)."""
        kept = self._rules.get(shape)
        if kept is None or not same_objects(kept[0], same) or kept[1] != equal:
            return None
        return kept[2]

    def keep_rule(
        self, shape: Hashable, same: tuple[object, ...], equal: tuple[object, ...], rule: object
    ) -> None:
        """Keep a context's rule (untyped: ``build`` owns its type), bounded as the children are."""
        if len(self._rules) >= self.MAX_SHAPES and shape not in self._rules:
            self._rules.clear()
        self._rules[shape] = (same, equal, rule)

    def __len__(self) -> int:
        return len(self._built)


_NOTHING: tuple[FormatTable | None, frozenset[str]] = (None, frozenset())


class FormatMemo:
    """One owner's clean values, under the table that found them clean (see the module)."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = _NOTHING

    def under(self, table: FormatTable) -> CleanValues:
        """One build's view: the values known clean under ``table``, and where to remember."""
        held_table, values = self._held
        return CleanValues(values if held_table is table else frozenset(), table, self)

    def remember(self, table: FormatTable, values: frozenset[str]) -> None:
        """Hold ``values`` (found clean under ``table``) in place of whatever was held."""
        self._held = (table, values)

    @property
    def held(self) -> frozenset[str]:
        """The values held now, whatever their table."""
        return self._held[1]

    def __repr__(self) -> str:
        return f"FormatMemo({len(self._held[1])} values)"  # a count, never a value


class CleanValues:
    """One build's view of its owner's ``FormatMemo`` under the table the build searches with.

    A plain slotted class, not a dataclass: ``@dataclass(slots=True)`` generates its
    class at import, some hundreds of µs, for a view made once per build that misses.
    """

    __slots__ = ("known_clean", "owner", "table")

    def __init__(self, known_clean: frozenset[str], table: FormatTable, owner: FormatMemo) -> None:
        self.known_clean = known_clean  # the values remembered under ``table``
        self.table = table
        self.owner = owner

    def remember(self, values: frozenset[str]) -> None:
        """The owner keeps ``values`` (this build's clean ones) in place of the last build's."""
        self.owner.remember(self.table, values)

    def __repr__(self) -> str:
        return f"CleanValues({len(self.known_clean)} values)"  # a count, never a value
