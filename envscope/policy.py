"""``SecretPolicy``: which names a child of one home may not receive, and why.

A policy is built per home from the catalog, the plugin manifests of that home
(and the bundled root), and the runtime adapter census. It is immutable; the
lookups it needs on the spawn path are precomputed once per policy.

Precedence for one name: the catalog (explicit names, then patterns) wins;
then manifest declarations (Tier 1); then the runtime adapters (Tier 2); last,
a partial scan's deny prefixes (Tier 1 for secret-suffixed names under the
failing plugin's prefix). A manifest or adapter never demotes or reclassifies
a name the catalog declares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from envscope._declarations import (
    EMPTY_DECLARATIONS,
    Declaration,
    HomeDeclarations,
    Origin,
    OriginKind,
    Problem,
    Tier,
    has_secret_suffix,
    norm,
    plugin_prefix,
)
from envscope.catalog import Catalog

__all__ = ["Adapter", "SecretPolicy", "build_policy"]

_GATE_TOKENS = frozenset({"ALLOW", "ALLOWED", "ALLOWLIST", "WHITELIST", "ALLOWFROM"})


@dataclass(frozen=True, slots=True)
class Adapter:
    """A runtime adapter registered for one home, with the env it requires."""

    name: str
    requires_env: tuple[str, ...]

    @property
    def prefix(self) -> str:
        """The adapter's env prefix (counts as a platform prefix for the gate rule)."""
        return plugin_prefix(self.name)


@dataclass(frozen=True)
class SecretPolicy:
    """The declared secrets of one home.

    ``tier1``/``tier2`` hold the explicitly declared (upper-cased) names;
    names matched by a catalog pattern or a partial scan's deny prefix are
    answered by ``tier_of``. ``reasons`` maps each explicit name to where its
    rule came from. ``complete`` is False when a manifest scan was partial
    (``problems`` says where); the policy then errs on the side of stripping.
    """

    tier1: frozenset[str]
    tier2: frozenset[str]
    reasons: Mapping[str, Origin]
    complete: bool = True
    problems: tuple[Problem, ...] = ()
    catalog: Catalog = field(default_factory=Catalog)
    deny_prefixes: Mapping[str, Origin] = field(default_factory=lambda: MappingProxyType({}))
    platform_prefixes: frozenset[str] = frozenset()
    generation: int = 0

    def declaration(self, name: str) -> Declaration | None:
        """How this policy declares a name (any case), or None when it does not."""
        key = norm(name)
        if key in self.tier1:
            return Declaration(key, Tier.TIER1, self.reasons[key])
        if key in self.tier2:
            return Declaration(key, Tier.TIER2, self.reasons[key])
        found = self.catalog.declaration(key)
        if found is not None:
            return found
        if self.deny_prefixes and has_secret_suffix(key):
            for prefix, origin in self.deny_prefixes.items():
                if key.startswith(prefix):
                    return Declaration(key, Tier.TIER1, origin)
        return None

    def tier_of(self, name: str) -> Tier | None:
        """The tier of a name (any case), or None when no rule declares it."""
        found = self.declaration(name)
        return None if found is None else found.tier

    def is_gate(self, name: str) -> bool:
        """True for a platform-prefixed authorization gate (``DISCORD_ALLOWED_CHANNELS``)."""
        key = norm(name)
        if not any(key.startswith(p) for p in self.platform_prefixes):
            return False
        return any(token in _GATE_TOKENS for token in key.split("_"))


def build_policy(
    catalog: Catalog,
    manifests: HomeDeclarations = EMPTY_DECLARATIONS,
    adapters: Iterable[Adapter] = (),
) -> SecretPolicy:
    """Combine the catalog, one home's manifest declarations and its adapters."""
    explicit: dict[str, Declaration] = dict(catalog.names)

    def add(decl: Declaration) -> None:
        if decl.name in explicit or catalog.match_pattern(decl.name) is not None:
            return  # the catalog's word is final
        explicit[decl.name] = decl

    for decl in manifests.secrets.values():
        add(decl)
    prefixes = set(catalog.platform_prefixes) | set(manifests.plugin_prefixes)
    for adapter in adapters:
        prefixes.add(adapter.prefix)
        for name in adapter.requires_env:
            if has_secret_suffix(name):
                origin = Origin(OriginKind.ADAPTER, adapter.name)
                add(Declaration(norm(name), Tier.TIER2, origin))
    return SecretPolicy(
        tier1=frozenset(k for k, d in explicit.items() if d.tier is Tier.TIER1),
        tier2=frozenset(k for k, d in explicit.items() if d.tier is Tier.TIER2),
        reasons=MappingProxyType({k: d.origin for k, d in explicit.items()}),
        complete=manifests.complete,
        problems=manifests.problems,
        catalog=catalog,
        deny_prefixes=manifests.deny_prefixes,
        platform_prefixes=frozenset(prefixes),
        generation=manifests.generation,
    )
