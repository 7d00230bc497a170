"""What the runtime guard adds to one spawn of a factory-built env (a fraction of the spawn).

A host of 150 parent variables (40 of them declared secrets of the catalog or a
plugin manifest) builds a routed terminal child; the child env is handed to
``subprocess.run(["/bin/true"], env=child)`` again and again. Audit hooks
cannot be removed, so each side runs in its own interpreter: one without the
guard and one after ``envscope.guard(host, mode="raise")``. The parent alternates
them over several rounds; the figure is the guarded median over the baseline's,
less one. A factory-built env passes as built (the context's memo holds it), so a
third side spawns the child with one entry added, which the guard checks against
the context's rule (its verdicts kept: the same env again is one comparison).

    python -m benchmarks.guard_spawn_cost      # prints the fraction the guard adds
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.measure import Figure, alternating_children

TARGET = 0.10  # the guard adds at most a tenth of a spawn
RACY_S = 3.1  # files younger than 3 s are read again on every build: wait them out

_PLUGIN = "name: chatx\nrequires_env:\n" + "".join(f"  - CHATX_{i}_TOKEN\n" for i in range(20))


def _tree(root: Path) -> tuple[Path, Path]:
    launch, profile = root / "launch", root / "profile"
    (profile / "plugins" / "platforms" / "chatx").mkdir(parents=True)
    launch.mkdir()
    (launch / ".env").write_text("TELEGRAM_BOT_TOKEN=launch-bot-token-0001\nLAUNCH_ONLY=x\n")
    (profile / ".env").write_text("B_THING=profile-value\n")
    (profile / "plugins" / "platforms" / "chatx" / "plugin.yaml").write_text(_PLUGIN)
    return launch, profile


def _environ() -> dict[str, str]:
    env = {f"SETTING_{i}": f"value-{i}-of-the-host" for i in range(110)}
    env.update({f"CHATX_{i}_TOKEN": f"chatx-token-value-{i:04d}" for i in range(20)})
    env.update({f"OPENAI_KEY_COPY_{i}": "plain-copy" for i in range(5)})
    catalog = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN"]
    env.update({name: f"{name.lower()}-value-0123456789" for name in catalog})
    env.update({f"DISCORD_{i}_TOKEN": f"discord-value-{i:04d}" for i in range(11)})
    env["PATH"] = "/usr/bin:/bin"
    return env


def _child(side: str, root: str, spawns: int, batches: int) -> None:
    """Print the median seconds per spawn of the factory-built env on this side."""
    import envscope

    launch, profile = Path(root) / "launch", Path(root) / "profile"
    host = envscope.Host(launch, environ=_environ())
    host.load_launch_env()
    if side != "baseline":
        envscope.guard(host, mode="raise")
    per_batch = []
    with host.routed(profile):
        child = host.build_subprocess_env()
        if side == "checked":
            child = {**child, "HOST_NOTE": "added after the build"}  # not the factory's child
        for _ in range(batches):
            start = time.perf_counter()
            for _ in range(spawns):
                subprocess.run(["/bin/true"], env=child, check=True)
            per_batch.append((time.perf_counter() - start) / spawns)
    print(statistics.median(per_batch))


def measure(rounds: int, spawns: int, batches: int) -> dict[str, object]:
    """Alternate baseline and guarded children over a tree written once; their medians."""
    with tempfile.TemporaryDirectory(prefix="envscope-guard-spawn-") as root:
        _tree(Path(root))
        time.sleep(RACY_S)
        outputs = alternating_children(
            "benchmarks.guard_spawn_cost",
            [root, str(spawns), str(batches)],
            rounds,
            ("baseline", "guarded", "checked"),
        )
    samples = {side: [float(text) for text in texts] for side, texts in outputs.items()}
    baseline = statistics.median(samples["baseline"])
    guarded = statistics.median(samples["guarded"])
    checked = statistics.median(samples["checked"])
    return {
        "added": guarded / baseline - 1.0,
        "checked_added": checked / baseline - 1.0,
        "spawn_us": {
            "baseline": baseline * 1e6,
            "guarded": guarded * 1e6,
            "checked": checked * 1e6,
        },
        "rounds": rounds,
    }


def guard_spawn_figures(quick: bool) -> list[Figure]:
    """The runtime guard: what it adds to a spawn of a factory-built env, and of one it checks."""
    result = measure(rounds=3 if quick else 5, spawns=100 if quick else 150, batches=5)
    added = float(result["added"])  # type: ignore[arg-type]
    checked = float(result["checked_added"])  # type: ignore[arg-type]
    return [
        Figure(
            "guard_spawn_added",
            "guard on a spawn of a factory-built env (added / spawn)",
            round(added, 3),
            "x",
            f"<= {TARGET}x",
            added <= TARGET,
            result,
        ),
        Figure(
            "guard_spawn_checked_added",
            "  the same env with one entry added after the build: checked (added / spawn)",
            round(checked, 3),
            "x",
        ),
    ]


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        result = measure(rounds=5, spawns=300, batches=5)
        print(f"guard on a spawn: +{result['added']:.3f} of a spawn (target <= {TARGET}), "
              f"+{result['checked_added']:.3f} for an env it checks; "
              f"{result}")  # fmt: skip
