"""The benchmark workloads, generated in a temp dir from a fixed seed.

W1 (typical)
    A 150-variable parent env (40 of them secrets the routed policy declares,
    spelled in mixed case), a launch home and 3 profile homes, each with a
    small ``.env`` and 30 plugins (20 under ``plugins/platforms/``, 10 flat,
    half of those ``kind: platform``), 20 bundled plugins, a managed env file.

W2 (large)
    A 1,000-variable parent env, 100 homes served by one multiplexed host,
    300 plugins per home (200 platform, 100 flat), the same 20 bundled plugins.

Scaling homes
    One home each with 10, 100 and 1,000 manifests (same 2:1 split), no
    bundled root, for the cold-build curve.

A freshly written manifest is *racy* for ``RACY_WINDOW_NS`` (the cache
re-reads it rather than trust its stamp). Setting mtimes into the past with
``os.utime`` does not help: the racy rule looks at ``max(mtime, ctime)`` and
``utime`` itself sets the ctime to now. So ``Tree.settle()`` sleeps out what
is left of the window before the real file system's warm path is measured.
"""

from __future__ import annotations

import os
import random
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

from envscope import Catalog, Host
from envscope.files._fs import FileSystem
from envscope.manifests._scan import RACY_WINDOW_NS
from envscope.policy._declarations import plugin_prefix

__all__ = ["SEED", "Tree", "Workload", "make_scaling_home", "make_w1", "make_w2"]

SEED = 20260505

_WORDS = (
    "chat", "mail", "voice", "relay", "bridge", "notify", "sms", "pager", "feed",
    "hook", "queue", "vault", "store", "search", "index", "media", "cam", "sensor",
)  # fmt: skip
_GLOBALS = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/agent",
    "USER": "agent",
    "LOGNAME": "agent",
    "SHELL": "/bin/bash",
    "TERM": "xterm-256color",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "TMPDIR": "/tmp",
    "PWD": "/srv/agent",
    "HOSTNAME": "agent-host",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "XDG_CONFIG_HOME": "/home/agent/.config",
}
_PATTERN_NAMES = ("AUXILIARY_{}_API_KEY", "AUXILIARY_{}_BASE_URL", "GATEWAY_RELAY{}_SECRET")


@dataclass
class Tree:
    """Bookkeeping shared by the generators: when the last file was written."""

    root: Path
    written_ns: int = 0
    files: int = 0

    def settle(self) -> float:
        """Sleep until no generated manifest is racy any more; returns the seconds slept."""
        wait = (self.written_ns + RACY_WINDOW_NS + 200_000_000 - time.time_ns()) / 1e9
        if wait > 0:
            time.sleep(wait)
        return max(wait, 0.0)


@dataclass
class Workload:
    """One generated workload: homes on disk, a parent env, how to build its host."""

    name: str
    launch: str
    profiles: list[str]
    bundled: str
    managed: str
    environ: dict[str, str]
    multiplex: bool
    plugins_per_home: int
    bundled_plugins: int
    declared: frozenset[str] = field(default_factory=frozenset)
    """Upper-cased env names the routed policy of ``profiles[0]`` declares (by construction)."""

    def host(
        self,
        catalog: Catalog,
        fs: FileSystem | None = None,
        *,
        on_os_environ: bool = False,
        environ: dict[str, str] | None = None,
        change_notification: bool | None = None,
    ) -> Host:
        """A host over this workload, its launch env loaded.

        Its environ is a private copy of the workload's, or with ``on_os_environ``
        the process's own ``os.environ`` (the caller puts the workload's env there),
        or ``environ``: that very dict (the caller may change it between builds).
        ``change_notification`` as ``Host``'s (default: the gate over the real file system).
        """
        if environ is None and not on_os_environ:
            environ = dict(self.environ)
        host = Host(
            self.launch,
            catalog=catalog,
            managed_env_file=self.managed,
            bundled_plugins=self.bundled,
            environ=environ,
            multiplex=self.multiplex,
            fs=fs,
            change_notification=change_notification,
        )
        host.load_launch_env()
        return host

    def roots(self, home: str) -> tuple[str, str, str]:
        """The manifest roots of one home: bundled, platforms, flat."""
        plugins = os.path.join(home, "plugins")
        return (self.bundled, os.path.join(plugins, "platforms"), plugins)

    def candidates(self, home: str) -> int:
        """How many candidate manifests one home's stamp stats."""
        return self.plugins_per_home + self.bundled_plugins


def _value(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(8, 40)))


def _manifest(name: str, kind: str) -> str:
    p = plugin_prefix(name)
    return (
        f"name: {name}\n"
        f"kind: {kind}\n"
        "version: 1.2.0\n"
        "requires_env:\n"
        f"  - {p}BOT_TOKEN\n"
        f"  - name: {p}SIGNING_SECRET\n"
        "    description: Signing secret for inbound webhooks\n"
        "    secret: true\n"
        f"  - {p}CHANNEL\n"
        "optional_env:\n"
        f"  - name: {p}DEBUG_TOKEN\n"
        "    secret: false\n"
        f"  - name: {p}REGION\n"
        "    description: Region\n"
    )


def _write(tree: Tree, path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    tree.written_ns = time.time_ns()
    tree.files += 1


def _plugin(tree: Tree, parent: Path, name: str, kind: str) -> None:
    _write(tree, parent / name / "plugin.yaml", _manifest(name, kind))


def _plugin_names(rng: random.Random, pool: int) -> list[str]:
    names: set[str] = set()
    while len(names) < pool:
        word = rng.choice(_WORDS)
        sep = rng.choice(("", "-", ""))
        names.add(f"{word}{sep}{rng.randrange(10_000):04d}")
    return sorted(names)


def _home(tree: Tree, home: Path, names: list[str], dotenv: dict[str, str]) -> list[str]:
    """Write one home: 2/3 of ``names`` under platforms/, 1/3 flat (half kind: platform).

    Returns the names whose manifests count (platform root or ``kind: platform``).
    """
    n_platform = len(names) * 2 // 3
    counted = list(names[:n_platform])
    for name in names[:n_platform]:
        _plugin(tree, home / "plugins" / "platforms", name, "platform")
    for i, name in enumerate(names[n_platform:]):
        kind = "platform" if i % 2 == 0 else "memory"
        _plugin(tree, home / "plugins", name, kind)
        if kind == "platform":
            counted.append(name)
    _write(tree, home / ".env", "".join(f"{k}={v}\n" for k, v in dotenv.items()))
    return counted


def _mixed_case(name: str, i: int) -> str:
    if i % 3 == 1:
        return name.lower()
    if i % 3 == 2:
        return "_".join(part.capitalize() for part in name.split("_"))
    return name


def _environ(
    rng: random.Random,
    size: int,
    secrets: list[str],
    launch_keys: dict[str, str],
) -> dict[str, str]:
    env = dict(_GLOBALS)
    env.update(launch_keys)
    for i, name in enumerate(secrets):
        env[_mixed_case(name, i)] = _value(rng)
    env["DISCORD_ALLOWED_CHANNELS"] = "general"  # a launch authorization gate
    env["DEMO_ALLOWED_SENDER"] = "ops"  # an operator's look-alike, kept
    n = 0
    while len(env) < size:
        word = rng.choice(("APP", "TOOL", "CI", "BUILD", "RUNNER", "FEATURE", "svc", "opt"))
        env[f"{word}_{rng.choice(_WORDS).upper()}_{n}"] = _value(rng)
        n += 1
    return env


def _declared_names(
    rng: random.Random, catalog: Catalog, manifest_names: list[str], total: int
) -> list[str]:
    """``total`` names a routed policy declares: catalog, pattern and manifest names."""
    explicit = sorted(catalog.names)
    n_catalog = total * 3 // 8
    n_pattern = total // 8
    picked = rng.sample(explicit, min(n_catalog, len(explicit)))
    for i in range(n_pattern):
        picked.append(_PATTERN_NAMES[i % len(_PATTERN_NAMES)].format(f"P{i}"))
    for name in manifest_names:
        if len(picked) >= total:
            break
        p = plugin_prefix(name)
        picked.append(f"{p}BOT_TOKEN" if len(picked) % 2 else f"{p}SIGNING_SECRET")
    return picked


def _common(tree: Tree, rng: random.Random, n_bundled: int) -> tuple[Path, Path, list[str]]:
    bundled = tree.root / "bundled"
    bundled_names = [f"bundled{n:02d}" for n in range(n_bundled)]
    for name in bundled_names:
        _plugin(tree, bundled, name, "platform")
    managed = tree.root / "managed.env"
    _write(tree, managed, "ORG_PROXY_URL=http://proxy.internal:3128\nORG_TELEMETRY=off\n")
    return bundled, managed, bundled_names


def make_w1(
    root: Path, catalog: Catalog, seed: int = SEED, *, plugins: int = 30
) -> tuple[Workload, Tree]:
    """W1 typical: 150 vars (40 declared), launch + 3 profiles, 30 plugins each, 20 bundled.

    ``plugins`` changes only the plugins per home (``M1000``: 1,000, in ``root/m1000``).
    """
    rng = random.Random(seed)
    tree = Tree(root / ("w1" if plugins == 30 else f"m{plugins}"))
    bundled, managed, _ = _common(tree, rng, 20)
    pool = _plugin_names(rng, 2 * plugins)
    launch_env = {f"LAUNCH_SETTING_{i}": _value(rng) for i in range(6)}
    homes: list[str] = []
    counted: dict[str, list[str]] = {}
    for i, name in enumerate(("launch", "profile1", "profile2", "profile3")):
        home = tree.root / name
        names = sorted(rng.sample(pool, plugins))
        dotenv = launch_env if i == 0 else {f"{name.upper()}_SETTING_{k}": "v" for k in range(4)}
        counted[name] = _home(tree, home, names, dotenv)
        homes.append(os.path.realpath(home))
    secrets = _declared_names(rng, catalog, counted["profile1"], 40)
    env = _environ(rng, 150, secrets, launch_env)
    workload = Workload(
        name="W1" if plugins == 30 else f"M{plugins}",
        launch=homes[0],
        profiles=homes[1:],
        bundled=os.path.realpath(bundled),
        managed=os.path.realpath(managed),
        environ=env,
        multiplex=False,
        plugins_per_home=plugins,
        bundled_plugins=20,
        declared=frozenset(s.upper() for s in secrets),
    )
    return workload, tree


def make_w2(
    root: Path, catalog: Catalog, seed: int = SEED, *, homes: int = 100, plugins: int = 300
) -> tuple[Workload, Tree]:
    """W2 large: 1,000 vars, ``homes`` homes (multiplexed), ``plugins`` plugins per home."""
    rng = random.Random(seed + 2)
    tree = Tree(root / "w2")
    bundled, managed, _ = _common(tree, rng, 20)
    pool = _plugin_names(rng, plugins * 2)
    launch_env = {f"LAUNCH_SETTING_{i}": _value(rng) for i in range(10)}
    paths: list[str] = []
    first: list[str] = []
    for i in range(homes):
        name = "launch" if i == 0 else f"profile{i:03d}"
        names = sorted(rng.sample(pool, plugins))
        dotenv = launch_env if i == 0 else {f"P{i}_SETTING_{k}": "v" for k in range(4)}
        counted = _home(tree, tree.root / name, names, dotenv)
        if i == 1:
            first = counted
        paths.append(os.path.realpath(tree.root / name))
    secrets = _declared_names(rng, catalog, first, 250)
    env = _environ(rng, 1000, secrets, launch_env)
    workload = Workload(
        name="W2",
        launch=paths[0],
        profiles=paths[1:],
        bundled=os.path.realpath(bundled),
        managed=os.path.realpath(managed),
        environ=env,
        multiplex=True,
        plugins_per_home=plugins,
        bundled_plugins=20,
        declared=frozenset(s.upper() for s in secrets),
    )
    return workload, tree


def make_scaling_home(root: Path, manifests: int, seed: int = SEED) -> tuple[str, Tree]:
    """One home with ``manifests`` plugin manifests (2/3 platforms, 1/3 flat), nothing else."""
    rng = random.Random(seed + manifests)
    tree = Tree(root / f"scale{manifests}")
    names = _plugin_names(rng, manifests)
    _home(tree, tree.root / "home", names, {"SCALE": "1"})
    return os.path.realpath(tree.root / "home"), tree
