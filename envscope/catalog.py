"""The catalog: the statically declared Tier 1 and Tier 2 names.

A ``Catalog`` is a frozen value. ``Catalog.default()`` loads the YAML shipped in
``envscope/data/catalog.yaml`` on first use (pydantic and yaml are imported
then, never at ``import envscope``); ``Catalog.from_file(path)`` loads a host's
own; ``a.extend(b)`` unions two catalogs (a name declared by both keeps the
stricter tier).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from envscope._declarations import Declaration, Origin, OriginKind, Tier, has_secret_suffix, norm
from envscope.errors import CatalogError

if TYPE_CHECKING:
    import pydantic

__all__ = ["Catalog", "CatalogPattern"]

DEFAULT_CATALOG_NAME = "envscope/data/catalog.yaml"


@dataclass(frozen=True, slots=True)
class CatalogPattern:
    """A glob over upper-cased names (``*`` = any run, possibly empty) with its tier."""

    pattern: str
    tier: Tier
    origin: Origin


def _stricter(a: Declaration, b: Declaration) -> Declaration:
    """Of two declarations of one name, the one with the stricter tier (first on a tie)."""
    return b if b.tier.value < a.tier.value else a


@dataclass(frozen=True)
class Catalog:
    """Declared names (upper-cased → declaration), patterns, platform prefixes, global names."""

    names: Mapping[str, Declaration] = field(default_factory=lambda: MappingProxyType({}))
    patterns: tuple[CatalogPattern, ...] = ()
    platform_prefixes: frozenset[str] = frozenset()
    global_names: frozenset[str] = frozenset()
    source: str = "<empty>"

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
        """Load and validate a catalog YAML file; errors name the file and the field."""
        source = str(path)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise CatalogError(source, f"cannot read catalog: {exc.strerror}") from None
        return cls.from_yaml(data, source=source)

    @classmethod
    def from_yaml(cls, data: bytes | str, *, source: str = "<string>") -> Catalog:
        """Parse catalog YAML text; ``source`` names it in errors."""
        import yaml

        try:
            doc = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = None if mark is None else mark.line + 1
            raise CatalogError(source, "invalid YAML", line=line) from None
        return cls.from_mapping(doc, source=source)

    @classmethod
    def from_mapping(cls, doc: object, *, source: str = "<mapping>") -> Catalog:
        """Validate an already-parsed catalog document."""
        import pydantic

        model = _catalog_model()
        try:
            parsed = model.model_validate(doc if doc is not None else {})
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise CatalogError(source, first["msg"], field=where) from None
        return _build(parsed, source)

    def extend(self, other: Catalog) -> Catalog:
        """A catalog declaring everything both declare (the stricter tier wins per name)."""
        names = dict(self.names)
        for key, decl in other.names.items():
            names[key] = _stricter(names[key], decl) if key in names else decl
        return Catalog(
            names=MappingProxyType(names),
            patterns=self.patterns + other.patterns,
            platform_prefixes=self.platform_prefixes | other.platform_prefixes,
            global_names=self.global_names | other.global_names,
            source=f"{self.source}+{other.source}",
        )

    def with_names(
        self, *, tier1: Iterable[str] = (), tier2: Iterable[str] = (), detail: str = "host"
    ) -> Catalog:
        """This catalog plus some names declared in code (origin: ``detail``)."""
        extra: dict[str, Declaration] = {}
        for tier, group in ((Tier.TIER2, tier2), (Tier.TIER1, tier1)):
            for name in group:
                key = norm(name)
                extra[key] = Declaration(key, tier, Origin(OriginKind.CATALOG, detail))
        return self.extend(Catalog(names=MappingProxyType(extra), source=detail))

    @functools.cached_property
    def _pattern_regex(self) -> tuple[re.Pattern[str], tuple[CatalogPattern, ...]] | None:
        if not self.patterns:
            return None
        parts = [f"(?P<p{i}>{fnmatch.translate(p.pattern)})" for i, p in enumerate(self.patterns)]
        return re.compile("|".join(parts)), self.patterns

    def match_pattern(self, key: str) -> CatalogPattern | None:
        """The first pattern matching an upper-cased name, if any."""
        compiled = self._pattern_regex
        if compiled is None:
            return None
        regex, patterns = compiled
        m = regex.match(key)
        if m is None:
            return None
        return patterns[int(m.lastgroup[1:])] if m.lastgroup else None

    def declaration(self, name: str) -> Declaration | None:
        """How the catalog declares a name (explicitly or by pattern), or None."""
        key = norm(name)
        found = self.names.get(key)
        if found is not None:
            return found
        pattern = self.match_pattern(key)
        if pattern is None:
            return None
        return Declaration(key, pattern.tier, pattern.origin)


@functools.cache
def _load_default() -> Catalog:
    from importlib import resources

    data = (resources.files("envscope") / "data" / "catalog.yaml").read_bytes()
    return Catalog.from_yaml(data, source=DEFAULT_CATALOG_NAME)


@functools.cache
def _catalog_model() -> type[pydantic.BaseModel]:
    """The pydantic model of a catalog document (built on first use)."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field, field_validator

    env_name = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

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

    class CatalogDoc(_Strict):
        version: Literal[1] = 1
        tier1: list[str] = Field(default_factory=list)
        tier2: list[str] = Field(default_factory=list)
        providers: list[Provider] = Field(default_factory=list)
        optional_env: list[OptionalEnv] = Field(default_factory=list)
        gateway_overrides: list[str] = Field(default_factory=list)
        patterns: list[Pattern] = Field(default_factory=list)
        platform_prefixes: list[str] = Field(default_factory=list)
        global_names: list[str] = Field(default_factory=list)

        @field_validator("tier1", "tier2", "gateway_overrides", "global_names")
        @classmethod
        def _names_are_env_names(cls, value: list[str]) -> list[str]:
            for i, name in enumerate(value):
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    raise ValueError(f"item {i} is not a valid environment variable name")
            return value

    return CatalogDoc


def _build(doc: Any, source: str) -> Catalog:
    names: dict[str, Declaration] = {}

    def declare(name: str, tier: Tier, detail: str) -> None:
        key = norm(name)
        decl = Declaration(key, tier, Origin(OriginKind.CATALOG, detail, path=source))
        names[key] = _stricter(names[key], decl) if key in names else decl

    for provider in doc.providers:
        for key_name in provider.api_key_env:
            declare(key_name, Tier.TIER2, f"provider {provider.name} API key")
        if provider.base_url_env:
            declare(provider.base_url_env, Tier.TIER2, f"provider {provider.name} base URL")
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
    patterns = tuple(
        CatalogPattern(
            norm(p.pattern),
            Tier(p.tier),
            Origin(OriginKind.CATALOG_PATTERN, p.reason or p.pattern, path=source),
        )
        for p in doc.patterns
    )
    return Catalog(
        names=MappingProxyType(names),
        patterns=patterns,
        platform_prefixes=frozenset(norm(p) for p in doc.platform_prefixes),
        global_names=frozenset(norm(n) for n in doc.global_names),
        source=source,
    )
