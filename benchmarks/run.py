"""Run the envscope benchmarks and check each figure against its target.

    python -m benchmarks.run            # the full run (make bench), < 90 s on 2 cores
    python -m benchmarks.run --quick    # a smoke run: fewer calls, a smaller W2

Prints a table and writes ``benchmarks/results.json``. Times are ratios
measured interleaved in the same run (call by call, in rotating order), so a
busy machine slows both sides alike; absolute times are reported with the
machine they came from. See ``benchmarks/README.md`` for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.cold_start import cold_start_figures
from benchmarks.figures import (
    cold_figures,
    import_figures,
    memory_figures,
    os_environ_figure,
    syscall_figures,
    thread_figures,
    w2_warm_figure,
    warm_figures,
    warm_path_figure,
)
from benchmarks.guard_cost import guard_figure
from benchmarks.guard_spawn_cost import guard_spawn_figures
from benchmarks.measure import FULL, QUICK, Figure
from benchmarks.redact_cost import redact_figures
from benchmarks.source_cost import cold_fetch_figures
from benchmarks.source_cost import warm_figures as source_warm_figures
from benchmarks.spawn_cost import changing_figures, fresh_and_explain_figures, rss_figure
from benchmarks.spawn_cost import warm_figures as spawn_warm_figures
from benchmarks.workloads import SEED, Tree, make_scaling_home, make_w1, make_w2
from envscope import Catalog

RESULTS = Path(__file__).resolve().parent / "results.json"


# -- the run ----------------------------------------------------------------------


def machine() -> dict[str, object]:
    """Where the absolute times came from."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


@dataclass
class Step:
    """Progress on stderr, so the table on stdout stays clean."""

    started: float = field(default_factory=time.perf_counter)

    def __call__(self, what: str) -> None:
        print(f"[{time.perf_counter() - self.started:5.1f}s] {what}", file=sys.stderr, flush=True)


def table(figures: list[Figure]) -> Iterator[str]:
    """The printed table: figure, value, p99 ratio where there is one, target, verdict."""
    rows = [("figure", "value", "p99", "target", "result")]
    for f in figures:
        p99 = f.detail.get("p99_ratio")
        verdict = "info" if f.ok is None else ("PASS" if f.ok else "FAIL")
        rows.append(
            (
                f.label,
                f.shown(),
                f"{p99:.2f}x" if isinstance(p99, float) else "",
                f.target,
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for n, row in enumerate(rows):
        yield "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        if n == 0:
            yield "  ".join("-" * w for w in widths)


def default_tmp() -> Path | None:
    """``/dev/shm`` (a tmpfs) when usable, else None (the system temp dir)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run (fewer calls)")
    parser.add_argument("--seed", type=int, default=SEED, help="workload seed")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write results")
    parser.add_argument(
        "--tmp",
        type=Path,
        default=default_tmp(),
        help="where to generate the workloads (default: /dev/shm when it exists, else the "
        "system temp dir: W2 is 30,000 files, slow to write and delete on a disk)",
    )
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    step = Step()
    info = machine()
    catalog = Catalog.default()
    figures: list[Figure] = []
    info["tmp"] = str(args.tmp) if args.tmp else "(system default)"
    with tempfile.TemporaryDirectory(prefix="envscope-bench-", dir=args.tmp) as tmp:
        root = Path(tmp)
        step("generating workloads")
        w1, t1 = make_w1(root, catalog, args.seed)
        w2, t2 = make_w2(root, catalog, args.seed, homes=cfg.w2_homes)
        scaling: dict[int, str] = {}
        trees: list[Tree] = [t1, t2]
        for n in (10, 100, 1000):
            scaling[n], tree = make_scaling_home(root, n, args.seed)
            trees.append(tree)
        # W1 with 1,000 plugins in each home (150 variables): the gate's second figure
        m1000, t3 = make_w1(root, catalog, args.seed, plugins=1000)
        trees.append(t3)
        step(f"{sum(t.files for t in trees):,} files written; import time")
        figures += import_figures(cfg)  # while the fresh files settle
        step("cold policy builds")
        figures += cold_figures(cfg, catalog, scaling)
        step("waiting out the racy window")
        for tree in trees:
            tree.settle()
        step("system calls")
        figures += syscall_figures(catalog, w1, w2)
        step("warm builds (W1)")
        figures += warm_figures(cfg, catalog, w1)
        figures.append(os_environ_figure(cfg, catalog, w1))
        figures.append(warm_path_figure(catalog, w1))
        step("warm builds and fresh bindings against a spawn (issue 22)")
        figures += spawn_warm_figures(cfg, catalog, w1, m1000)
        figures += changing_figures(cfg, catalog, w1)
        figures += fresh_and_explain_figures(cfg, catalog, w1, w2)
        step("secret sources: warm builds with and without, cold fetches")
        figures += source_warm_figures(cfg, catalog, w1)
        figures += cold_fetch_figures(cfg.quick)
        step("warm builds (W2)")
        figures.append(w2_warm_figure(cfg, catalog, w2))
        step("threads")
        figures += thread_figures(cfg, catalog, w2)
        step("memory")
        figures += memory_figures(catalog, w1, w2)
        step(f"RSS of a host touching {10_000 if not cfg.quick else 1_000:,} homes (a child)")
        figures.append(rss_figure(10_000 if not cfg.quick else 1_000, args.tmp))
        step("cold starts (children)")
        figures += cold_start_figures(cfg, w1, w2, m1000)
        step("redaction")
        figures += redact_figures(cfg.quick)
        step("runtime guard")
        figures.append(guard_figure(cfg.quick))
        figures.extend(guard_spawn_figures(cfg.quick))
        step("removing the workloads")
    info["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    info["seconds"] = round(time.perf_counter() - step.started, 1)
    for line in table(figures):
        print(line)
    failed = [f.label for f in figures if f.ok is False]
    print(
        f"\n{len(figures) - len(failed)} of {len(figures)} figures pass or are informational; "
        f"{len(failed)} fail. {info['cpus']} CPUs ({info['cpu']}), Python {info['python']}, "
        f"{info['seconds']} s."
    )
    args.json.write_text(
        json.dumps(
            {
                "quick": cfg.quick,
                "seed": args.seed,
                "machine": info,
                "figures": [asdict(f) for f in figures],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
