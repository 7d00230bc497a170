"""The catalog: default data, host files, validation errors, extension."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Catalog, CatalogError, OriginKind, Tier

PROVIDERS = [
    "OPENAI", "ANTHROPIC", "OPENROUTER", "GOOGLE", "MISTRAL", "GROQ", "TOGETHER",
    "DEEPSEEK", "XAI", "COHERE", "PERPLEXITY", "FIREWORKS",
]  # fmt: skip


@pytest.mark.parametrize("provider", PROVIDERS)
def test_default_catalog_declares_provider_keys(provider: str) -> None:
    """Every required provider has a Tier 2 API key and base URL."""
    cat = Catalog.default()
    assert cat.names[f"{provider}_API_KEY"].tier is Tier.TIER2
    assert cat.names[f"{provider}_BASE_URL"].tier is Tier.TIER2


def test_default_catalog_is_shared_and_has_origins() -> None:
    """Catalog.default() loads once; every declaration says where it came from."""
    cat = Catalog.default()
    assert Catalog.default() is cat
    assert cat.names["GH_TOKEN"].origin.kind is OriginKind.CATALOG
    assert cat.names["GH_TOKEN"].origin.path == "envscope/policy/data/catalog.yaml"
    assert "PATH" in cat.global_names
    assert "DISCORD_" in cat.platform_prefixes


LEGACY = """
providers:
  - {name: acme, api_key_env: [ACME_API_KEY], base_url_env: ACME_BASE_URL, auth: oauth}
optional_env:
  - {name: HOMEASSISTANT_TOKEN, category: messaging, password: true}
  - {name: FIRECRAWL_API_KEY, category: tool, password: true}
  - {name: TELEGRAM_HOME_CHANNEL, category: messaging, password: false}
gateway_overrides: [GATEWAY_PORT, GATEWAY_WEBHOOK_SECRET]
tier2: [ACME_ORG_ID]
"""


def test_plain_sections_of_a_host_file() -> None:
    """A host file's provider table, optional-env table and gateway overrides declare names."""
    cat = Catalog.from_yaml(LEGACY, source="host.yaml")
    assert cat.names["ACME_API_KEY"].tier is Tier.TIER2
    assert cat.names["ACME_BASE_URL"].origin.detail == "provider acme base URL"
    assert cat.names["ACME_ORG_ID"].tier is Tier.TIER2
    assert cat.names["HOMEASSISTANT_TOKEN"].tier is Tier.TIER1
    assert cat.names["FIRECRAWL_API_KEY"].tier is Tier.TIER2
    assert cat.declaration("TELEGRAM_HOME_CHANNEL") is None
    assert cat.declaration("GATEWAY_WEBHOOK_SECRET") is not None
    assert cat.declaration("GATEWAY_PORT") is None
    assert cat.categories == ()


def test_from_file_and_extend(tmp_path: Path) -> None:
    """A host catalog file loads, and extending keeps the stricter tier per name."""
    path = tmp_path / "cat.yaml"
    path.write_text(
        "tier1: [OPENAI_API_KEY, MY_HOST_SECRET]\npatterns:\n  - {pattern: 'X_*', tier: 2}\n"
    )
    own = Catalog.from_file(path)
    assert own.names["MY_HOST_SECRET"].origin.path == str(path)
    merged = Catalog.default().extend(own)
    assert merged.names["OPENAI_API_KEY"].tier is Tier.TIER1
    assert merged.declaration("x_anything") is not None
    assert merged.declaration("TELEGRAM_BOT_TOKEN") is not None


def test_with_names_declares_in_code() -> None:
    """with_names adds tiers without a file; the origin names the caller's label."""
    cat = Catalog.empty().with_names(tier1=["a_secret"], tier2=["b_key"], detail="my-host")
    assert cat.names["A_SECRET"].tier is Tier.TIER1
    assert cat.names["B_KEY"].origin.detail == "my-host"
    assert Catalog.empty().declaration("ANYTHING") is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("tier1: OPENAI_API_KEY\n", "tier1"),
        ("tier1: [1]\n", "tier1[0]"),
        ("tier1: ['BAD NAME']\n", "tier1"),
        ("patterns: [{pattern: 'A_*', tier: 3}]\n", "patterns[0].tier"),
        ("providers: [{name: x, api_key_env: X_KEY}]\n", "providers[0].api_key_env"),
        ("unknown_section: []\n", "unknown_section"),
        ("version: 2\n", "version"),
    ],
)
def test_invalid_catalog_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    """An invalid catalog is a CatalogError naming the file and the field."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CatalogError) as info:
        Catalog.from_file(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert str(path) in str(info.value)


def test_catalog_yaml_error_names_line(tmp_path: Path) -> None:
    """Unparsable YAML is a CatalogError with the line."""
    path = tmp_path / "bad.yaml"
    path.write_text("tier1:\n  - A\n - B\n")
    with pytest.raises(CatalogError) as info:
        Catalog.from_file(path)
    assert info.value.line == 3


def test_missing_catalog_file(tmp_path: Path) -> None:
    """A missing catalog file is a CatalogError naming it."""
    with pytest.raises(CatalogError, match="cannot read"):
        Catalog.from_file(tmp_path / "none.yaml")
