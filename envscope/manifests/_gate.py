"""The change-notification gate: inotify answers "nothing changed" so the stamp need not run.

On Linux the manifest cache asks the gate, before it probes a home, whether the
home's previous probe still stands. The gate says *unchanged* only when it is
sure; any doubt sends the check to the stamp (a full probe), never to
"unchanged". A home is **clean** when its last probe was armed (below) and no
event arrived for any directory it watches since. On every check of a clean
home the gate also

- drains the inotify queue and polls the mount table (one ``poll`` for both):
  a mount table change or a queue overflow (``IN_Q_OVERFLOW``) makes every home
  dirty, and another mount namespace (``unshare``, ``setns``) makes the gate
  forget every home and take a notifier on the new namespace's table;
- re-stats each root's ``(dev, ino)`` (a root or the home replaced by a copy,
  a root created or removed; not a root that is a real directory, or absent,
  directly inside another watched root: ``_restated``) and each symlinked
  plugin directory's target,
  through the notifier's ``statx``, which keeps the GIL (a clean home's file
  systems are local ones: the allowlist below);
- re-stats every *linked* manifest (a symlinked manifest, or one with more than
  one hard link, can be written through a name no watch sees) against its
  signature;
- gives way to a periodic full stamp (``FULL_STAMP_NS``): a write through an
  existing ``mmap`` makes no event, so the delay is bounded, not zero.

Arming. ``begin`` drains the queue, marks the home dirty and watches its roots
and the plugin directories of its previous stamp *before* the probe; ``arm``
(after the probe) watches any plugin directory the probe found that was not
watched yet and makes the home clean only when no event arrived since
``begin``, every directory was already watched before the probe, and the probe
is trustworthy: not racy, every candidate a regular manifest or absent, every
root listed or missing, every file system on the allowlist of local file
systems inotify fully sees (by ``statfs`` type: ext2/3/4, xfs, btrfs, tmpfs,
f2fs, zfs, ramfs…; network, FUSE, 9p and overlay are never gated), and every
watch placed (``ENOSPC``, the watch limit, leaves the home on the stamp).

Bounded: at most ``max_homes`` homes are watched (LRU); an evicted home's
watches are removed unless another home shares them (the bundled root).
Thread-safe: one lock guards the tables; the probe runs outside it.

Implementation: inotify through ``ctypes`` (``inotify_init1``,
``inotify_add_watch``, ``inotify_rm_watch``) and ``statfs`` for the file system
type, in ``_inotify``. Judged against the small wrappers on PyPI (``inotify_simple`` and
others): each is about this much ``ctypes`` code, and none exposes the seam the
failure-mode tests need (``Notifier``) or the mount-table poll, so a dependency
would add supply-chain risk for no code saved.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from envscope.manifests._inotify import (
    IDENTITY_UNKNOWN,
    IN_IGNORED,
    IN_Q_OVERFLOW,
    Identity,
    LinuxNotifier,
    Notifier,
    NotifierLost,
    adopt_lock,
    failed_identity,
)
from envscope.manifests._probe import Probe, RootProbe, Signature, State

__all__ = [
    "FULL_STAMP_NS",
    "GATED_FS_TYPES",
    "ChangeGate",
    "LinuxNotifier",
    "Notifier",
    "create_gate",
]

FULL_STAMP_NS = 5_000_000_000
"""A clean home is stamped in full at least this often (a write through ``mmap`` has no event)."""

GATED_FS_TYPES = frozenset(
    {
        0xEF53,  # ext2/3/4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0xF2F52010,  # f2fs
        0x2FC12FC1,  # zfs
        0x858458F6,  # ramfs
        0x52654973,  # reiserfs
        0x3153464A,  # jfs
    }
)
"""Local file systems whose every change inotify reports. Anything else (NFS, SMB/CIFS,
FUSE, 9p, overlay, ceph, an unknown type) is never gated: the stamp runs on every build."""

LOCAL_FS_TYPES = GATED_FS_TYPES | {
    0x794C7630,  # overlay (a container's root: local, though inotify misses its lower layers)
    0x73717368,  # squashfs
    0x9660,  # iso9660
    0x4D44,  # vfat
    0x2011BAB0,  # exfat
    0x5346544E,  # ntfs
}
"""File systems a gated home's re-stat may walk through (every directory above its roots):
local ones, where a lookup never waits on a server. A walk crossing anything else (NFS,
FUSE, autofs, an unknown type) leaves the home on the stamp."""


def _identity(path: str) -> Identity:
    """``os.stat``'s ``(dev, ino)`` (it lets go of the GIL: a probe's path, maybe a network one).

    None when there is no such path, ``IDENTITY_UNKNOWN`` on any other failure:
    the same answers as the notifier's ``identity``, which re-stats clean homes.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return failed_identity(exc.errno or 0)
    except ValueError:  # a NUL byte
        return IDENTITY_UNKNOWN
    return (st.st_dev, st.st_ino)


def _crossed(paths: Iterable[str], known: set[int]) -> dict[int, str] | None:
    """A directory on each file system a walk to ``paths`` crosses, but ``known`` devices.

    Every ancestor of each path, as given and resolved (``realpath``); an ancestor
    that is missing ends the walk there. None when one cannot be stat-ed otherwise
    (its file system is unknown: doubt).
    """
    found: dict[int, str] = {}
    seen: set[str] = set()
    for path in paths:
        for start in (os.path.abspath(path), os.path.realpath(path)):
            current = os.path.dirname(start)
            while current not in seen:
                seen.add(current)
                ident = _identity(current)
                if ident == IDENTITY_UNKNOWN:
                    return None
                if ident is not None and ident[0] not in known:
                    found.setdefault(ident[0], current)
                parent = os.path.dirname(current)
                if parent == current:
                    break
                current = parent
    return found


def _signature(path: str) -> Signature | None:
    try:
        return Signature.of(os.stat(path))
    except (OSError, ValueError):
        return None


class _Home:
    """One watched home: mutable state, changed only under the gate's lock."""

    __slots__ = ("armed_ns", "clean", "events", "linked", "links", "paths", "roots", "wds")

    def watched(self) -> dict[str, int]:
        """Path -> watch descriptor (built when asked: arming only)."""
        return dict(zip(self.paths, self.wds, strict=True))

    def __init__(self) -> None:
        # watched paths and their watch descriptors, side by side (two tuples: a dict per
        # home was most of a watched home's memory)
        self.paths: tuple[str, ...] = ()
        self.wds: tuple[int, ...] = ()
        self.events = 0  # grows with every event for the home (and every global doubt)
        self.clean = False
        self.armed_ns = 0
        self.roots: tuple[tuple[str, Identity], ...] = ()
        self.links: tuple[tuple[str, Identity], ...] = ()  # symlinked plugin dirs' targets
        self.linked: tuple[tuple[str, Signature | None], ...] = ()  # linked manifests


@dataclass(frozen=True, slots=True)
class Begun:
    """What ``begin`` saw: the home's record, its event count, the paths it watched (and how)."""

    key: str
    home: _Home
    events: int
    roots: tuple[tuple[str, Identity], ...]
    watched: dict[str, int]
    failed: bool


def _watch_paths(roots: tuple[str, ...], probes: tuple[RootProbe, ...]) -> list[str]:
    """What a home's gate watches: its roots, every plugin directory, every regular manifest.

    A manifest's own inode is watched too: a write through another hard link, or a
    new link (``st_nlink`` changes), makes no event in its directory.
    """
    paths = list(roots)
    for rp in probes:
        for cand in rp.candidates:
            paths.append(cand.dirpath)
            if cand.state is State.REGULAR:
                paths.append(cand.manifest)
    return paths


class ChangeGate:
    """Per-home "unchanged since the last probe" answers from inotify; thread-safe, bounded."""

    def __init__(
        self,
        notifier: Notifier,
        *,
        max_homes: int = 256,
        full_stamp_ns: int = FULL_STAMP_NS,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._notifier = notifier
        self._pid = os.getpid()  # the process the notifier belongs to
        self._max_homes = max_homes
        self._full_stamp_ns = full_stamp_ns
        self._clock = clock
        self._lock = threading.Lock()
        self._homes: OrderedDict[str, _Home] = OrderedDict()
        # wd -> the home using it, or a tuple of the homes sharing it (the bundled root):
        # most watches belong to one home, and a set each was most of a home's memory
        self._wd_homes: dict[int, str | tuple[str, ...]] = {}

    def _own(self) -> None:
        """In a forked child, first: forget the parent's state, take a notifier of our own.

        The homes, the watches they count on and the lock are the parent's: the
        child starts with no clean home (the stamp answers first) and never reads,
        removes or closes the parent's inotify watches or events.
        """
        if self._pid == os.getpid():
            return
        with adopt_lock():
            if self._pid == os.getpid():
                return
            self._lock = threading.Lock()
            self._homes = OrderedDict()
            self._wd_homes = {}
            self._notifier = self._notifier.forked()
            self._pid = os.getpid()

    # -- under the lock ----------------------------------------------------------

    def _doubt_all(self) -> None:
        for home in self._homes.values():
            home.clean = False
            home.events += 1

    def _drain(self) -> None:
        try:
            events, mounts = self._notifier.events()
        except NotifierLost:  # a descriptor closed or reused under us (closerange)
            self._homes.clear()  # every home to the stamp; no lost number is touched again
            self._wd_homes = {}
            self._notifier = self._notifier.renewed()
            return
        if mounts:
            self._doubt_all()
        for wd, mask in events:
            if mask & IN_Q_OVERFLOW or wd < 0:
                self._doubt_all()  # events were lost: nobody can be trusted
                continue
            users = self._wd_homes.pop(wd, ()) if mask & IN_IGNORED else self._wd_homes.get(wd, ())
            for key in (users,) if isinstance(users, str) else users:
                home = self._homes.get(key)
                if home is None:
                    continue
                home.clean = False
                home.events += 1
                if mask & IN_IGNORED:  # the watch is gone (removed, unmounted): re-watch later
                    kept = [(p, w) for p, w in zip(home.paths, home.wds, strict=True) if w != wd]
                    home.paths = tuple(p for p, _ in kept)
                    home.wds = tuple(w for _, w in kept)

    def _unuse(self, key: str, wd: int) -> None:
        """``key`` no longer uses ``wd``; the watch is removed when no home does."""
        users = self._wd_homes.get(wd)
        if users is None or users == key or (isinstance(users, tuple) and users == (key,)):
            if users is not None:
                del self._wd_homes[wd]
                self._notifier.rm_watch(wd)
            return
        if isinstance(users, str):
            return  # another home's watch
        left = tuple(k for k in users if k != key)
        self._wd_homes[wd] = left[0] if len(left) == 1 else left

    def _release(self, key: str, home: _Home) -> None:
        for wd in set(home.wds):
            self._unuse(key, wd)
        home.paths, home.wds = (), ()

    def _rewatch(self, key: str, home: _Home, paths: list[str]) -> bool:
        """(Re)watch exactly ``paths`` for the home; False when some watch cannot be placed.

        ``inotify_add_watch`` on a watched inode returns its descriptor again, so a
        path now naming another inode gets a new one (``home.paths`` says which).
        """
        ok = True
        fresh: dict[str, int] = {}
        for path in paths:
            if path in fresh:
                continue
            try:
                wd = self._notifier.add_watch(path)
            except OSError:  # ENOSPC (the watch limit), EACCES, ENOENT: the stamp, for now
                ok = False
                continue
            fresh[path] = wd
            users = self._wd_homes.get(wd)
            if users is None:
                self._wd_homes[wd] = key
            elif isinstance(users, str):
                if users != key:
                    self._wd_homes[wd] = (users, key)
            elif key not in users:
                self._wd_homes[wd] = (*users, key)
        still = set(fresh.values())
        for wd in set(home.wds) - still:
            self._unuse(key, wd)
        home.paths, home.wds = tuple(fresh), tuple(fresh.values())
        return ok

    # -- the cache's calls -------------------------------------------------------

    def unchanged(self, key: str) -> bool:
        """True only when the home is clean and every re-stat agrees (else: run the stamp)."""
        if self._pid != os.getpid():  # ``_own`` inlined: this is every gated build's path
            self._own()
        with self._lock:
            self._drain()
            home = self._homes.get(key)
            if home is None or not home.clean:
                return False
            if self._clock() - home.armed_ns >= self._full_stamp_ns:
                home.clean = False  # the periodic full stamp
                return False
            self._homes.move_to_end(key)
            checks = (home.roots, home.links)
            linked = home.linked
        identity = self._notifier.identity
        for pairs in checks:
            for path, ident in pairs:
                if identity(path) != ident:
                    return self._dirty(home)
        for path, sig in linked:
            if _signature(path) != sig:
                return self._dirty(home)
        return True

    def _dirty(self, home: _Home) -> bool:
        with self._lock:
            home.clean = False
            home.events += 1
        return False

    def begin(
        self, key: str, root_paths: tuple[str, ...], previous: tuple[RootProbe, ...]
    ) -> Begun:
        """Before a probe: drain, mark the home dirty, (re)watch what its last probe found."""
        self._own()
        with self._lock:
            self._drain()
            home = self._homes.get(key)
            if home is None:
                home = self._homes[key] = _Home()
                while len(self._homes) > self._max_homes:
                    old_key, old = self._homes.popitem(last=False)
                    self._release(old_key, old)
            self._homes.move_to_end(key)
            home.clean = False
            existing = tuple(p for p in root_paths if os.path.isdir(p))
            failed = not self._rewatch(key, home, _watch_paths(existing, previous))
            roots = tuple((path, _identity(path)) for path in root_paths)
            return Begun(key, home, home.events, roots, home.watched(), failed)

    def arm(self, begun: Begun, found: Probe) -> None:
        """After a probe: watch what it found; clean only if all was watched before it and still."""
        gateable = not begun.failed and _trustworthy(found)
        links: list[tuple[str, Identity]] = []
        linked: list[tuple[str, Signature | None]] = []
        devs: dict[int, str] = {}
        for rp in found.roots:
            for cand in rp.candidates:
                if cand.is_symlink:
                    links.append((cand.dirpath, _identity(cand.dirpath)))
                if cand.linked:
                    linked.append((cand.manifest, cand.signature))
                if cand.signature is not None:
                    devs.setdefault(cand.signature.dev, cand.manifest)
                elif not cand.is_symlink:  # no manifest yet: the directory's own file system
                    dir_ident = _identity(cand.dirpath)
                    if dir_ident is None or dir_ident == IDENTITY_UNKNOWN:
                        gateable = False
                    else:
                        devs.setdefault(dir_ident[0], cand.dirpath)
        for path, ident in links:  # a symlinked plugin directory's target's file system
            if ident is not None and ident != IDENTITY_UNKNOWN:
                devs.setdefault(ident[0], path)
        for path, ident in begun.roots:
            if ident is not None and ident != IDENTITY_UNKNOWN:
                devs.setdefault(ident[0], path)
        if any(ident == IDENTITY_UNKNOWN for _, ident in (*begun.roots, *links)):
            gateable = False  # a root or a link target that could not be re-stat-ed: doubt
        if gateable:
            gateable = all(self._notifier.fs_type(p) in GATED_FS_TYPES for p in devs.values())
        if gateable:  # the re-stats keep the GIL: no walk to them may wait on a network
            crossed = _crossed((path for path, _ in (*begun.roots, *links)), set(devs))
            gateable = crossed is not None and all(
                self._notifier.fs_type(p) in LOCAL_FS_TYPES for p in crossed.values()
            )
        existing = tuple(
            path for path, ident in begun.roots if ident not in (None, IDENTITY_UNKNOWN)
        )
        paths = _watch_paths(existing, found.roots)
        restated = _restated(begun.roots)  # an lstat each: outside the lock
        self._own()
        with self._lock:
            home = self._homes.get(begun.key)
            if home is not begun.home:
                return  # evicted (or replaced) meanwhile: the next check starts over
            if not self._rewatch(begun.key, home, paths):
                gateable = False
            self._drain()
            moved = home.events != begun.events
            # A path watched only now (a new plugin, a replaced manifest): a change between
            # the probe and its watch would be unseen, so the next check probes again.
            late = any(
                begun.watched.get(p) != wd for p, wd in zip(home.paths, home.wds, strict=True)
            )
            home.roots = restated
            home.links = tuple(links)
            home.linked = tuple(linked)
            home.clean = gateable and not moved and not late
            home.armed_ns = self._clock()

    @property
    def watched_homes(self) -> int:
        """How many homes the gate watches (for tests and metrics)."""
        self._own()
        with self._lock:
            return len(self._homes)

    @property
    def watches(self) -> int:
        """How many inotify watches the gate holds."""
        self._own()
        with self._lock:
            return len(self._wd_homes)

    def close(self) -> None:
        """Stop watching (the notifier's descriptor is closed)."""
        self._own()
        with self._lock:
            self._homes.clear()
            self._wd_homes.clear()
            self._notifier.close()


def _restated(roots: tuple[tuple[str, Identity], ...]) -> tuple[tuple[str, Identity], ...]:
    """The roots a clean home's check re-stats: all but those a watched root answers for.

    A root directly inside another root the home watches (``plugins/platforms``
    inside ``plugins``), a real directory or absent when the home is armed,
    needs no re-stat of its own: its path resolves through the parent, whose
    re-stat says the parent is the directory watched, and through one entry of
    it, whose every change (a rename, a removal, a directory or a symlink put in
    its place) is an event of the parent's watch; a mount over it changes the
    mount table. A symlinked one is re-stat-ed: its target's ancestors are
    watched by nobody. Asked at arming, after the watches were placed.
    """
    watched = {path for path, ident in roots if ident is not None and ident != IDENTITY_UNKNOWN}
    return tuple(
        (path, ident)
        for path, ident in roots
        if ident == IDENTITY_UNKNOWN
        or os.path.dirname(path) not in watched
        or os.path.dirname(path) == path
        or os.path.islink(path)
    )


def _trustworthy(found: Probe) -> bool:
    """A probe the gate may stand on: settled, every root listed or missing, no problem."""
    for rp in found.roots:
        if rp.error is not None or rp.dangling is not None:
            return False
        for cand in rp.candidates:
            if cand.racy or cand.state not in (State.REGULAR, State.ABSENT):
                return False
            if cand.state is State.REGULAR and (
                cand.signature is None or not stat.S_ISREG(cand.signature.mode)
            ):
                return False
    return True


def create_gate(*, max_homes: int = 256) -> ChangeGate | None:
    """A gate over the real inotify, or None where there is none (not Linux, no descriptor)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        notifier = LinuxNotifier()
    except (OSError, AttributeError):
        return None
    return ChangeGate(notifier, max_homes=max_homes)
