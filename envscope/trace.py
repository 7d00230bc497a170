"""The trace: one decision per key and stage, saying what happened and why.

A trace never holds a value. Stages call ``Trace.record``; when a build runs
without a trace, stages skip the bookkeeping entirely.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from envscope._declarations import Origin

__all__ = ["Action", "Decision", "Reason", "Stage", "Trace"]


class Action(enum.Enum):
    """What a stage did to a key."""

    KEPT = "kept"
    STRIPPED = "stripped"
    OVERRIDDEN = "overridden"
    ADDED = "added"
    REFUSED = "refused"


class Stage(enum.Enum):
    """The pipeline stage that made a decision (DESIGN.md §3)."""

    RESIDUE = "residue"
    OVERLAY = "overlay"
    MANAGED = "managed"
    SANITIZE = "sanitize"
    EXTRA = "extra"


class Reason(enum.Enum):
    """Why a decision was made; ``sentence`` is the human form."""

    INHERITED = "inherited"
    GLOBAL_NAME = "global-name"
    MANAGED_KEY = "managed-key"
    LAUNCH_RESIDUE = "launch-residue"
    LAUNCH_GATE = "launch-gate"
    LAUNCH_CREDENTIAL = "launch-credential"
    SCOPE_VALUE = "scope-value"
    MANAGED_VALUE = "managed-value"
    TIER1 = "tier1"
    TIER2 = "tier2"
    TIER2_INHERITED = "tier2-inherited"
    CALLER_EXTRA = "caller-extra"
    FORCED = "forced"
    FORCE_REFUSED = "force-refused"
    FORCE_PREFIX_IN_BASE = "force-prefix-in-base"
    PASSTHROUGH = "passthrough"
    PASSTHROUGH_REFUSED = "passthrough-refused"
    PASSTHROUGH_NOT_IN_SCOPE = "passthrough-not-in-scope"
    NOT_ALLOWLISTED = "not-allowlisted"
    SHELL_FUNCTION = "shell-function"
    CASE_DUPLICATE = "case-duplicate"
    HOME_VAR = "home-var"
    UNSCRUBBED = "unscrubbed"

    @property
    def sentence(self) -> str:
        """A short human sentence for this reason."""
        return _SENTENCES[self]


_SENTENCES: dict[Reason, str] = {
    Reason.INHERITED: "inherited from the parent; no rule declares it",
    Reason.GLOBAL_NAME: "a global name; never launch residue",
    Reason.MANAGED_KEY: "an administrator-managed key; never launch residue",
    Reason.LAUNCH_RESIDUE: "the launch profile put it into the process env",
    Reason.LAUNCH_GATE: "an authorization gate of the launch profile",
    Reason.LAUNCH_CREDENTIAL: "a launch credential; a routed child gets its own profile's",
    Reason.SCOPE_VALUE: "the routed profile's own value",
    Reason.MANAGED_VALUE: "the administrator's value beats the profile's",
    Reason.TIER1: "a Tier 1 secret: no child ever receives it",
    Reason.TIER2: "a Tier 2 credential: this child does not inherit credentials",
    Reason.TIER2_INHERITED: "a Tier 2 credential kept for a credentialed child",
    Reason.CALLER_EXTRA: "set explicitly by the caller",
    Reason.FORCED: "handed over by the caller through the force prefix",
    Reason.FORCE_REFUSED: "the force prefix never unwraps to a Tier 1 name",
    Reason.FORCE_PREFIX_IN_BASE: "a force-prefixed key in the base is dropped, never unwrapped",
    Reason.PASSTHROUGH: "forwarded by a passthrough request",
    Reason.PASSTHROUGH_REFUSED: "passthrough refused: a tier declares this name",
    Reason.PASSTHROUGH_NOT_IN_SCOPE: "passthrough name absent from the routed scope",
    Reason.NOT_ALLOWLISTED: "not on this surface's allowlist",
    Reason.SHELL_FUNCTION: "an exported shell function never reaches this surface",
    Reason.CASE_DUPLICATE: "another key differing only in case was kept",
    Reason.HOME_VAR: "the worker's target home",
    Reason.UNSCRUBBED: "scrubbing turned off by the caller",
}


@dataclass(frozen=True, slots=True)
class Decision:
    """What one stage did to one key, why, and where the rule came from (never a value)."""

    key: str
    action: Action
    stage: Stage
    reason: Reason
    origin: Origin | None = None
    note: str | None = None

    def __str__(self) -> str:
        origin = "" if self.origin is None else f" [{self.origin}]"
        return (
            f"{self.key}: {self.action.value} at {self.stage.value}: {self.reason.sentence}{origin}"
        )


class Trace:
    """An ordered record of decisions; iterable; ``final()`` gives the last one per key."""

    __slots__ = ("_decisions",)

    def __init__(self) -> None:
        self._decisions: list[Decision] = []

    def record(
        self,
        key: str,
        action: Action,
        stage: Stage,
        reason: Reason,
        origin: Origin | None = None,
        note: str | None = None,
    ) -> None:
        """Append one decision."""
        self._decisions.append(Decision(key, action, stage, reason, origin, note))

    def __iter__(self) -> Iterator[Decision]:
        return iter(self._decisions)

    def __len__(self) -> int:
        return len(self._decisions)

    def final(self) -> dict[str, Decision]:
        """The last decision for each key (upper-cased key → decision)."""
        return {d.key.upper(): d for d in self._decisions}

    def for_key(self, key: str) -> list[Decision]:
        """Every decision about one key (any case), in order."""
        wanted = key.upper()
        return [d for d in self._decisions if d.key.upper() == wanted]
