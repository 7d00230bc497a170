"""Issue 29's cold-start figures: what a new host and a home's first build cost (``make bench``).

Each side runs in fresh child processes, so no earlier figure's caches count:

- **a new Host's first routed build** (W1: a launch home and a profile of 30
  manifests each, 20 bundled): ``Host(...)``, ``load_launch_env()`` and the
  first routed build of the profile, in a *started* process (envscope
  imported, the default catalog and the format table loaded, a host over
  these homes made and used before: a process that makes one more ``Host``)
  / a spawn of ``/bin/true`` timed in the same child; goal ≤ 3×; the
  process's very first ``Host`` (the first use of the manifest modules, every
  manifest parsed) beside it;
- **the first build for a home on a started host** (W1, W2 and M1000, W1
  with 1,000 manifests per home): a home the host never built, against the
  hermes model's first spawn for it; goal ≤ 1×;
- **a new process** (info): import, the default catalog, the host and its
  first routed build, against the hermes model's cold spawn (importing
  python-dotenv and PyYAML, its launch and bundled manifests, its first
  spawn's env).

The hermes model is what a hermes-style host does to build a child's env for
a home: read the home's ``.env`` with python-dotenv (``dotenv_values``), read
each plugin manifest of the home with ``yaml.safe_load`` (the idiom hermes
and most hosts use: PyYAML's pure-Python safe loader) to learn the names its
plugins require, and copy the parent env without a blocklist (the catalog's
explicit names, made once, as hermes builds its provider blocklist at
import) and those names, the ``.env`` laid over it. It decides nothing else:
no value search, no residue, no pins, no fail-closed scan; a floor, not a peer
with envscope's guarantees.

``python -m benchmarks.cold_start --child KIND WORKLOAD.json`` is the child.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the children import envscope inside their timing, never here
    from benchmarks.measure import Config, Figure
    from benchmarks.workloads import Workload
    from envscope import Catalog, Host

NEW_HOST_RATIO = 3.0
FIRST_BUILD_RATIO = 1.0
TRUE = "/bin/true"
_ROOT = Path(__file__).resolve().parent.parent


def _workload_file(workload: Workload, where: Path) -> Path:
    path = where / f"{workload.name}.json"
    fields = ("name", "launch", "profiles", "bundled", "managed", "environ", "multiplex")
    path.write_text(json.dumps({k: getattr(workload, k) for k in fields}))
    return path


def _spawn_ns(times: int = 15) -> float:
    """The median of ``times`` spawns of ``/bin/true`` (this process, now)."""
    samples = []
    for _ in range(times):
        start = time.perf_counter_ns()
        subprocess.run([TRUE], check=False)
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples)


# -- the hermes model ---------------------------------------------------------------------


def _manifests(root: str) -> list[str]:
    """``<root>/<plugin>/plugin.yaml`` of every plugin directory, sorted."""
    found: list[str] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        return found
    for entry in entries:
        candidate = os.path.join(entry.path, "plugin.yaml")
        if entry.is_dir() and os.path.isfile(candidate):
            found.append(candidate)
    return found


def _required(paths: list[str]) -> set[str]:
    """The names the manifests at ``paths`` require (``yaml.safe_load``)."""
    import yaml

    names: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            doc = yaml.safe_load(handle) or {}
        for key in ("requires_env", "optional_env"):
            for item in doc.get(key) or ():
                name = item.get("name") if isinstance(item, dict) else item
                if isinstance(name, str):
                    names.add(name.upper())
    return names


def model_first_env(home: str, base: dict[str, str], blocked: frozenset[str]) -> dict[str, str]:
    """The hermes model's child env for a home it has not served before."""
    from dotenv import dotenv_values

    values = dotenv_values(os.path.join(home, ".env"))
    plugins = os.path.join(home, "plugins")
    required = _required(_manifests(os.path.join(plugins, "platforms")) + _manifests(plugins))
    env = {k: v for k, v in base.items() if k.upper() not in blocked and k.upper() not in required}
    env.update({k: v for k, v in values.items() if v is not None})
    return env


def _blocklist() -> frozenset[str]:
    from envscope import Catalog

    return frozenset(Catalog.default().names)  # upper-cased explicit names


# -- the children -------------------------------------------------------------------------


def _first_routed_build(w: dict[str, object], catalog: Catalog) -> Host:
    """The workload's host, made, loaded and built for its first profile (the timed work)."""
    from envscope import Host

    host = Host(
        str(w["launch"]),
        catalog=catalog,
        managed_env_file=str(w["managed"]),
        bundled_plugins=str(w["bundled"]),
        environ=dict(w["environ"]),  # type: ignore[call-overload]
        multiplex=bool(w["multiplex"]),
    )
    host.load_launch_env()
    with host.routed(w["profiles"][0]):  # type: ignore[index]
        host.build_subprocess_env()
    return host


def _started_child(w: dict[str, object]) -> dict[str, float]:
    """A started process: a new Host's first routed build, then a home's first build, each side."""
    import dotenv  # noqa: F401 - the model's imports, made before any timing
    import yaml  # noqa: F401

    from envscope import Catalog
    from envscope.policy.formats import format_table

    catalog = Catalog.default()
    format_table()
    blocked = _blocklist()
    environ = dict(w["environ"])  # type: ignore[call-overload]
    profiles: list[str] = w["profiles"]  # type: ignore[assignment]

    def new_host() -> tuple[Host, int]:
        start = time.perf_counter_ns()
        host = _first_routed_build(w, catalog)
        return host, time.perf_counter_ns() - start

    host, first_host = new_host()
    again = statistics.median(new_host()[1] for _ in range(5))  # the process built them before
    firsts: list[float] = []
    models: list[float] = []
    pairs = [(profiles[i], profiles[i + 1]) for i in range(1, len(profiles) - 1, 2)][:9]
    for n, (one, other) in enumerate(pairs):  # each home built once, by one side
        ours, theirs = (one, other) if n % 2 == 0 else (other, one)
        start = time.perf_counter_ns()
        with host.routed(ours):
            host.build_subprocess_env()
        firsts.append(time.perf_counter_ns() - start)
        start = time.perf_counter_ns()
        model_first_env(theirs, environ, blocked)
        models.append(time.perf_counter_ns() - start)
    return {
        "first_host_ns": first_host,
        "new_host_ns": again,
        "first_build_ns": statistics.median(firsts),
        "model_first_ns": statistics.median(models),
        "pairs": len(pairs),
        "spawn_ns": _spawn_ns(),
    }


def _cold_child(w: dict[str, object]) -> dict[str, float]:
    """A new process: everything from the first import to the first routed build."""
    start = time.perf_counter_ns()
    from envscope import Catalog

    _first_routed_build(w, Catalog.default())
    return {"cold_ns": time.perf_counter_ns() - start, "spawn_ns": _spawn_ns()}


def _model_cold_child(w: dict[str, object]) -> dict[str, float]:
    """The hermes model's new process: its imports, launch and bundled plugins, a first env."""
    start = time.perf_counter_ns()
    from dotenv import dotenv_values

    blocked = _blocklist_of_names()
    launch = str(w["launch"])
    os.environ.update({k: v for k, v in dotenv_values(os.path.join(launch, ".env")).items() if v})
    blocked |= _required(_manifests(str(w["bundled"])))
    model_first_env(w["profiles"][0], dict(w["environ"]), frozenset(blocked))  # type: ignore[index,call-overload]
    return {"cold_ns": time.perf_counter_ns() - start}


def _blocklist_of_names() -> set[str]:
    """The model's provider blocklist, made at its import (a literal set in hermes)."""
    return set(json.loads(os.environ["BENCH_BLOCKLIST"]))


def _run_child(kind: str, workload: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.cold_start", "--child", kind, str(workload)],
        capture_output=True,
        text=True,
        check=True,
        cwd=_ROOT,
        env=env,
    )
    found: dict[str, float] = json.loads(out.stdout)
    return found


def cold_start_figures(
    cfg: Config, w1: Workload, w2: Workload, m1000: Workload | None = None
) -> list[Figure]:
    """The new-Host, first-build-per-home (W1, W2, M1000) and new-process figures."""
    from benchmarks.measure import Figure

    reps = 3 if cfg.quick else 7
    with tempfile.TemporaryDirectory(prefix="envscope-cold-") as tmp:
        where = Path(tmp)
        f1, f2 = _workload_file(w1, where), _workload_file(w2, where)
        started1 = [_run_child("started", f1) for _ in range(reps)]
        started2 = [_run_child("started", f2) for _ in range(2 if cfg.quick else 3)]
        started3 = [] if m1000 is None else [_run_child("started", _workload_file(m1000, where))]
        env = {**os.environ, "BENCH_BLOCKLIST": json.dumps(sorted(_blocklist()))}
        cold, model = [], []
        for _ in range(reps):  # alternating: the machine's state is shared
            cold.append(_run_child("cold", f1))
            model.append(_run_child("model-cold", f1, env))

    def med(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    def goal(
        key: str, label: str, value: float, at_most: float, detail: dict[str, object]
    ) -> Figure:
        return Figure(key, label, value, "x", f"<= {at_most:g}x", value <= at_most, detail)

    figures = [
        goal(
            "w1_new_host_vs_spawn",
            "W1 new Host + load + first routed build (started process) / spawn",
            med(started1, "new_host_ns") / med(started1, "spawn_ns"),
            NEW_HOST_RATIO,
            {
                "new_host_ms": med(started1, "new_host_ns") / 1e6,
                "spawn_ms": med(started1, "spawn_ns") / 1e6,
                "children": reps,
            },
        ),
        Figure(
            "w1_first_host_vs_spawn",
            "  the same, the process's first Host (first use of its modules)",
            med(started1, "first_host_ns") / med(started1, "spawn_ns"),
            "x",
            detail={"first_host_ms": med(started1, "first_host_ns") / 1e6},
        ),
    ]
    for name, runs in (("W1", started1), ("W2", started2), ("M1000", started3)):
        if not runs:
            continue
        figures.append(
            goal(
                f"{name.lower()}_first_build_vs_model",
                f"{name} first build for a home (started host) / hermes model",
                med(runs, "first_build_ns") / med(runs, "model_first_ns"),
                FIRST_BUILD_RATIO,
                {
                    "first_build_ms": med(runs, "first_build_ns") / 1e6,
                    "model_first_ms": med(runs, "model_first_ns") / 1e6,
                    "spawn_ms": med(runs, "spawn_ns") / 1e6,
                    "homes_per_side": sum(r["pairs"] for r in runs),
                },
            )
        )
    figures.append(
        Figure(
            "w1_new_process_vs_model",
            "  W1 new process: import to first build / hermes model's",
            med(cold, "cold_ns") / med(model, "cold_ns"),
            "x",
            detail={
                "envscope_ms": med(cold, "cold_ns") / 1e6,
                "model_ms": med(model, "cold_ns") / 1e6,
                "spawn_ms": med(cold, "spawn_ns") / 1e6,
            },
        )
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    """The children: ``--child started|cold|model-cold WORKLOAD.json`` print JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_start")
    parser.add_argument("--child", choices=("started", "cold", "model-cold"), required=True)
    parser.add_argument("workload", type=Path)
    args = parser.parse_args(argv)
    w = json.loads(args.workload.read_text())
    run = {"started": _started_child, "cold": _cold_child, "model-cold": _model_cold_child}
    print(json.dumps(run[args.child](w)))
    return 0


if __name__ == "__main__":
    os.environ.pop("ENVSCOPE_CONFIG", None)
    sys.exit(main())
