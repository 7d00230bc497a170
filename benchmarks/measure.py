"""Timing helpers of the benchmark: the run's sizes, a figure, interleaved timing, the floor.

See ``benchmarks/README.md`` for what the floor is.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.workloads import Workload
from envscope import Host

__all__ = [
    "FULL",
    "QUICK",
    "Config",
    "Figure",
    "alternating_children",
    "floor_for",
    "interleaved",
    "make_floor",
    "percentile",
    "ratio_figure",
]


@dataclass(frozen=True)
class Config:
    """How many calls each figure is measured over."""

    quick: bool
    warm_calls: int
    cold_reps: dict[int, int]
    w2_homes: int
    thread_builds: int
    thread_rounds: int
    import_runs: int


FULL = Config(
    quick=False,
    warm_calls=1500,
    cold_reps={10: 40, 100: 15, 1000: 7},
    w2_homes=100,
    thread_builds=30,
    thread_rounds=9,  # a ratio of two throughput ratios: more rounds, a steadier median
    import_runs=9,
)
QUICK = Config(
    quick=True,
    warm_calls=200,
    cold_reps={10: 5, 100: 3, 1000: 1},
    w2_homes=12,
    thread_builds=5,
    thread_rounds=2,
    import_runs=3,
)


@dataclass
class Figure:
    """One measured figure, its target and whether it is met (None: no target)."""

    key: str
    label: str
    value: float
    unit: str
    target: str = ""
    ok: bool | None = None
    detail: dict[str, object] = field(default_factory=dict)

    def shown(self) -> str:
        if self.unit == "x":
            return f"{self.value:.2f}x"
        if self.unit == "ms":
            return f"{self.value:.1f} ms"
        if self.unit == "MB/s":
            return f"{self.value:.0f} MB/s"
        if self.unit == "KiB":
            return f"{self.value:.1f} KiB"
        if self.unit == "MiB":
            return f"{self.value:.1f} MiB"
        return f"{self.value:g} {self.unit}".strip()


# -- timing ----------------------------------------------------------------------


def alternating_children(
    module: str, args: list[str], rounds: int, sides: tuple[str, ...] = ("baseline", "guarded")
) -> dict[str, list[str]]:
    """Each side's stdout, from ``python -m module --child SIDE *args``, the sides alternated.

    For what one process cannot undo (an audit hook stays installed): each side
    runs in interpreters of its own, first one side and then the other in
    turn, so load from elsewhere falls on both alike.
    """
    out: dict[str, list[str]] = {side: [] for side in sides}
    for i in range(rounds):
        for side in sides if i % 2 == 0 else sides[::-1]:
            done = subprocess.run(
                [sys.executable, "-m", module, "--child", side, *args],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            out[side].append(done.stdout)
    return out


def percentile(samples: list[int], q: float) -> float:
    """The ``q`` quantile (nearest rank) of some samples."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def interleaved(
    fns: dict[str, Callable[[], object]],
    calls: int,
    warmup: int = 10,
    *,
    after: Callable[[], object] | None = None,
) -> dict[str, list[int]]:
    """Time each function ``calls`` times, one call of each in turn (rotating the order).

    With ``after`` (a spawn), each call of each function follows a timed call of
    ``after``, as a host's loop runs them: it builds a child's env, spawns the
    child, waits for it, then builds the next on a CPU that sat idle through the
    wait (its caches cold). Those calls are the ``"spawn"`` samples.
    """
    for fn in fns.values():
        for _ in range(warmup):
            if after is not None:
                after()
            fn()
    samples: dict[str, list[int]] = {name: [] for name in fns}
    if after is not None:
        samples["spawn"] = []
    items = list(fns.items())
    clock = time.perf_counter_ns
    for i in range(calls):
        k = i % len(items)
        for name, fn in items[k:] + items[:k]:
            if after is not None:
                start = clock()
                after()
                samples["spawn"].append(clock() - start)
            start = clock()
            fn()
            samples[name].append(clock() - start)
    return samples


def ratio_figure(
    key: str,
    label: str,
    samples: dict[str, list[int]],
    num: str,
    den: str,
    target: float | None,
    *,
    at_most: bool = True,
) -> Figure:
    """``median(num) / median(den)``, with p99s and absolute medians in the detail."""
    med_n, med_d = statistics.median(samples[num]), statistics.median(samples[den])
    p99_n, p99_d = percentile(samples[num], 0.99), percentile(samples[den], 0.99)
    value = med_n / med_d
    ok = None
    shown = ""
    if target is not None:
        ok = value <= target if at_most else value >= target
        shown = f"{'<=' if at_most else '>='} {target:g}x"
    return Figure(
        key,
        label,
        value,
        "x",
        shown,
        ok,
        {
            "p99_ratio": p99_n / p99_d,
            f"{num}_median_us": med_n / 1e3,
            f"{num}_p99_us": p99_n / 1e3,
            f"{den}_median_us": med_d / 1e3,
            f"{den}_p99_us": p99_d / 1e3,
            "calls": len(samples[num]),
        },
    )


# -- the floor ------------------------------------------------------------------------


def make_floor(
    environ: dict[str, str], deny: frozenset[str], roots: tuple[str, str, str]
) -> Callable[[], dict[str, str]]:
    """The unavoidable cost of a warm spawn, written by hand.

    One ``scandir`` per manifest root of the bound home and one ``lstat`` per
    candidate manifest (the stamp), then one dict comprehension over the same
    snapshot against a precomputed frozen set. No other work.
    """
    bundled, platforms, flat = roots
    listing = ((bundled, ""), (platforms, ""), (flat, "platforms"))
    tail = os.sep + "plugin.yaml"
    lstat = os.lstat
    scandir = os.scandir

    def floor() -> dict[str, str]:
        for root, skip in listing:
            with scandir(root) as it:
                for entry in it:
                    if entry.is_dir() and entry.name != skip:
                        lstat(entry.path + tail)
        return {k: v for k, v in environ.items() if k.upper() not in deny}

    return floor


def floor_for(host: Host, workload: Workload, home: str) -> Callable[[], dict[str, str]]:
    """The floor of a routed build for ``home``: what the real build strips, precomputed.

    For ``profiles[0]`` it also checks the workload: every name it declares is stripped
    (other homes declare other plugins' names: B's manifest does not touch A's children).
    """
    environ = dict(workload.environ)
    with host.routed(home):
        child = host.build_subprocess_env(environ)
    kept = {k.upper() for k in child}
    deny = frozenset(k.upper() for k in environ if k.upper() not in kept)
    leaked = workload.declared & kept if home == workload.profiles[0] else set()
    if leaked:  # the workload must exercise stripping: every declared name is stripped
        raise SystemExit(f"benchmark workload broken: declared names kept: {sorted(leaked)}")
    return make_floor(environ, deny, workload.roots(home))
