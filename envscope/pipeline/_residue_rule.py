"""``ResidueRule``: stage 1's decision for each name, worked out once per name.

Whether stage 1 drops a name depends only on the name and on the rule's
inputs (the residue, the keep-set and the policies), never on the value, so
a rule memoises its verdict per name as the build indexes it (upper-cased
where names fold, as spelled on POSIX; the verdict itself is decided on the
upper-cased name, so every spelling gets the same one). A ``Binding`` keeps one
rule for as long as its policies stay the same objects (a manifest edit or an
adapter change makes a new policy, hence a new rule): a warm routed build
then decides each of its keys with one dict lookup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envscope.audit.trace import Reason
from envscope.pipeline._memo import same_objects
from envscope.pipeline.secret_rule import stricter_declaration

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envscope.policy._declarations import Origin
    from envscope.policy._secret_policy import SecretPolicy

__all__ = ["ResidueRule", "Verdict"]

Verdict = tuple[Reason, "Origin | None"]
"""Why stage 1 drops a name and where that came from."""

_KEEP = None
MAX_MEMO = 16_384  # names; a larger env still works, its extra names are decided per build


class ResidueRule:
    """Stage 1's verdict per name for one residue, keep-set and policy list."""

    __slots__ = ("keep", "memo", "policies", "residue", "residue_origins")

    def __init__(
        self,
        residue: frozenset[str],
        keep: frozenset[str],
        policies: Sequence[SecretPolicy],
        residue_origins: Mapping[str, Origin] | None = None,
    ) -> None:
        self.residue = residue
        self.keep = keep
        self.policies = tuple(policies)
        self.residue_origins = residue_origins
        self.memo: dict[str, Verdict | None] = {}

    def verdict(self, name: str) -> Verdict | None:
        """Why stage 1 drops this name (any case), or None when it keeps it."""
        memo = self.memo
        if name in memo:
            return memo[name]
        found = self._decide(name.upper())
        if len(memo) < MAX_MEMO:
            memo[name] = found
        return found

    def _decide(self, up: str) -> Verdict | None:
        if up in self.keep:
            return _KEEP
        if up in self.residue:
            origins = self.residue_origins
            origin = None if origins is None else origins.get(up)
            return (Reason.LAUNCH_RESIDUE, origin)
        decl = None
        for policy in self.policies:  # declared for this child: the secret rule's stricter one
            decl = stricter_declaration(decl, policy.declaration(up))
        if decl is not None:
            return (Reason.LAUNCH_CREDENTIAL, decl.origin)
        if any(policy.is_gate(up) for policy in self.policies):
            return (Reason.LAUNCH_GATE, None)
        return _KEEP

    def same_inputs(
        self,
        residue: frozenset[str],
        keep: frozenset[str],
        policies: Sequence[SecretPolicy],
        residue_origins: Mapping[str, Origin] | None,
    ) -> bool:
        """True when this rule was made from these very objects (so its memo holds)."""
        if self.residue is not residue or self.keep is not keep:
            return False
        if self.residue_origins is not residue_origins:
            return False
        return same_objects(self.policies, policies)
