"""Scan one home's plugin manifests (and the bundled root) into a result plus a stamp.

Pure given the ``FileSystem`` seam. A scan runs in two passes:

``probe(fs, roots)``
    One ``scandir`` per root, then per plugin directory an ``lstat`` of
    ``plugin.yaml``. The common case (a regular ``plugin.yaml``) costs exactly
    one stat. Extra stats happen only when they carry information: a symlinked
    manifest is also ``stat``-ed through the link (to tell a regular target, a
    dangling link and a loop apart); an absent ``plugin.yaml`` is followed by an
    ``lstat`` of ``plugin.yml``; a failing entry (unlistable root, unsearchable
    plugin directory) is ``stat``-ed itself so a ``chmod`` back changes the
    stamp. No file is opened. The probe *is* the stamp. Given the previous
    probe (``expected``), an unchanged root or candidate comes back as the very
    same object, so the warm check allocates next to nothing and an unchanged
    stamp compares by identity; the system calls are the same.

``scan(fs, probe, parsed=None)``
    Reads and parses each regular manifest the probe found, never re-stats.
    ``parsed`` (the cache's) remembers what each settled bundled manifest
    declares, keyed by its whole probe (path and signature), so every home
    shares one parse and the same ``Declaration`` objects.

Roots, in order: the bundled root (every manifest counts), ``<home>/plugins/
platforms`` (every manifest counts) and ``<home>/plugins`` (a manifest counts only
when it says ``kind: platform``; the ``platforms`` entry is not a flat plugin).
The first two are *platform roots*. Dot directories are scanned, ``__dunder__``
directories are skipped, a symlinked plugin directory is followed.

Per plugin directory: ``plugin.yaml``, else ``plugin.yml`` when the first is
absent. A symlink loop in place of a manifest (``ELOOP``) is "no manifest"; a
dangling manifest symlink is a problem; a manifest that is not a regular file
(FIFO, directory, socket, device) is never opened and is a problem (failing
closed: its plugin's prefix is denied, as for an unreadable manifest).

Problems (the scan is then partial; ``complete`` is False):

- a root that exists but cannot be listed (``EACCES``, ``ENOTDIR``, ``EIO``…);
  a missing root (``ENOENT``) is fine and declares nothing. No plugin is known
  for such a root, so the *empty* prefix is denied: every secret-suffixed name
  is stripped for the home while the root stays unlistable (and the cache
  keeps the home's previous names).
- a plugin directory that cannot be searched, a manifest that cannot be
  stat-ed or read, one over ``MAX_MANIFEST_BYTES``, or one ``parse_manifest``
  rejects (invalid YAML or schema; the problem keeps the line and field).
  Each denies the secret-suffixed names under the plugin's prefix
  (``deny_prefixes``, origin ``PARTIAL_SCAN``).

A problem under a platform root is also *fatal*: the cache raises it as a
``ManifestError`` in ``"raise"`` mode. A malformed platform manifest is treated
exactly like an unreadable one (decision: a platform plugin whose secrets we
cannot know must not be silently skipped); the other manifests' declarations
are still in the result. A flat plugin's problem is never fatal (its ``kind`` is
unknown), but it still denies by prefix. A failing platform plugin's prefix is
also added to ``plugin_prefixes``; a failing flat plugin's is not.

Racy entries (git's rule): a manifest whose mtime or ctime is within
``RACY_WINDOW_NS`` of the probe's clock could be rewritten within the same
timestamp tick without changing its signature, so such a probe is marked
``racy`` and the cache re-checks it on the next call instead of trusting it.
"""

from __future__ import annotations

import enum
import errno as errno_mod
import operator
import os
import stat
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import NamedTuple

from envscope._declarations import Declaration, Origin, OriginKind, Problem, Tier, norm
from envscope._declarations import plugin_prefix as _plugin_prefix
from envscope._fs import DirEntry, FileSystem, RealFileSystem, StatResult
from envscope._manifest_schema import (
    MAX_MANIFEST_BYTES,
    PLATFORM_KIND,
    entry_is_secret,
    read_manifest,
)
from envscope.errors import ManifestError

__all__ = [
    "MANIFEST_NAMES",
    "RACY_WINDOW_NS",
    "CandidateProbe",
    "Parsed",
    "Probe",
    "Root",
    "RootKind",
    "RootProbe",
    "ScanResult",
    "Signature",
    "State",
    "home_roots",
    "probe",
    "scan",
]

MANIFEST_NAMES: tuple[str, str] = ("plugin.yaml", "plugin.yml")
RACY_WINDOW_NS = 3_000_000_000
"""Covers a 2 s timestamp granularity (FAT) plus clock slack."""

_PLATFORMS = "platforms"
_FIRST = os.sep + MANIFEST_NAMES[0]


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
    """A file's identity and version as far as ``stat`` can tell.

    A tuple, so the warm check compares a fresh ``lstat`` with it in one
    tuple comparison (see ``_probe_root``); fields in ``of``'s order.
    """

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
        return cls(
            st.st_mode,
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_uid,
            st.st_gid,
        )


class State(enum.Enum):
    """What the probe found in one plugin directory."""

    REGULAR = "regular"  # a regular manifest: scan() reads it
    IGNORED = "ignored"  # not a regular file: never opened
    ABSENT = "absent"  # no manifest (or a symlink loop)
    FAILED = "failed"  # cannot stat: a problem


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
    plain: bool = field(default=False, compare=False, repr=False)
    """A settled regular ``plugin.yaml``, not a symlink: one ``lstat`` rechecks it."""


@dataclass(frozen=True, slots=True)
class RootProbe:
    """One root: missing, failed (errno and the root's own signature), or its candidates."""

    root: Root
    missing: bool = False
    error: int | None = None
    signature: Signature | None = None
    candidates: tuple[CandidateProbe, ...] = ()


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


@dataclass(frozen=True)
class ScanResult:
    """What one scan found; the cache adds retention and the generation."""

    secrets: Mapping[str, Declaration]
    plugin_prefixes: frozenset[str]
    deny_prefixes: Mapping[str, Origin]
    problems: tuple[Problem, ...]
    fatal: tuple[Problem, ...]
    racy: bool

    @property
    def complete(self) -> bool:
        """True when nothing failed."""
        return not self.problems


def _describe(err: int | None) -> str:
    if err is None:
        return "unknown error"
    return f"{os.strerror(err)} [{errno_mod.errorcode.get(err, str(err))}]"


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
) -> CandidateProbe:
    plain = state is State.REGULAR and not racy and path.endswith(_FIRST)
    return CandidateProbe(
        entry.name, entry.path, entry.is_symlink, path, state, sig, err, racy, plain
    )


def _probe_manifest(
    fs: FileSystem,
    entry: DirEntry,
    now_ns: int,
    first: StatResult | OSError | None = None,
) -> CandidateProbe:
    """Find and stat the manifest of one plugin directory.

    ``first``, when given, is the outcome of the ``lstat`` of ``plugin.yaml``
    already made (by the unchanged-candidate check), so no call is repeated.
    """
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
        if stat.S_ISLNK(st.st_mode):
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
        racy = now_ns - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_WINDOW_NS
        return _candidate(entry, path, State.REGULAR, sig, racy=racy)
    return _candidate(entry, os.path.join(entry.path, MANIFEST_NAMES[0]), State.ABSENT)


def _settle(found: CandidateProbe, expected: CandidateProbe) -> CandidateProbe:
    """``expected`` when the new probe of a candidate equals it (racy flag included)."""
    return expected if found == expected and found.racy == expected.racy else found


_by_name = operator.attrgetter("name")


def _probe_root(
    fs: FileSystem, root: Root, now_ns: int, expected: RootProbe | None = None
) -> RootProbe:
    """List one root and probe its candidates; ``expected`` (same root) is reused if unchanged."""
    try:
        listing = fs.scandir(root.path)
    except OSError as exc:
        if exc.errno == errno_mod.ENOENT:
            if expected is not None and expected.missing:
                return expected
            return RootProbe(root, missing=True)
        return RootProbe(root, error=exc.errno, signature=_failure_signature(fs, root.path))
    flat = root.kind is RootKind.FLAT
    dirs = [
        e
        for e in listing
        if e.is_dir
        and not (e.name.startswith("__") and _is_dunder(e.name))
        and not (flat and e.name == _PLATFORMS)
    ]
    dirs.sort(key=_by_name)
    before = () if expected is None else expected.candidates
    if len(before) != len(dirs):  # plugins came or went: probe the root afresh
        return RootProbe(root, candidates=tuple(_probe_manifest(fs, e, now_ns) for e in dirs))
    # The warm path, once per candidate manifest on every spawn: a plain candidate
    # (a settled regular plugin.yaml) is rechecked with one lstat and one tuple
    # comparison, and comes back as the same object when unchanged.
    settled_ns = now_ns - RACY_WINDOW_NS
    # fs.stat(path, follow_symlinks=False); for exactly RealFileSystem (a subclass may
    # count or inject faults) that is os.lstat itself: no Python frame per manifest.
    lstat: Callable[[str], StatResult] = (
        os.lstat if type(fs) is RealFileSystem else partial(fs.stat, follow_symlinks=False)
    )
    same = True
    found = []
    for entry, old in zip(dirs, before, strict=True):
        if (
            old.dirname != entry.name
            or old.dirpath != entry.path
            or old.is_symlink != entry.is_symlink
        ):
            cand = _probe_manifest(fs, entry, now_ns)
        elif not old.plain:
            cand = _settle(_probe_manifest(fs, entry, now_ns), old)
        else:
            try:
                st = lstat(old.manifest)
            except OSError as exc:
                cand = _settle(_probe_manifest(fs, entry, now_ns, exc), old)
            else:
                sig = old.signature
                # Equal modes mean still regular (the cached one is); a timestamp
                # newer than now minus the racy window is racy.
                if (
                    st.st_mode,
                    st.st_dev,
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                    st.st_uid,
                    st.st_gid,
                ) == sig and sig.mtime_ns <= settled_ns >= sig.ctime_ns:
                    found.append(old)
                    continue
                cand = _settle(_probe_manifest(fs, entry, now_ns, st), old)
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


class Parsed(NamedTuple):
    """What one readable manifest declares: whether it counts, its prefix, its secrets."""

    counted: bool  # a platform root, or ``kind: platform``
    prefix: str
    secrets: tuple[Declaration, ...]


class _Builder:
    """Accumulates one scan's declarations and problems."""

    def __init__(self) -> None:
        self.secrets: dict[str, Declaration] = {}
        self.plugin_prefixes: set[str] = set()
        self.deny: dict[str, Origin] = {}
        self.problems: list[Problem] = []
        self.fatal: list[Problem] = []

    def problem(self, root: Root, problem: Problem) -> None:
        self.problems.append(problem)
        if root.kind.is_platform:
            self.fatal.append(problem)
        if problem.plugin is None:
            # An unlistable root: no plugin (hence no prefix) is known, so every
            # secret-suffixed name is denied for this home while it lasts (the
            # empty prefix); it never counts for the gate rule.
            origin = Origin(OriginKind.PARTIAL_SCAN, "unlistable plugin root", path=problem.path)
            self.deny.setdefault("", origin)
            return
        prefix = _plugin_prefix(problem.plugin)
        origin = Origin(
            OriginKind.PARTIAL_SCAN, problem.plugin, path=problem.path, line=problem.line
        )
        self.deny.setdefault(prefix, origin)
        if root.kind.is_platform:
            self.plugin_prefixes.add(prefix)

    def read(
        self,
        fs: FileSystem,
        root: Root,
        cand: CandidateProbe,
        parsed: MutableMapping[CandidateProbe, Parsed] | None = None,
    ) -> None:
        """Read, parse and declare one regular manifest.

        With ``parsed``, a settled candidate of a bundled root is parsed once per
        signature: its result (and its very ``Declaration`` objects) is shared by every
        home whose probe found the same candidate.
        """
        share = parsed is not None and root.kind is RootKind.BUNDLED and not cand.racy
        found = parsed.get(cand) if share and parsed is not None else None
        if found is None:
            found = self._parse(fs, root, cand)
            if found is None:
                return
            if share and parsed is not None:
                parsed[cand] = found
        if found.counted:
            self.plugin_prefixes.add(found.prefix)
        for decl in found.secrets:
            self.secrets.setdefault(decl.name, decl)

    def _parse(self, fs: FileSystem, root: Root, cand: CandidateProbe) -> Parsed | None:
        """What one manifest declares; None (after recording any problem) when nothing."""

        def fail(message: str, *, line: int | None = None, fld: str | None = None) -> None:
            self.problem(root, Problem(cand.manifest, message, line, fld, cand.dirname))

        try:
            data = fs.read_regular(cand.manifest, MAX_MANIFEST_BYTES)
        except OSError as exc:
            fail(f"cannot read manifest: {_describe(exc.errno)}")
            return None
        if data is None:
            return None  # replaced by a non-regular file since the probe; the stamp will differ
        if len(data) > MAX_MANIFEST_BYTES:
            fail(f"manifest is larger than {MAX_MANIFEST_BYTES} bytes")
            return None
        try:  # parse_manifest's checks, without its frozen objects (this runs per manifest)
            _, kind, entries = read_manifest(data, cand.manifest)
        except ManifestError as exc:
            fail(exc.message, line=exc.line, fld=exc.field)
            return None
        if not (root.kind.is_platform or kind == PLATFORM_KIND):
            return Parsed(False, "", ())
        secrets: dict[str, Declaration] = {}
        dirname, manifest = cand.dirname, cand.manifest
        for entry, _, _, line, secret, category in entries:
            if not entry_is_secret(entry, secret, category):
                continue
            name = norm(entry)
            if name not in secrets:  # the first declaration of a name is kept
                origin = Origin(OriginKind.MANIFEST, dirname, path=manifest, line=line)
                secrets[name] = Declaration(name, Tier.TIER1, origin)
        return Parsed(True, _plugin_prefix(dirname), tuple(secrets.values()))


def scan(
    fs: FileSystem,
    found: Probe,
    parsed: MutableMapping[CandidateProbe, Parsed] | None = None,
) -> ScanResult:
    """Read and parse the manifests ``found`` by a probe; never re-stats.

    ``parsed`` (the cache's) remembers what the settled manifests of the bundled
    root declare, so a scan of another home reuses it instead of reading them again.
    """
    b = _Builder()
    for rp in found.roots:
        root = rp.root
        if rp.missing:
            continue
        if rp.error is not None:
            b.problem(
                root, Problem(root.path, f"cannot list plugin directory: {_describe(rp.error)}")
            )
            continue
        for cand in rp.candidates:
            if cand.state is State.REGULAR:
                b.read(fs, root, cand, parsed)
            elif cand.state is State.IGNORED:
                message = "manifest is not a regular file (never opened): failing closed"
                b.problem(root, Problem(cand.manifest, message, plugin=cand.dirname))
            elif cand.state is State.FAILED:
                if cand.error == errno_mod.ENOENT:
                    message = "manifest is a dangling symlink"
                else:
                    message = f"cannot read manifest: {_describe(cand.error)}"
                b.problem(root, Problem(cand.manifest, message, plugin=cand.dirname))
    return ScanResult(
        secrets=MappingProxyType(b.secrets),
        plugin_prefixes=frozenset(b.plugin_prefixes),
        deny_prefixes=MappingProxyType(b.deny),
        problems=tuple(b.problems),
        fatal=tuple(b.fatal),
        racy=found.racy,
    )
