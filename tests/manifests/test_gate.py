"""The change-notification gate: every row of issue 22's failure-mode table is a table row here.

Each row builds a bundled root and a home (a platform plugin, a flat
``kind: platform`` plugin, a symlinked plugin directory), one host with the gate
and one with the stamp only, both over a settled clock. Both are warmed (the
gated one then builds with no seam call at all: it is gated), the row's
mutation is applied, and both build again: the gated child must equal the
stamped child, and a row whose mutation goes through the stamp must show seam
calls on the gated host (it fell back, never to "unchanged"). Faults that
need the kernel's cooperation (queue overflow, the watch limit, a mount, a
file system type) are injected through the ``Notifier`` seam.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from envscope import Catalog, Host
from envscope.manifests import _gate
from envscope.manifests._gate import FULL_STAMP_NS, ChangeGate, create_gate
from envscope.manifests._inotify import IDENTITY_UNKNOWN, IN_Q_OVERFLOW, Identity, LinuxNotifier
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")

NAMES = ("BCHAT_DSN", "PCHAT_DSN", "FLATP_DSN", "LINKP_DSN", "NEWP_DSN")
EXTRA = ("BCHAT_EXTRA", "PCHAT_EXTRA", "FLATP_EXTRA", "LINKP_EXTRA", "NEWP_EXTRA")
BASE = {"PATH": "/usr/bin", **{n: f"fake-{n}" for n in NAMES + EXTRA}}


def manifest(prefix: str, *, extra: bool = False, flat: bool = False) -> str:
    """A manifest declaring ``<PREFIX>_DSN`` (and ``<PREFIX>_EXTRA``) as secrets."""
    names = [f"{prefix}_DSN"] + ([f"{prefix}_EXTRA"] if extra else [])
    entries = ", ".join(f"{{name: {n}, secret: true}}" for n in names)
    kind = "kind: platform\n" if flat else ""
    return f"name: {prefix.lower()}\n{kind}requires_env: [{entries}]\n"


class FaultyNotifier(LinuxNotifier):
    """The real notifier, with injectable overflow, mount change, watch limit and fs type."""

    def __init__(self) -> None:
        self.restat_fails = False  # before the base's own first re-stat
        super().__init__()
        self.overflow = False
        self.mount_changed = False
        self.watch_limit = False
        self.fs_magic: int | None = None
        self.path_magic: dict[str, int] = {}  # one path's file system type

    def add_watch(self, path: str) -> int:
        """ENOSPC when the watch limit is on."""
        if self.watch_limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return super().add_watch(path)

    def events(self) -> tuple[list[tuple[int, int]], bool]:
        """The real events, plus an overflow or a mount change when armed (once)."""
        found, mounts = super().events()
        if self.overflow:
            self.overflow = False
            found.append((-1, IN_Q_OVERFLOW))
        if self.mount_changed:
            self.mount_changed, mounts = False, True
        return found, mounts

    def fs_type(self, path: str) -> int | None:
        """The injected type (the path's own, else every path's), else the real one."""
        if path in self.path_magic:
            return self.path_magic[path]
        return self.fs_magic if self.fs_magic is not None else super().fs_type(path)

    def identity(self, path: str) -> Identity:
        """A re-stat that failed (EIO, a refused ``statx``) when armed, else the real one."""
        return IDENTITY_UNKNOWN if self.restat_fails else super().identity(path)


@dataclass
class World:
    """The trees, the gated host (with its seam), the stamped host."""

    root: Path
    launch: Path
    home: Path
    bundled: Path
    target: Path  # the symlinked plugin directory's target (outside the tree)
    gated: Host
    stamped: Host
    gated_fs: InstrumentedFileSystem
    notifier: FaultyNotifier
    clock: list[int]

    @property
    def platform_manifest(self) -> Path:
        return self.home / "plugins" / "platforms" / "pchat" / "plugin.yaml"

    def build(self, host: Host) -> dict[str, str]:
        with host.routed(self.home, scope={}):
            return host.build_subprocess_env(BASE, strip_launch_profile=False)

    def gated_calls(self) -> int:
        """Seam calls of one gated build (0: the gate answered)."""
        self.gated_fs.reset_counts()
        self.build(self.gated)
        return sum(self.gated_fs.calls.values())


def make_world(tmp_path: Path, *, warm: bool = True) -> World:
    """Bundled ``bchat``; home: platforms/pchat, flat ``flatp``, platforms/linkp -> outside.

    ``warm``: both hosts built twice (the gate watches a home from its second probe)
    and the gated host's third build answered by the gate.
    """
    root = Path(os.path.realpath(tmp_path))
    launch = root / "launch"
    launch.mkdir()
    bundled = root / "bundled"
    (bundled / "bchat").mkdir(parents=True)
    (bundled / "bchat" / "plugin.yaml").write_text(manifest("BCHAT"))
    home = root / "home"
    platforms = home / "plugins" / "platforms"
    (platforms / "pchat").mkdir(parents=True)
    (platforms / "pchat" / "plugin.yaml").write_text(manifest("PCHAT"))
    (home / "plugins" / "flatp").mkdir()
    (home / "plugins" / "flatp" / "plugin.yaml").write_text(manifest("FLATP", flat=True))
    target = root / "outside" / "a" / "linkp"
    target.mkdir(parents=True)
    (target / "plugin.yaml").write_text(manifest("LINKP"))
    (platforms / "linkp").symlink_to(target)
    hosts = []
    fss = []
    for gated in (True, False):
        fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)  # every file is settled
        host = Host(
            launch,
            environ={"PATH": "/usr/bin"},
            catalog=Catalog.default(),
            bundled_plugins=bundled,
            fs=fs,
            change_notification=gated,
            on_unreadable_platform="deny",
        )
        hosts.append(host)
        fss.append(fs)
    notifier = FaultyNotifier()
    clock = [0]
    cache = hosts[0]._homes.manifests()
    cache._gate = ChangeGate(notifier, clock=lambda: clock[0])
    world = World(root, launch, home, bundled, target, hosts[0], hosts[1], fss[0], notifier, clock)
    if not warm:
        return world
    for _ in range(2):
        assert world.build(world.gated) == world.build(world.stamped)
    assert world.gated_calls() == 0, "the gate does not answer for a settled, healthy home"
    return world


def _rewrite(path: Path, text: str) -> None:
    with open(path, "r+", encoding="utf-8") as fh:
        fh.seek(0)
        fh.write(text)
        fh.truncate()


def in_place(w: World) -> None:
    _rewrite(w.platform_manifest, manifest("PCHAT", extra=True))


def append(w: World) -> None:
    with open(w.platform_manifest, "a", encoding="utf-8") as fh:
        fh.write("  # appended\n")


def truncate_rewrite(w: World) -> None:
    os.truncate(w.platform_manifest, 0)
    w.platform_manifest.write_text(manifest("PCHAT", extra=True))


def chmod(w: World) -> None:
    os.chmod(w.platform_manifest, 0o600)


def rename_replace(where: str) -> Callable[[World], None]:
    def mutate(w: World) -> None:
        path = {
            "platforms": w.platform_manifest,
            "flat": w.home / "plugins" / "flatp" / "plugin.yaml",
            "bundled": w.bundled / "bchat" / "plugin.yaml",
        }[where]
        prefix = {"platforms": "PCHAT", "flat": "FLATP", "bundled": "BCHAT"}[where]
        tmp = path.with_name("plugin.yaml.tmp")
        tmp.write_text(manifest(prefix, extra=True, flat=where == "flat"))
        os.replace(tmp, path)

    return mutate


def plugin_created(w: World) -> None:
    new = w.home / "plugins" / "platforms" / "newp"
    new.mkdir()
    (new / "plugin.yaml").write_text(manifest("NEWP"))


def plugin_removed(w: World) -> None:
    shutil.rmtree(w.home / "plugins" / "platforms" / "pchat")


def created_then_edited(w: World) -> None:
    """A new plugin dir, then its manifest edited before any watch of it can exist."""
    plugin_created(w)
    _rewrite(
        w.home / "plugins" / "platforms" / "newp" / "plugin.yaml", manifest("NEWP", extra=True)
    )


def symlink_retargeted(w: World) -> None:
    other = w.root / "outside" / "b" / "linkp"
    other.mkdir(parents=True)
    (other / "plugin.yaml").write_text(manifest("LINKP", extra=True))
    link = w.home / "plugins" / "platforms" / "linkp"
    tmp = link.with_name("linkp.tmp")
    tmp.symlink_to(other)
    os.replace(tmp, link)


def target_ancestor_swapped(w: World) -> None:
    """The link stays; an ancestor of its target is swapped outside the tree."""
    a = w.root / "outside" / "a"
    fresh = w.root / "outside" / "a2"
    (fresh / "linkp").mkdir(parents=True)
    (fresh / "linkp" / "plugin.yaml").write_text(manifest("LINKP", extra=True))
    os.rename(a, w.root / "outside" / "a_old")
    os.rename(fresh, a)


def hard_link_written_outside(w: World) -> None:
    """Written through an outside hard link (the directory watch sees no event)."""
    outside = w.root / "outside-link.yaml"
    os.link(w.platform_manifest, outside)
    w.build(w.gated)  # the new link changed ctime: re-armed, now nlink == 2
    w.build(w.stamped)
    assert w.gated_calls() == 0
    _rewrite(outside, manifest("PCHAT", extra=True))


def home_swapped(w: World) -> None:
    """The home renamed away and an edited copy moved in under its name."""
    copy = w.root / "home-copy"
    shutil.copytree(w.home, copy, symlinks=True)
    _rewrite(
        copy / "plugins" / "platforms" / "pchat" / "plugin.yaml", manifest("PCHAT", extra=True)
    )
    os.rename(w.home, w.root / "home-old")
    os.rename(copy, w.home)


def root_replaced(w: World) -> None:
    platforms = w.home / "plugins" / "platforms"
    copy = w.home / "plugins" / "platforms.new"
    shutil.copytree(platforms, copy, symlinks=True)
    _rewrite(copy / "pchat" / "plugin.yaml", manifest("PCHAT", extra=True))
    os.rename(platforms, w.home / "plugins" / "platforms.old")
    os.rename(copy, platforms)


def root_swapped_for_a_symlink(w: World) -> None:
    """The platforms root renamed away, a symlink to an edited copy put in its place."""
    platforms = w.home / "plugins" / "platforms"
    copy = w.root / "elsewhere" / "platforms"
    shutil.copytree(platforms, copy, symlinks=True)
    (copy / "pchat" / "plugin.yaml").write_text(manifest("PCHAT", extra=True))
    os.rename(platforms, w.home / "plugins" / "platforms.old")
    platforms.symlink_to(copy)


def symlinked_root_target_swapped(w: World) -> None:
    """The platforms root is a symlink (armed so); its target's ancestor is swapped outside the
    tree: no watched directory hears it, only the root's own re-stat."""
    platforms = w.home / "plugins" / "platforms"
    target = w.root / "roots" / "p"
    shutil.copytree(platforms, target / "platforms", symlinks=True)
    os.rename(platforms, w.home / "plugins" / "platforms.old")
    platforms.symlink_to(target / "platforms")
    for _ in range(2):
        assert w.build(w.gated) == w.build(w.stamped)
    assert w.gated_calls() == 0, "re-armed over the symlinked root"
    fresh = w.root / "roots" / "p2"
    shutil.copytree(target, fresh, symlinks=True)
    (fresh / "platforms" / "pchat" / "plugin.yaml").write_text(manifest("PCHAT", extra=True))
    os.rename(target, w.root / "roots" / "p-old")
    os.rename(fresh, target)


def root_removed(w: World) -> None:
    shutil.rmtree(w.home / "plugins" / "platforms")


def root_created(w: World) -> None:
    """The platforms root removed and the gate re-armed without it; then created anew."""
    platforms = w.home / "plugins" / "platforms"
    saved = w.root / "platforms-saved"
    os.rename(platforms, saved)
    for _ in range(2):
        assert w.build(w.gated) == w.build(w.stamped)
    assert w.gated_calls() == 0, "re-armed without the root"
    _rewrite(saved / "pchat" / "plugin.yaml", manifest("PCHAT", extra=True))
    os.rename(saved, platforms)


def mount_changed(w: World) -> None:
    """A mount over a plugin dir changes /proc/self/mountinfo (injected), then an edit."""
    w.notifier.mount_changed = True


def queue_overflow(w: World) -> None:
    w.notifier.overflow = True


def mmap_write(w: World) -> None:
    """A write through an existing mmap (no event): the periodic full stamp bounds the delay."""
    path = w.platform_manifest
    data = path.read_bytes()
    swap = (b"pchat", b"pch4t") if b"pchat" in data else (b"pch4t", b"pchat")
    text = data.replace(*swap)  # the same size: only the bytes differ
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), 0) as mm:
        mm[:] = text
        mm.flush()
    w.clock[0] += FULL_STAMP_NS  # the periodic full stamp is due


@dataclass(frozen=True)
class Row:
    """One failure mode: the mutation, and whether the gated build must go to the stamp."""

    mutate: Callable[[World], None]
    stamps: bool = True


ROWS: dict[str, Row] = {
    "in-place edit": Row(in_place),
    "append": Row(append),
    "truncate + rewrite": Row(truncate_rewrite),
    "chmod": Row(chmod),
    "rename-replace (platforms)": Row(rename_replace("platforms")),
    "rename-replace (flat)": Row(rename_replace("flat")),
    "rename-replace (bundled)": Row(rename_replace("bundled")),
    "plugin dir created": Row(plugin_created),
    "plugin dir removed": Row(plugin_removed),
    "plugin dir created and edited before its watch": Row(created_then_edited),
    "symlinked plugin dir retargeted": Row(symlink_retargeted),
    "symlink target's ancestor swapped": Row(target_ancestor_swapped),
    "hard-linked manifest written outside": Row(hard_link_written_outside),
    "home renamed away, a copy moved in": Row(home_swapped),
    "a root replaced": Row(root_replaced),
    "a root removed": Row(root_removed),
    "a root swapped for a symlink": Row(root_swapped_for_a_symlink),
    "a symlinked root's target's ancestor swapped": Row(symlinked_root_target_swapped),
    "a root created": Row(root_created),
    "mount table changed": Row(mount_changed),
    "queue overflow": Row(queue_overflow),
    "write through mmap (periodic stamp)": Row(mmap_write),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_failure_mode_table(tmp_path: Path, name: str) -> None:
    """Each row: the gated child equals the stamped child, and the gate fell back to the stamp."""
    w = make_world(tmp_path)
    row = ROWS[name]
    row.mutate(w)
    w.gated_fs.reset_counts()
    gated = w.build(w.gated)
    calls = sum(w.gated_fs.calls.values())
    stamped = w.build(w.stamped)
    assert gated == stamped
    if row.stamps:
        assert calls > 0, "the gate answered 'unchanged' after the change"
    for _ in range(2):  # and it settles again: re-armed, equal
        assert w.build(w.gated) == w.build(w.stamped)


def test_created_and_edited_home_is_dirty_until_a_watched_probe(tmp_path: Path) -> None:
    """A plugin dir found by a probe before its watch existed: the next check probes again."""
    w = make_world(tmp_path)
    plugin_created(w)
    w.build(w.gated)  # finds newp; its watch was placed only after the probe
    assert w.gated_calls() > 0  # not trusted yet: re-probed with the watch in place
    assert w.gated_calls() == 0  # now armed


def test_a_home_is_watched_from_its_second_probe(tmp_path: Path) -> None:
    """First probe: the stamp alone, no watch; second: watched and armed; third: the gate's."""
    w = make_world(tmp_path, warm=False)
    gate = w.gated._homes.manifests()._gate
    assert isinstance(gate, ChangeGate)
    assert w.gated_calls() > 0
    assert (gate.watched_homes, gate.watches) == (0, 0)
    assert w.gated_calls() > 0
    assert gate.watched_homes == 2  # the routed home and the launch home (its residue)
    assert gate.watches >= 3  # the roots, the plugin directories, the manifests
    assert w.gated_calls() == 0
    assert w.build(w.gated) == w.build(w.stamped)


def test_a_home_whose_cache_entry_was_evicted_is_stamped_then_gated(tmp_path: Path) -> None:
    """The cache forgot a clean home: the next probe is a stamp; a change after it is seen."""
    w = make_world(tmp_path)
    cache = w.gated._homes.manifests()
    cache._entries.clear()  # what the cache's LRU does to a home it holds no room for
    assert w.gated_calls() > 0
    in_place(w)
    assert w.gated_calls() > 0
    assert w.build(w.gated) == w.build(w.stamped)
    assert "PCHAT_EXTRA" not in w.build(w.gated)
    assert w.gated_calls() == 0


def test_a_failed_restat_is_doubt(tmp_path: Path) -> None:
    """A clean home's re-stat that fails (neither an identity nor absent): the stamp."""
    w = make_world(tmp_path)
    w.notifier.restat_fails = True
    for _ in range(3):
        assert w.gated_calls() > 0
        assert w.build(w.gated) == w.build(w.stamped)
    w.notifier.restat_fails = False
    w.build(w.gated)  # re-armed
    assert w.gated_calls() == 0


def test_a_root_that_cannot_be_stat_ed_is_never_gated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root re-stats failing alike at the probe and at the check: never armed, stamped every build.

    (Recorded and re-checked answers are equal here, so only ``arm``'s refusal keeps the
    gate from answering.)
    """
    w = make_world(tmp_path)
    monkeypatch.setattr(_gate, "_identity", lambda path: IDENTITY_UNKNOWN)
    w.notifier.restat_fails = True
    in_place(w)
    for _ in range(3):
        assert w.gated_calls() > 0
    assert w.build(w.gated) == w.build(w.stamped)


@pytest.mark.parametrize("where", ["watch limit (ENOSPC)", "FUSE", "NFS", "9p", "overlay"])
def test_ungateable_homes_are_stamped_every_build(tmp_path: Path, where: str) -> None:
    """No watch, or a file system inotify cannot fully see: the stamp on every build."""
    w = make_world(tmp_path)
    magic = {"FUSE": 0x65735546, "NFS": 0x6969, "9p": 0x01021997, "overlay": 0x794C7630}
    if where in magic:
        w.notifier.fs_magic = magic[where]
    else:
        w.notifier.watch_limit = True
        new = w.home / "plugins" / "platforms" / "newp"  # a new dir needs a new watch
        new.mkdir()
        (new / "plugin.yaml").write_text(manifest("NEWP"))
    in_place(w)  # any change: re-armed under the fault
    for _ in range(3):
        assert w.gated_calls() > 0
        assert w.build(w.gated) == w.build(w.stamped)


@pytest.mark.parametrize("magic", [0x6969, 0x65735546, 0x0187], ids=["NFS", "FUSE", "autofs"])
def test_a_walk_through_a_network_mount_is_never_gated(magic: int) -> None:
    """A home on a local file system below a network mount: the re-stats (which keep the GIL)
    would walk through it, so the home stays on the stamp."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat("/").st_dev:
        pytest.skip("needs /dev/shm on a file system of its own (a mount below /)")
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        w = make_world(Path(tmp))
        w.notifier.path_magic["/"] = magic  # the root file system, crossed by every walk
        in_place(w)  # re-armed under the fault
        for _ in range(3):
            assert w.gated_calls() > 0
            assert w.build(w.gated) == w.build(w.stamped)
        w.notifier.path_magic.clear()
        w.build(w.gated)  # re-armed over local file systems only
        assert w.gated_calls() == 0


def test_racy_probe_is_never_gated(tmp_path: Path) -> None:
    """A manifest changed within the clock's granularity is never trusted by the gate."""
    w = make_world(tmp_path)
    w.gated_fs.clock_offset_ns = 0  # the real clock: the files were just written
    w.stamped.policy()
    in_place(w)
    for _ in range(3):
        assert w.gated_calls() > 0
    assert w.build(w.gated) == w.build(w.stamped)


def test_watches_are_bounded_by_an_lru_of_homes(tmp_path: Path) -> None:
    """More homes than max_homes: the oldest are unwatched; their next check is a stamp."""
    w = make_world(tmp_path)
    gate = ChangeGate(w.notifier, max_homes=2)
    w.gated._homes.manifests()._gate = gate
    homes = []
    for i in range(4):
        home = w.root / f"h{i}"
        (home / "plugins" / "platforms" / f"p{i}").mkdir(parents=True)
        (home / "plugins" / "platforms" / f"p{i}" / "plugin.yaml").write_text(manifest(f"P{i}"))
        homes.append(home)
        for _ in range(2):
            with w.gated.routed(home, scope={}):
                w.gated.build_subprocess_env(BASE)
    assert gate.watched_homes == 2
    w.gated_fs.reset_counts()
    with w.gated.routed(homes[0], scope={}):
        w.gated.build_subprocess_env(BASE)
    assert sum(w.gated_fs.calls.values()) > 0  # evicted: back to the stamp


def test_off_switch_and_default(tmp_path: Path) -> None:
    """change_notification=False never gates; the default gates over the real file system only."""
    w = make_world(tmp_path)
    assert w.stamped._homes.manifests()._gate is None
    assert Host(w.launch)._homes.manifests()._gate is not None
    assert Host(w.launch, fs=InstrumentedFileSystem())._homes.manifests()._gate is None


@pytest.mark.parametrize(("line", "gated"), [("", True), ("change_notification: false\n", False)])
def test_config_file_off_switch(tmp_path: Path, line: str, gated: bool) -> None:
    """``change_notification`` in envscope.yaml reaches the host (default: on)."""
    from envscope.cli.config import load_config

    (tmp_path / "launch").mkdir()
    config = tmp_path / "envscope.yaml"
    config.write_text(f"launch_home: ./launch\n{line}")
    host = load_config(str(config)).build_host(environ={"PATH": "/usr/bin"})
    assert (host._homes.manifests()._gate is not None) is gated


D1, D2, D3 = (1, 10), (1, 11), (1, 12)
# (roots with their identities at arming, the paths a clean check re-stats)
RESTATED: dict[str, tuple[tuple[tuple[str, Identity], ...], tuple[str, ...]]] = {
    "nested in a watched root": (
        (("/b", D1), ("/h/p/platforms", D2), ("/h/p", D3)),
        ("/b", "/h/p"),
    ),
    "nested, absent": ((("/h/p/platforms", None), ("/h/p", D3)), ("/h/p",)),
    "parent absent": ((("/h/p/platforms", None), ("/h/p", None)), ("/h/p/platforms", "/h/p")),
    "parent unknown": (
        (("/h/p/platforms", D2), ("/h/p", IDENTITY_UNKNOWN)),
        ("/h/p/platforms", "/h/p"),
    ),
    "nested, unknown": (
        (("/h/p/platforms", IDENTITY_UNKNOWN), ("/h/p", D3)),
        ("/h/p/platforms", "/h/p"),
    ),
    "not nested": ((("/b", D1), ("/h/p", D3)), ("/b", "/h/p")),
    "the file system's root": ((("/", D1),), ("/",)),
}


@pytest.mark.parametrize("case", RESTATED)
def test_which_roots_a_clean_check_re_stats(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A root inside another watched root, a real directory or absent, is answered by its
    parent's re-stat and watch; any doubt about either keeps its own re-stat."""
    roots, restated = RESTATED[case]
    monkeypatch.setattr(os.path, "islink", lambda path: False)
    assert tuple(p for p, _ in _gate._restated(roots)) == restated


def test_a_symlinked_root_keeps_its_re_stat(monkeypatch: pytest.MonkeyPatch) -> None:
    roots: tuple[tuple[str, Identity], ...] = (("/h/p/platforms", D2), ("/h/p", D3))
    monkeypatch.setattr(os.path, "islink", lambda path: path == "/h/p/platforms")
    assert _gate._restated(roots) == roots
