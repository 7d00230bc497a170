"""The walk of one routed build on a memo miss, counted with a profiler: calls and modules.

docs/concepts.md walks one routed build hop by hop; this counts the same build
with ``cProfile``: W1, bound to its first profile, the manifests settled and
the gate warm, the parent env changed by one value so the build memo misses.
It prints the calls into envscope's own Python functions, the modules they
are in, and the calls per module. Run it against another tree with that
tree's package first on the path (its ``benchmarks.workloads`` too):

    python -m benchmarks.walk_count
    PYTHONPATH=/path/to/other/tree python /this/tree/benchmarks/walk_count.py
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
from pathlib import Path

import envscope
from benchmarks.workloads import make_w1
from envscope import Catalog


def main() -> int:
    """Build W1 five times bound to its first profile, then profile one memo miss."""
    catalog = Catalog.default()
    root = os.path.dirname(envscope.__file__)
    with tempfile.TemporaryDirectory(prefix="envscope-walk-") as tmp:
        w1, tree = make_w1(Path(tmp), catalog)
        tree.settle()  # past the racy window: the build must not rescan its manifests
        host = w1.host(catalog)
        base = dict(w1.environ)
        with host.routed(w1.profiles[0]):
            for i in range(5):  # the caches, the gate and the memo warm
                host.build_subprocess_env(dict(base, BENCH_SPAWN_SEQ=str(i)))
            profile = cProfile.Profile()
            env = dict(base, BENCH_SPAWN_SEQ="miss")
            profile.enable()
            host.build_subprocess_env(env)
            profile.disable()
    per_module: dict[str, int] = {}
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_primitive, calls, *_rest) in stats.items():
        if filename.startswith(root):
            module = os.path.relpath(filename, root)
            per_module[module] = per_module.get(module, 0) + calls
    print(f"{sum(per_module.values()):,} calls in {len(per_module)} modules ({root})")
    for module, calls in sorted(per_module.items(), key=lambda item: -item[1]):
        print(f"  {calls:6,d}  {module}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
