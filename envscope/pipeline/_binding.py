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

NO_NAMES: frozenset[str] = frozenset()  # one object: a share fits a binding by identity


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
        residue: frozenset[str] = NO_NAMES,
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


@dataclass(frozen=True, slots=True, repr=False)
class Binding:
    """A routed home bound to the current context, with everything a build needs from it.

    ``share`` (the home's residue rule and build memo) must have been made for
    this binding's very scope and residue objects (``HomeShare.fits``); the
    ``Host`` hands the home's share on, or makes a new one.
    """

    home: str
    routed: bool
    scope: Mapping[str, str] = field(default_factory=lambda: EMPTY_MAPPING)
    scope_origins: Mapping[str, Origin] = field(default_factory=lambda: EMPTY_MAPPING)
    source_names: frozenset[str] = frozenset()
    residue: frozenset[str] = NO_NAMES
    residue_origins: Mapping[str, Origin] = field(default_factory=lambda: EMPTY_MAPPING)
    launch_policy: SecretPolicy | None = None
    share: HomeShare = field(default_factory=HomeShare, compare=False)

    def __post_init__(self) -> None:
        share = self.share
        if not share.fits(self.scope, self.scope_origins, self.residue, self.residue_origins):
            raise ValueError("a binding's share must be made for its scope and residue")

    @property
    def memo(self) -> BuildMemo:
        """The build memo this binding's builds use (its home share's)."""
        return self.share.memo

    def residue_rule(self, keep: frozenset[str], policies: Sequence[SecretPolicy]) -> ResidueRule:
        """Stage 1's rule for this binding's residue: kept while keep and policies are the same."""
        share = self.share
        rule = share.rule
        if rule is None or not rule.same_inputs(self.residue, keep, policies, self.residue_origins):
            rule = ResidueRule(self.residue, keep, policies, self.residue_origins)
            share.rule = rule  # one assignment: a racing binding makes an equal rule
        return rule

    def __repr__(self) -> str:
        return record_repr(self, masked=("scope",))
