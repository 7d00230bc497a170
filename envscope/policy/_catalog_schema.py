"""The catalog file's schema (pydantic, built on first use) and the ``Catalog`` it builds.

A catalog document has two ways to declare names, which may be mixed:

- ``categories``: the documented form the default catalog uses. Each category
  has an ``id``, a ``title``, a ``tier`` (every entry's), an ``about`` line
  and ``entries``; each entry has a ``name`` (or a ``*`` glob with
  ``examples``), an ``about`` line and a ``source`` (a public document or the
  project that reads the name).
- the plain sections a host's own file may use: ``tier1``/``tier2`` lists,
  the ``providers`` registry, the ``optional_env`` table, the
  ``gateway_overrides`` table and ``patterns``.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from envscope._inputs import portable_name
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
    has_secret_suffix,
    norm,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pydantic

__all__ = ["catalog_fields", "catalog_model", "read_vectors", "vectors_model"]

MAX_VECTORS_BYTES = 128 * 1024
PLATFORMS = ("any", "posix", "linux", "macos", "aix", "hpux", "irix", "windows")

_GLOB = re.compile(r"[A-Za-z0-9_*]+")
# Bash's exported functions are named BASH_FUNC_f%% or BASH_FUNC_f() (__BASH_FUNC<f>()
# on macOS): an injection vector may hold those characters.
_VECTOR = re.compile(r"[A-Za-z_][A-Za-z0-9_%()<>]*\*?")


def _names(value: list[str]) -> list[str]:
    for i, name in enumerate(value):
        if not portable_name(name):
            raise ValueError(f"item {i} is not a valid environment variable name")
    return value


@functools.cache
def catalog_model() -> type[pydantic.BaseModel]:
    """The pydantic model of a catalog document (built on first use)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

    env_name = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    text = Field(min_length=1)

    class _Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    class Provider(_Strict):
        name: str
        api_key_env: list[str] = Field(default_factory=list)
        base_url_env: str | None = None
        auth: str = "api-key"

    class OptionalEnv(_Strict):
        name: str = env_name
        category: str | None = None
        password: bool = False
        description: str | None = None

    class Pattern(_Strict):
        pattern: str = Field(pattern=r"^[A-Za-z0-9_*]+$")
        tier: Literal[1, 2]
        reason: str = ""

    class Entry(_Strict):
        name: str = Field(pattern=r"^[A-Za-z0-9_*]+$")
        about: str = text
        source: str = text
        examples: list[str] = Field(default_factory=list)
        provider: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9-]*$")

        @field_validator("examples")
        @classmethod
        def _examples_are_names(cls, value: list[str]) -> list[str]:
            return _names(value)

        @model_validator(mode="after")
        def _a_glob_has_examples(self) -> Entry:
            if "*" in self.name and not self.examples:
                raise ValueError("a glob entry needs examples (names it matches)")
            if "*" not in self.name and not portable_name(self.name):
                raise ValueError("not a valid environment variable name")
            return self

    class Category(_Strict):
        id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
        title: str = text
        tier: Literal[1, 2]
        about: str = text
        entries: list[Entry] = Field(min_length=1)

    class CatalogDoc(_Strict):
        version: Literal[1] = 1
        categories: list[Category] = Field(default_factory=list)
        tier1: list[str] = Field(default_factory=list)
        tier2: list[str] = Field(default_factory=list)
        providers: list[Provider] = Field(default_factory=list)
        optional_env: list[OptionalEnv] = Field(default_factory=list)
        gateway_overrides: list[str] = Field(default_factory=list)
        patterns: list[Pattern] = Field(default_factory=list)
        platform_prefixes: list[str] = Field(default_factory=list)
        global_names: list[str] = Field(default_factory=list)
        network_trust: list[str] = Field(default_factory=list)
        injection_vectors: list[str] = Field(default_factory=list)

        @field_validator("injection_vectors")
        @classmethod
        def _vectors_are_names_or_prefixes(cls, value: list[str]) -> list[str]:
            for i, name in enumerate(value):
                if not _VECTOR.fullmatch(name):
                    raise ValueError(f"item {i} is not a name or a PREFIX_* glob")
            return value

        @field_validator("tier1", "tier2", "gateway_overrides", "global_names", "network_trust")
        @classmethod
        def _names_are_env_names(cls, value: list[str]) -> list[str]:
            return _names(value)

    return CatalogDoc


def catalog_fields(doc: Any, source: str) -> dict[str, Any]:
    """The ``Catalog`` fields a validated document declares (``source`` names it in origins).

    ``Catalog._from_document`` builds the catalog from them: this module
    names no ``Catalog`` (the catalog module imports it, never the reverse).
    """
    names: dict[str, Declaration] = {}
    patterns: list[CatalogPattern] = []
    providers: dict[str, str] = {}

    def declare(name: str, tier: Tier, detail: str) -> None:
        key = norm(name)
        decl = Declaration(key, tier, Origin(OriginKind.CATALOG, detail, path=source))
        names[key] = stricter(names[key], decl) if key in names else decl

    def pattern(glob: str, tier: Tier, detail: str) -> None:
        origin = Origin(OriginKind.CATALOG_PATTERN, detail, path=source)
        patterns.append(CatalogPattern(norm(glob), tier, origin))

    categories = []
    for cat in doc.categories:
        tier = Tier(cat.tier)
        entries = []
        for e in cat.entries:
            entries.append(CatalogEntry(e.name, e.about, e.source, tuple(e.examples), e.provider))
            if e.provider is not None and "*" not in e.name:
                providers[norm(e.name)] = e.provider
            if "*" in e.name:
                pattern(e.name, tier, f"{cat.id}: {e.about}")
            else:
                declare(e.name, tier, f"{cat.id}: {e.about}")
        categories.append(CatalogCategory(cat.id, cat.title, tier, cat.about, tuple(entries)))
    for provider in doc.providers:
        for key_name in provider.api_key_env:
            declare(key_name, Tier.TIER2, f"provider {provider.name} API key")
            providers.setdefault(norm(key_name), provider.name)
        if provider.base_url_env:
            declare(provider.base_url_env, Tier.TIER2, f"provider {provider.name} base URL")
            providers.setdefault(norm(provider.base_url_env), provider.name)
    for name in doc.tier2:
        declare(name, Tier.TIER2, "tier2 list")
    for entry in doc.optional_env:
        if entry.password:
            tier = Tier.TIER1 if entry.category == "messaging" else Tier.TIER2
            declare(entry.name, tier, f"optional env ({entry.category or 'no category'})")
    for name in doc.gateway_overrides:
        if has_secret_suffix(name):
            declare(name, Tier.TIER1, "gateway env override")
    for name in doc.tier1:
        declare(name, Tier.TIER1, "tier1 list")
    for p in doc.patterns:
        pattern(p.pattern, Tier(p.tier), p.reason or p.pattern)
    vectors = doc.injection_vectors
    return {
        "names": MappingProxyType(names),
        "patterns": strict_first(tuple(patterns)),
        "platform_prefixes": frozenset(norm(p) for p in doc.platform_prefixes),
        "global_names": frozenset(norm(n) for n in doc.global_names),
        "network_trust": frozenset(norm(n) for n in doc.network_trust),
        "source": source,
        "injection_names": frozenset(norm(n) for n in vectors if not n.endswith("*")),
        "injection_prefixes": tuple(norm(n[:-1]) for n in vectors if n.endswith("*")),
        "categories": tuple(categories),
        "providers": MappingProxyType(providers),
    }


@functools.cache
def vectors_model() -> type[pydantic.BaseModel]:
    """The pydantic model of the injection-vector table (built on first use)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

    text = Field(min_length=1)

    class _Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    class Row(_Strict):
        name: str = Field(pattern=f"^(?:{_VECTOR.pattern})$")
        platform: Literal[PLATFORMS]  # type: ignore[valid-type]
        source: str = text

    class Category(_Strict):
        id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
        title: str = text
        refused: Literal["always", "opt-in"]
        about: str = text
        rows: list[Row] = Field(min_length=1)

    class VectorDoc(_Strict):
        version: Literal[1]
        sources: dict[str, str]
        categories: list[Category] = Field(min_length=1)

        @field_validator("sources")
        @classmethod
        def _sources_are_links(cls, value: dict[str, str]) -> dict[str, str]:
            for key, url in value.items():
                if not url.startswith("https://"):
                    raise ValueError(f"source {key} is not an https:// link")
            return value

        @model_validator(mode="after")
        def _rows_cite_known_sources_once(self) -> VectorDoc:
            seen: set[str] = set()
            for cat in self.categories:
                for row in cat.rows:
                    unknown = [k for k in row.source.split() if k not in self.sources]
                    if unknown:
                        raise ValueError(f"{row.name}: unknown source {unknown[0]}")
                    if row.name.upper() in seen:
                        raise ValueError(f"{row.name}: listed twice")
                    seen.add(row.name.upper())
            return self

    return VectorDoc


def read_vectors(data: bytes, source: str) -> tuple[tuple[VectorCategory, ...], Mapping[str, str]]:
    """The categories and source links of an injection-vector table (errors name the field)."""
    import pydantic

    from envscope.files._yaml import read_document, validation_error

    doc = read_document(
        data, source, error=CatalogError, kind="injection-vector table", max_bytes=MAX_VECTORS_BYTES
    )
    try:
        parsed: Any = vectors_model().model_validate(doc.root)
    except pydantic.ValidationError as exc:  # its errors hold the input values: keep none
        failure: CatalogError | None = validation_error(exc, doc, source, CatalogError)
    else:
        failure = None
    if failure is not None:
        raise failure
    categories = tuple(
        VectorCategory(
            c.id,
            c.title,
            c.refused == "opt-in",
            c.about,
            tuple(VectorRow(r.name, r.platform, tuple(r.source.split())) for r in c.rows),
        )
        for c in parsed.categories
    )
    return categories, MappingProxyType(dict(parsed.sources))
