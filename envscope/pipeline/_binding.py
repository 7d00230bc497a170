"""``Binding`` (a routed home bound to a context) and ``BuildMemo`` (its last builds).

A warm spawn repeats the same build: the same parent env, the same bound
home, the same policy (proven unchanged by the manifest stamp that every
build still checks), the same options. ``BuildMemo`` remembers the last
child env built for each *shape* of build (surface and flags) and hands back
a copy when every input is the same again:

- by identity, the objects a build derives from that are immutable once
  made: the bound home's policy (a new object whenever a manifest or the
  adapter census changes), the binding itself (scope and residue), the
  managed values and the residue keep-set;
- by equality, what the caller passes per build: the env snapshot, the
  ``extra`` values and, for MCP children, the secret-source-supplied names.

Anything else differs and the build runs in full. A traced build is its own
shape: the memo keeps its decisions too (a ``trace.Recording``) and replays
them into the caller's trace, fingerprinted with that trace's function. A
routed build with no binding never uses the memo (its residue is re-read per
build).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.pipeline._residue_rule import ResidueRule, same_objects
from envscope.policy._declarations import EMPTY_MAPPING, Origin, record_repr

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping, Sequence

    from envscope.audit.trace import Recording
    from envscope.policy._secret_policy import SecretPolicy

__all__ = ["Binding", "BuildMemo"]

_set = object.__setattr__


@dataclass(frozen=True, slots=True, repr=False)  # holds the child env: no generated repr
class _Built:
    """One remembered build: what it depended on, the child env, a traced build's decisions."""

    same: tuple[object, ...]
    equal: tuple[object, ...]
    child: dict[str, str]
    recording: Recording | None


class BuildMemo:
    """The last child env per build shape; thread-safe (each read and write is one dict op)."""

    MAX_SHAPES = 16  # surfaces x flags a host really uses; more and the memo starts over

    __slots__ = ("_built",)

    def __init__(self) -> None:
        self._built: dict[Hashable, _Built] = {}

    def get(
        self, shape: Hashable, same: tuple[object, ...], equal: tuple[object, ...]
    ) -> tuple[dict[str, str], Recording | None] | None:
        """A copy of the child built for ``shape`` from these very inputs (and its decisions)."""
        built = self._built.get(shape)
        if built is None or not same_objects(built.same, same) or built.equal != equal:
            return None
        return dict(built.child), built.recording

    def put(
        self,
        shape: Hashable,
        same: tuple[object, ...],
        equal: tuple[object, ...],
        child: dict[str, str],
        recording: Recording | None = None,
    ) -> None:
        """Remember a private copy of the child built for ``shape`` from these inputs."""
        if len(self._built) >= self.MAX_SHAPES and shape not in self._built:
            self._built.clear()
        self._built[shape] = _Built(same, equal, dict(child), recording)

    def __len__(self) -> int:
        return len(self._built)


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
