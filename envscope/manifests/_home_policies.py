"""``HomePolicies``: per home, what its manifests declare and the secret policy built from it.

The host's one owner of per-home policy state: the manifest cache (with the
change-notification gate in front of its stamp), the adapter census and the
policies built from both, bounded like the manifest cache (LRU). A home's
policy is built again when its declarations are a new object (the stamp or
the gate saw a manifest change), its census moved, or the catalog in force
is another one; otherwise the very same policy object comes back, which the
build memo compares by identity.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Literal

from envscope._lru import LRU
from envscope.policy._secret_policy import AdapterCensus, SecretPolicy, build_policy

if TYPE_CHECKING:
    from envscope.files._fs import FileSystem
    from envscope.manifests._cache import ManifestCache
    from envscope.policy._declarations import HomeDeclarations
    from envscope.policy.catalog import Catalog

__all__ = ["HomePolicies"]


class HomePolicies:
    """Per-home declarations and policies of one host; thread-safe."""

    __slots__ = (
        "_bundled_root",
        "_change_notification",
        "_fs",
        "_lock",
        "_manifests",
        "_maxsize",
        "_mode",
        "_policies",
        "census",
    )

    def __init__(
        self,
        *,
        bundled_root: str | None,
        fs: FileSystem | None,
        on_unreadable_platform: Literal["raise", "deny"],
        change_notification: bool,
        maxsize: int,
    ) -> None:
        self._bundled_root = bundled_root
        self._fs = fs
        self._mode: Literal["raise", "deny"] = on_unreadable_platform
        self._change_notification = change_notification
        self._maxsize = maxsize
        self._lock = threading.Lock()
        self._manifests: ManifestCache | None = None
        self._policies: LRU[str, tuple[HomeDeclarations, int, Catalog, SecretPolicy]] = LRU(maxsize)
        self.census = AdapterCensus()

    def manifests(self) -> ManifestCache:
        """The manifest cache (made on first use: it imports, gated, ctypes)."""
        cache = self._manifests
        if cache is None:
            from envscope.manifests._cache import ManifestCache
            from envscope.manifests._gate import create_gate

            with self._lock:
                if self._manifests is None:
                    gate = (
                        create_gate(max_homes=self._maxsize) if self._change_notification else None
                    )
                    self._manifests = ManifestCache(
                        bundled_root=self._bundled_root,
                        fs=self._fs,
                        on_unreadable_platform=self._mode,
                        maxsize=self._maxsize,
                        gate=gate,
                    )
                cache = self._manifests
        return cache

    def declarations(
        self, home: str, *, on_unreadable_platform: Literal["raise", "deny"] | None = None
    ) -> HomeDeclarations:
        """What a home's manifests declare now (the gate or the stamp checked on the way)."""
        return self.manifests().declarations(
            home, home, on_unreadable_platform=on_unreadable_platform
        )

    def policy(self, home: str, catalog: Catalog) -> SecretPolicy:
        """The home's secret policy under ``catalog`` (the same object while nothing changed)."""
        declarations = self.manifests().declarations(home, home)
        version = self.census.version(home)
        with self._lock:
            cached = self._policies.hit(home)
        if (
            cached is not None
            and cached[0] is declarations
            and cached[1] == version
            and cached[2] is catalog
        ):
            return cached[3]
        version, adapters = self.census.of(home)  # read together for the policy built
        built = build_policy(catalog, declarations, adapters)
        with self._lock:
            self._policies.put(home, (declarations, version, catalog, built))
        return built

    def __len__(self) -> int:
        """How many homes' policies are kept (bounded by ``maxsize``)."""
        with self._lock:
            return len(self._policies)
