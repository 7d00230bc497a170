"""Pure formatters for the command line: snapshots, explain tables, diffs, scan reports.

Nothing here prints or reads a file; ``cli.main`` does. No function here
ever renders a value unless it is handed one explicitly (``--show-values``),
and Tier 1 values are masked even then.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envscope.audit.trace import BuildWarning, Trace
from envscope.policy._declarations import Origin, Problem

__all__ = [
    "SNAPSHOT_VERSION",
    "SNAPSHOT_VERSIONS",
    "DiffEntry",
    "Layout",
    "ScanReport",
    "diff_snapshots",
    "format_diff",
    "format_explain",
    "format_json",
    "format_scan",
    "scan_json",
    "snapshot_of",
]

SNAPSHOT_VERSION = 2
"""The format written: ``origin`` an object, ``warnings`` records (version 1: both text)."""
SNAPSHOT_VERSIONS = frozenset({1, SNAPSHOT_VERSION})
"""The formats ``diff`` reads: a version 1 snapshot kept in CI still diffs after an upgrade."""
MASK = "********"
ELLIPSIS = "…"
MIN_SHRUNK_WIDTH = 12
_COLORS = {"kept": "32", "added": "32", "overridden": "33", "stripped": "31", "refused": "31"}
JsonDict = dict[str, Any]


def display_path(path: str, relative_to: str | None) -> str:
    """``path`` relative to ``relative_to`` when it lies under it, else unchanged."""
    if relative_to and os.path.isabs(path):
        rel = os.path.relpath(path, relative_to)
        if not rel.startswith(".."):
            return rel
    return path


def _origin_json(origin: Origin | None, relative_to: str | None) -> JsonDict | None:
    """An origin as an object (``kind``, ``detail``, ``path``, ``line``), paths shown relative."""
    if origin is None:
        return None
    path = None if origin.path is None else display_path(origin.path, relative_to)
    return {"kind": origin.kind.value, "detail": origin.detail, "path": path, "line": origin.line}


def origin_text(origin: object) -> str:
    """The one-line text of a snapshot's ``origin`` (an object, a version 1 string, or null)."""
    if origin is None:
        return ""
    if isinstance(origin, str):
        return origin
    if isinstance(origin, Mapping):
        where = ""
        if origin.get("path") is not None:
            line = origin.get("line")
            where = f" ({origin['path']}{'' if line is None else f':{line}'})"
        return f"{origin.get('kind')}: {origin.get('detail')}{where}"
    return str(origin)


def warning_json(warning: BuildWarning) -> JsonDict:
    """A build warning as the snapshot's ``{key, kind, message}`` record."""
    return {"key": warning.key, "kind": warning.kind, "message": warning.message}


def warning_text(warning: object) -> str:
    """A snapshot warning's text (a record's ``message``, or a version 1 string)."""
    if isinstance(warning, Mapping):
        return str(warning.get("message") or f"{warning.get('key')}: {warning.get('kind')}")
    return str(warning)


def snapshot_of(
    trace: Trace,
    *,
    home: str,
    surface: str | None = None,
    relative_to: str | None = None,
    key_id: str | None = None,
) -> JsonDict:
    """The JSON an auditor keeps: keys, final decisions, fingerprints; never a value.

    Origin paths under ``relative_to`` are shown relative to it; ``key_id``
    names the fingerprint key (``fingerprint_key_id``) so a diff can tell
    snapshots made under different keys.
    """
    ctx = trace.context
    child = frozenset(k.upper() if ctx.fold else k for k in ctx.child_keys)
    keys: JsonDict = {}
    for name, d in sorted(trace.final().items()):
        keys[d.key] = {
            "in_child": name in child,
            "action": "kept" if name in child and d.removed else d.action.value,
            "stage": d.stage.value,
            "reason": d.reason.value,
            "origin": _origin_json(d.origin, relative_to),
            "fingerprint": d.fingerprint,
        }
    return {
        "envscope_snapshot": SNAPSHOT_VERSION,
        "fingerprint_key_id": key_id,
        "home": home,
        "surface": surface or ctx.surface,
        "routed": ctx.routed,
        "names_fold": ctx.fold,
        "policy": {
            "complete": ctx.complete,
            "problems": [_problem_text(p, relative_to) for p in ctx.problems],
        },
        "child": sorted(ctx.child_keys),
        "keys": keys,
        "warnings": [warning_json(w) for w in ctx.warnings],
    }


def relative_problem(problem: Problem, relative_to: str | None) -> Problem:
    """The problem with its path shown relative to ``relative_to`` where possible."""
    path = display_path(problem.path, relative_to)
    return Problem(path, problem.message, problem.line, problem.field, problem.plugin)


def _problem_text(problem: Problem, relative_to: str | None) -> str:
    return str(relative_problem(problem, relative_to))


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped (``\\x1b``, ``\\u202e``, ``\\n``).

    Keys, origins and paths come from files others may write (a profile's
    ``.env`` key can hold an ANSI escape): no text formatter passes one raw.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n]")  # what may be a terminal control in JSON text


def _json_escaped(match: re.Match[str]) -> str:
    char = match.group()
    return char if char.isprintable() else json.dumps(char)[1:-1]  # \u escapes, pairs too


def format_json(data: object) -> str:
    """Stable JSON: sorted keys, two-space indent, a trailing newline.

    Text stays readable (``é`` as is), but every character ``printable``
    escapes in a table is a ``\\u`` escape here too: ``json.dumps`` leaves DEL,
    C1 controls, bidi overrides (U+202E) and line separators raw, and a key
    from a profile's ``.env`` may hold one; the parsed JSON is the same.
    """
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return text if text.isascii() and "\x7f" not in text else _NOT_PLAIN.sub(_json_escaped, text)


@dataclass(frozen=True, slots=True)
class Layout:
    """How text output is laid out: colour, and the width to fit (None: no limit)."""

    color: bool = False
    width: int | None = None


def _shrink(rows: list[list[str]], columns: Sequence[int], width: int | None) -> list[list[str]]:
    """Cut ``columns``' cells, in that order, with an ellipsis so each line fits ``width``.

    A cut column keeps at least ``MIN_SHRUNK_WIDTH`` characters: a table whose
    other columns are wider than ``width`` stays wider.
    """
    if width is None:
        return rows
    for column in columns:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over <= 0:
            break
        room = max(widths[column] - over, MIN_SHRUNK_WIDTH)
        rows = [
            [*row[:column], row[column][: room - 1] + ELLIPSIS, *row[column + 1 :]]
            if len(row[column]) > room
            else row
            for row in rows
        ]
    return rows


def _table(
    rows: Sequence[Sequence[str]],
    color_col: int | None,
    color: bool,
    *,
    width: int | None = None,
    shrink: Sequence[int] = (),
) -> list[str]:
    grid = [[printable(cell) for cell in row] for row in rows]
    grid = _shrink(grid, shrink, width)
    widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
    lines = []
    for n, row in enumerate(grid):
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        if color and n > 0 and color_col is not None:
            code = _COLORS.get(row[color_col].strip())
            if code:
                cells[color_col] = f"\x1b[{code}m{cells[color_col]}\x1b[0m"
        lines.append("  ".join(cells).rstrip())
    return lines


def format_explain(
    snapshot: JsonDict,
    *,
    values: Mapping[str, str] | None = None,
    is_tier1: Callable[[str], bool] = lambda _key: True,
    layout: Layout = Layout(),
    shown: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> str:
    """An aligned table of every key (action, stage, reason, origin) and a summary line.

    ``values`` (``--show-values``) adds a VALUE column; Tier 1 values are
    masked even then. ``shown`` picks the rows (``--key``, ``--only``); the
    summary counts every key. A table wider than ``layout.width`` has its
    ORIGIN column cut with an ellipsis.
    """
    title, rows, footer = explain_parts(snapshot, values=values, is_tier1=is_tier1, shown=shown)
    cut = (4, 5) if values is not None else (4,)  # ORIGIN, then VALUE
    table = _table(rows, 1, layout.color, width=layout.width, shrink=cut) if len(rows) > 1 else []
    lines = [printable(title), "", *(table or ["(no key matches)"]), ""]
    lines.extend(printable(line) for line in footer)
    return "\n".join(lines) + "\n"


def explain_parts(
    snapshot: JsonDict,
    *,
    values: Mapping[str, str] | None = None,
    is_tier1: Callable[[str], bool] = lambda _key: True,
    shown: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> tuple[str, list[list[str]], list[str]]:
    """``explain``'s title, table rows (header first) and footer lines, for any layout."""
    header = ["KEY", "ACTION", "STAGE", "REASON", "ORIGIN"]
    if values is not None:
        header.append("VALUE")
    rows: list[list[str]] = [header]
    for key, info in snapshot["keys"].items():
        if shown is not None and not shown(key, info):
            continue
        row = [key, info["action"], info["stage"], info["reason"], origin_text(info["origin"])]
        if values is not None:
            value = values.get(key)
            row.append("" if value is None else MASK if is_tier1(key) else value)
        rows.append(row)
    title = f"envscope explain: {snapshot['surface']} child for {snapshot['home']}"
    if snapshot["routed"]:
        title += " (routed)"
    kept = len(snapshot["child"])
    removed = sum(1 for info in snapshot["keys"].values() if not info["in_child"])
    policy = snapshot["policy"]
    status = "complete" if policy["complete"] else "PARTIAL (failing closed)"
    footer = [f"{kept} kept, {removed} removed; policy {status}"]
    footer.extend(f"problem: {p}" for p in policy["problems"])
    footer.extend(f"warning: {warning_text(w)}" for w in snapshot["warnings"])
    return title, rows, footer


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One difference between two snapshots, and each side's decision (None: never seen).

    ``change`` is ``added``, ``removed``, ``changed`` or ``incomparable`` (in
    both children, made under different fingerprint keys: a value that may
    differ and cannot be checked is a finding, never "no differences").
    """

    key: str
    change: str
    a: Mapping[str, Any] | None
    b: Mapping[str, Any] | None

    def rule(self, labels: tuple[str, str] = ("A", "B")) -> str:
        """Both sides' decisions in one line of text."""
        return f"{_rule(self.a, labels[0])}; {_rule(self.b, labels[1])}"

    def as_json(self) -> JsonDict:
        """``{key, change, a, b}``, each side ``{action, stage, reason, origin}`` or null."""
        return {"key": self.key, "change": self.change, "a": self.a, "b": self.b}


def _side(info: Mapping[str, Any] | None) -> JsonDict | None:
    if info is None:
        return None
    return {name: info.get(name) for name in ("action", "stage", "reason", "origin")}


def _rule(side: Mapping[str, Any] | None, label: str) -> str:
    if side is None:
        return f"{label}: never seen (not in its parent env or scope)"
    text = origin_text(side.get("origin"))
    origin = f" ({text})" if text else ""
    return f"{label}: {side['action']} at {side['stage']}, {side['reason']}{origin}"


def fingerprints_comparable(a: JsonDict, b: JsonDict) -> bool:
    """Both snapshots name the same fingerprint key (a snapshot without one compares to none)."""
    a_id, b_id = a.get("fingerprint_key_id"), b.get("fingerprint_key_id")
    return a_id is not None and a_id == b_id


KEYS_DIFFER_NOTE = (
    "the two sides were made under different fingerprint keys (or one names no key): "
    "the values of keys in both children cannot be compared (listed as incomparable)"
)
DIFF_CHANGES = ("added", "removed", "changed", "incomparable")


def partial_snapshot(snap: JsonDict) -> str | None:
    """Why ``snap`` holds part of a build (None: the whole build, fit to diff).

    ``explain --json --key/--only`` marks its output ``filtered``; a snapshot
    whose ``child`` names a key its ``keys`` lack lost keys another way (an
    older filtered output, or an edit).
    """
    filtered = snap.get("filtered")
    if filtered:
        return "is filtered (explain --json --key/--only)"
    keys = {k.upper() for k in snap["keys"]}
    missing = [name for name in snap["child"] if name.upper() not in keys]
    if missing:
        return f"names {len(missing)} child key(s) it has no decision for (a filtered output?)"
    return None


def diff_snapshots(a: JsonDict, b: JsonDict) -> list[DiffEntry]:
    """Keys added to, removed from and changed between two children's envs.

    "Changed" (a different fingerprint) is decided only when both sides were
    made under the same fingerprint key (``fingerprints_comparable``); else a
    key in both children is ``incomparable``.
    """
    comparable = fingerprints_comparable(a, b)
    # A variable is its exact name on POSIX (case twins are two), its name in any case where
    # names fold (a snapshot made on Windows says so; one made before it could say: POSIX).
    fold = bool(a.get("names_fold") or b.get("names_fold"))

    def name(key: str) -> str:
        return key.upper() if fold else key

    a_keys = {name(k): (k, v) for k, v in a["keys"].items()}
    b_keys = {name(k): (k, v) for k, v in b["keys"].items()}
    a_child = {name(k) for k in a["child"]}
    b_child = {name(k) for k in b["child"]}
    out: list[DiffEntry] = []
    for up in sorted(a_child | b_child):
        a_info = a_keys.get(up, (up, None))[1]
        b_info = b_keys.get(up, (up, None))[1]
        key = (b_keys.get(up) or a_keys.get(up) or (up, None))[0]
        sides = (_side(a_info), _side(b_info))
        if up not in a_child:
            out.append(DiffEntry(key, "added", *sides))
        elif up not in b_child:
            out.append(DiffEntry(key, "removed", *sides))
        elif not comparable:
            out.append(DiffEntry(key, "incomparable", *sides))
        elif (
            a_info is not None
            and b_info is not None
            and a_info["fingerprint"] != b_info["fingerprint"]
        ):
            out.append(DiffEntry(key, "changed", *sides))
    return out


def format_diff(
    entries: Iterable[DiffEntry],
    labels: tuple[str, str],
    *,
    comparable: bool = True,
    layout: Layout = Layout(),
) -> str:
    """A table of differences (or a line saying there are none), with the key note."""
    items = list(entries)
    head = printable(f"envscope diff: {labels[0]} → {labels[1]}")
    if not comparable:
        head += f"\nnote: {KEYS_DIFFER_NOTE}"
    if not items:
        return f"{head}\n\nno differences\n"
    rows, summary = diff_parts(items, labels)
    table = _table(rows, None, False, width=layout.width, shrink=(2,))
    return "\n".join([head, "", *table, "", summary]) + "\n"


def diff_parts(items: Sequence[DiffEntry], labels: tuple[str, str]) -> tuple[list[list[str]], str]:
    """``diff``'s table rows (header first) and its summary line, for any layout."""
    rows = [["KEY", "CHANGE", "WHY"], *([e.key, e.change, e.rule(labels)] for e in items)]
    counts = {c: sum(1 for e in items if e.change == c) for c in DIFF_CHANGES}
    summary = ", ".join(f"{n} {c}" for c, n in counts.items() if n or c != "incomparable")
    return rows, summary


@dataclass(frozen=True, slots=True)
class ScanReport:
    """What ``envscope scan`` found for one home (or one plugin directory)."""

    label: str
    secrets: Mapping[str, Sequence[str]]  # manifest path → declared secret names
    problems: Sequence[Problem]
    notes: Mapping[str, str] = field(default_factory=dict)  # manifest path → what the host does
    warnings: Sequence[Problem] = ()  # a key near a known one (``secert``): read on, reported


def format_scan(reports: Iterable[ScanReport]) -> str:
    """Every problem with file:line and field, and the declared secrets per plugin."""
    lines: list[str] = []
    total = 0
    for report in reports:
        lines.append(printable(f"{report.label}:"))
        for path in sorted({*report.secrets, *report.notes}):
            names = report.secrets.get(path)
            note = report.notes.get(path)
            if names is not None:
                lines.append(printable(f"  {path}: {', '.join(sorted(names)) or '(no secrets)'}"))
            if note is not None:  # what the host makes of it, under its names or on its own
                lines.append(printable(f"    {note}" if names is not None else f"  {path}: {note}"))
        for problem in report.problems:
            lines.append(printable(f"  problem: {problem}"))
        for warning in report.warnings:
            lines.append(printable(f"  warning: {warning}"))
        total += len(report.problems)
        lines.append("")
    lines.append(f"{total} problem{'s' if total != 1 else ''}")
    return "\n".join(lines) + "\n"


def _problem_json(p: Problem) -> JsonDict:
    return {"path": p.path, "line": p.line, "field": p.field, "message": p.message}


def scan_json(reports: Iterable[ScanReport]) -> JsonDict:
    """The scan as stable JSON."""
    return {
        "reports": [
            {
                "label": r.label,
                "secrets": {p: sorted(n) for p, n in sorted(r.secrets.items())},
                "notes": dict(sorted(r.notes.items())),
                "problems": [_problem_json(p) for p in r.problems],
                "warnings": [_problem_json(p) for p in r.warnings],
            }
            for r in reports
        ]
    }
