"""The per-home manifest cache: bounded, thread-safe, failing closed.

``ManifestCache.declarations(identity, path)`` returns the current
``HomeDeclarations`` of one home. Each call *checks*: it probes the roots (one
``scandir`` per root, about one ``stat`` per candidate manifest, no ``open``) and
compares the probe with the cached stamp; equal → the cached result, the very
same object. A racy probe (a manifest touched within ``RACY_WINDOW_NS`` of the
clock) is never trusted: the next call scans again.

Concurrency. One ``threading.Lock`` guards the LRU (an ``_lru.LRU``) and the
table of in-flight checks, and is held only for dict gets and sets, never while
probing, reading or parsing. Calls for one home are single-flight: they queue on
that home's own lock, and a caller that arrived before a check started takes that
check's result without probing again (a probe that began after the call did saw a
state at least as recent as the call's own would have: N threads spawning for one
home cost about two probes, not N in a convoy). Results are immutable and swapped in
whole, so no caller sees half of an old scan and half of a new one.

Failing closed. A partial scan (``complete=False``) keeps every secret, deny
prefix and plugin prefix of the home's previous result (a complete scan does
not, so a deleted plugin releases its names). The scan itself denies the
secret-suffixed names under a failing plugin's prefix, also on the first scan.
An unlistable root names no plugin: the scan denies the empty prefix (every
secret-suffixed name of the home) while it lasts.

Retention outlives the LRU of results. Besides that LRU, the cache keeps a
*retention record*: per home identity, the *names* of its latest result
(declared secrets, plugin prefixes, deny prefixes) and its generation, for a
home whose latest result declared anything; no origin, no file path. An
evicted home's next scan starts from that record (each name declared as
"retained from an earlier scan"), so a broken edit after eviction still
denies every name the good version declared. The record is an LRU of its own,
``RETAINED_PER_HOME`` times as many homes as the results (4,096 at the
default 256: names only, about half a KiB each), so memory stays bounded
however many homes a host touches; a home beyond it is scanned exactly like a
first scan, which fails closed by itself (a failing plugin's prefix denies its
secret-suffixed names). A home whose complete scan declares nothing has no
record; a deleted plugin's names leave it with the complete scan that released
them. ``clear()`` is its reset seam.

Shared with the process. Over the real file system a cache's first probe of
a home starts from the latest settled probe of its roots any cache of the
process made, and a probe that comes back as the very stamp of a complete,
settled scan takes that scan instead of reading the manifests
(``_shared_scans``: the trust a cache places in its own stamp; a scan with a
problem is never shared). ``shared=None`` shares nothing.

``generation`` comes from one counter per cache, so it grows with every new
result of a home (also across eviction); a rescan that finds exactly the same
declarations returns the previous object unchanged.

An atomic replace is not an error. A manifest that changed between the probe and
the read (``ScanResult.changed``: it is no longer a regular file, it vanished, its
size differs from the probe's) makes
the check probe and read again, up to ``MAX_REREADS`` times; only a surprise that
persists through every re-read is a problem of the scan (and fails closed).

Errors. With ``on_unreadable_platform="raise"`` (the default) a problem under a
platform root (bundled or ``plugins/platforms/``: unlistable root, unsearchable
plugin directory, unreadable, oversize or invalid manifest) raises
``ManifestError`` naming the file (and line/field) — the first such problem in
scan order — on every call while it lasts. The fail-closed result is cached
first, and ``declarations(..., on_unreadable_platform="deny")`` returns it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from envscope._lru import LRU
from envscope.errors import ConfigurationError, ManifestError
from envscope.files._fs import FileSystem, RealFileSystem
from envscope.manifests._gate import ChangeGate
from envscope.manifests._scan import (
    CandidateProbe,
    Parsed,
    Probe,
    Root,
    RootKind,
    RootProbe,
    ScanResult,
    home_roots,
    probe,
    scan,
)
from envscope.manifests._shared_scans import SCANS, SharedScans
from envscope.policy._declarations import (
    Declaration,
    HomeDeclarations,
    Origin,
    OriginKind,
    Problem,
    Tier,
)

__all__ = ["MAX_REREADS", "RETAINED_PER_HOME", "ManifestCache", "UnreadablePlatformMode"]

UnreadablePlatformMode = Literal["raise", "deny"]

MAX_REREADS = 3
"""How often one check probes and reads again after a manifest changed under its read."""

RETAINED_PER_HOME = 16
"""The retention record keeps this many times ``maxsize`` homes' names (an LRU of its own)."""


@dataclass(slots=True)
class _Entry:
    """One home's cached result with the stamp it was built from.

    Immutable but for ``ticket``, which only grows (under the cache lock).
    """

    stamp: tuple[RootProbe, ...]
    declarations: HomeDeclarations
    fatal: tuple[Problem, ...]
    racy: bool
    ticket: int  # taken just before the latest probe that produced or confirmed this result
    home_path: str
    roots: tuple[Root, ...]

    def expected(self, shared: Mapping[str, RootProbe]) -> dict[str, RootProbe]:
        """What the next probe of this home expects: this stamp, shared roots' latest probe."""
        return {rp.root.path: shared.get(rp.root.path, rp) for rp in self.stamp}


@dataclass(frozen=True, slots=True)
class _Retained:
    """What an evicted home keeps: its declared names and prefixes, never their origins' files."""

    secrets: tuple[str, ...]  # read once, when a later scan is partial: no hash table
    plugin_prefixes: frozenset[str]
    deny_prefixes: Mapping[str, Origin]
    generation: int

    @classmethod
    def of(cls, declarations: HomeDeclarations) -> _Retained:
        """The names of a result (the catalog's precedence applies later, as for any scan)."""
        return cls(
            tuple(declarations.secrets),
            declarations.plugin_prefixes,
            declarations.deny_prefixes,
            declarations.generation,
        )

    def declarations(self) -> HomeDeclarations:
        """The retained names as declarations (origin: retained from an earlier scan)."""
        origin = Origin(OriginKind.PARTIAL_SCAN, "retained from an earlier scan of this home")
        return HomeDeclarations(
            secrets=MappingProxyType({n: Declaration(n, Tier.TIER1, origin) for n in self.secrets}),
            plugin_prefixes=self.plugin_prefixes,
            deny_prefixes=self.deny_prefixes,
            generation=self.generation,
        )


@dataclass(slots=True)
class _Flight:
    """The per-home lock and how many callers hold or wait for it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


def _retain(previous: HomeDeclarations | None, result: ScanResult) -> HomeDeclarations:
    """The scan's declarations; on a partial scan, unioned with the previous result."""
    if result.complete or previous is None:  # the scan's own read-only views, not copied
        return HomeDeclarations(
            secrets=result.secrets,
            plugin_prefixes=result.plugin_prefixes,
            deny_prefixes=result.deny_prefixes,
            complete=result.complete,
            problems=result.problems,
            ignored=result.ignored,
            warnings=result.warnings,
        )
    secrets: dict[str, Declaration] = dict(result.secrets)
    deny: dict[str, Origin] = dict(result.deny_prefixes)
    for name, decl in previous.secrets.items():
        secrets.setdefault(name, decl)
    for prefix, origin in previous.deny_prefixes.items():
        deny.setdefault(prefix, origin)
    return HomeDeclarations(
        secrets=MappingProxyType(secrets),
        plugin_prefixes=result.plugin_prefixes | previous.plugin_prefixes,
        deny_prefixes=MappingProxyType(deny),
        complete=result.complete,
        problems=result.problems,
        ignored=result.ignored,
        warnings=result.warnings,
    )


class ManifestCache:
    """Per-home manifest declarations, re-checked on every call against a stat stamp."""

    def __init__(
        self,
        *,
        bundled_root: str | None,
        fs: FileSystem | None = None,
        on_unreadable_platform: UnreadablePlatformMode = "raise",
        maxsize: int = 256,
        gate: ChangeGate | None = None,
        shared: SharedScans | Literal["process"] | None = "process",
    ) -> None:
        if on_unreadable_platform not in ("raise", "deny"):
            raise ConfigurationError(
                f"on_unreadable_platform must be 'raise' or 'deny', not {on_unreadable_platform!r}"
            )
        if maxsize < 1:
            raise ConfigurationError(f"maxsize must be at least 1, not {maxsize!r}")
        self._bundled_root = bundled_root
        self._fs: FileSystem = RealFileSystem() if fs is None else fs
        # Probes and complete scans shared with other caches: by default the process's,
        # over the real file system only (never a seam's: its answers are its own).
        if shared == "process":
            shared = SCANS if type(self._fs) is RealFileSystem else None
        self._process: SharedScans | None = shared
        self._mode: UnreadablePlatformMode = on_unreadable_platform
        self._lock = threading.Lock()
        self._entries: LRU[str, _Entry] = LRU(maxsize)
        # Retention, apart from the LRU: home identity -> its latest declarations, for
        # every home whose latest result declared anything (see the module docstring).
        self._retained: LRU[str, _Retained] = LRU(maxsize * RETAINED_PER_HOME)
        self._flights: dict[str, _Flight] = {}
        # The latest probe of each root every home shares (the bundled root): a home's
        # probe reuses its objects, so all homes hold one copy and compare by identity.
        self._shared: dict[str, RootProbe] = {}  # root path -> probe
        # What each settled manifest of those shared roots declares, parsed once for all homes
        # (pruned to the current probe of the shared roots after each scan).
        self._parsed: dict[CandidateProbe, Parsed] = {}
        self._gate = gate  # change notification in front of the stamp (None: the stamp only)
        self._tickets = itertools.count(1)
        self._generations = itertools.count(1)

    def declarations(
        self,
        home_identity: str,
        home_path: str,
        *,
        on_unreadable_platform: UnreadablePlatformMode | None = None,
    ) -> HomeDeclarations:
        """Thread-safe: the current declarations for one home (cache key: ``home_identity``).

        Raises ``ManifestError`` for a platform-root problem unless the mode
        (this call's, else the cache's) is ``"deny"``.
        """
        entry = self._gated(home_identity, home_path) or self._current(home_identity, home_path)
        mode = self._mode if on_unreadable_platform is None else on_unreadable_platform
        if mode == "raise" and entry.fatal:
            first = entry.fatal[0]
            raise ManifestError(first.path, first.message, line=first.line, field=first.field)
        return entry.declarations

    def clear(self) -> None:
        """Forget every home, its retained names, the shared roots' probes and parses.

        A reset seam for tests: after it, every home's next scan is a first scan.
        """
        with self._lock:
            self._entries.clear()
            self._retained.clear()
            self._shared = {}
            self._parsed = {}

    @property
    def retained_homes(self) -> int:
        """How many homes the retention record holds (for tests and metrics)."""
        with self._lock:
            return len(self._retained)

    def _prune_parsed(self) -> None:
        """Forget parse results of shared-root candidates no longer in their latest probe."""
        with self._lock:
            current = {c for rp in self._shared.values() for c in rp.candidates}
            if len(self._parsed) > len(current) or any(c not in current for c in self._parsed):
                self._parsed = {c: p for c, p in self._parsed.items() if c in current}

    def _scan(self, found: Probe) -> ScanResult:
        """The scan of a probe: a complete one the process already read from it, else read."""
        shared = self._process
        kept = None if shared is None else shared.scanned(found.stamp)
        if kept is not None:
            return kept
        result = scan(self._fs, found, self._parsed)
        self._prune_parsed()
        if shared is not None:
            shared.remember(found, result)
        return result

    def _gated(self, key: str, home_path: str) -> _Entry | None:
        """The cached entry when the gate vouches for it (no probe, no single-flight queue).

        The entry is read *after* the gate says unchanged: an entry is stored before
        the gate is armed for its probe, so it is at least as recent as that probe.
        """
        gate = self._gate
        if gate is None or not gate.unchanged(key):
            return None
        with self._lock:
            entry = self._entries.hit(key)
        if entry is None or entry.home_path != home_path or entry.racy:
            return None
        return entry

    def _current(self, key: str, home_path: str) -> _Entry:
        """Single-flight per home: queue on the home's lock, then refresh."""
        with self._lock:
            arrival = next(self._tickets)
            flight = self._flights.get(key)
            if flight is None:
                flight = self._flights[key] = _Flight()
            flight.users += 1
        try:
            with flight.lock:
                return self._refresh(key, home_path, arrival)
        finally:
            with self._lock:
                flight.users -= 1
                if flight.users == 0 and self._flights.get(key) is flight:
                    del self._flights[key]

    def _refresh(self, key: str, home_path: str, arrival: int) -> _Entry:
        """Check the stamp and rescan when it changed (called holding the home's lock only)."""
        with self._lock:
            cached = self._entries.hit(key)  # a hit marks it most recently used
            if cached is not None and cached.ticket > arrival:
                return cached  # a check that started after this call arrived
            ticket = next(self._tickets)
            retained = self._retained.hit(key)  # survives the LRU's eviction of ``cached``
        gate = self._gate
        if cached is not None and cached.home_path == home_path:
            if gate is not None and not cached.racy and gate.unchanged(key):
                with self._lock:  # no event, every re-stat agrees: the stamp would be equal
                    cached.ticket = max(cached.ticket, ticket)
                return cached
            roots = cached.roots
            expected = cached.expected(self._shared)
        else:
            roots = home_roots(home_path, self._bundled_root)
            process = {} if self._process is None else self._process.expected(roots)
            expected = {**process, **self._shared}
        if gate is None or cached is None:
            # A home's first probe is the stamp alone: watches are placed from its second
            # probe on, for homes built again (docs/manifests.md, "Change notification").
            return self._stamp(key, home_path, cached, retained, ticket, roots, expected)
        # Clear the dirty flag and (re)watch before probing: an event from here on is seen.
        previous = () if cached is None else cached.stamp
        begun = gate.begin(key, tuple(r.path for r in roots), previous)
        entry = self._stamp(key, home_path, cached, retained, ticket, roots, expected)
        gate.arm(begun, Probe(entry.stamp))
        return entry

    def _stamp(
        self,
        key: str,
        home_path: str,
        cached: _Entry | None,
        retained: _Retained | None,
        ticket: int,
        roots: tuple[Root, ...],
        expected: dict[str, RootProbe],
    ) -> _Entry:
        """Probe the roots; the cached entry when the stamp is equal, else scan (and re-read)."""
        for attempt in range(MAX_REREADS + 1):
            found = probe(self._fs, roots, expected)
            for rp in found.roots:
                if rp.root.kind is RootKind.BUNDLED and self._shared.get(rp.root.path) is not rp:
                    with self._lock:
                        self._shared[rp.root.path] = rp
            if cached is not None and not cached.racy and cached.stamp == found.stamp:
                with self._lock:
                    cached.ticket = max(cached.ticket, ticket)
                return cached
            result = self._scan(found)
            if not result.changed or attempt == MAX_REREADS:
                break
            # A manifest changed between the probe and the read (an updater's os.replace):
            # probe again from this probe (unchanged entries are reused) and read again.
            expected = {rp.root.path: rp for rp in found.roots}
        if cached is not None:
            previous: HomeDeclarations | None = cached.declarations
        else:
            previous = None if retained is None else retained.declarations()
        fresh = _retain(previous, result)
        if previous is not None and fresh.replace(generation=previous.generation) == previous:
            fresh = previous
        else:
            with self._lock:
                generation = next(self._generations)
            fresh = fresh.replace(generation=generation)
        entry = _Entry(found.stamp, fresh, result.fatal, result.racy, ticket, home_path, roots)
        with self._lock:
            self._entries.put(key, entry)  # the least recently used home goes past the bound
            if fresh.secrets or fresh.deny_prefixes or fresh.plugin_prefixes:
                kept = self._retained.hit(key)
                if kept is None or kept.generation != fresh.generation:
                    self._retained.put(key, _Retained.of(fresh))  # names only
            else:
                self._retained.pop(key)
        return entry
