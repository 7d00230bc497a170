"""``Binding``: a routed home bound to a context, with what its builds share.

A binding carries the bound home's scope, residue and launch policy, its
stage-1 ``ResidueRule`` (kept while its policies stay the same objects) and
its ``BuildMemo`` (``memo``; see ``_memo``).
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

__all__ = ["Binding"]

_set = object.__setattr__


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
    _rule: ResidueRule | None = field(init=False, repr=False, compare=False)

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
    ) -> None:
        _set(self, "home", home)
        _set(self, "routed", routed)
        _set(self, "scope", scope)
        _set(self, "scope_origins", scope_origins)
        _set(self, "source_names", source_names)
        _set(self, "residue", residue)
        _set(self, "residue_origins", residue_origins)
        _set(self, "launch_policy", launch_policy)
        _set(self, "memo", BuildMemo())
        _set(self, "_rule", None)

    def residue_rule(self, keep: frozenset[str], policies: Sequence[SecretPolicy]) -> ResidueRule:
        """Stage 1's rule for this binding's residue: kept while keep and policies are the same."""
        rule: ResidueRule | None = self._rule
        if rule is None or not rule.same_inputs(self.residue, keep, policies, self.residue_origins):
            rule = ResidueRule(self.residue, keep, policies, self.residue_origins)
            _set(self, "_rule", rule)  # a cache slot, not a field: equality ignores it
        return rule

    def __repr__(self) -> str:
        return record_repr(self, masked=("scope",))
