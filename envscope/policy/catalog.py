"""The catalog: the statically declared Tier 1 and Tier 2 names.

A ``Catalog`` is a frozen value. ``Catalog.default()`` loads the YAML shipped in
``envscope/policy/data/catalog.yaml`` on first use (pydantic and yaml are imported
then, never at ``import envscope``); ``Catalog.from_file(path)`` loads a host's
own; ``a.extend(b)`` unions two catalogs (a name declared by both keeps the
stricter tier).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope.errors import CatalogError
from envscope.policy._declarations import (
    Declaration,
    Origin,
    OriginKind,
    Tier,
    norm,
)

if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Mapping
    from pathlib import Path


__all__ = [
    "Catalog",
    "CatalogCategory",
    "CatalogEntry",
    "CatalogPattern",
    "VectorCategory",
    "VectorRow",
    "package_data",
    "stricter",
]

DEFAULT_CATALOG_NAME = "envscope/policy/data/catalog.yaml"
VECTORS_NAME = "envscope/policy/data/injection_vectors.yaml"
MAX_CATALOG_BYTES = 256 * 1024
"""The largest catalog file read (the manifest limit; larger is refused, never cut)."""
_LOOKUP_MEMO_MAX = 8192
"""How many distinct names one catalog memoises its answer for (shared by every home)."""
_MISSING = object()
_NO_NAMES: Mapping[str, Declaration] = MappingProxyType({})
_NO_SOURCES: Mapping[str, str] = MappingProxyType({})
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class CatalogPattern:
    """A glob over upper-cased names (``*`` = any run, possibly empty) with its tier."""

    pattern: str
    tier: Tier
    origin: Origin


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One documented catalog entry: a name (or a ``*`` glob), what it is, where that is said.

    ``examples`` are real names a glob matches (the hygiene tests check each one).
    """

    name: str
    about: str
    source: str
    examples: tuple[str, ...] = ()
    provider: str | None = None

    @property
    def is_pattern(self) -> bool:
        """True when the entry is a glob over names rather than one name."""
        return "*" in self.name


@dataclass(frozen=True, slots=True)
class CatalogCategory:
    """A category of the catalog: its id, title, tier (every entry's), description, entries."""

    id: str
    title: str
    tier: Tier
    about: str
    entries: tuple[CatalogEntry, ...]


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One injection-vector row: a name (or ``PREFIX*``), its platform and its source keys."""

    name: str
    platform: str
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VectorCategory:
    """A category of the injection-vector table; ``opt_in`` for the redirecting family."""

    id: str
    title: str
    opt_in: bool
    about: str
    rows: tuple[VectorRow, ...]


def _split(rows: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Upper-cased names and the prefixes of ``PREFIX*`` families."""
    rows = [norm(r) for r in rows]
    return (
        frozenset(r for r in rows if not r.endswith("*")),
        tuple(r[:-1] for r in rows if r.endswith("*")),
    )


def stricter(a: Declaration, b: Declaration) -> Declaration:
    """Of two declarations of one name, the one with the stricter tier (first on a tie)."""
    return b if b.tier.value < a.tier.value else a


def strict_first(patterns: tuple[CatalogPattern, ...]) -> tuple[CatalogPattern, ...]:
    """Patterns with Tier 1 first (stable): a name two patterns match gets the stricter tier."""
    return tuple(sorted(patterns, key=lambda p: p.tier.value))


@dataclass(frozen=True, slots=True, init=False)
class Catalog:
    """Declared names (upper-cased → declaration), patterns, platform prefixes, global names.

    ``network_trust`` is the proxy and certificate-authority family
    (upper-cased): never launch residue, forwarded to MCP children unless the
    host turns that off. ``categories`` documents the entries a ``categories:`` section declared
    (for docs/catalog.md and the hygiene tests); lookups never read it.
    Immutable; equal by value (unhashable: it holds a mapping).
    """

    names: Mapping[str, Declaration]
    patterns: tuple[CatalogPattern, ...]
    platform_prefixes: frozenset[str]
    global_names: frozenset[str]
    injection_names: frozenset[str]
    injection_prefixes: tuple[str, ...]
    source: str
    categories: tuple[CatalogCategory, ...]
    network_trust: frozenset[str]
    redirecting_names: frozenset[str]
    redirecting_prefixes: tuple[str, ...]
    vector_categories: tuple[VectorCategory, ...]
    vector_sources: Mapping[str, str]
    providers: Mapping[str, str]
    # lookup()'s memo: upper-cased name -> the catalog's declaration or None. No part of
    # equality or repr; filled lock-free (dict get and set are atomic).
    _memo: dict[str, Declaration | None] = field(init=False, repr=False, compare=False)
    # the compiled patterns (see _pattern_regex), _MISSING until first used
    _regex: object = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        names: Mapping[str, Declaration] = _NO_NAMES,
        patterns: tuple[CatalogPattern, ...] = (),
        platform_prefixes: frozenset[str] = frozenset(),
        global_names: frozenset[str] = frozenset(),
        source: str = "<empty>",
        injection_names: frozenset[str] = frozenset(),
        injection_prefixes: tuple[str, ...] = (),
        categories: tuple[CatalogCategory, ...] = (),
        network_trust: frozenset[str] = frozenset(),
        redirecting_names: frozenset[str] = frozenset(),
        redirecting_prefixes: tuple[str, ...] = (),
        vector_categories: tuple[VectorCategory, ...] = (),
        vector_sources: Mapping[str, str] = _NO_SOURCES,
        providers: Mapping[str, str] = _NO_SOURCES,
    ) -> None:
        _set(self, "names", names)
        _set(self, "patterns", patterns)
        _set(self, "platform_prefixes", platform_prefixes)
        _set(self, "global_names", global_names)
        _set(self, "injection_names", injection_names)
        _set(self, "injection_prefixes", injection_prefixes)
        _set(self, "source", source)
        _set(self, "categories", categories)
        _set(self, "network_trust", network_trust)
        _set(self, "redirecting_names", redirecting_names)
        _set(self, "redirecting_prefixes", redirecting_prefixes)
        _set(self, "vector_categories", vector_categories)
        _set(self, "vector_sources", vector_sources)
        _set(self, "providers", providers)
        _set(self, "_memo", {})
        _set(self, "_regex", _MISSING)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def default(cls) -> Catalog:
        """The catalog shipped with envscope (loaded and validated once, then shared)."""
        return _load_default()

    @classmethod
    def empty(cls) -> Catalog:
        """A catalog that declares nothing (for hosts that build theirs from scratch)."""
        return cls()

    @classmethod
    def from_file(cls, path: str | Path) -> Catalog:
        """Load and validate a catalog YAML file; errors name the file and the field.

        Read without blocking (a FIFO is "not a regular file"), at most
        ``MAX_CATALOG_BYTES`` (larger is refused, never cut).
        """
        from envscope.files._trusted_file import read_file

        source = str(path)
        data = read_file(source, max_bytes=MAX_CATALOG_BYTES, error=CatalogError, what="catalog")
        return cls.from_yaml(data, source=source)

    @classmethod
    def from_yaml(cls, data: bytes | str, *, source: str = "<string>") -> Catalog:
        """Parse catalog YAML text; ``source`` names it in errors.

        The manifest reader's rules apply: duplicate keys are refused naming
        both lines, nesting deeper than 64 levels and more than
        ``MAX_CATALOG_BYTES`` are refused, anchors and aliases too.
        """
        from envscope.files._yaml import read_document

        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        doc = read_document(
            raw, source, error=CatalogError, kind="catalog", max_bytes=MAX_CATALOG_BYTES
        )
        return cls._from_document(doc.root, doc.lines, source)

    @classmethod
    def from_mapping(cls, doc: object, *, source: str = "<mapping>") -> Catalog:
        """Validate an already-parsed catalog document."""
        return cls._from_document(doc, {}, source)

    @classmethod
    def _from_document(
        cls, doc: object, lines: Mapping[tuple[object, ...], int], source: str
    ) -> Catalog:
        import pydantic

        from envscope.policy._catalog_schema import build_catalog, catalog_model

        try:
            parsed = catalog_model().model_validate(doc if doc is not None else {})
        except pydantic.ValidationError as exc:  # its errors hold the input values: keep none
            first = exc.errors(include_url=False, include_input=False)[0]
            loc = tuple(first["loc"])
            where = ".".join(str(p) for p in loc) or "<root>"
            line = next((lines[loc[:n]] for n in range(len(loc), -1, -1) if loc[:n] in lines), None)
            failure: CatalogError | None = CatalogError(
                source, first["msg"], field=where, line=line
            )
        else:
            failure = None
        if failure is not None:
            raise failure
        return build_catalog(parsed, source)

    def extend(self, other: Catalog) -> Catalog:
        """A catalog declaring everything both declare (the stricter tier wins per name)."""
        names = dict(self.names)
        for key, decl in other.names.items():
            names[key] = stricter(names[key], decl) if key in names else decl
        return Catalog(
            names=MappingProxyType(names),
            patterns=strict_first(self.patterns + other.patterns),
            platform_prefixes=self.platform_prefixes | other.platform_prefixes,
            global_names=self.global_names | other.global_names,
            source=f"{self.source}+{other.source}",
            injection_names=self.injection_names | other.injection_names,
            injection_prefixes=self.injection_prefixes + other.injection_prefixes,
            categories=self.categories + other.categories,
            network_trust=self.network_trust | other.network_trust,
            redirecting_names=self.redirecting_names | other.redirecting_names,
            redirecting_prefixes=self.redirecting_prefixes + other.redirecting_prefixes,
            vector_categories=self.vector_categories + other.vector_categories,
            vector_sources=MappingProxyType({**self.vector_sources, **other.vector_sources}),
            providers=MappingProxyType({**other.providers, **self.providers}),
        )

    def with_vectors(
        self, categories: tuple[VectorCategory, ...], sources: Mapping[str, str]
    ) -> Catalog:
        """This catalog with an injection-vector table's rows (its source unchanged)."""
        always = [r.name for c in categories if not c.opt_in for r in c.rows]
        opt_in = [r.name for c in categories if c.opt_in for r in c.rows]
        names, prefixes = _split(always)
        r_names, r_prefixes = _split(opt_in)
        return Catalog(
            names=self.names,
            patterns=self.patterns,
            platform_prefixes=self.platform_prefixes,
            global_names=self.global_names,
            source=self.source,
            injection_names=self.injection_names | names,
            injection_prefixes=self.injection_prefixes + prefixes,
            categories=self.categories,
            network_trust=self.network_trust,
            redirecting_names=self.redirecting_names | r_names,
            redirecting_prefixes=self.redirecting_prefixes + r_prefixes,
            vector_categories=self.vector_categories + categories,
            vector_sources=MappingProxyType({**self.vector_sources, **sources}),
            providers=self.providers,
        )

    def is_injection_vector(self, name: str) -> bool:
        """True for a name that changes how a child's loader, shell or interpreter starts.

        A name with surrounding whitespace is the name it strips to (``"  LD_PRELOAD"``
        is ``LD_PRELOAD``): what a child's loader sees is never the question.
        """
        key = norm(name.strip())
        return key in self.injection_names or key.startswith(self.injection_prefixes)

    def is_redirecting(self, name: str) -> bool:
        """True for a name of the redirecting family (programs, indexes, proxies, daemons).

        Refused when introduced only by a host that opts in
        (``Host(refuse_redirecting=True)``); matched like ``is_injection_vector``.
        """
        key = norm(name.strip())
        return key in self.redirecting_names or key.startswith(self.redirecting_prefixes)

    def provider_of(self, name: str) -> str | None:
        """The provider whose Tier 2 credential or base URL ``name`` is, or None.

        From the ``providers`` registry and the ``provider`` of catalog entries;
        a credentialed child keeps a value of that provider's credential format
        under such a name (DESIGN §4a).
        """
        return self.providers.get(norm(name))

    def with_names(
        self, *, tier1: Iterable[str] = (), tier2: Iterable[str] = (), detail: str = "host"
    ) -> Catalog:
        """This catalog plus some names declared in code (origin: ``detail``)."""
        from envscope._inputs import name_list

        extra: dict[str, Declaration] = {}
        groups = ((Tier.TIER2, name_list(tier2, "tier2")), (Tier.TIER1, name_list(tier1, "tier1")))
        for tier, group in groups:
            for name in group:
                key = norm(name)
                extra[key] = Declaration(key, tier, Origin(OriginKind.CATALOG, detail))
        return self.extend(Catalog(names=MappingProxyType(extra), source=detail))

    def _pattern_regex(self) -> tuple[re.Pattern[str], tuple[CatalogPattern, ...]] | None:
        """One compiled alternation of every pattern (built on first use, then kept)."""
        compiled = self._regex
        if compiled is _MISSING:
            compiled = None
            if self.patterns:
                import fnmatch
                import re

                parts = [
                    f"(?P<p{i}>{fnmatch.translate(p.pattern)})" for i, p in enumerate(self.patterns)
                ]
                compiled = (re.compile("|".join(parts)), self.patterns)
            _set(self, "_regex", compiled)  # idempotent: a racing thread builds the same
        return compiled  # type: ignore[return-value]

    def match_pattern(self, key: str) -> CatalogPattern | None:
        """The first pattern matching an upper-cased name, if any."""
        compiled = self._pattern_regex()
        if compiled is None:
            return None
        regex, patterns = compiled
        m = regex.match(key)
        if m is None:
            return None
        return patterns[int(m.lastgroup[1:])] if m.lastgroup else None

    def declaration(self, name: str) -> Declaration | None:
        """How the catalog declares a name (explicitly or by pattern), or None."""
        return self.lookup(norm(name))

    def lookup(self, key: str) -> Declaration | None:
        """``declaration`` for an upper-cased name, memoised per catalog (the spawn path)."""
        memo = self._memo
        found = memo.get(key, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        found = self.names.get(key)
        if found is None:
            pattern = self.match_pattern(key)
            if pattern is not None:
                found = Declaration(key, pattern.tier, pattern.origin)
        if len(memo) < _LOOKUP_MEMO_MAX:
            memo[key] = found
        return found


def package_data(name: str) -> bytes:
    """The bytes of a file shipped in ``envscope/policy/data`` (the one place they are read)."""
    from importlib import resources

    return (resources.files("envscope.policy") / "data" / name).read_bytes()


@functools.cache
def _load_default() -> Catalog:
    from envscope.policy._catalog_schema import read_vectors

    catalog = Catalog.from_yaml(package_data("catalog.yaml"), source=DEFAULT_CATALOG_NAME)
    categories, sources = read_vectors(package_data("injection_vectors.yaml"), VECTORS_NAME)
    return catalog.with_vectors(categories, sources)
