"""``Catalog.extend`` and ``with_vectors`` carry every field (a new field is never reset)."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType
from typing import Any

import pytest

from envscope.policy._declarations import Declaration, Origin, OriginKind, Tier
from envscope.policy.catalog import (
    Catalog,
    CatalogCategory,
    CatalogEntry,
    CatalogPattern,
    VectorCategory,
    VectorRow,
)

ORIGIN = Origin(OriginKind.CATALOG, "test")


def _sample(tag: str) -> dict[str, Any]:
    """A non-default value for every init field of ``Catalog``, distinct per ``tag``."""
    name = f"{tag}_NAME"
    return {
        "names": MappingProxyType({name: Declaration(name, Tier.TIER2, ORIGIN)}),
        "patterns": (CatalogPattern(f"{tag}_*", Tier.TIER1, ORIGIN),),
        "platform_prefixes": frozenset({f"{tag}_"}),
        "global_names": frozenset({f"{tag}_GLOBAL"}),
        "source": f"{tag}.yaml",
        "injection_names": frozenset({f"{tag}_INJECT"}),
        "injection_prefixes": (f"{tag}_INJ_",),
        "categories": (
            CatalogCategory(tag, tag, Tier.TIER2, "about", (CatalogEntry(name, "a", "s"),)),
        ),
        "network_trust": frozenset({f"{tag}_PROXY"}),
        "redirecting_names": frozenset({f"{tag}_REDIRECT"}),
        "redirecting_prefixes": (f"{tag}_RED_",),
        "vector_categories": (
            VectorCategory(tag, tag, False, "about", (VectorRow(f"{tag}_V", "posix", ("s",)),)),
        ),
        "vector_sources": MappingProxyType({f"{tag}_src": "https://example.invalid"}),
        "providers": MappingProxyType({f"{tag}_KEY": tag.lower()}),
    }


FIELDS = [f.name for f in fields(Catalog) if f.init]


def _holds(merged: object, part: object) -> bool:
    """True when a merged field value contains a part's value (by the field's type)."""
    if isinstance(merged, str) and isinstance(part, str):
        return part in merged
    if isinstance(merged, frozenset) and isinstance(part, frozenset):
        return part <= merged
    if isinstance(merged, tuple) and isinstance(part, tuple):
        return all(p in merged for p in part)
    if isinstance(merged, MappingProxyType) and isinstance(part, MappingProxyType):
        return all(merged.get(k) == v for k, v in part.items())
    return False


def test_every_field_has_a_sample() -> None:
    """The sample table covers exactly the catalog's init fields (a new field needs one)."""
    assert set(_sample("A")) == set(FIELDS)


@pytest.mark.parametrize("name", FIELDS)
def test_extend_keeps_both_sides_of_every_field(name: str) -> None:
    """``a.extend(b)`` holds a's and b's value of each field; extending by empty keeps it."""
    a, b = Catalog(**{name: _sample("A")[name]}), Catalog(**{name: _sample("B")[name]})
    merged = getattr(a.extend(b), name)
    assert _holds(merged, getattr(a, name))
    assert _holds(merged, getattr(b, name))
    assert _holds(getattr(a.extend(Catalog()), name), getattr(a, name))
    assert _holds(getattr(Catalog().extend(a), name), getattr(a, name))


def test_extend_of_full_catalogs_is_each_fields_merge() -> None:
    """Two catalogs with every field set extend into one holding all of both."""
    a, b = Catalog(**_sample("A")), Catalog(**_sample("B"))
    merged = a.extend(b)
    assert [n for n in FIELDS if not _holds(getattr(merged, n), getattr(a, n))] == []
    assert [n for n in FIELDS if not _holds(getattr(merged, n), getattr(b, n))] == []


@pytest.mark.parametrize("name", FIELDS)
def test_with_vectors_keeps_every_field(name: str) -> None:
    """``with_vectors`` adds rows and never resets another field."""
    catalog = Catalog(**{name: _sample("A")[name]})
    rows = (VectorCategory("v", "v", True, "about", (VectorRow("OPT_IN", "posix", ("s",)),)),)
    extended = catalog.with_vectors(rows, {"s": "https://example.invalid"})
    assert _holds(getattr(extended, name), getattr(catalog, name))
    assert extended.is_redirecting("OPT_IN")
