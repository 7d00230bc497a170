"""``SecretPolicy.is_gate`` decides by looking a name's ``_``-ended heads up in prefix sets.

The indexed check must agree with the rule it replaced (the shortest matching
platform prefix decides, by the tokens after it) for every name and prefix set:
a table of shapes, then a Hypothesis property against that reference. And the
catalog's prefix set is shared by every policy, never copied.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Catalog
from envscope.policy._declarations import EMPTY_DECLARATIONS, HomeDeclarations
from envscope.policy._secret_policy import (
    _GATE_NOUNS,
    _GATE_TOKENS,
    Adapter,
    SecretPolicy,
    build_policy,
)

pytestmark = pytest.mark.property


def reference_is_gate(prefixes: frozenset[str], name: str) -> bool:
    """The rule as a loop of ``startswith`` over the sorted prefixes (the previous code)."""
    key = name.upper()
    for prefix in sorted(prefixes):
        if key.startswith(prefix):
            tokens = key[len(prefix) :].split("_")
            return any(t in _GATE_TOKENS or t in _GATE_NOUNS for t in tokens)
    return False


def policy_with(prefixes: frozenset[str]) -> SecretPolicy:
    """A policy over an empty catalog with exactly these platform prefixes."""
    return SecretPolicy(home_prefixes=prefixes)


PREFIXES = frozenset({"DISCORD_", "SLACK_", "SLACK_BOT_", "CHAT", "_", "A_B_"})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("DISCORD_ALLOWED_CHANNELS", True),
        ("discord_home_channel", True),
        ("DISCORD_BOT_TOKEN", False),
        ("DEMO_ALLOWED_SENDER", False),
        ("SLACK_BOT_ALLOWED_USERS", True),  # the shortest prefix (SLACK_) decides
        ("SLACK_BOT_TOKEN", False),
        ("CHATTER_ALLOWED_IDS", True),  # a prefix without ``_`` matches by startswith
        ("CHAT", False),
        ("_ALLOW", True),
        ("A_B_IDS", True),
        ("A_C_IDS", False),
        ("", False),
        ("SLACK", False),
    ],
)
def test_is_gate_table(name: str, expected: bool) -> None:
    """Each shape gets the verdict of the shortest matching prefix, any case."""
    assert reference_is_gate(PREFIXES, name) is expected
    assert policy_with(PREFIXES).is_gate(name) is expected


_TOKENS = st.sampled_from(
    [*sorted(_GATE_TOKENS | _GATE_NOUNS), "BOT", "TOKEN", "X", "", "HOME", "AB", "A", "B"]
)
_NAMES = st.lists(_TOKENS, min_size=0, max_size=5).map("_".join)
_PREFIX = st.one_of(
    st.lists(_TOKENS, min_size=1, max_size=3).map(lambda t: "_".join(t) + "_"),
    st.lists(_TOKENS, min_size=1, max_size=2).map("_".join),  # loose: no trailing ``_``
)


@given(prefixes=st.frozensets(_PREFIX, max_size=6), name=_NAMES)
def test_is_gate_matches_the_reference(prefixes: frozenset[str], name: str) -> None:
    """For any prefix set and name, the indexed check equals the startswith loop."""
    assert policy_with(prefixes).is_gate(name) is reference_is_gate(prefixes, name)


@given(name=_NAMES.map(lambda n: "DISCORD_" + n))
def test_is_gate_with_the_default_catalog_matches_the_reference(name: str) -> None:
    """Under the default catalog (shared prefixes) plus a home's own, the verdicts agree."""
    catalog = Catalog.default()
    policy = build_policy(catalog, EMPTY_DECLARATIONS, (Adapter("acme-chat", ()),))
    prefixes = catalog.platform_prefixes | {"ACME_CHAT_"}
    assert policy.platform_prefixes == prefixes
    assert policy.is_gate(name) is reference_is_gate(prefixes, name)


def test_policies_share_the_catalog_prefix_set() -> None:
    """A policy keeps only its home's own prefixes; the catalog's set is the very same object."""
    catalog = Catalog.default()
    decl = HomeDeclarations(plugin_prefixes=frozenset({"ACME_", "SLACK_"}))
    one, two = build_policy(catalog, decl), build_policy(catalog, EMPTY_DECLARATIONS)
    assert one.catalog.platform_prefixes is two.catalog.platform_prefixes
    assert one.home_prefixes == frozenset({"ACME_"})  # SLACK_ is the catalog's: not copied
    assert two.home_prefixes == frozenset()
    assert one.platform_prefixes == catalog.platform_prefixes | {"ACME_"}
