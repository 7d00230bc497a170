"""What the manifest caches of one process learned from the real file system, shared.

Every ``ManifestCache`` over the real file system (``RealFileSystem`` itself,
never a subclass or another seam) shares two bounded, process-wide tables, so
a new ``Host`` over homes another host of the process already built pays one
``lstat`` per manifest for its first check instead of a full probe and a read
of every manifest:

- **the latest settled probe of each root** (path → ``RootProbe``): a cache's
  first probe of a home starts from it as its ``expected`` probe. That changes
  no system call's answer: each candidate is still ``lstat``-ed and compared
  with its signature, and only an unchanged one comes back as the very same
  object (``_probe``'s warm path). A probe with a racy candidate is never kept.
- **complete scans by stamp**: the ``ScanResult`` of a scan with no problem,
  no racy candidate and no manifest that changed under its read, keyed by the
  stamp it was read from. A cache whose probe comes back with that very stamp
  (the same ``RootProbe`` objects, so equality is identity) takes the result
  instead of reading the manifests again. This is the trust one cache already
  places in its own stamp (an equal stamp → the cached result); a scan that
  found a problem is never shared, so a failing manifest is read again by each
  host (and fails closed there).

Bounded: at most ``ROOTS_KEPT`` roots and ``SCANS_KEPT`` stamps; a table that
is full is emptied and fills again (nothing to order, every operation one
dict call: thread-safe under the GIL, and a forked child inherits only
immutable results that are as true in it as in its parent). ``clear()`` is
the reset seam.
"""

from __future__ import annotations

from collections.abc import Mapping

from envscope.manifests._probe import Probe, Root, RootProbe
from envscope.manifests._scan import ScanResult

__all__ = ["ROOTS_KEPT", "SCANS", "SCANS_KEPT", "SharedScans"]

ROOTS_KEPT = 1024
"""How many roots' latest settled probes the process keeps."""

SCANS_KEPT = 256
"""How many complete scans (one per stamp: a home's roots as last probed) the process keeps."""

_Key = tuple[int, ...]


class SharedScans:
    """Latest settled probes by root path and complete scans by stamp (identity-keyed)."""

    __slots__ = ("_roots", "_scans", "roots_kept", "scans_kept")

    def __init__(self, roots_kept: int = ROOTS_KEPT, scans_kept: int = SCANS_KEPT) -> None:
        self._roots: dict[str, RootProbe] = {}
        # id() of each RootProbe of a stamp -> (that stamp, its scan): the stamp held in the
        # value keeps its objects alive, so while the entry exists no other object has
        # those ids: a key found is these very objects (no hashing of every candidate).
        self._scans: dict[_Key, tuple[tuple[RootProbe, ...], ScanResult]] = {}
        self.roots_kept = roots_kept
        self.scans_kept = scans_kept

    def expected(self, roots: tuple[Root, ...]) -> dict[str, RootProbe]:
        """The latest settled probe of each of ``roots`` the process holds (same path and kind)."""
        found: dict[str, RootProbe] = {}
        for root in roots:
            rp = self._roots.get(root.path)
            if rp is not None and rp.root == root:
                found[root.path] = rp
        return found

    def scanned(self, stamp: tuple[RootProbe, ...]) -> ScanResult | None:
        """The complete scan read from this very stamp (these very objects), or None."""
        hit = self._scans.get(tuple(map(id, stamp)))
        return None if hit is None else hit[1]

    def remember(self, found: Probe, result: ScanResult) -> None:
        """Keep the probe's settled roots, and the scan when it is complete and settled."""
        settled = [rp for rp in found.roots if not any(c.racy for c in rp.candidates)]
        if len(self._roots) + len(settled) > self.roots_kept:
            self._roots.clear()
        for rp in settled:
            self._roots[rp.root.path] = rp
        if not result.complete or result.racy or result.changed or found.racy:
            return
        if len(self._scans) >= self.scans_kept:
            self._scans.clear()
        stamp = found.stamp
        self._scans[tuple(map(id, stamp))] = (stamp, result)

    def clear(self) -> None:
        """Forget every root and scan (a reset seam for tests)."""
        self._roots.clear()
        self._scans.clear()

    def sizes(self) -> Mapping[str, int]:
        """How many roots and scans are held (for tests and metrics)."""
        return {"roots": len(self._roots), "scans": len(self._scans)}


SCANS = SharedScans()
"""The process's tables (``SCANS.clear()`` resets them)."""
