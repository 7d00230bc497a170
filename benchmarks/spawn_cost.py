"""Issue 22's figures: what a build costs next to the spawn it serves (``make bench``).

Every figure is a same-run ratio to spawning ``/bin/true`` (``subprocess.run``),
each build timed right after a spawn as a host's loop runs it (``interleaved(..., after=spawn)``:
the CPU sat idle through the child's wait, its caches cold), one loop per host
(a host runs only its own builds between its spawns), or a memory growth:

- warm routed build with the change-notification gate, at W1 and at 1,000
  manifests per home, ≤ 10% of a spawn (the stamp path's figures beside them);
- a fresh ``routed()`` binding plus one build (a cron runner's spawn) ≤ 25% of
  a spawn at W1;
- RSS growth of a multiplexed host touching 10,000 homes ≤ 32 MiB (measured in
  a child process, so the benchmark's own heap does not count);
- ``host.explain`` ≤ 1.5x a traced build without fingerprints.

``python -m benchmarks.spawn_cost --rss N DIR`` is the child the RSS figure runs.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.measure import Config, Figure, interleaved, ratio_figure
from benchmarks.workloads import Workload
from envscope import Catalog, Host, Trace

RSS_HOMES = 10_000
RSS_TARGET_MIB = 32.0
WARM_SHARE = 0.10
FRESH_SHARE = 0.25
EXPLAIN_RATIO = 1.5
TRUE = "/bin/true"
_HELD = contextlib.ExitStack()  # the warm figures' routed() bindings (a dropped one would reset)


def spawn() -> object:
    """The yardstick: spawn ``/bin/true`` and wait for it."""
    return subprocess.run([TRUE], check=False)


def _warm_pair(catalog: Catalog, workload: Workload) -> tuple[Callable[[], object], ...]:
    """A warm routed build of ``profiles[0]`` with the gate and with the stamp only."""
    home = workload.profiles[0]
    base = dict(workload.environ)
    gated = workload.host(catalog)
    stamped = workload.host(catalog, change_notification=False)
    fns = []
    for host in (gated, stamped):
        _HELD.enter_context(host.routed(home))  # bound for the rest of the run

        def warm(host: Host = host) -> object:
            return host.build_subprocess_env(base)

        fns.append(warm)
    return tuple(fns)


def warm_figures(cfg: Config, catalog: Catalog, w1: Workload, m1000: Workload) -> list[Figure]:
    """Warm routed builds / spawn, W1 and 1,000 manifests per home, gate and stamp."""
    gate1, stamp1 = _warm_pair(catalog, w1)
    gate3, stamp3 = _warm_pair(catalog, m1000)
    calls = max(cfg.warm_calls // 5, 60)
    # Each host in its own loop, as a host runs only its own builds between its spawns
    # (another host's stamp of 1,000 manifests would evict this one's caches).
    gated1 = interleaved({"gate1": gate1}, calls, after=spawn)
    gated1["gate1_hot"] = interleaved({"gate1": gate1}, calls)["gate1"]
    gated3 = interleaved({"gate3": gate3}, calls, after=spawn)
    stamped1 = interleaved({"stamp1": stamp1}, calls, after=spawn)
    stamped3 = interleaved({"stamp3": stamp3}, calls, after=spawn)
    return [
        ratio_figure(
            "w1_gate_warm_vs_spawn",
            "W1 warm routed build (gate) / spawn",
            gated1,
            "gate1",
            "spawn",
            WARM_SHARE,
        ),
        ratio_figure(
            "w1_stamp_warm_vs_spawn", "  the same, stamp only", stamped1, "stamp1", "spawn", None
        ),
        ratio_figure(
            "w1_gate_hot_vs_spawn",
            "  the same, gate, builds back to back (caches warm)",
            gated1,
            "gate1_hot",
            "spawn",
            None,
        ),
        ratio_figure(
            "m1000_gate_warm_vs_spawn",
            "warm routed build, 1,000 manifests/home (gate) / spawn",
            gated3,
            "gate3",
            "spawn",
            WARM_SHARE,
        ),
        ratio_figure(
            "m1000_stamp_warm_vs_spawn", "  the same, stamp only", stamped3, "stamp3", "spawn", None
        ),
    ]


def fresh_and_explain_figures(cfg: Config, catalog: Catalog, w1: Workload) -> list[Figure]:
    """A fresh routed() + build per spawn (gate, stamp), and explain / a traced build."""
    home = w1.profiles[0]
    base = dict(w1.environ)
    gated = w1.host(catalog)
    stamped = w1.host(catalog, change_notification=False)
    tracer = w1.host(catalog)

    def fresh(host: Host) -> Callable[[], object]:
        def run() -> object:
            with host.routed(home):
                return host.build_subprocess_env(base)

        return run

    def explain() -> object:
        with tracer.routed(home):
            return tracer.explain(base)

    def traced() -> object:
        with tracer.routed(home):
            return tracer.build_subprocess_env(base, trace=Trace())

    calls = max(cfg.warm_calls // 5, 60)
    samples = interleaved({"fresh": fresh(gated)}, calls, after=spawn)  # one host per loop
    stamp_samples = interleaved({"fresh_stamp": fresh(stamped)}, calls, after=spawn)
    samples |= interleaved({"explain": explain, "traced": traced}, calls)
    return [
        ratio_figure(
            "w1_fresh_routed_vs_spawn",
            "W1 fresh routed() + build (gate) / spawn",
            samples,
            "fresh",
            "spawn",
            FRESH_SHARE,
        ),
        ratio_figure(
            "w1_fresh_routed_stamp_vs_spawn",
            "  the same, stamp only",
            stamp_samples,
            "fresh_stamp",
            "spawn",
            None,
        ),
        ratio_figure(
            "explain_vs_traced",
            "host.explain / traced build without fingerprints",
            samples,
            "explain",
            "traced",
            EXPLAIN_RATIO,
        ),
    ]


# -- RSS at 10,000 homes (a child process) -----------------------------------------------


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def rss_child(homes: int, where: Path) -> dict[str, float]:
    """Write ``homes`` homes (a .env, one platform plugin each), route a build to each."""
    launch = where / "launch"
    launch.mkdir()
    (launch / ".env").write_text("LAUNCH_SETTING=1\n")
    paths = []
    for i in range(homes):
        home = where / f"h{i:05d}"
        plugin = home / "plugins" / "platforms" / f"chat{i}"
        plugin.mkdir(parents=True)
        (home / ".env").write_text(f"HOME_MARK={i}\nHOME_SETTING=v\n")
        (plugin / "plugin.yaml").write_text(
            f"requires_env: [CHAT{i}_BOT_TOKEN, {{name: CHAT{i}_DSN, secret: true}}]\n"
        )
        paths.append(str(home))
    time.sleep(3.2)  # the racy window: every file settled, as on a long-running host
    environ = {"PATH": "/usr/bin", "HOME": "/root", **{f"VAR_{i}": "x" * 20 for i in range(150)}}
    host = Host(launch, catalog=Catalog.default(), environ=environ, multiplex=True)
    host.load_launch_env()
    with host.routed(paths[0]):
        host.build_subprocess_env()
    gc.collect()
    before = _rss_kib()
    started = time.perf_counter()
    for path in paths:
        with host.routed(path):
            host.build_subprocess_env()
    seconds = time.perf_counter() - started
    gc.collect()
    return {
        "growth_mib": (_rss_kib() - before) / 1024,
        "seconds": seconds,
        "retained_homes": float(host._homes.manifests().retained_homes),
    }


def rss_figure(homes: int = RSS_HOMES, tmp: Path | None = None) -> Figure:
    """RSS growth of a multiplexed host touching ``homes`` homes (run in a child process)."""
    with tempfile.TemporaryDirectory(prefix="envscope-rss-", dir=tmp) as where:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.spawn_cost", "--rss", str(homes), where],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
    found = json.loads(out.stdout)
    growth = float(found["growth_mib"])
    return Figure(
        "rss_10000_homes",
        f"RSS growth, a multiplexed host touching {homes:,} homes",
        growth,
        "MiB",
        f"<= {RSS_TARGET_MIB:g} MiB",
        growth <= RSS_TARGET_MIB,
        found,
    )


def main(argv: list[str] | None = None) -> int:
    """The RSS child: ``--rss N DIR`` prints its figure as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spawn_cost")
    parser.add_argument("--rss", type=int, required=True)
    parser.add_argument("where", type=Path)
    args = parser.parse_args(argv)
    print(json.dumps(rss_child(args.rss, args.where)))
    return 0


if __name__ == "__main__":
    os.environ.pop("ENVSCOPE_CONFIG", None)
    sys.exit(main())
