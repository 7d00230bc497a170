"""Read and parse the manifests a probe found into a ``ScanResult``.

Pure given the ``FileSystem`` seam. ``scan(fs, probe, parsed=None)`` reads and
parses each regular manifest the probe (``envscope.manifests._probe``) found and
never re-stats. ``parsed`` (the cache's) remembers what each settled bundled
manifest declares, keyed by its whole probe (path and signature), so every home
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

- a root that exists but cannot be listed (``EACCES``, ``ENOTDIR``, ``EIO``…),
  a root that is a dangling symlink (or sits under one: ``plugins/`` for
  ``plugins/platforms``), a root that listing said is missing but is there; a
  root that really is not there (``ENOENT`` on every path up to ``plugins``)
  is fine and declares nothing. No plugin is known for a failing root, so the
  *empty* prefix is denied: every secret-suffixed name is stripped for the
  home while it lasts (and the cache keeps the home's previous names).
- a plugin directory that cannot be searched, or that is a symlink which
  cannot be followed (dangling, a loop, out of reach); a manifest that cannot
  be stat-ed or read, one over ``MAX_MANIFEST_BYTES``, or one ``parse_manifest``
  rejects (invalid YAML or schema; the problem keeps the line and field).
- **any surprise between the probe and the read**: the file that was a
  regular file when probed is not one when opened (a FIFO, a directory, a
  socket, a symlink to ``/dev/null``: the reader returns ``None``), has
  vanished, or yields a different number of bytes than the probe's size (a
  short read, a truncation, an append). Such a manifest is listed in
  ``changed``: the cache probes and reads the home again (``MAX_REREADS``
  times at most), so an atomic replace by a plugin updater is no error; only a
  surprise that persists through every re-read stays a problem.

Each plugin problem denies the secret-suffixed names under the plugin's prefix
(``deny_prefixes``, origin ``PARTIAL_SCAN``).

A problem under a platform root is also *fatal*: the cache raises it as a
``ManifestError`` in ``"raise"`` mode. A malformed platform manifest is treated
exactly like an unreadable one (decision: a platform plugin whose secrets we
cannot know must not be silently skipped); the other manifests' declarations
are still in the result. A flat plugin's problem is never fatal (its ``kind`` is
unknown), but it still denies by prefix. A failing platform plugin's prefix is
also added to ``plugin_prefixes``; a failing flat plugin's is not.
"""

from __future__ import annotations

import errno as errno_mod
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from types import MappingProxyType

from envscope.errors import ManifestError
from envscope.files._fs import FileSystem
from envscope.manifests._counting import counting
from envscope.manifests._parse_memo import parsed_manifest
from envscope.manifests._probe import (
    MANIFEST_NAMES,
    RACY_WINDOW_NS,
    CandidateProbe,
    Probe,
    Root,
    RootKind,
    RootProbe,
    Signature,
    State,
    home_roots,
    probe,
)
from envscope.manifests._schema import MAX_MANIFEST_BYTES
from envscope.policy._declarations import (
    EMPTY_MAPPING,
    Declaration,
    Origin,
    OriginKind,
    Problem,
    Tier,
    norm,
)
from envscope.policy._declarations import plugin_prefix as _plugin_prefix

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


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What one scan found; the cache adds retention and the generation."""

    secrets: Mapping[str, Declaration]
    plugin_prefixes: frozenset[str]
    deny_prefixes: Mapping[str, Origin]
    problems: tuple[Problem, ...]
    fatal: tuple[Problem, ...]
    racy: bool
    changed: tuple[str, ...] = ()
    """Manifests that changed between the probe and the read (the cache probes again)."""
    ignored: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Readable manifests that declare nothing (a flat plugin not of kind platform): why."""
    warnings: tuple[Problem, ...] = ()
    """Keys no manifest schema knows but near one it does (``secert``): read on, reported."""

    @property
    def complete(self) -> bool:
        """True when nothing failed."""
        return not self.problems


def _describe(err: int | None) -> str:
    if err is None:
        return "unknown error"
    return f"{os.strerror(err)} [{errno_mod.errorcode.get(err, str(err))}]"


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one readable manifest declares: whether it counts (and why), its prefix, its secrets."""

    counted: bool  # _counting.counting: a platform root, or a platform kind
    prefix: str
    secrets: tuple[Declaration, ...]
    reason: str = ""  # in words, for a manifest that declares nothing
    warnings: tuple[Problem, ...] = ()  # near misses of known keys (``UnknownKey``)


class _Builder:
    """Accumulates one scan's declarations and problems."""

    def __init__(self) -> None:
        self.secrets: dict[str, Declaration] = {}
        self.plugin_prefixes: set[str] = set()
        self.deny: dict[str, Origin] = {}
        self.problems: list[Problem] = []
        self.fatal: list[Problem] = []
        self.changed: list[str] = []
        self.ignored: dict[str, str] = {}  # manifest path -> why it declares nothing
        self.warnings: list[Problem] = []  # near misses of known keys: read on, reported

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
        self.warnings.extend(found.warnings)
        if found.counted:
            self.plugin_prefixes.add(found.prefix)
        else:
            self.ignored[cand.manifest] = found.reason
        for decl in found.secrets:
            self.secrets.setdefault(decl.name, decl)

    def _parse(self, fs: FileSystem, root: Root, cand: CandidateProbe) -> Parsed | None:
        """What one manifest declares; None (after recording any problem) when nothing."""

        def fail(
            message: str, *, line: int | None = None, fld: str | None = None, moved: bool = False
        ) -> None:
            self.problem(root, Problem(cand.manifest, message, line, fld, cand.dirname))
            if moved:  # it changed since the probe: the cache probes and reads again
                self.changed.append(cand.manifest)

        try:
            data = fs.read_regular(cand.manifest, MAX_MANIFEST_BYTES)
        except OSError as exc:
            vanished = exc.errno in (errno_mod.ENOENT, errno_mod.ENOTDIR)
            fail(f"cannot read manifest: {_describe(exc.errno)}", moved=vanished)
            return None
        if data is None:  # a FIFO, directory, socket, device (or a link to one) since the probe
            message = "manifest is no longer a regular file (it changed since it was probed)"
            fail(message, moved=True)
            return None
        if len(data) > MAX_MANIFEST_BYTES:
            fail(f"manifest is larger than {MAX_MANIFEST_BYTES} bytes")
            return None
        if cand.signature is None or len(data) != cand.signature.size:
            message = "manifest changed while it was read (its size differs from the probe's)"
            fail(message, moved=True)
            return None
        try:
            manifest = parsed_manifest(data, cand.manifest)
        except ManifestError as exc:
            for each in exc.problems:  # every problem the schema found, in the file's order
                fail(each.message, line=each.line, fld=each.field)
            return None
        verdict = counting(root.kind, manifest)
        if verdict.problem is not None:  # a near miss of kind: platform, read as one
            fail(verdict.problem, line=manifest.kind_line, fld="kind")
        warnings = tuple(
            Problem(cand.manifest, u.message, u.line, u.field, cand.dirname)
            for u in manifest.unknown
        )
        if not verdict.declares:
            return Parsed(False, "", (), verdict.reason, warnings)
        secrets: dict[str, Declaration] = {}
        for entry in manifest.entries:
            if not entry.is_secret:
                continue
            name = norm(entry.name)
            if name not in secrets:  # the first declaration of a name is kept
                origin = Origin(
                    OriginKind.MANIFEST, cand.dirname, path=cand.manifest, line=entry.line
                )
                secrets[name] = Declaration(name, Tier.TIER1, origin)
        return Parsed(True, _plugin_prefix(cand.dirname), tuple(secrets.values()), "", warnings)


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
        if rp.dangling is not None:
            message = f"plugin root is a dangling symlink ({rp.dangling}): failing closed"
            b.problem(root, Problem(root.path, message))
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
            elif cand.state is State.UNSTABLE:
                message = "plugin directory changed while it was probed: failing closed"
                b.problem(root, Problem(cand.manifest, message, plugin=cand.dirname))
            elif cand.state is State.BROKEN:
                message = (
                    "plugin directory is a symlink that cannot be followed: "
                    f"{_describe(cand.error)}; failing closed"
                )
                b.problem(root, Problem(cand.dirpath, message, plugin=cand.dirname))
    return ScanResult(
        secrets=MappingProxyType(b.secrets),
        plugin_prefixes=frozenset(b.plugin_prefixes),
        deny_prefixes=MappingProxyType(b.deny) if b.deny else EMPTY_MAPPING,  # one empty for all
        problems=tuple(b.problems),
        fatal=tuple(b.fatal),
        racy=found.racy,
        changed=tuple(b.changed),
        ignored=MappingProxyType(b.ignored) if b.ignored else EMPTY_MAPPING,
        warnings=tuple(b.warnings),
    )
