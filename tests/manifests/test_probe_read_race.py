"""A manifest that changes between the probe (``lstat``) and the read (``open``) fails closed.

The probe saw a regular ``plugin.yaml``; by the time the scanner opens it, it
is a FIFO, a directory, a socket, a symlink to ``/dev/null``, gone, shorter
(truncated) or longer (appended to). The check then probes and reads the home
again (an updater's atomic replace is no error): a change that *settles* (gone,
truncated, appended) gives exactly what a fresh host scans from the changed
tree; a surprise that *persists* (still not a regular file) is a *problem* of
the scan — a ``ManifestError`` under a platform root in ``"raise"`` mode, else
a partial policy that keeps the declared names from the child — never
"nothing declared".
The table drives each surprise deterministically through the seam (the
mutation happens inside ``read_regular``, right before the real read); the race
test does it for real, with a writer thread ``os.replace``-ing the manifest.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envscope import Host, Trace
from envscope.errors import EnvscopeError, ManifestError
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.manifests.test_faults import (
    BASE,
    CHATX_DECLARED,
    CHATX_MANIFEST,
    PLUGIN_FAILED,
    RELAY_DECLARED,
    RELAY_MANIFEST,
    Mode,
    Outcome,
    assert_fails_closed,
    make_host,
    make_tree,
    touch_manifests,
)

Mutation = Callable[[Path], None]


def traced_attempt(host: Host, home: Path, base: dict[str, str] = BASE) -> Outcome:
    """Build once with a trace: the policy *that build used* (a later ``policy()`` re-checks)."""
    trace = Trace()
    try:
        with host.routed(home, scope={}):
            env = host.build_subprocess_env(base, strip_launch_profile=False, trace=trace)
    except EnvscopeError as exc:
        return Outcome(None, exc, None, ())
    ctx = trace.context
    return Outcome(env, None, ctx.complete, tuple(p.path for p in ctx.problems))


def _to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _to_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _to_devnull_link(path: Path) -> None:
    path.unlink()
    path.symlink_to(os.devnull)


def _to_socket(path: Path) -> None:
    """Replace ``path`` by a bound AF_UNIX socket (bound in a short dir, then moved)."""
    short = tempfile.mkdtemp(prefix="es-")
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(os.path.join(short, "s"))
            path.unlink()
            os.rename(os.path.join(short, "s"), path)  # same file system: /tmp
        finally:
            sock.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _vanish(path: Path) -> None:
    path.unlink()


def _truncate(path: Path) -> None:
    """Cut the file to its first line: still valid YAML, but declaring less."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.splitlines(keepends=True)[0], encoding="utf-8")


def _append(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("# appended after the probe\n")


MUTATIONS: dict[str, Mutation] = {
    "became a FIFO": _to_fifo,
    "became a directory": _to_directory,
    "became a socket": _to_socket,
    "became a symlink to /dev/null": _to_devnull_link,
    "vanished": _vanish,
    "truncated (short read)": _truncate,
    "grew (appended)": _append,
}
SETTLES = frozenset({"vanished", "truncated (short read)", "grew (appended)"})
"""Mutations after which the re-probe finds a consistent tree (the others persist)."""


class MutateBeforeRead(InstrumentedFileSystem):
    """Applies ``mutation`` to ``victim`` inside its next ``read_regular``, before reading."""

    def __init__(self, victim: Path, mutation: Mutation) -> None:
        super().__init__(clock_offset_ns=HOUR_NS)
        self.victim = os.path.normpath(victim)
        self.mutation = mutation
        self.armed = False
        self.mutations = 0

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """Mutate the victim once (when armed), then read for real."""
        if self.armed and os.path.normpath(path) == self.victim:
            self.armed = False
            self.mutations += 1
            self.mutation(Path(path))
        return super().read_regular(path, max_bytes)


@pytest.mark.parametrize("warm", [False, True], ids=["first-scan", "after-healthy-scan"])
@pytest.mark.parametrize("mode", ["deny", "raise"])
@pytest.mark.parametrize("name", sorted(MUTATIONS))
@pytest.mark.parametrize("where", ["platform", "flat"])
def test_change_between_probe_and_read_fails_closed(
    tmp_path: Path, name: str, mode: Mode, warm: bool, where: str
) -> None:
    """A change under the read is re-read: settled → the fresh result; persisting → fails closed."""
    launch, home = make_tree(tmp_path)
    rel = CHATX_MANIFEST if where == "platform" else RELAY_MANIFEST
    fs = MutateBeforeRead(home / rel, MUTATIONS[name])
    host = make_host(launch, mode, fs)
    if warm:
        healthy = traced_attempt(host, home)
        assert healthy.complete is True
        touch_manifests(home)  # a new stamp: the next build reads again
    fs.armed = True
    outcome = traced_attempt(host, home)
    assert fs.mutations == 1
    if name in SETTLES:  # the re-read sees the settled tree: exactly a fresh host's result
        settled_fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
        fresh = traced_attempt(make_host(launch, mode, settled_fs), home)
        assert outcome.error is None
        assert outcome.complete is True
        assert outcome == fresh
        return
    own = PLUGIN_FAILED if where == "platform" else RELAY_DECLARED
    other = RELAY_DECLARED if where == "platform" else CHATX_DECLARED
    if mode == "raise" and where == "platform":
        assert isinstance(outcome.error, ManifestError)
        assert outcome.error.path == str(home / rel)
        return
    assert outcome.error is None
    forbidden = own | other | (CHATX_DECLARED | RELAY_DECLARED if warm else frozenset())
    assert_fails_closed(outcome, home=home, path=rel, forbidden=forbidden)


# -- the real race: a writer thread os.replace-ing the manifest ------------------------------

RACE_MANIFEST = """\
name: chatx
requires_env:
  - CHATX_SIGNING_SECRET
  - {name: CHATX_DSN, secret: true}
  - CHATX_WORKSPACE
"""
RACE_DECLARED = frozenset({"CHATX_SIGNING_SECRET", "CHATX_DSN"})
RACE_BASE = {name: f"fake-{name}" for name in RACE_DECLARED | {"PATH", "CHATX_WORKSPACE"}}
RACE_BUILDS = 600


def _prototypes(plugin_dir: Path) -> Iterator[Callable[[Path], None]]:
    """Makers of a fresh ``tmp`` of each kind in ``plugin_dir``, cycled forever."""
    fifo = plugin_dir / "proto.fifo"
    os.mkfifo(fifo)

    def regular(tmp: Path) -> None:
        tmp.write_text(RACE_MANIFEST, encoding="utf-8")

    def as_fifo(tmp: Path) -> None:
        os.link(fifo, tmp)

    def devnull(tmp: Path) -> None:
        tmp.symlink_to(os.devnull)

    def as_dir_link(tmp: Path) -> None:
        tmp.symlink_to(plugin_dir)  # a symlink to a directory

    while True:
        yield from (regular, as_fifo, regular, devnull, regular, as_dir_link)


@pytest.mark.no_cover  # a race stress run: the fault tables measure these paths
@pytest.mark.parametrize("mode", ["deny", "raise"])
def test_replace_race_never_leaks(tmp_path: Path, mode: Mode) -> None:
    """600 builds while a thread os.replaces the manifest by a FIFO, a /dev/null link, a dir link.

    Counted, not timed: every build raises ManifestError naming the manifest
    (raise mode) or strips both declared names (one has no secret suffix, so
    only retention of the healthy scan's names keeps it out); a build whose
    policy is complete saw the regular file and declared both itself.
    """
    launch, home = make_tree(tmp_path)
    manifest = home / CHATX_MANIFEST
    manifest.write_text(RACE_MANIFEST, encoding="utf-8")
    (home / RELAY_MANIFEST).unlink()
    host = make_host(launch, mode)  # the real fs and clock: fresh manifests are racy, rescanned
    healthy = traced_attempt(host, home, RACE_BASE)
    assert healthy.complete is True
    assert healthy.env is not None
    assert RACE_DECLARED.isdisjoint(healthy.env)
    stop = threading.Event()
    failures: list[BaseException] = []
    swaps = [0]
    makers = _prototypes(manifest.parent)
    tmp = manifest.with_name("plugin.yaml.tmp")

    def writer() -> None:
        try:
            while not stop.is_set():
                next(makers)(tmp)
                os.replace(tmp, manifest)
                swaps[0] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failures.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen = {"error": 0, "partial": 0, "complete": 0}
    leaks: list[str] = []
    try:
        for _ in range(RACE_BUILDS):
            outcome = traced_attempt(host, home, RACE_BASE)
            if outcome.error is not None:
                assert mode == "raise"
                assert isinstance(outcome.error, ManifestError)
                assert outcome.error.path == str(manifest)
                seen["error"] += 1
                continue
            assert outcome.env is not None
            leaks.extend(sorted(RACE_DECLARED & set(outcome.env)))
            seen["complete" if outcome.complete else "partial"] += 1
    finally:
        stop.set()
        thread.join(timeout=2.0)
    assert not thread.is_alive()
    assert failures == []
    assert leaks == []
    assert sum(seen.values()) == RACE_BUILDS
    assert swaps[0] >= 6
    print(f"replace race ({mode}): {seen}, {swaps[0]} swaps")
    assert seen["error"] + seen["partial"] > 0  # the writer really did get in the way


class GrowsOnEveryRead(InstrumentedFileSystem):
    """Appends to ``victim`` inside every ``read_regular``: a change that never settles."""

    def __init__(self, victim: Path) -> None:
        super().__init__(clock_offset_ns=HOUR_NS)
        self.victim = os.path.normpath(victim)
        self.reads = 0

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """Grow the victim, then read for real (the size never matches the probe's)."""
        if os.path.normpath(path) == self.victim:
            self.reads += 1
            _append(Path(path))
        return super().read_regular(path, max_bytes)


@pytest.mark.parametrize("mode", ["deny", "raise"])
def test_change_that_persists_through_every_reread_fails_closed(tmp_path: Path, mode: Mode) -> None:
    """The re-reads are bounded (MAX_REREADS): a manifest that never settles is a problem."""
    from envscope.manifests._cache import MAX_REREADS

    launch, home = make_tree(tmp_path)
    fs = GrowsOnEveryRead(home / CHATX_MANIFEST)
    outcome = traced_attempt(make_host(launch, mode, fs), home)
    assert fs.reads == MAX_REREADS + 1
    if mode == "raise":
        assert isinstance(outcome.error, ManifestError)
        assert outcome.error.path == str(home / CHATX_MANIFEST)
        return
    assert_fails_closed(outcome, home=home, path=CHATX_MANIFEST, forbidden=PLUGIN_FAILED)
