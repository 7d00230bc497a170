"""The stat pass of a manifest scan: list the roots, stat the candidates, open nothing.

``probe(fs, roots)`` makes one ``scandir`` per root, then per plugin directory an
``lstat`` of ``plugin.yaml``. The common case (a regular ``plugin.yaml``) costs
exactly one stat. Extra stats happen only when they carry information:

- a symlinked manifest is also ``stat``-ed through the link (to tell a regular
  target, a dangling link and a loop apart);
- an absent ``plugin.yaml`` is followed by an ``lstat`` of ``plugin.yml``;
- a failing entry (unlistable root, unsearchable plugin directory) is
  ``stat``-ed itself so a ``chmod`` back changes the stamp;
- a listing entry that is a symlink but not a directory is ``stat``-ed through
  the link: a link to a file is not a plugin, a link that cannot be followed
  (dangling, a loop, an unreachable target) is a *broken plugin directory*;
- a root that is missing (``ENOENT``) is ``lstat``-ed (and, for
  ``plugins/platforms``, so is ``plugins``): only a path that really is not
  there is "missing"; a dangling symlink as the root (or as ``plugins/``) is
  a failing root, and so is a root that exists although listing it said
  ``ENOENT`` (it changed under the scan);
- looking past ``plugin.yaml`` ("no manifest", or ``plugin.yml``) changes what
  a plugin declares, so that conclusion is confirmed by a second look at the
  plugin directory (unless the previous probe of that directory came to the
  same one); two looks that disagree are a problem (``UNSTABLE``).

No file is opened. The probe *is* the stamp. Given the previous probe
(``expected``), an unchanged root or candidate comes back as the very same
object, so the warm check allocates next to nothing and an unchanged stamp
compares by identity; the system calls are the same.

Racy entries (git's rule): a manifest whose mtime or ctime is within
``RACY_WINDOW_NS`` of the probe's clock could be rewritten within the same
timestamp tick without changing its signature, so such a probe is marked
``racy`` and the cache re-checks it on the next call instead of trusting it.
"""

from __future__ import annotations

import enum
import errno as errno_mod
import math
import operator
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from envscope.files._fs import DirEntry, FileSystem, StatResult

__all__ = [
    "MANIFEST_NAMES",
    "RACY_WINDOW_NS",
    "CandidateProbe",
    "Probe",
    "Root",
    "RootKind",
    "RootProbe",
    "Signature",
    "State",
    "home_roots",
    "probe",
]

MANIFEST_NAMES: tuple[str, str] = ("plugin.yaml", "plugin.yml")
RACY_WINDOW_NS = 3_000_000_000
"""Covers a 2 s timestamp granularity (FAT) plus clock slack."""

_PLATFORMS = "platforms"
_FIRST = os.sep + MANIFEST_NAMES[0]
_NEVER = math.inf  # a clock time no probe reaches


class RootKind(enum.Enum):
    """Which plugin root a manifest was found under."""

    BUNDLED = "bundled"
    PLATFORMS = "platforms"
    FLAT = "flat"

    @property
    def is_platform(self) -> bool:
        """Every manifest counts, and its problems are fatal in raise mode."""
        return self is not RootKind.FLAT


@dataclass(frozen=True, slots=True)
class Root:
    """One directory of plugin directories."""

    kind: RootKind
    path: str


def home_roots(home_path: str, bundled_root: str | None) -> tuple[Root, ...]:
    """The roots scanned for one home, in precedence order."""
    plugins = os.path.join(home_path, "plugins")
    roots = [
        Root(RootKind.PLATFORMS, os.path.join(plugins, _PLATFORMS)),
        Root(RootKind.FLAT, plugins),
    ]
    if bundled_root is not None:
        roots.insert(0, Root(RootKind.BUNDLED, bundled_root))
    return tuple(roots)


class Signature(NamedTuple):
    """A file's identity and version as far as ``stat`` can tell."""

    mode: int
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    uid: int
    gid: int

    @classmethod
    def of(cls, st: StatResult) -> Signature:
        """The signature of a stat result."""
        return cls._make(_signature_fields(st))


_signature_fields: Callable[[StatResult], tuple[int, ...]] = operator.attrgetter(
    *(f"st_{name}" for name in Signature._fields)
)
"""A stat result's signature fields as a plain tuple (equal to its ``Signature``)."""


class State(enum.Enum):
    """What the probe found in one plugin directory."""

    REGULAR = "regular"  # a regular manifest: scan() reads it
    IGNORED = "ignored"  # not a regular file: never opened (a problem)
    ABSENT = "absent"  # no manifest (or a symlink loop), seen twice
    FAILED = "failed"  # cannot stat: a problem
    BROKEN = "broken"  # the plugin directory is a symlink that cannot be followed: a problem
    UNSTABLE = "unstable"  # two looks past plugin.yaml disagreed: a problem


@dataclass(frozen=True, slots=True)
class CandidateProbe:
    """One plugin directory: its manifest's state and signature (or the failing entry's)."""

    dirname: str
    dirpath: str
    is_symlink: bool
    manifest: str
    state: State
    signature: Signature | None = None
    error: int | None = None
    racy: bool = field(default=False, compare=False)
    recheck_from_ns: float = field(default=_NEVER, compare=False, repr=False)
    linked: bool = field(default=False, compare=False, repr=False)
    """A regular manifest reached through a symlink, or with more than one hard link.

    A write through another name changes it without an event in its plugin
    directory: the change-notification gate re-stats such a manifest on every check.
    """
    """From this probe-clock time one ``lstat`` compared with ``signature`` rechecks it.

    A regular ``plugin.yaml`` that was settled when probed: the time its
    mtime and ctime leave the racy window. ``_NEVER`` for every other
    candidate, which takes the full probe.
    """


@dataclass(frozen=True, slots=True)
class RootProbe:
    """One root: missing, failed (errno and the root's own signature), or its candidates.

    ``dangling`` names the symlink (the root itself, or ``plugins/`` above
    ``plugins/platforms``) that cannot be followed when that is why it failed.
    """

    root: Root
    missing: bool = False
    error: int | None = None
    signature: Signature | None = None
    candidates: tuple[CandidateProbe, ...] = ()
    dangling: str | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """The result of the stat pass; equality of ``roots`` is stamp equality."""

    roots: tuple[RootProbe, ...]

    @property
    def stamp(self) -> tuple[RootProbe, ...]:
        """The cache validity stamp (racy flags excluded)."""
        return self.roots

    @property
    def racy(self) -> bool:
        """True when some manifest changed too recently for its signature to be trusted."""
        return any(c.racy for r in self.roots for c in r.candidates)


def _failure_signature(fs: FileSystem, path: str) -> Signature | None:
    """The failing entry's own signature: ``stat``, else ``lstat``, else None."""
    for follow in (True, False):
        try:
            return Signature.of(fs.stat(path, follow_symlinks=follow))
        except OSError:
            continue
    return None


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _candidate(
    entry: DirEntry,
    path: str,
    state: State,
    sig: Signature | None = None,
    err: int | None = None,
    *,
    racy: bool = False,
    settles_ns: float = _NEVER,
    linked: bool = False,
) -> CandidateProbe:
    recheck_ns = _NEVER if racy or not path.endswith(_FIRST) else settles_ns
    return CandidateProbe(
        entry.name, entry.path, entry.is_symlink, path, state, sig, err, racy, recheck_ns, linked
    )


def _probe_manifest(
    fs: FileSystem,
    entry: DirEntry,
    now_ns: int,
    first: StatResult | OSError | None = None,
    *,
    expected: CandidateProbe | None = None,
) -> CandidateProbe:
    """Find and stat the manifest of one plugin directory.

    ``first``, when given, is the outcome of the ``lstat`` of ``plugin.yaml``
    already made (by the unchanged-candidate check), so no call is repeated.

    Looking past ``plugin.yaml`` (it is absent, or a symlink loop) changes what
    the plugin declares — ``plugin.yml`` or nothing — so that conclusion is
    confirmed by a second look unless the previous probe (``expected``) came to
    the same one. Two looks that disagree are ``UNSTABLE``, a problem: one
    failing call (a stray ``ENOENT``, ``ENOTDIR`` or ``ELOOP``, in either look)
    cannot make a manifest vanish or swap ``plugin.yaml`` for a stale
    ``plugin.yml``.
    """
    found = _look(fs, entry, now_ns, first)
    if found.manifest.endswith(_FIRST) and found.state is not State.ABSENT:
        return found  # plugin.yaml itself: nothing was concluded from an absence
    if expected is not None and (expected.manifest, expected.state) == (
        found.manifest,
        found.state,
    ):
        return found
    again = _look(fs, entry, now_ns)
    if (again.manifest, again.state, again.signature) == (
        found.manifest,
        found.state,
        found.signature,
    ):
        return found
    return _candidate(entry, os.path.join(entry.path, MANIFEST_NAMES[0]), State.UNSTABLE)


def _look(
    fs: FileSystem, entry: DirEntry, now_ns: int, first: StatResult | OSError | None = None
) -> CandidateProbe:
    """One look at a plugin directory: the first manifest name that is there, or ABSENT."""
    for name in MANIFEST_NAMES:
        path = os.path.join(entry.path, name)
        try:
            if first is None:
                st = fs.stat(path, follow_symlinks=False)
            elif isinstance(first, OSError):
                raise first
            else:
                st = first
        except OSError as exc:
            if exc.errno in (errno_mod.ENOENT, errno_mod.ENOTDIR):
                continue  # absent: try the next name
            # EACCES here: the plugin directory is not searchable.
            return _candidate(
                entry, path, State.FAILED, _failure_signature(fs, entry.path), exc.errno
            )
        finally:
            first = None
        linked = stat.S_ISLNK(st.st_mode)
        if linked:
            link = Signature.of(st)
            try:
                st = fs.stat(path)
            except OSError as exc:
                if exc.errno == errno_mod.ELOOP:
                    continue  # a symlink loop is no manifest
                # a dangling link (ENOENT) or an unreachable target
                return _candidate(entry, path, State.FAILED, link, exc.errno)
        sig = Signature.of(st)
        if not stat.S_ISREG(st.st_mode):
            return _candidate(entry, path, State.IGNORED, sig)
        settles_ns = max(st.st_mtime_ns, st.st_ctime_ns) + RACY_WINDOW_NS
        racy = now_ns < settles_ns
        linked = linked or getattr(st, "st_nlink", 2) != 1  # unknown: counted as linked
        return _candidate(
            entry, path, State.REGULAR, sig, racy=racy, settles_ns=settles_ns, linked=linked
        )
    return _candidate(entry, os.path.join(entry.path, MANIFEST_NAMES[0]), State.ABSENT)


def _follow_link(fs: FileSystem, entry: DirEntry) -> CandidateProbe | bool:
    """A listed symlink that is not a directory: True if it is one now, False if not a plugin.

    A link to a file (or another non-directory) is not a plugin directory. A
    link that cannot be followed (dangling, a loop, a target out of reach) is
    a broken plugin directory: a problem, never "no plugin".
    """
    try:
        st = fs.stat(entry.path)
    except OSError as exc:
        try:
            link: Signature | None = Signature.of(fs.stat(entry.path, follow_symlinks=False))
        except OSError:
            link = None
        return _candidate(entry, entry.path, State.BROKEN, link, exc.errno)
    return stat.S_ISDIR(st.st_mode)


def _missing_root(fs: FileSystem, root: Root, expected: RootProbe | None) -> RootProbe:
    """A root whose listing said ``ENOENT``: missing only if nothing (not even a link) is there.

    For ``plugins/platforms`` the ``plugins`` above it is checked too. A
    dangling symlink is a failing root (``dangling`` names it); a root that
    exists after all changed under the scan and fails too; a check that
    cannot be made fails closed.
    """
    paths = [root.path]
    if root.kind is RootKind.PLATFORMS:
        paths.append(os.path.dirname(root.path))
    for path in paths:
        try:
            st = fs.stat(path, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno_mod.ENOENT:
                continue
            return RootProbe(root, error=exc.errno)
        sig = Signature.of(st)
        if stat.S_ISLNK(st.st_mode):
            try:
                fs.stat(path)
            except OSError:
                return RootProbe(root, error=errno_mod.ENOENT, signature=sig, dangling=path)
        if path == root.path:  # it is there after all: it changed while listed
            return RootProbe(root, error=errno_mod.ENOENT, signature=sig)
        break  # the parent resolves: the root is simply not there
    if expected is not None and expected.missing:
        return expected
    return RootProbe(root, missing=True)


def _settle(found: CandidateProbe, expected: CandidateProbe) -> CandidateProbe:
    """``expected`` when the new probe of a candidate equals it (racy flag included)."""
    return expected if found == expected and found.racy == expected.racy else found


_by_name = operator.attrgetter("name")


def _plugin_dirs(
    fs: FileSystem, root: Root, listing: list[DirEntry]
) -> tuple[list[DirEntry], dict[str, CandidateProbe]]:
    """A root's plugin directories by name, and the broken links among them (by path).

    ``__dunder__`` entries and, in the flat root, ``platforms`` are not plugins;
    a symlink is followed (``_follow_link``): to a file it is not a plugin, and
    one that cannot be followed is kept as a ``BROKEN`` candidate.
    """
    flat = root.kind is RootKind.FLAT
    dirs = [
        e
        for e in listing
        if (e.is_dir or e.is_symlink)
        and ("__" not in e.name or not _is_dunder(e.name))  # `in`: no call per name
        and not (flat and e.name == _PLATFORMS)
    ]
    broken: dict[str, CandidateProbe] = {}
    if [e for e in dirs if not e.is_dir]:  # symlinks to a non-directory, or that cannot be followed
        kept = []
        for e in dirs:
            followed = True if e.is_dir else _follow_link(fs, e)
            if isinstance(followed, CandidateProbe):
                broken[e.path] = followed
            if followed is not False:
                kept.append(e)
        dirs = kept
    dirs.sort(key=_by_name)
    return dirs, broken


def _probe_root(
    fs: FileSystem, root: Root, now_ns: int, expected: RootProbe | None = None
) -> RootProbe:
    """List one root and probe its candidates; ``expected`` (same root) is reused if unchanged."""
    try:
        listing = fs.scandir(root.path)
    except OSError as exc:
        if exc.errno == errno_mod.ENOENT:
            return _missing_root(fs, root, expected)
        return RootProbe(root, error=exc.errno, signature=_failure_signature(fs, root.path))
    dirs, broken = _plugin_dirs(fs, root, listing)
    before = () if expected is None else expected.candidates
    if len(before) != len(dirs):  # plugins came or went: probe the root afresh
        return RootProbe(
            root,
            candidates=tuple(broken.get(e.path) or _probe_manifest(fs, e, now_ns) for e in dirs),
        )
    # The warm path, once per candidate manifest on every spawn: a candidate that one
    # lstat rechecks (a regular plugin.yaml, settled by now) costs that lstat and one
    # signature comparison, and comes back as the same object when unchanged.
    fs_stat = fs.stat  # looked up once per root
    same = True
    found = []
    for entry, old in zip(dirs, before, strict=True):
        if (
            old.dirname != entry.name
            or old.dirpath != entry.path
            or old.is_symlink != entry.is_symlink
        ):
            cand = broken.get(entry.path) or _probe_manifest(fs, entry, now_ns)
        elif broken or old.recheck_from_ns > now_ns:
            cand = broken.get(entry.path) or _probe_manifest(fs, entry, now_ns, expected=old)
            cand = _settle(cand, old)
        else:
            try:
                st = fs_stat(old.manifest, follow_symlinks=False)
            except OSError as exc:
                cand = _settle(_probe_manifest(fs, entry, now_ns, exc, expected=old), old)
            else:
                if _signature_fields(st) == old.signature:  # equal modes: still regular
                    found.append(old)
                    continue
                cand = _settle(_probe_manifest(fs, entry, now_ns, st, expected=old), old)
        same = same and cand is old
        found.append(cand)
    if same and expected is not None:
        return expected
    return RootProbe(root, candidates=tuple(found))


def probe(
    fs: FileSystem, roots: tuple[Root, ...], expected: Mapping[str, RootProbe] | None = None
) -> Probe:
    """List every root and stat every candidate manifest; opens no file.

    ``expected`` maps root paths to a previous probe of them: an unchanged root or
    candidate comes back as the very same object (so an unchanged stamp
    compares by identity, and a warm check allocates next to nothing). The
    system calls are the same either way.
    """
    now_ns = fs.now_ns()
    if expected is None:
        return Probe(tuple(_probe_root(fs, root, now_ns) for root in roots))
    found = []
    for root in roots:
        before = expected.get(root.path)
        if before is not None and before.root.kind is not root.kind:
            before = None  # the same path as another kind of root: nothing to reuse
        found.append(_probe_root(fs, root, now_ns, before))
    return Probe(tuple(found))
