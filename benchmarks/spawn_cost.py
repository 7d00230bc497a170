"""Issue 22's figures: what a build costs next to the spawn it serves (``make bench``).

Every figure is a same-run ratio to spawning ``/bin/true`` (``subprocess.run``),
each build timed right after a spawn as a host's loop runs it (``interleaved(..., after=spawn)``:
the CPU sat idle through the child's wait, its caches cold), one loop per host
(a host runs only its own builds between its spawns), or a memory growth:

- warm routed build with the change-notification gate, at W1 and at 1,000
  manifests per home, ≤ 10% of a spawn (the stamp path's figures beside them);
- W1 routed builds the build memo cannot answer: ``extra={"TASK_ID": str(n)}``
  new on every build (a kanban worker's spawn) ≤ 10% of a spawn, and the
  host's environ changed by one value since the previous build ≤ 15%;
- a fresh ``routed()`` binding plus one build (a cron runner's spawn) ≤ 20% of
  a spawn at W1, ≤ 25% at W2;
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
TASK_SHARE = 0.10
PARENT_SHARE = 0.15
FRESH_SHARE = 0.20  # a fresh routed() + build, W1 (the paid-once-per-change target)
W2_FRESH_SHARE = 0.25  # the same on the multiplexed W2 host (1,000 variables, 320 candidates)
SCOPE_SHARE = 0.25  # routed(home, scope=the same mapping) + build
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


def changing_figures(cfg: Config, catalog: Catalog, w1: Workload) -> list[Figure]:
    """W1 routed builds with no memo hit / spawn: ``extra`` new, or the host's environ changed.

    Each host builds from its own environ (no ``base``) inside ``routed(profiles[0])``,
    in a loop of its own: the kanban worker's spawn passes ``extra={"TASK_ID": str(n)}``, a new
    value every time; the other host's environ has one ordinary variable set to a new
    value before each build (the env still has W1's 150 variables).
    """
    home = w1.profiles[0]
    tasks = w1.host(catalog)
    environ = dict(w1.environ)
    parent = w1.host(catalog, environ=environ)
    name = next(reversed(environ))  # an ordinary variable (the generator adds those last)
    seq = [0]

    def task() -> object:
        seq[0] += 1
        return tasks.build_subprocess_env(extra={"TASK_ID": str(seq[0])})

    def changed() -> object:
        seq[0] += 1
        environ[name] = str(seq[0])
        return parent.build_subprocess_env()

    calls = max(cfg.warm_calls // 5, 60)
    with tasks.routed(home), parent.routed(home):
        if name not in parent.build_subprocess_env() or name in w1.declared:
            raise SystemExit(f"benchmark workload broken: {name} is not an ordinary variable")
        if tasks.build_subprocess_env(extra={"TASK_ID": "0"}).get("TASK_ID") != "0":
            raise SystemExit("benchmark workload broken: extra TASK_ID not in the child")
        task_samples = interleaved({"task": task}, calls, after=spawn)  # one host per loop
        parent_samples = interleaved({"parent": changed}, calls, after=spawn)
    return [
        ratio_figure(
            "w1_task_id_vs_spawn",
            'W1 routed build, extra={"TASK_ID": new} (gate) / spawn',
            task_samples,
            "task",
            "spawn",
            TASK_SHARE,
        ),
        ratio_figure(
            "w1_parent_changed_vs_spawn",
            "W1 routed build, host environ: one value new (gate) / spawn",
            parent_samples,
            "parent",
            "spawn",
            PARENT_SHARE,
        ),
    ]


def fresh_and_explain_figures(
    cfg: Config, catalog: Catalog, w1: Workload, w2: Workload
) -> list[Figure]:
    """A fresh routed() + build per spawn (W1 gate and stamp, W2 gate), explain / traced."""
    home = w1.profiles[0]
    base = dict(w1.environ)
    gated = w1.host(catalog)
    stamped = w1.host(catalog, change_notification=False)
    tracer = w1.host(catalog)
    gated2 = w2.host(catalog)

    def fresh(host: Host, home: str = home, base: dict[str, str] = base) -> Callable[[], object]:
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

    scoped = w1.host(catalog)
    given = {f"PROFILE_SETTING_{i}": f"profile-value-{i}" for i in range(6)}  # a caller's scope

    def fresh_scoped() -> object:
        with scoped.routed(home, scope=given):
            return scoped.build_subprocess_env(base)

    calls = max(cfg.warm_calls // 5, 60)
    samples = interleaved({"fresh": fresh(gated)}, calls, after=spawn)  # one host per loop
    scope_samples = interleaved({"fresh_scope": fresh_scoped}, calls, after=spawn)
    stamp_samples = interleaved({"fresh_stamp": fresh(stamped)}, calls, after=spawn)
    w2_fresh = fresh(gated2, w2.profiles[0], dict(w2.environ))
    w2_samples = interleaved({"fresh_w2": w2_fresh}, calls, after=spawn)
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
            "w1_fresh_routed_scope_vs_spawn",
            "W1 fresh routed(home, scope=the same mapping) + build / spawn",
            scope_samples,
            "fresh_scope",
            "spawn",
            SCOPE_SHARE,
        ),
        ratio_figure(
            "w2_fresh_routed_vs_spawn",
            "W2 fresh routed() + build (gate) / spawn",
            w2_samples,
            "fresh_w2",
            "spawn",
            W2_FRESH_SHARE,
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
