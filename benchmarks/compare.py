"""Compare ``make bench`` results: each figure's median over some runs before and after.

``python -m benchmarks.compare --before a1.json a2.json --after b1.json b2.json``
prints, for every figure both sides measured, the runs' values, the ratio of the
medians (after / before) and whether it moved by more than ``--within`` (10%
by default): ``worse`` or ``better`` where the figure's target says which way is
good, ``moved`` for an informational figure. Run the two trees' benches alternately on one
machine: the figures are same-run ratios or absolute times, and only a
comparison on the same machine means anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def _values(paths: list[Path]) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Figure key -> its value in each run, and its target (``benchmarks.run --json`` files)."""
    runs: dict[str, list[float]] = {}
    targets: dict[str, str] = {}
    for path in paths:
        for figure in json.loads(path.read_text())["figures"]:
            runs.setdefault(figure["key"], []).append(float(figure["value"]))
            targets[figure["key"]] = str(figure.get("target") or "")
    return runs, targets


def _mark(ratio: float, target: str, within: float) -> str:
    """``worse``/``better`` where the target says which way is good, else ``moved``."""
    if abs(ratio - 1) <= within:
        return ""
    if target.startswith("<="):
        return "  worse" if ratio > 1 else "  better"
    if target.startswith(">="):
        return "  worse" if ratio < 1 else "  better"
    return "  moved"


def compare(before: list[Path], after: list[Path], within: float) -> list[str]:
    """One line per figure both sides hold: values, median ratio, and a mark when it moved."""
    (old, _), (new, targets) = _values(before), _values(after)
    lines = [f"{'figure':34} {'before':>26} {'after':>26} {'after/before':>12}"]
    for key, values in new.items():
        if key not in old:
            continue
        a, b = statistics.median(old[key]), statistics.median(values)
        ratio = b / a if a else (1.0 if b == a else float("inf"))
        moved = _mark(ratio, targets[key], within)
        shown_a = " / ".join(f"{v:.3g}" for v in old[key])
        shown_b = " / ".join(f"{v:.3g}" for v in values)
        lines.append(f"{key:34} {shown_a:>26} {shown_b:>26} {ratio:12.2f}{moved}")
    only = [key for key in new if key not in old]
    if only:
        lines.append("after only: " + ", ".join(only))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the comparison."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare")
    parser.add_argument("--before", type=Path, nargs="+", required=True)
    parser.add_argument("--after", type=Path, nargs="+", required=True)
    parser.add_argument("--within", type=float, default=0.10, help="the share a figure may move")
    args = parser.parse_args(argv)
    for line in compare(args.before, args.after, args.within):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
