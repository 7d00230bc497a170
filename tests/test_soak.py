"""Concurrency soak: many threads build children for many homes while manifests and environ churn.

8 threads × 150 builds across 8 homes (``ENVSCOPE_SOAK_THREADS``,
``ENVSCOPE_SOAK_BUILDS``, ``ENVSCOPE_SOAK_HOMES`` scale it; ``make fuzz`` runs
16 × 2,000), while one thread
rewrites every home's manifest (``os.replace`` and in place, two versions that
share a name) every few milliseconds and another adds and removes unrelated
keys in the host's ``environ`` dict. Every build must:

- leak nothing: no name the home's manifest declares (either version), no
  catalog secret;
- be consistent with one policy: the home's v1, its v2, or a failing-closed
  partial scan (never a mix);
- carry its own home's scope (``context`` isolation between threads);
- raise nothing.

The hosts run with name context off: every name here is secret-suffixed on
purpose, and which of them a child loses is the manifests' answer alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from envscope import Catalog, Host, Surface

pytestmark = pytest.mark.no_cover  # a stress suite: the behaviour tests measure these paths

THREADS = int(os.environ.get("ENVSCOPE_SOAK_THREADS", "8"))
BUILDS = int(os.environ.get("ENVSCOPE_SOAK_BUILDS", "150"))
HOMES = int(os.environ.get("ENVSCOPE_SOAK_HOMES", "8"))
WATCHDOG_S = 120.0  # against a deadlock only; the run takes seconds
REWRITE_EVERY_S = 0.003
CATALOG_TIER1 = ("TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN")
CATALOG_TIER2 = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@dataclass(frozen=True)
class SoakHome:
    """One home: its plugin prefix, the names of each manifest version, its scope marker."""

    index: int
    path: Path
    manifest: Path
    shared: str
    only_v1: str
    only_v2: str
    spare: str  # secret-suffixed under the prefix, declared by neither version

    @property
    def names(self) -> frozenset[str]:
        """Every secret-suffixed name under the plugin's prefix that the base carries."""
        return frozenset({self.shared, self.only_v1, self.only_v2, self.spare})

    def text(self, version: int) -> str:
        """Manifest text (flow style first: any torn prefix is invalid or declares ``shared``)."""
        own = self.only_v1 if version == 1 else self.only_v2
        return f"requires_env: [{self.shared}, {own}]\nname: p{self.index}\n"

    def classify(self, env: dict[str, str]) -> str:
        """Which of this home's policies the child env is consistent with."""
        stripped = self.names - set(env)
        if stripped == {self.shared, self.only_v1}:
            return "v1"
        if stripped == {self.shared, self.only_v2}:
            return "v2"
        if stripped == self.names:
            return "partial"
        return "inconsistent"


def make_homes(root: Path, count: int) -> tuple[Path, list[SoakHome]]:
    """A launch home with a .env and ``count`` homes, each with a .env and a platform plugin."""
    launch = root / "launch"
    launch.mkdir()
    (launch / ".env").write_text("LAUNCH_MARKER=launch\nSHARED_MODEL=launch-model\n")
    homes = []
    for i in range(count):
        path = root / f"home{i}"
        plugin = path / "plugins" / "platforms" / f"p{i}"
        plugin.mkdir(parents=True)
        (path / ".env").write_text(f"SCOPE_HOME=home{i}\nSHARED_MODEL=model-{i}\n")
        home = SoakHome(
            index=i,
            path=Path(os.path.realpath(path)),
            manifest=Path(os.path.realpath(plugin)) / "plugin.yaml",
            shared=f"P{i}_SHARED_SECRET",
            only_v1=f"P{i}_OLD_TOKEN",
            only_v2=f"P{i}_NEW_KEY",
            spare=f"P{i}_SPARE_PASSWORD",
        )
        home.manifest.write_text(home.text(1))
        homes.append(home)
    return Path(os.path.realpath(launch)), homes


@dataclass
class Tally:
    """What the workers saw (each worker owns one; merged at the end)."""

    builds: int = 0
    iterations: int = 0  # helper threads: rewrites or environ mutations done
    outcomes: Counter[str] = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)
    wrong_scope: list[str] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def rewriter(homes: list[SoakHome], stop: threading.Event, tally: Tally) -> None:
    """Flip every home's manifest between v1 and v2, atomically and in place, every few ms."""
    round_ = 0
    try:
        while not stop.is_set():
            for home in homes:
                text = home.text(2 if round_ % 2 == 0 else 1)
                if round_ % 4 < 2:
                    tmp = home.manifest.with_name("plugin.yaml.tmp")
                    tmp.write_text(text)
                    os.replace(tmp, home.manifest)
                else:
                    with open(home.manifest, "w", encoding="utf-8") as fh:
                        fh.write(text)
                tally.iterations += 1
            round_ += 1
            stop.wait(REWRITE_EVERY_S)
    except BaseException as exc:  # noqa: BLE001 - reported by the test thread
        tally.errors.append(exc)


def churner(environ: dict[str, str], stop: threading.Event, tally: Tally) -> None:
    """Add and remove unrelated keys in the host's environ dict, continuously."""
    n = 0
    try:
        while not stop.is_set():
            environ[f"CHURN_{n}"] = "x"
            environ.pop(f"CHURN_{n - 8}", None)
            n += 1
            tally.iterations += 1
            if n % 64 == 0:
                time.sleep(0.0005)
    except BaseException as exc:  # noqa: BLE001 - reported by the test thread
        tally.errors.append(exc)


def worker(
    host: Host, homes: list[SoakHome], forbidden_all: frozenset[str], seed: int, tally: Tally
) -> None:
    """BUILDS builds, cycling homes and surfaces; record leaks and inconsistencies."""
    surfaces = (Surface.TERMINAL, Surface.CREDENTIALED, Surface.WORKER, Surface.MCP)
    try:
        for n in range(BUILDS):
            home = homes[(seed + n) % len(homes)]
            surface = surfaces[(seed + n) % len(surfaces)]
            read_scope = n % 2 == 0
            scope = None if read_scope else {"SCOPE_HOME": f"home{home.index}"}
            with host.routed(home.path, scope=scope):
                env = host.build_subprocess_env(surface=surface)
            tally.builds += 1
            kind = home.classify(env) if surface is not Surface.MCP else "mcp"
            tally.outcomes[kind] += 1
            leaked = sorted((forbidden_all | {home.shared}) & set(env))
            if surface is not Surface.CREDENTIALED:
                leaked += sorted(set(CATALOG_TIER2) & set(env))
            if leaked:
                tally.leaks.append(f"{home.path.name}/{surface.value}: {leaked}")
            if kind == "inconsistent":
                tally.inconsistent.append(f"{home.path.name}: {sorted(home.names & set(env))}")
            if env.get("SCOPE_HOME") != f"home{home.index}" and surface is not Surface.MCP:
                tally.wrong_scope.append(f"{home.path.name} got {env.get('SCOPE_HOME')!r}")
    except BaseException as exc:  # noqa: BLE001 - reported by the test thread
        tally.errors.append(exc)


def test_soak_no_leak_no_error_one_policy_per_build(tmp_path: Path) -> None:
    """16×150 concurrent builds over 8 churning homes: zero leaks, errors, mixed policies."""
    launch, homes = make_homes(tmp_path, HOMES)
    names = {name for home in homes for name in home.names}
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/op",
        **{name: f"fake-{name}" for name in (*names, *CATALOG_TIER1, *CATALOG_TIER2)},
    }
    host = Host(launch, environ=environ, catalog=Catalog.default(), on_unreadable_platform="deny",
                name_context=False)  # fmt: skip
    host.load_launch_env()
    assert environ["LAUNCH_MARKER"] == "launch"
    stop = threading.Event()
    rewrites, churns = Tally(), Tally()
    tallies = [Tally() for _ in range(THREADS)]
    helpers = [
        threading.Thread(target=rewriter, args=(homes, stop, rewrites), daemon=True),
        threading.Thread(target=churner, args=(environ, stop, churns), daemon=True),
    ]
    workers = [
        threading.Thread(
            target=worker, args=(host, homes, frozenset(CATALOG_TIER1), seed, tally), daemon=True
        )
        for seed, tally in enumerate(tallies)
    ]
    for thread in (*helpers, *workers):
        thread.start()
    deadline = time.monotonic() + WATCHDOG_S
    try:
        for thread in workers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        hung = [t.name for t in workers if t.is_alive()]
    finally:
        stop.set()
        for thread in helpers:
            thread.join(timeout=5)
    assert hung == [], "workers still running: a deadlock or a hang"
    assert not any(t.is_alive() for t in helpers)
    errors = [e for t in (*tallies, rewrites, churns) for e in t.errors]
    assert errors == []
    assert [leak for t in tallies for leak in t.leaks] == []
    assert [bad for t in tallies for bad in t.inconsistent] == []
    assert [bad for t in tallies for bad in t.wrong_scope] == []
    total = sum(t.builds for t in tallies)
    assert total == THREADS * BUILDS
    seen: Counter[str] = Counter()
    for tally in tallies:
        seen.update(tally.outcomes)
    assert rewrites.iterations > 0
    assert churns.iterations > 0
    assert seen["v1"] + seen["v2"] > 0
    assert set(seen) <= {"v1", "v2", "partial", "mcp"}


@pytest.mark.parametrize("count", [1, 3])
def test_soak_homes_classify_their_own_policies(tmp_path: Path, count: int) -> None:
    """The soak's consistency check tells v1, v2, partial and a mix apart (guards the oracle)."""
    _, homes = make_homes(tmp_path, count)
    home = homes[-1]
    base = dict.fromkeys(home.names, "x")

    def without(*names: str) -> dict[str, str]:
        return {k: v for k, v in base.items() if k not in names}

    assert home.classify(without(home.shared, home.only_v1)) == "v1"
    assert home.classify(without(home.shared, home.only_v2)) == "v2"
    assert home.classify({}) == "partial"
    assert home.classify(without(home.only_v1)) == "inconsistent"
    assert home.classify(base) == "inconsistent"


# -- an updater's atomic replace is not an error (issue #22 item 6) ----------------------------

REPLACE_THREADS = int(os.environ.get("ENVSCOPE_REPLACE_SOAK_THREADS", "8"))
REPLACE_HOMES = 4


def replacer(homes: list[SoakHome], stop: threading.Event, tally: Tally) -> None:
    """A plugin updater: rewrite every home's manifest the standard way (a temp, os.replace)."""
    round_ = 0
    try:
        while not stop.is_set():
            for home in homes:
                tmp = home.manifest.with_name("plugin.yaml.tmp")
                tmp.write_text(home.text(2 if round_ % 2 == 0 else 1))
                os.replace(tmp, home.manifest)
                tally.iterations += 1
            round_ += 1
            stop.wait(REWRITE_EVERY_S / 3)
    except BaseException as exc:  # noqa: BLE001 - reported by the test thread
        tally.errors.append(exc)


def test_soak_atomic_replace_raises_nothing_in_raise_mode(tmp_path: Path) -> None:
    """8 threads build (raise mode) while an updater os.replaces 4 manifests: 0 errors, 0 leaks."""
    launch, homes = make_homes(tmp_path, REPLACE_HOMES)
    names = {name for home in homes for name in home.names}
    environ = {
        "PATH": "/usr/bin",
        **{name: f"fake-{name}" for name in (*names, *CATALOG_TIER1, *CATALOG_TIER2)},
    }
    # raise: the default mode
    host = Host(launch, environ=environ, catalog=Catalog.default(), name_context=False)
    host.load_launch_env()
    stop = threading.Event()
    rewrites = Tally()
    tallies = [Tally() for _ in range(REPLACE_THREADS)]
    helper = threading.Thread(target=replacer, args=(homes, stop, rewrites), daemon=True)
    workers = [
        threading.Thread(
            target=worker, args=(host, homes, frozenset(CATALOG_TIER1), seed, tally), daemon=True
        )
        for seed, tally in enumerate(tallies)
    ]
    helper.start()
    for thread in workers:
        thread.start()
    deadline = time.monotonic() + WATCHDOG_S
    try:
        for thread in workers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        hung = [t.name for t in workers if t.is_alive()]
    finally:
        stop.set()
        helper.join(timeout=5)
    assert hung == [], "workers still running: a deadlock or a hang"
    assert [e for t in (*tallies, rewrites) for e in t.errors] == []
    assert [leak for t in tallies for leak in t.leaks] == []
    assert [bad for t in tallies for bad in t.inconsistent] == []
    assert sum(t.builds for t in tallies) == REPLACE_THREADS * BUILDS
    seen: Counter[str] = Counter()
    for tally in tallies:
        seen.update(tally.outcomes)
    assert rewrites.iterations > 0
    assert seen["v1"] + seen["v2"] > 0
    assert set(seen) <= {"v1", "v2", "mcp"}  # no partial scan: every replace was re-read
