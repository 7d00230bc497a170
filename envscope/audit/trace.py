"""The trace: one decision per key and stage, saying what happened and why.

A trace never holds a value, only a short keyed fingerprint of it (when the
trace was given a ``fingerprint`` function, as ``Host.explain`` does), so two
traces can say "changed" without revealing what. Stages call
``Trace.record``; when a build runs without a trace, stages skip the
bookkeeping entirely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envscope._inputs import shown_key
from envscope.errors import ConfigurationError, EnvscopeError
from envscope.policy._declarations import Origin, Problem
from envscope.policy._reasons import SUMMARY_GROUPS, Action, Reason, Stage

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping


__all__ = [
    "NULL_TRACE",
    "Action",
    "BuildWarning",
    "Decision",
    "NullTrace",
    "Reason",
    "Recording",
    "Stage",
    "Trace",
    "TraceContext",
    "check_trace",
    "keep_value",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """What one stage did to one key, why, and where the rule came from (never a value)."""

    key: str
    action: Action
    stage: Stage
    reason: Reason
    origin: Origin | None = None
    note: str | None = None
    fingerprint: str | None = None

    @property
    def removed(self) -> bool:
        """True when this decision keeps the key from the child."""
        return self.action in _REMOVING

    def __str__(self) -> str:
        origin = "" if self.origin is None else f" [{self.origin}]"
        return (
            f"{self.key}: {self.action.value} at {self.stage.value}: {self.reason.sentence}{origin}"
        )


_REMOVING = frozenset({Action.STRIPPED, Action.REFUSED})

# A decision as recorded on the spawn path: the ``Decision`` fields as a plain
# tuple (cheap to make); ``Decision`` objects are built when the trace is read.
_Row = tuple[str, Action, Stage, Reason, "Origin | None", "str | None", "str | None"]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True, slots=True)
class BuildWarning:
    """One warning of a traced build: the key it is about, its kind, the sentence shown.

    Kinds: ``value-shape:<format>`` (a kept value looks like a credential no
    rule declares), ``credential-suffix``, ``credential-word`` and
    ``url-with-password`` (a kept name or URL looks like one),
    ``injection-vector`` (the launch env carries a loader or interpreter name),
    ``source-unset`` (a secret source could not answer for the home and the
    host chose to leave its names unset), and ``manifest-unknown-key`` (a
    manifest key near a known one, ``secert``: not read; its ``key`` is the
    field path).
    """

    key: str
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message


class TraceContext:
    """What a build was for: filled in by ``Host`` when it runs a traced build."""

    __slots__ = (
        "child_keys",
        "complete",
        "fold",
        "home",
        "problems",
        "routed",
        "surface",
        "warnings",
    )

    def __init__(self) -> None:
        self.home = ""
        self.surface = ""
        self.routed = False
        self.fold = False  # names fold (Windows): case twins are one variable
        self.complete = True
        self.problems: tuple[Problem, ...] = ()
        self.child_keys: tuple[str, ...] = ()
        self.warnings: list[BuildWarning] = []

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in sorted(self.__slots__))
        return f"TraceContext({shown})"


def check_trace(trace: object) -> None:
    """A build's ``trace=`` is a ``Trace`` or None, else a ``ConfigurationError`` naming it."""
    if trace is not None and not isinstance(trace, Trace):
        raise ConfigurationError(f"trace: expected a Trace or None, got a {type(trace).__name__}")


def keep_value(name: str, value: str) -> str:
    """The "fingerprint" of a capturing trace: the value itself (see ``Recording``)."""
    del name
    return value


class Recording:
    """The decisions of one traced build, to replay into another trace (the build memo's).

    Made from a *capturing* trace (``Trace(fingerprint=keep_value)``), whose
    rows hold each decision's value where a fingerprint would be. A recording
    keeps those values apart from the rows, the way the build memo keeps the
    child env it hands out again; it never leaves the memo.
    """

    __slots__ = ("context", "fingerprinted", "keys", "rows", "values")

    def __init__(self, captured: list[_Row], context: TraceContext) -> None:
        self.rows: list[_Row] = [(*row[:6], None) for row in captured]
        self.values: list[str | None] = [row[6] for row in captured]
        self.keys: list[str] = [row[0] for row in captured]
        self.context = context
        # The rows as last fingerprinted, with the function that did it: ``explain`` replays
        # one recording with the host's one fingerprint function, again and again.
        self.fingerprinted: tuple[Callable[[str, str], str], list[_Row]] | None = None


class Trace:
    """An ordered record of decisions; iterable; ``final()`` gives the last one per key.

    ``fingerprint`` (optional) maps a key and its value to a short keyed digest
    (``Host.fingerprint``); without it decisions carry no fingerprint. A trace
    never stores a value.
    """

    __slots__ = ("_decisions", "_fingerprint", "_last", "_rows", "context")

    enabled = True  # a trace that records (NullTrace: one that does not)

    def __init__(self, fingerprint: Callable[[str, str], str] | None = None) -> None:
        self._rows: list[_Row] = []
        self._last: dict[str, _Row] = {}  # key as spelled -> its last row, kept as rows come
        self._decisions: list[Decision] = []  # ``_rows[:len(_decisions)]`` as Decision objects
        self._fingerprint = fingerprint
        self.context = TraceContext()

    def record(
        self,
        key: str,
        action: Action,
        stage: Stage,
        reason: Reason,
        origin: Origin | None = None,
        note: str | None = None,
        *,
        value: str | None = None,
    ) -> None:
        """Append one decision (``value`` is only fingerprinted, never stored).

        A key that holds ``=`` is recorded cut there (``shown_key``): what follows
        is a value.
        """
        if "=" in key:
            key = shown_key(key)
        digest = None
        if value is not None and self._fingerprint is not None:
            digest = self._fingerprint(key, value)
        row = (key, action, stage, reason, origin, note, digest)
        self._rows.append(row)
        self._last[key] = row

    def record_untouched(self, env: Mapping[str, str], global_names: frozenset[str]) -> list[str]:
        """Record ``kept`` for each key of a finished env that no decision keeps; list the kept.

        A key no stage decided under that very spelling (a case twin's decision
        is the twin's), or whose last decision removed it, is kept as inherited
        (or as a global name). Returns the keys whose last decision is now
        ``kept`` (not added or overridden by a stage).
        """
        kept = []
        for key, value in env.items():
            up = key.upper()
            row = self._last.get(key)
            if row is None or row[1] in _REMOVING:
                reason = Reason.GLOBAL_NAME if up in global_names else Reason.INHERITED
                self.record(key, Action.KEPT, Stage.SANITIZE, reason, value=value)
                kept.append(key)
            elif row[1] is Action.KEPT:
                kept.append(key)
        return kept

    def recording(self) -> Recording:
        """This capturing trace's decisions and context, to replay (see ``Recording``)."""
        if self._fingerprint is not keep_value:
            raise EnvscopeError("only a trace made with fingerprint=keep_value can be recorded")
        return Recording(self._rows, self.context)

    def replay(self, recording: Recording) -> None:
        """Append a recorded build's decisions (fingerprinted with this trace's function)."""
        fingerprint = self._fingerprint
        done = recording.fingerprinted
        if fingerprint is None:
            rows = recording.rows
        elif done is not None and done[0] is fingerprint:
            rows = done[1]  # the same function over the same values: the same digests
        else:
            rows = [
                (*row[:6], None if value is None else fingerprint(row[0], value))
                for row, value in zip(recording.rows, recording.values, strict=True)
            ]
            recording.fingerprinted = (fingerprint, rows)
        self._rows.extend(rows)
        self._last.update(zip(recording.keys, rows, strict=True))
        recorded, ctx = recording.context, self.context
        ctx.home, ctx.surface, ctx.routed = recorded.home, recorded.surface, recorded.routed
        ctx.fold = recorded.fold
        ctx.complete, ctx.problems = recorded.complete, recorded.problems
        ctx.child_keys = recorded.child_keys
        ctx.warnings.extend(recorded.warnings)

    def _all(self) -> list[Decision]:
        """Every decision, built from the rows not yet turned into ``Decision`` objects."""
        built = self._decisions
        if len(built) < len(self._rows):
            built.extend(Decision(*row) for row in self._rows[len(built) :])
        return built

    def __iter__(self) -> Iterator[Decision]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._rows)

    def final(self) -> dict[str, Decision]:
        """The last decision for each variable: key as spelled → decision.

        Where names fold (``context.fold``: Windows) a variable is its name in
        any case, keyed upper-cased; on POSIX ``http_proxy`` and ``HTTP_PROXY``
        are two variables, each with its own last decision.
        """
        if self.context.fold:
            return {d.key.upper(): d for d in self._all()}
        return {d.key: d for d in self._all()}

    def for_key(self, key: str) -> list[Decision]:
        """Every decision about one key (any case), in order."""
        wanted = key.upper()
        return [d for d in self._all() if d.key.upper() == wanted]

    def removed(self) -> dict[str, Decision]:
        """The final decision of every key kept from the child."""
        return {k: d for k, d in self.final().items() if d.removed}

    def summary(self) -> str:
        """One line a host can log when a child fails, so no stripped variable is a mystery."""
        removed = list(self.removed().values())
        parts = []
        other = len(removed)
        for one, many, reasons, always in SUMMARY_GROUPS:
            n = sum(1 for d in removed if d.reason in reasons)
            other -= n
            if n or always:
                parts.append(f"{n} {one if n == 1 else many}")
        if other:
            parts.append(f"{other} by other rules")
        return (
            f"envscope removed {_count(len(removed), 'variable')} for this child: "
            f"{', '.join(parts)}; "
            "run `envscope explain` for details"
        )


class NullTrace(Trace):
    """The trace of an untraced build: every ``record`` is a no-op (``enabled`` is False).

    Stages record unconditionally; an untraced build hands them ``NULL_TRACE``
    instead of branching on ``None`` at every decision.
    """

    __slots__ = ()

    enabled = False

    def record(
        self,
        key: str,
        action: Action,
        stage: Stage,
        reason: Reason,
        origin: Origin | None = None,
        note: str | None = None,
        *,
        value: str | None = None,
    ) -> None:
        """Record nothing."""
        del key, action, stage, reason, origin, note, value


NULL_TRACE = NullTrace()
"""The one trace that records nothing (a build without ``trace=`` uses it)."""
