"""Run the envscope benchmarks and check each figure against its target.

    python -m benchmarks.run            # the full run (make bench), < 90 s on 2 cores
    python -m benchmarks.run --quick    # a smoke run: fewer calls, a smaller W2

Prints a table and writes ``benchmarks/results.json``. Times are ratios
measured interleaved in the same run (call by call, in rotating order), so a
busy machine slows both sides alike; absolute times are reported with the
machine they came from. See ``docs/performance.md`` for what each figure means.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.workloads import (
    SEED,
    Tree,
    Workload,
    make_scaling_home,
    make_w1,
    make_w2,
)
from envscope import Catalog, Host, Trace
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem

RESULTS = Path(__file__).resolve().parent / "results.json"
COLD_1000_TARGET_MS = 500.0
HOST_IMPORT_TARGET_MS = 30.0


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
        if self.unit == "KiB":
            return f"{self.value:.1f} KiB"
        return f"{self.value:g} {self.unit}".strip()


# -- timing ----------------------------------------------------------------------


def percentile(samples: list[int], q: float) -> float:
    """The ``q`` quantile (nearest rank) of some samples."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def interleaved(
    fns: dict[str, Callable[[], object]], calls: int, warmup: int = 10
) -> dict[str, list[int]]:
    """Time each function ``calls`` times, one call of each in turn (rotating the order)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[int]] = {name: [] for name in fns}
    items = list(fns.items())
    clock = time.perf_counter_ns
    for i in range(calls):
        k = i % len(items)
        for name, fn in items[k:] + items[:k]:
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


def warm_figures(cfg: Config, catalog: Catalog, w1: Workload) -> list[Figure]:
    """F1/F2: warm routed terminal build (and with trace on) against the floor."""
    home = w1.profiles[0]
    host = w1.host(catalog)
    other_host = w1.host(catalog)
    floor = floor_for(host, w1, home)
    base = dict(w1.environ)
    figures = []
    with host.routed(home), other_host.routed(home):

        def warm() -> object:
            return host.build_subprocess_env(base)

        def traced() -> object:
            return host.build_subprocess_env(base, trace=Trace())

        # The same build with one value of the parent env changed on every spawn: the
        # build memo never hits, so this is the cost of running the four stages.
        other = dict(base)
        other["BENCH_SPAWN_SEQ"] = "2"
        bases = (dict(base, BENCH_SPAWN_SEQ="1"), other)
        flip = [0]

        def changing() -> object:  # its own host: its memo never evicts warm()'s build
            flip[0] ^= 1
            return other_host.build_subprocess_env(bases[flip[0]])

        samples = interleaved(
            {"warm": warm, "floor": floor, "trace": traced, "changing": changing},
            cfg.warm_calls,
        )
        figures.append(
            ratio_figure(
                "w1_warm_vs_floor",
                "W1 warm routed terminal build / floor",
                samples,
                "warm",
                "floor",
                1.5,
            )
        )
        figures.append(
            ratio_figure(
                "w1_changing_vs_floor",
                "  the same, parent env changed every spawn (no memo hit)",
                samples,
                "changing",
                "floor",
                None,
            )
        )
        figures.append(
            ratio_figure(
                "w1_trace_vs_floor",
                "W1 warm build with trace= / floor",
                samples,
                "trace",
                "floor",
                3.0,
            )
        )
    return figures


def w2_warm_figure(cfg: Config, catalog: Catalog, w2: Workload) -> Figure:
    """W2 (1,000 vars, 320 candidates, multiplexed) warm routed build against its floor."""
    home = w2.profiles[0]
    host = w2.host(catalog)
    floor = floor_for(host, w2, home)
    base = dict(w2.environ)
    with host.routed(home):
        samples = interleaved(
            {"warm": lambda: host.build_subprocess_env(base), "floor": floor},
            max(cfg.warm_calls // 5, 40),
        )
    return ratio_figure(
        "w2_warm_vs_floor", "W2 warm routed terminal build / floor", samples, "warm", "floor", None
    )


# -- cold builds -------------------------------------------------------------------------


def cold_figures(cfg: Config, catalog: Catalog, homes: dict[int, str]) -> list[Figure]:
    """F3: a policy built from nothing (new host) for one home of 10, 100, 1,000 manifests."""
    Host(homes[10], catalog=catalog).policy()  # loads pydantic and yaml once, outside the timing
    samples: dict[int, list[int]] = {n: [] for n in homes}
    for i in range(max(cfg.cold_reps.values())):  # interleaved: load hits every size alike
        for n, home in homes.items():
            if i < cfg.cold_reps[n]:
                gc.collect()
                start = time.perf_counter_ns()
                Host(home, catalog=catalog).policy()
                samples[n].append(time.perf_counter_ns() - start)
    medians: dict[int, float] = {}
    figures = []
    for n in homes:
        times = samples[n]
        medians[n] = statistics.median(times) / 1e6
        target = f"<= {COLD_1000_TARGET_MS:g} ms" if n == 1000 else ""
        figures.append(
            Figure(
                f"cold_{n}",
                f"cold policy build, {n:,} manifests",
                medians[n],
                "ms",
                target,
                medians[n] <= COLD_1000_TARGET_MS if n == 1000 else None,
                {
                    "us_per_manifest": medians[n] * 1e3 / n,
                    "p99_ms": percentile(times, 0.99) / 1e6,
                    "reps": len(times),
                },
            )
        )
    per_hi, per_lo = medians[1000] / 1000, medians[100] / 100
    linearity = per_hi / per_lo
    figures.append(
        Figure(
            "cold_linearity",
            "cold: cost per manifest at 1,000 / at 100",
            linearity,
            "x",
            "<= 1.5x",
            linearity <= 1.5,
            {
                "us_per_manifest_10": medians[10] * 1e3 / 10,
                "us_per_manifest_100": per_lo * 1e3,
                "us_per_manifest_1000": per_hi * 1e3,
                "slope_10_100_us": (medians[100] - medians[10]) / 90 * 1e3,
                "slope_100_1000_us": (medians[1000] - medians[100]) / 900 * 1e3,
            },
        )
    )
    return figures


# -- system calls --------------------------------------------------------------------


def syscall_figures(catalog: Catalog, w1: Workload, w2: Workload) -> list[Figure]:
    """F4: file-system calls of one warm build, counted through the seam."""
    figures = []
    for workload in (w1, w2):
        fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)  # every manifest settled
        host = workload.host(catalog, fs=fs)
        home = workload.profiles[0]
        base = dict(workload.environ)
        with host.routed(home):
            host.build_subprocess_env(base)
            fs.reset_counts()
            host.build_subprocess_env(base)
        calls = dict(fs.calls)
        got = calls.get("scandir", 0) + calls.get("stat", 0) + calls.get("open", 0)
        budget = len(workload.roots(home)) + workload.candidates(home)
        launch = len(workload.roots(workload.launch)) + workload.candidates(workload.launch)
        figures.append(
            Figure(
                f"{workload.name.lower()}_syscalls",
                f"{workload.name} syscalls per warm routed build",
                got,
                "calls",
                f"== {budget} (roots + candidates)",
                got == budget,
                {
                    "scandir": calls.get("scandir", 0),
                    "stat": calls.get("stat", 0),
                    "open": calls.get("open", 0),
                    "bound_home_budget": budget,
                    "bound_plus_launch_home": budget + launch,
                },
            )
        )
    return figures


# -- threads ---------------------------------------------------------------------


def _run_threads(work: list[Callable[[], None]]) -> float:
    """Run each callable in its own thread, started together; the wall time in seconds."""
    barrier = threading.Barrier(len(work) + 1)

    def body(fn: Callable[[], None]) -> None:
        barrier.wait()
        fn()

    with ThreadPoolExecutor(max_workers=len(work)) as pool:
        futures = [pool.submit(body, fn) for fn in work]
        barrier.wait()
        start = time.perf_counter()
        for future in futures:
            future.result()  # re-raises a worker's exception: a failure is never hidden
        return time.perf_counter() - start


def thread_figures(cfg: Config, catalog: Catalog, w2: Workload) -> list[Figure]:
    """F5: 8 threads building for 8 homes at once, against 1 thread building for all 8."""
    homes = w2.profiles[:8]
    host = w2.host(catalog)
    base = dict(w2.environ)
    n = cfg.thread_builds
    for home in homes:  # warm every home
        with host.routed(home):
            host.build_subprocess_env(base)

    def builds(home: str) -> Callable[[], None]:
        def run() -> None:
            with host.routed(home):
                for _ in range(n):
                    host.build_subprocess_env(base)

        return run

    def one_thread() -> None:
        for home in homes:
            builds(home)()

    floors = [floor_for(host, w2, home) for home in homes]

    def floor_work(floor: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                floor()

        return run

    def floors_one_thread() -> None:
        for floor in floors:
            floor_work(floor)()

    t1, t8, f1, f8 = [], [], [], []
    for _ in range(cfg.thread_rounds):  # interleaved, so load from elsewhere hits all four
        t1.append(_run_threads([one_thread]))
        f1.append(_run_threads([floors_one_thread]))
        t8.append(_run_threads([builds(h) for h in homes]))
        f8.append(_run_threads([floor_work(f) for f in floors]))
    total = n * len(homes)
    tp1, tp8 = total / statistics.median(t1), total / statistics.median(t8)
    fp1, fp8 = total / statistics.median(f1), total / statistics.median(f8)
    raw, floor_raw = tp8 / tp1, fp8 / fp1
    relative = raw / floor_raw
    detail: dict[str, object] = {
        "builds_per_s_1_thread": tp1,
        "builds_per_s_8_threads": tp8,
        "floor_calls_per_s_1_thread": fp1,
        "floor_calls_per_s_8_threads": fp8,
        "builds": total,
        "rounds": cfg.thread_rounds,
        "cpus": os.cpu_count(),
    }
    # The target is on the relative figure: a warm build is mostly lstat calls, each of
    # which hands the GIL to a waiting thread, so the bare floor itself loses throughput
    # with 8 threads (about half of it on a 2-vCPU VM). What envscope must not add is a
    # convoy of its own: its 8/1 ratio must stay within 80% of the floor's.
    return [
        Figure(
            "threads_8_vs_1",
            "8 threads x 8 homes (W2): throughput / 1 thread",
            raw,
            "x",
            "",
            None,
            {**detail, "floor_ratio_8_vs_1": floor_raw},
        ),
        Figure(
            "threads_floor_8_vs_1",
            "  the floor's own 8 threads / 1 thread",
            floor_raw,
            "x",
            "",
            None,
            detail,
        ),
        Figure(
            "threads_vs_floor",
            "  envscope's 8/1 ratio relative to the floor's",
            relative,
            "x",
            ">= 0.8x",
            relative >= 0.8,
            detail,
        ),
    ]


# -- import time and memory ------------------------------------------------------------


def _import_cumulative_us(stderr: str, top: str) -> int:
    """The cumulative microseconds of the ``top`` import in ``-X importtime`` output."""
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == top and parts[2].startswith(" " + top):
            return int(parts[1].strip())
    raise SystemExit(f"no {top!r} line in -X importtime output")


def _imports_after_site_us(stderr: str) -> int:
    """Cumulative microseconds of every top-level import the ``-c`` code made (after ``site``)."""
    total, started = 0, False
    for line in stderr.splitlines():
        parts = line.split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        name = parts[2]
        top = name.startswith(" ") and not name.startswith("  ")
        if started and top:
            total += int(parts[1].strip())
        elif top and name.strip() == "site":
            started = True
    if not started:
        raise SystemExit("no 'site' line in -X importtime output (run without -S)")
    return total


def import_figures(cfg: Config) -> list[Figure]:
    """F6a: ``python -X importtime -c "import envscope"``: the cumulative time of envscope."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compile once, as an installed package would be
    subprocess.run([sys.executable, "-c", "import envscope.cli"], env=env, check=True)

    def run(code: str) -> tuple[int, str]:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return _import_cumulative_us(out.stderr, "envscope"), out.stdout

    def run_host() -> int:
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "from envscope import Host"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return _imports_after_site_us(out.stderr)

    samples = [run("import envscope")[0] for _ in range(cfg.import_runs)]
    host_samples = [run_host() for _ in range(cfg.import_runs)]
    host_ms = statistics.median(host_samples) / 1e3
    heavy_code = (
        "import sys, envscope; "
        "print(','.join(m for m in ('pydantic', 'yaml', 'dotenv', 'cachetools') "
        "if m in sys.modules))"
    )
    heavy = run(heavy_code)[1].strip()
    value = statistics.median(samples) / 1e3
    return [
        Figure(
            "import_ms",
            "import envscope (cumulative, -X importtime)",
            value,
            "ms",
            "<= 15 ms",
            value <= 15.0,
            {"runs_ms": [s / 1e3 for s in samples], "public_names": "loaded on first use"},
        ),
        Figure(
            "import_host_ms",
            "from envscope import Host (every import it makes)",
            host_ms,
            "ms",
            f"<= {HOST_IMPORT_TARGET_MS:g} ms",
            host_ms <= HOST_IMPORT_TARGET_MS,
            {"runs_ms": [s / 1e3 for s in host_samples]},
        ),
        Figure(
            "import_heavy",
            "heavy modules after import envscope",
            len([m for m in heavy.split(",") if m]),
            "modules",
            "== 0 (no pydantic/yaml/dotenv/cachetools)",
            heavy == "",
            {"loaded": heavy},
        ),
    ]


def memory_per_home(catalog: Catalog, workload: Workload, measured: list[str]) -> float:
    """Bytes one more cached home costs (its stamp, declarations and policy), tracemalloc."""
    host = workload.host(catalog)
    host.policy(workload.launch)  # host-wide structures (shared bundled probe, memo) first
    host.policy(workload.profiles[0])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for home in measured:
            host.policy(home)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / len(measured)


def memory_figures(catalog: Catalog, w1: Workload, w2: Workload) -> list[Figure]:
    """F6b: the memory one cached home costs at W1 and W2."""
    kib1 = memory_per_home(catalog, w1, w1.profiles[1:3]) / 1024
    kib2 = memory_per_home(catalog, w2, w2.profiles[1:5]) / 1024
    return [
        Figure("w1_home_kib", "memory per cached home, W1", kib1, "KiB", "<= 64 KiB", kib1 <= 64),
        Figure(
            "w2_home_kib",
            "memory per cached home, W2 (320 manifests)",
            kib2,
            "KiB",
            "",
            None,
            {"per_manifest_bytes": kib2 * 1024 / w2.candidates(w2.profiles[0])},
        ),
    ]


# -- the warm path touches no pydantic or yaml ---------------------------------------


def warm_path_figure(catalog: Catalog, w1: Workload) -> Figure:
    """Calls into pydantic/yaml code and modules imported during warm builds (both 0)."""
    host = w1.host(catalog)
    base = dict(w1.environ)
    home = w1.profiles[0]
    calls: dict[str, int] = {}

    def profiler(frame: object, event: str, arg: object) -> None:
        if event != "call":
            return
        filename: str = frame.f_code.co_filename  # type: ignore[attr-defined]
        for lib in ("pydantic", "yaml"):
            if f"{os.sep}{lib}" in filename:
                calls[lib] = calls.get(lib, 0) + 1

    with host.routed(home):
        host.build_subprocess_env(base)
        before = set(sys.modules)
        sys.setprofile(profiler)
        try:
            for _ in range(5):
                host.build_subprocess_env(base)
                host.build_subprocess_env(base, trace=Trace())
        finally:
            sys.setprofile(None)
        new = sorted(set(sys.modules) - before)
    total = sum(calls.values()) + len(new)
    return Figure(
        "warm_pydantic",
        "pydantic/yaml calls + new imports on the warm path",
        total,
        "",
        "== 0",
        total == 0,
        {"calls": calls, "new_modules": new},
    )


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
        figures.append(warm_path_figure(catalog, w1))
        step("warm builds (W2)")
        figures.append(w2_warm_figure(cfg, catalog, w2))
        step("threads")
        figures += thread_figures(cfg, catalog, w2)
        step("memory")
        figures += memory_figures(catalog, w1, w2)
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
