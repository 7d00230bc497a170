"""The catalog: the statically declared Tier 1 and Tier 2 names.

A ``Catalog`` is a frozen value. ``Catalog.default()`` loads the YAML shipped in
``envscope/policy/data/catalog.yaml`` on first use (pydantic and yaml are imported
then, never at ``import envscope``); ``Catalog.from_file(path)`` loads a host's
own; ``a.extend(b)`` unions two catalogs (a name declared by both keeps the
stricter tier).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope.errors import CatalogError
from envscope.policy._catalog_records import (
    CatalogCategory,
    CatalogEntry,
    CatalogPattern,
    VectorCategory,
    VectorRow,
    strict_first,
    stricter,
)
from envscope.policy._declarations import (
    Declaration,
    Origin,
    OriginKind,
    Tier,
    glob_source,
    norm,
)

if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path

    from envscope.files._yaml import Document


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


def _split(rows: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Upper-cased names and the prefixes of ``PREFIX*`` families."""
    rows = [norm(r) for r in rows]
    return (
        frozenset(r for r in rows if not r.endswith("*")),
        tuple(r[:-1] for r in rows if r.endswith("*")),
    )


@dataclass(slots=True)
class CatalogMemo:
    """A catalog's lookup answers and compiled patterns, filled on the spawn path.

    Mutable state, not a record: ``Catalog.lookup`` memoises up to
    ``_LOOKUP_MEMO_MAX`` names here and compiles the patterns on first use.
    Filled lock-free (a dict get and set and an attribute store are atomic); a
    racing thread computes the same answer.
    """

    names: dict[str, Declaration | None] = field(default_factory=dict)
    patterns: object = _MISSING


@dataclass(frozen=True, slots=True)
class Catalog:
    """Declared names (upper-cased → declaration), patterns, platform prefixes, global names.

    ``network_trust`` is the proxy and certificate-authority family
    (upper-cased): never launch residue, forwarded to MCP children unless the
    host turns that off. ``categories`` documents the entries a ``categories:`` section declared
    (for docs/catalog.md and the hygiene tests); lookups never read it.
    Immutable; equal by value (unhashable: it holds a mapping). Its lookup
    answers live in a ``CatalogMemo`` it owns (no part of equality or repr).
    """

    names: Mapping[str, Declaration] = field(default_factory=lambda: _NO_NAMES)
    patterns: tuple[CatalogPattern, ...] = ()
    platform_prefixes: frozenset[str] = frozenset()
    global_names: frozenset[str] = frozenset()
    source: str = "<empty>"
    injection_names: frozenset[str] = frozenset()
    injection_prefixes: tuple[str, ...] = ()
    categories: tuple[CatalogCategory, ...] = ()
    network_trust: frozenset[str] = frozenset()
    redirecting_names: frozenset[str] = frozenset()
    redirecting_prefixes: tuple[str, ...] = ()
    vector_categories: tuple[VectorCategory, ...] = ()
    vector_sources: Mapping[str, str] = field(default_factory=lambda: _NO_SOURCES)
    providers: Mapping[str, str] = field(default_factory=lambda: _NO_SOURCES)
    _memo: CatalogMemo = field(default_factory=CatalogMemo, init=False, repr=False, compare=False)

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
        return cls._from_document(doc, source)

    @classmethod
    def from_mapping(cls, doc: object, *, source: str = "<mapping>") -> Catalog:
        """Validate an already-parsed catalog document (errors name no line)."""
        from envscope.files._yaml import Document

        return cls._from_document(Document(root=doc, lines={}), source)

    @classmethod
    def _from_document(cls, doc: Document, source: str) -> Catalog:
        import pydantic

        from envscope.files._yaml import validation_error
        from envscope.policy._catalog_schema import catalog_fields, catalog_model

        try:
            parsed = catalog_model().model_validate(doc.root if doc.root is not None else {})
        except pydantic.ValidationError as exc:  # its errors hold the input values: keep none
            failure: CatalogError | None = validation_error(exc, doc, source, CatalogError)
        else:
            failure = None
        if failure is not None:
            raise failure
        return cls(**catalog_fields(parsed, source))

    def extend(self, other: Catalog) -> Catalog:
        """A catalog declaring everything both declare (the stricter tier wins per name).

        Every field is merged by its rule in ``_MERGE`` (a field without one is a
        ``KeyError`` here, never a field silently reset).
        """
        merged = {f.name: _MERGE[f.name](self, other) for f in fields(self) if f.init}
        return Catalog(**merged)  # type: ignore[arg-type]

    def with_vectors(
        self, categories: tuple[VectorCategory, ...], sources: Mapping[str, str]
    ) -> Catalog:
        """This catalog with an injection-vector table's rows (its source unchanged)."""
        always = [r.name for c in categories if not c.opt_in for r in c.rows]
        opt_in = [r.name for c in categories if c.opt_in for r in c.rows]
        names, prefixes = _split(always)
        r_names, r_prefixes = _split(opt_in)
        return replace(
            self,
            injection_names=self.injection_names | names,
            injection_prefixes=self.injection_prefixes + prefixes,
            redirecting_names=self.redirecting_names | r_names,
            redirecting_prefixes=self.redirecting_prefixes + r_prefixes,
            vector_categories=self.vector_categories + categories,
            vector_sources=MappingProxyType({**self.vector_sources, **sources}),
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
        under such a name (docs/credential-formats.md).
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
        """One compiled alternation of every pattern (``glob_source``'s dialect; built once)."""
        memo = self._memo
        compiled = memo.patterns
        if compiled is _MISSING:
            compiled = None
            if self.patterns:
                import re

                parts = [f"(?P<p{i}>{glob_source(p.pattern)})" for i, p in enumerate(self.patterns)]
                compiled = (re.compile("|".join(parts)), self.patterns)
            memo.patterns = compiled  # idempotent: a racing thread builds the same
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
        memo = self._memo.names
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


def _names(a: Catalog, b: Catalog) -> Mapping[str, Declaration]:
    names = dict(a.names)
    for key, decl in b.names.items():
        names[key] = stricter(names[key], decl) if key in names else decl
    return MappingProxyType(names)


_MERGE: Mapping[str, Callable[[Catalog, Catalog], object]] = MappingProxyType(
    {
        "names": _names,
        "patterns": lambda a, b: strict_first(a.patterns + b.patterns),
        "platform_prefixes": lambda a, b: a.platform_prefixes | b.platform_prefixes,
        "global_names": lambda a, b: a.global_names | b.global_names,
        "source": lambda a, b: f"{a.source}+{b.source}",
        "injection_names": lambda a, b: a.injection_names | b.injection_names,
        "injection_prefixes": lambda a, b: a.injection_prefixes + b.injection_prefixes,
        "categories": lambda a, b: a.categories + b.categories,
        "network_trust": lambda a, b: a.network_trust | b.network_trust,
        "redirecting_names": lambda a, b: a.redirecting_names | b.redirecting_names,
        "redirecting_prefixes": lambda a, b: a.redirecting_prefixes + b.redirecting_prefixes,
        "vector_categories": lambda a, b: a.vector_categories + b.vector_categories,
        "vector_sources": lambda a, b: MappingProxyType({**a.vector_sources, **b.vector_sources}),
        "providers": lambda a, b: MappingProxyType({**b.providers, **a.providers}),
    }
)
"""How ``Catalog.extend`` merges each field of two catalogs (one rule per field)."""


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
