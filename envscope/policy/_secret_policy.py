"""``SecretPolicy``: which names a child of one home may not receive, and why.

A policy is built per home from the catalog, the plugin manifests of that home
(and the bundled root), and the runtime adapter census. It is immutable; the
lookups it needs on the spawn path are precomputed once per policy.

Precedence for one name: the catalog (explicit names, then patterns) wins;
then manifest declarations (Tier 1); then a partial scan's deny prefixes
(Tier 1 for secret-suffixed names under the failing plugin's prefix); last, the
runtime adapters (Tier 2: an adapter name under a deny prefix is not added, so
the stricter tier wins). A manifest or adapter never demotes or reclassifies a
name the catalog declares.

Layout (what a cached home costs). A policy stores only what its home adds
to the catalog: the names the manifests and adapters declare that the
catalog does not (``own``), the deny prefixes and the platform prefixes. The
catalog's part is looked up in the catalog itself, whose answers are
memoised once per catalog and shared by every home. ``tier1``, ``tier2`` and
``reasons`` (the whole explicit view) are computed when asked (explain and
the CLI ask; a build never does).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envscope.policy._declarations import (
    EMPTY_DECLARATIONS,
    EMPTY_MAPPING,
    SECRET_SUFFIXES,
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

if TYPE_CHECKING:
    from envscope.policy.catalog import Catalog  # loaded with the first catalog, not the host

__all__ = ["Adapter", "AdapterCensus", "SecretPolicy", "build_policy"]

_GATE_TOKENS = frozenset({"ALLOW", "ALLOWED", "ALLOWLIST", "WHITELIST", "ALLOWFROM"})
# The channel/user/chat settings a platform adapter reads to decide whom it answers and
# where (DISCORD_IGNORED_CHANNELS, SLACK_HOME_CHANNEL, DISCORD_PEER_BOT_IDS,
# DISCORD_REQUIRE_MENTION): a platform-prefixed name with one of these tokens is a gate.
# Singular USER is not one (SLACK_USER_TOKEN is a credential, not a gate).
_GATE_NOUNS = frozenset(
    {
        "CHANNEL", "CHANNELS", "CHAT", "CHATS", "USERS", "USERNAMES", "IDS", "GROUPS",
        "ROOMS", "GUILDS", "SERVERS", "SPACES", "WORKSPACES", "SENDERS", "MEMBERS",
        "ADMINS", "OWNERS", "CONTACTS", "NUMBERS", "MENTION", "MENTIONS",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Adapter:
    """A runtime adapter registered for one home, with the env it requires (immutable)."""

    name: str
    requires_env: tuple[str, ...]

    @property
    def prefix(self) -> str:
        """The adapter's env prefix (counts as a platform prefix for the gate rule)."""
        return plugin_prefix(self.name)


class _Reasons(Mapping[str, Origin]):
    """``reasons`` as a read-only view over the explicit declarations (no copy)."""

    __slots__ = ("_decls",)

    def __init__(self, decls: Mapping[str, Declaration]) -> None:
        self._decls = decls

    def __getitem__(self, key: str) -> Origin:
        return self._decls[key].origin

    def __iter__(self) -> Iterator[str]:
        return iter(self._decls)

    def __len__(self) -> int:
        return len(self._decls)

    def __repr__(self) -> str:
        return repr(dict(self))


class _Explicit(Mapping[str, Declaration]):
    """Every explicit declaration of a policy: its own names over the catalog's (no copy)."""

    __slots__ = ("_catalog", "_own")

    def __init__(self, catalog: Mapping[str, Declaration], own: Mapping[str, Declaration]) -> None:
        self._catalog = catalog
        self._own = own

    def __getitem__(self, key: str) -> Declaration:
        found = self._own.get(key)
        return self._catalog[key] if found is None else found

    def __contains__(self, key: object) -> bool:
        return key in self._own or key in self._catalog

    def __iter__(self) -> Iterator[str]:
        yield from self._catalog
        for key in self._own:
            if key not in self._catalog:
                yield key

    def __len__(self) -> int:
        return len(self._catalog) + sum(1 for k in self._own if k not in self._catalog)


def _no_catalog() -> Catalog:
    """The empty catalog (imported on first use: a policy without a catalog is a test's)."""
    from envscope.policy.catalog import Catalog

    return Catalog()


@dataclass(frozen=True, slots=True, repr=False)
class SecretPolicy:
    """The declared secrets of one home (immutable).

    ``own`` holds the declarations the home adds over the ``catalog``'s
    (upper-cased name → declaration; ``build_policy`` never gives it a name the
    catalog declares, and built directly its names win over the catalog's).
    ``home_prefixes`` are the platform prefixes the home adds (a prefix the
    catalog already has is dropped: the catalog's set is shared, never copied).
    ``tier1``/``tier2`` hold the explicitly declared (upper-cased) names, the
    catalog's and the home's; names matched by a catalog pattern or a partial
    scan's deny prefix are answered by ``tier_of``. ``reasons`` maps each
    explicit name to where its rule came from. ``complete`` is False when a
    manifest scan was partial (``problems`` says where); the policy then errs
    on the side of stripping. Equal by value; unhashable (it holds mappings).
    """

    own: Mapping[str, Declaration] = field(default_factory=lambda: EMPTY_MAPPING)
    catalog: Catalog = field(default_factory=_no_catalog)
    complete: bool = True
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()  # a manifest key near a known one: read on, reported
    deny_prefixes: Mapping[str, Origin] = field(default_factory=lambda: EMPTY_MAPPING)
    home_prefixes: frozenset[str] = frozenset()
    generation: int = 0
    # derived in __post_init__ for the spawn path (never compared: the fields above decide)
    _loose: tuple[str, ...] = field(init=False, compare=False)
    _deny: tuple[tuple[str, Origin], ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        store = object.__setattr__
        shared = self.catalog.platform_prefixes
        own_prefixes = frozenset(p for p in self.home_prefixes if p not in shared)
        store(self, "home_prefixes", own_prefixes)
        # a prefix not ending in ``_`` is matched by startswith (usually none)
        loose = [p for p in own_prefixes if not p.endswith("_")]
        loose += [p for p in shared if not p.endswith("_")]
        store(self, "_loose", tuple(loose))
        store(self, "_deny", tuple(self.deny_prefixes.items()))

    __hash__ = None  # type: ignore[assignment]  # it holds mappings: never hashable

    @property
    def platform_prefixes(self) -> frozenset[str]:
        """Every platform prefix of the gate rule: the catalog's and the home's own."""
        return self.catalog.platform_prefixes | self.home_prefixes

    def __repr__(self) -> str:
        return (
            f"SecretPolicy(tier1={len(self.tier1)} names, tier2={len(self.tier2)} names, "
            f"complete={self.complete}, problems={len(self.problems)}, "
            f"catalog={self.catalog.source!r}, deny_prefixes={sorted(self.deny_prefixes)}, "
            f"generation={self.generation})"
        )

    # -- the explicit view, computed on each use (explain, the CLI; never a build) --

    def _explicit(self) -> _Explicit:
        return _Explicit(self.catalog.names, self.own)

    def _tier(self, tier: Tier) -> frozenset[str]:
        explicit = self._explicit()
        return frozenset(k for k in explicit if explicit[k].tier is tier)

    @property
    def tier1(self) -> frozenset[str]:
        """The explicitly declared Tier 1 names (upper-cased)."""
        return self._tier(Tier.TIER1)

    @property
    def tier2(self) -> frozenset[str]:
        """The explicitly declared Tier 2 names (upper-cased)."""
        return self._tier(Tier.TIER2)

    @property
    def reasons(self) -> Mapping[str, Origin]:
        """Each explicit name → where its rule came from (a read-only view, no copy)."""
        return _Reasons(self._explicit())

    # -- the spawn path --------------------------------------------------------

    def declaration(self, name: str) -> Declaration | None:
        """How this policy declares a name (any case), or None when it does not."""
        key = name.upper()
        found = self.own.get(key)
        if found is not None:
            return found
        found = self.catalog.lookup(key)
        if found is not None:
            return found
        if self._deny and key.endswith(SECRET_SUFFIXES):
            for prefix, origin in self._deny:
                if key.startswith(prefix):
                    return Declaration(key, Tier.TIER1, origin)
        return None

    def tier_of(self, name: str) -> Tier | None:
        """The tier of a name (any case), or None when no rule declares it."""
        found = self.declaration(name)
        return None if found is None else found.tier

    def is_gate(self, name: str) -> bool:
        """True for a platform-prefixed authorization gate, recognised by its shape.

        A gate starts with a platform prefix (the catalog's, a platform plugin's
        or an adapter's) and has an allow token (``DISCORD_ALLOWED_CHANNELS``,
        ``GATEWAY_ALLOW_ALL_USERS``) or a channel/user/chat token
        (``DISCORD_IGNORED_CHANNELS``, ``SLACK_HOME_CHANNEL``) after the prefix.
        """
        key = name.upper()
        shared, own = self.catalog.platform_prefixes, self.home_prefixes
        head = None
        cut = key.find("_")
        while cut >= 0:  # the name's heads that end in ``_``, shortest first: one lookup each
            candidate = key[: cut + 1]
            if candidate in shared or candidate in own:
                head = candidate
                break
            cut = key.find("_", cut + 1)
        for prefix in self._loose:  # usually none: every shipped prefix ends in ``_``
            if key.startswith(prefix) and (head is None or len(prefix) < len(head)):
                head = prefix
        if head is None:
            return False
        tokens = key[len(head) :].split("_")
        return any(t in _GATE_TOKENS or t in _GATE_NOUNS for t in tokens)


class AdapterCensus:
    """The runtime adapters registered per home (by identity); thread-safe.

    Each home's version grows on every change, so a cached policy built from
    an older census is rebuilt.
    """

    __slots__ = ("_adapters", "_lock", "_versions")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._adapters: dict[str, dict[str, Adapter]] = {}
        self._versions: dict[str, int] = {}

    def register(self, home: str, name: str, requires_env: Iterable[str]) -> None:
        """Declare (or redeclare) an adapter for a home."""
        adapter = Adapter(name, tuple(requires_env))
        with self._lock:
            self._adapters.setdefault(home, {})[name] = adapter
            self._versions[home] = self._versions.get(home, 0) + 1

    def unregister(self, home: str, name: str) -> None:
        """Remove an adapter from a home (no error when absent)."""
        with self._lock:
            if self._adapters.get(home, {}).pop(name, None) is not None:
                self._versions[home] = self._versions.get(home, 0) + 1

    def version(self, home: str) -> int:
        """A home's census version (grows on every change; 0 before the first)."""
        return self._versions.get(home, 0)  # one dict read: atomic under the GIL

    def of(self, home: str) -> tuple[int, tuple[Adapter, ...]]:
        """A home's census version and its adapters, read together."""
        with self._lock:
            return self._versions.get(home, 0), tuple(self._adapters.get(home, {}).values())


def build_policy(
    catalog: Catalog,
    manifests: HomeDeclarations = EMPTY_DECLARATIONS,
    adapters: Iterable[Adapter] = (),
) -> SecretPolicy:
    """Combine the catalog, one home's manifest declarations and its adapters."""
    own: dict[str, Declaration] = {}

    def add(decl: Declaration) -> None:
        name = decl.name
        if name in own or catalog.lookup(name) is not None:
            return  # the catalog's word is final (explicit name or pattern); first rule wins
        own[name] = decl

    for decl in manifests.secrets.values():
        add(decl)
    prefixes = set(manifests.plugin_prefixes)  # the catalog's are shared, never copied
    # A partial scan's deny prefix (Tier 1) beats an adapter's Tier 2: the failing
    # manifest may declare the same name, and failing closed means the stricter tier.
    deny = tuple(manifests.deny_prefixes)
    for adapter in adapters:
        prefixes.add(adapter.prefix)
        for name in adapter.requires_env:
            if has_secret_suffix(name) and not norm(name).startswith(deny):
                origin = Origin(OriginKind.ADAPTER, adapter.name)
                add(Declaration(norm(name), Tier.TIER2, origin))
    return SecretPolicy(
        own,
        catalog=catalog,
        complete=manifests.complete,
        problems=manifests.problems,
        warnings=manifests.warnings,
        deny_prefixes=manifests.deny_prefixes,
        home_prefixes=frozenset(prefixes),
        generation=manifests.generation,
    )
