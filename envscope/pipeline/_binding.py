"""``Binding``: a routed home bound to a context, with what its builds share.

A binding carries the bound home's scope, residue and launch policy, its
stage-1 ``ResidueRule`` (kept while its policies stay the same objects) and
its ``BuildMemo`` (``memo``; see ``_memo``). The rule and the memo live in a
``HomeShare``: the ``Host`` keeps one per routed home (bounded with the
manifest cache) and hands it to every binding made from the very same scope
and residue objects, so entering ``routed(home)`` per spawn reuses the home's
residue verdicts and its last child envs (a fresh binding costs about one warm
build). A binding made without a share gets a private one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.pipeline._memo import BuildMemo
from envscope.pipeline._residue_rule import ResidueRule
from envscope.policy._declarations import EMPTY_MAPPING, Origin, record_repr

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envscope.policy._secret_policy import SecretPolicy

__all__ = ["Binding", "HomeShare"]

_set = object.__setattr__


class HomeShare:
    """What the bindings of one routed home share: its residue rule and its build memo.

    Valid for the scope and residue objects it was made for (``fits``); the
    ``Host`` makes a new share when any of them is a new object.
    """

    __slots__ = ("memo", "residue", "residue_origins", "rule", "scope", "scope_origins")

    def __init__(
        self,
        scope: Mapping[str, str] = EMPTY_MAPPING,
        scope_origins: Mapping[str, Origin] = EMPTY_MAPPING,
        residue: frozenset[str] = frozenset(),
        residue_origins: Mapping[str, Origin] = EMPTY_MAPPING,
    ) -> None:
        self.scope = scope
        self.scope_origins = scope_origins
        self.residue = residue
        self.residue_origins = residue_origins
        self.memo = BuildMemo()
        self.rule: ResidueRule | None = None

    def fits(
        self,
        scope: Mapping[str, str],
        scope_origins: Mapping[str, Origin],
        residue: frozenset[str],
        residue_origins: Mapping[str, Origin],
    ) -> bool:
        """True when this share was made for these very objects (``is``, not ``==``)."""
        return (
            self.scope is scope
            and self.scope_origins is scope_origins
            and self.residue is residue
            and self.residue_origins is residue_origins
        )

    def __repr__(self) -> str:
        return f"HomeShare(scope={len(self.scope)} keys, memo={len(self.memo)} shapes)"


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Binding:
    """A routed home bound to the current context, with everything a build needs from it."""

    home: str
    routed: bool
    scope: Mapping[str, str]
    scope_origins: Mapping[str, Origin]
    source_names: frozenset[str]
    residue: frozenset[str]
    residue_origins: Mapping[str, Origin]
    launch_policy: SecretPolicy | None
    memo: BuildMemo = field(init=False, repr=False, compare=False)
    _share: HomeShare = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        home: str,
        routed: bool,
        scope: Mapping[str, str] = EMPTY_MAPPING,
        scope_origins: Mapping[str, Origin] = EMPTY_MAPPING,
        source_names: frozenset[str] = frozenset(),
        residue: frozenset[str] = frozenset(),
        residue_origins: Mapping[str, Origin] = EMPTY_MAPPING,
        launch_policy: SecretPolicy | None = None,
        share: HomeShare | None = None,
    ) -> None:
        _set(self, "home", home)
        _set(self, "routed", routed)
        _set(self, "scope", scope)
        _set(self, "scope_origins", scope_origins)
        _set(self, "source_names", source_names)
        _set(self, "residue", residue)
        _set(self, "residue_origins", residue_origins)
        _set(self, "launch_policy", launch_policy)
        if share is None or not share.fits(scope, scope_origins, residue, residue_origins):
            share = HomeShare(scope, scope_origins, residue, residue_origins)
        _set(self, "_share", share)
        _set(self, "memo", share.memo)

    @property
    def share(self) -> HomeShare:
        """The residue rule and build memo this binding shares with its home's other bindings."""
        return self._share

    def residue_rule(self, keep: frozenset[str], policies: Sequence[SecretPolicy]) -> ResidueRule:
        """Stage 1's rule for this binding's residue: kept while keep and policies are the same."""
        share = self._share
        rule = share.rule
        if rule is None or not rule.same_inputs(self.residue, keep, policies, self.residue_origins):
            rule = ResidueRule(self.residue, keep, policies, self.residue_origins)
            share.rule = rule  # one assignment: a racing binding makes an equal rule
        return rule

    def __repr__(self) -> str:
        return record_repr(self, masked=("scope",))
