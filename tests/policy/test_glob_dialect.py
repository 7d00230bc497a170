"""One glob dialect: catalog patterns and surface include/exclude globs match alike."""

from __future__ import annotations

import pytest

from envscope.policy._declarations import Origin, OriginKind, Tier
from envscope.policy.catalog import Catalog, CatalogPattern
from envscope.policy.surfaces import glob_regex

TABLE = [
    # (glob, name, matches)
    ("OPENAI_*", "OPENAI_API_KEY", True),
    ("OPENAI_*", "OPENAI_", True),  # ``*`` may be empty
    ("OPENAI_*", "MY_OPENAI_KEY", False),  # the whole name, from its start
    ("*_TOKEN", "GH_TOKEN", True),
    ("*_TOKEN", "GH_TOKEN_FILE", False),  # to its end
    ("*_token", "gh_Token", True),  # any case
    ("A?C", "ABC", True),
    ("A?C", "AC", False),  # ``?`` is exactly one character
    ("[AB]_KEY", "A_KEY", False),  # ``[`` is literal, never a class
    ("[AB]_KEY", "[AB]_KEY", True),
    ("A.B", "AXB", False),  # regex characters are literal
    ("A+", "AA", False),
    ("A*", "A\nB", True),  # ``*`` runs across any character
    ("*", "", True),
]


@pytest.mark.parametrize(("glob", "name", "matches"), TABLE)
def test_catalog_pattern_and_surface_glob_agree(glob: str, name: str, matches: bool) -> None:
    """A glob matches a name as a surface glob exactly when it does as a catalog pattern."""
    regex = glob_regex([glob])
    assert regex is not None
    as_surface = regex.match(name.upper()) is not None
    origin = Origin(OriginKind.CATALOG_PATTERN, "test")
    catalog = Catalog(patterns=(CatalogPattern(glob.upper(), Tier.TIER2, origin),))
    as_catalog = catalog.lookup(name.upper()) is not None
    assert (as_surface, as_catalog) == (matches, matches)


def test_the_first_matching_catalog_pattern_names_the_tier() -> None:
    """With several patterns the alternation reports which one matched (Tier 1 first)."""
    origin = Origin(OriginKind.CATALOG_PATTERN, "test")
    two = (CatalogPattern("X_*", Tier.TIER2, origin), CatalogPattern("*_KEY", Tier.TIER1, origin))
    catalog = Catalog(patterns=two).extend(Catalog())
    assert [catalog.lookup(n).tier for n in ("X_KEY", "X_URL", "Y_KEY")] == [  # type: ignore[union-attr]
        Tier.TIER1,
        Tier.TIER2,
        Tier.TIER1,
    ]
