"""The default catalog's hygiene: categories, tiers, names, sources, patterns (issue 12)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from envscope import Catalog, CatalogError, Surface, Tier
from envscope.policy.catalog import CatalogEntry
from tests.conftest import HostFactory

CATALOG = Catalog.default()
ENTRIES = [(c.id, c.tier, e) for c in CATALOG.categories for e in c.entries]
NAMES = [(cid, tier, e) for cid, tier, e in ENTRIES if not e.is_pattern]
GLOBS = [(cid, tier, e) for cid, tier, e in ENTRIES if e.is_pattern]

# The category list and each category's tier. Changing it is a visible decision (the tier
# rule: Tier 2 is model-provider keys and base URLs, everything else is Tier 1).
CATEGORIES = [
    ("model-providers", Tier.TIER2),
    ("chat-platforms", Tier.TIER1),
    ("gateway-and-dashboard", Tier.TIER1),
    ("auxiliary-models", Tier.TIER1),
    ("agent-tools", Tier.TIER1),
    ("sandbox-providers", Tier.TIER1),
    ("code-hosts", Tier.TIER1),
    ("package-and-deploy", Tier.TIER1),
    ("ci-runners", Tier.TIER1),
    ("telemetry", Tier.TIER1),
    ("memory-and-observability", Tier.TIER1),
    ("training-and-eval", Tier.TIER1),
    ("secret-sources", Tier.TIER1),
]


def test_category_list_is_pinned() -> None:
    """The default catalog has exactly these categories, in this order, with these tiers."""
    assert [(c.id, c.tier) for c in CATALOG.categories] == CATEGORIES


def test_only_model_providers_are_tier2() -> None:
    """The tier rule: every Tier 2 declaration is a model-provider key or base URL."""
    tier2 = {k for k, d in CATALOG.names.items() if d.tier is Tier.TIER2}
    providers = {e.name for c in CATALOG.categories if c.id == "model-providers" for e in c.entries}
    assert tier2 == providers
    assert {p.tier for p in CATALOG.patterns} == {Tier.TIER1}


def test_every_declaration_comes_from_a_documented_entry() -> None:
    """Every name and pattern the default catalog declares is an entry of some category."""
    documented = {e.name.upper() for _, _, e in ENTRIES}
    assert set(CATALOG.names) == {e.name for _, _, e in NAMES}
    assert {p.pattern for p in CATALOG.patterns} <= documented
    ids = {c.id for c in CATALOG.categories}
    for decl in CATALOG.names.values():
        assert decl.origin.detail.split(":")[0] in ids, decl.name


def test_no_name_twice_and_none_in_two_tiers() -> None:
    """No entry is listed twice (in one category or across categories, so never in two tiers)."""
    seen: dict[str, str] = {}
    for cid, _, entry in ENTRIES:
        assert entry.name not in seen, f"{entry.name} in {seen.get(entry.name)} and {cid}"
        seen[entry.name] = cid


@pytest.mark.parametrize(("cid", "entry"), [(c, e) for c, _, e in NAMES], ids=lambda v: str(v))
def test_names_are_upper_case_valid_and_sourced(cid: str, entry: CatalogEntry) -> None:
    """Each name is upper-case and valid, has a description and a source (a URL or a project)."""
    assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", entry.name)
    assert entry.about.strip()
    assert entry.source.startswith(("https://", "envscope:")), entry.source
    assert not entry.examples


@pytest.mark.parametrize(("cid", "entry"), [(c, e) for c, _, e in GLOBS], ids=lambda v: str(v))
def test_every_pattern_compiles_and_matches_its_examples(cid: str, entry: CatalogEntry) -> None:
    """Each glob compiles, matches each listed example (at least one), and the catalog agrees."""
    assert re.fullmatch(r"[A-Z0-9_*]+", entry.name)
    assert entry.source.startswith(("https://", "envscope:"))
    regex = re.compile(fnmatch.translate(entry.name))
    assert entry.examples
    for example in entry.examples:
        assert regex.match(example), example
        decl = CATALOG.declaration(example)
        assert decl is not None
        assert decl.origin.detail.startswith(cid)


# Names the issue found passing, and one per category it asks for: (name, tier).
REQUIRED = [
    ("GATEWAY_RELAY_ID", Tier.TIER1), ("AWS_BEARER_TOKEN_BEDROCK", Tier.TIER2),
    ("HELICONE_API_KEY", Tier.TIER1), ("OPENAI_API_BASE", Tier.TIER2), ("HASS_TOKEN", Tier.TIER1),
    ("VERCEL_OIDC_TOKEN", Tier.TIER2), ("BWS_ACCESS_TOKEN", Tier.TIER1),
    ("AUXILIARY_VISION_API_KEY", Tier.TIER1), ("AUXILIARY_VISION_BASE_URL", Tier.TIER1),
    ("BROWSERBASE_API_KEY", Tier.TIER1), ("FIRECRAWL_API_KEY", Tier.TIER1),
    ("OPENAI_ORG_ID", Tier.TIER2), ("AZURE_OPENAI_API_KEY", Tier.TIER2),
    ("AI_GATEWAY_API_KEY", Tier.TIER2), ("DASHSCOPE_API_KEY", Tier.TIER2),
    ("ARK_API_KEY", Tier.TIER2), ("OLLAMA_BASE_URL", Tier.TIER2), ("NOUS_API_KEY", Tier.TIER2),
    ("FEISHU_APP_SECRET", Tier.TIER1), ("DINGTALK_CLIENT_SECRET", Tier.TIER1),
    ("WECOM_SECRET", Tier.TIER1), ("QQ_CLIENT_SECRET", Tier.TIER1),
    ("TWILIO_AUTH_TOKEN", Tier.TIER1), ("SMTP_PASSWORD", Tier.TIER1),
    ("E2B_API_KEY", Tier.TIER1), ("MODAL_TOKEN_SECRET", Tier.TIER1),
    ("DAYTONA_API_KEY", Tier.TIER1), ("VERCEL_TOKEN", Tier.TIER1),
    ("HONCHO_API_KEY", Tier.TIER1), ("WANDB_API_KEY", Tier.TIER1),
    ("LANGFUSE_SECRET_KEY", Tier.TIER1), ("LANGSMITH_API_KEY", Tier.TIER1),
    ("TINKER_API_KEY", Tier.TIER1), ("VOICE_TOOLS_OPENAI_KEY", Tier.TIER1),
    ("FAL_KEY", Tier.TIER1), ("SUDO_PASSWORD", Tier.TIER1),
    ("OP_SERVICE_ACCOUNT_TOKEN", Tier.TIER1), ("OP_CONNECT_TOKEN", Tier.TIER1),
    ("VAULT_TOKEN", Tier.TIER1), ("DOPPLER_TOKEN", Tier.TIER1), ("INFISICAL_TOKEN", Tier.TIER1),
    # issue 20: CI runners, telemetry, package publishing (the tier rule: Tier 1)
    ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", Tier.TIER1), ("ACTIONS_RUNTIME_TOKEN", Tier.TIER1),
    ("INPUT_GITHUB_TOKEN", Tier.TIER1), ("input_password", Tier.TIER1),
    ("CI_JOB_TOKEN", Tier.TIER1), ("CI_JOB_JWT_V2", Tier.TIER1),
    ("CI_REGISTRY_PASSWORD", Tier.TIER1),
    ("BUILDKITE_AGENT_ACCESS_TOKEN", Tier.TIER1), ("CIRCLE_OIDC_TOKEN", Tier.TIER1),
    ("JENKINS_API_TOKEN", Tier.TIER1), ("SYSTEM_ACCESSTOKEN", Tier.TIER1),
    ("OTEL_EXPORTER_OTLP_HEADERS", Tier.TIER1), ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", Tier.TIER1),
    ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", Tier.TIER1), ("SENTRY_AUTH_TOKEN", Tier.TIER1),
    ("DD_API_KEY", Tier.TIER1), ("HONEYCOMB_API_KEY", Tier.TIER1),
    ("NEW_RELIC_LICENSE_KEY", Tier.TIER1), ("NODE_AUTH_TOKEN", Tier.TIER1),
    ("NPM_TOKEN", Tier.TIER1), ("UV_PUBLISH_TOKEN", Tier.TIER1), ("TWINE_PASSWORD", Tier.TIER1),
    ("POETRY_PYPI_TOKEN_PYPI", Tier.TIER1), ("CARGO_REGISTRY_TOKEN", Tier.TIER1),
    ("GEM_HOST_API_KEY", Tier.TIER1), ("NUGET_API_KEY", Tier.TIER1),
    ("DOCKER_AUTH_CONFIG", Tier.TIER1),
]  # fmt: skip

# Action inputs that are not secrets (the INPUT_* decision: only secret-shaped input names).
NOT_DECLARED = ("INPUT_KEY", "INPUT_PATH", "INPUT_NODE_VERSION", "INPUT_RESTORE_KEYS",
                "INPUT_MAX_TOKENS", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME",
                "CI_JOB_ID", "BUILDKITE_BUILD_NUMBER", "ACTIONS_ID_TOKEN_REQUEST_URL")  # fmt: skip


@pytest.mark.parametrize("name", NOT_DECLARED)
def test_ordinary_ci_and_telemetry_names_pass(name: str) -> None:
    """A runner's and an exporter's ordinary settings are not declared (no false positives)."""
    assert CATALOG.declaration(name) is None


PROVIDERS = [("OPENAI_API_KEY", "openai"), ("anthropic_auth_token", "anthropic"),
             ("GEMINI_API_KEY", "google"), ("HF_TOKEN", "huggingface"),
             ("GROQ_API_KEY", "groq"), ("MY_APP_KEY", None),
             ("TELEGRAM_BOT_TOKEN", None)]  # fmt: skip


@pytest.mark.parametrize(("name", "provider"), PROVIDERS)
def test_provider_of_a_catalog_name(name: str, provider: str | None) -> None:
    """provider_of names the provider of a Tier 2 catalog name (any case), else None."""
    assert CATALOG.provider_of(name) == provider


def test_every_provider_format_has_catalog_names() -> None:
    """Each credential format's provider is the provider of at least one Tier 2 catalog name."""
    from envscope.policy.formats import format_table

    providers = set(CATALOG.providers.values())
    for fmt in format_table().formats:
        assert fmt.provider is None or fmt.provider in providers, fmt.name
    for name, provider in CATALOG.providers.items():
        decl = CATALOG.declaration(name)
        assert decl is not None
        assert decl.tier is Tier.TIER2, (name, provider)


def test_providers_registry_fills_provider_of() -> None:
    """A host file's providers: registry answers provider_of for its key and base-URL names."""
    cat = Catalog.from_yaml(
        "providers:\n  - {name: acme, api_key_env: [ACME_KEY], base_url_env: ACME_URL}\n"
    )
    assert (cat.provider_of("acme_key"), cat.provider_of("ACME_URL")) == ("acme", "acme")
    assert Catalog.default().extend(cat).provider_of("ACME_KEY") == "acme"


@pytest.mark.parametrize(("name", "tier"), REQUIRED)
def test_the_issue_names_are_declared_with_their_tier(name: str, tier: Tier) -> None:
    """Each name the issue lists is declared, with the tier the tier rule gives it."""
    decl = CATALOG.declaration(name)
    assert decl is not None
    assert decl.tier is tier


def test_a_name_two_patterns_match_gets_the_stricter_tier() -> None:
    """Patterns are tried Tier 1 first, whatever their order in the file."""
    cat = Catalog.from_yaml(
        "patterns:\n  - {pattern: 'X_*', tier: 2}\n  - {pattern: 'X_*_TOKEN', tier: 1}\n"
    )
    decl = cat.declaration("x_a_token")
    assert decl is not None
    assert decl.tier is Tier.TIER1
    merged = Catalog.from_yaml("patterns: [{pattern: 'Y_*', tier: 2}]").extend(
        Catalog.from_yaml("patterns: [{pattern: 'Y_*_KEY', tier: 1}]")
    )
    found = merged.declaration("Y_A_KEY")
    assert found is not None
    assert found.tier is Tier.TIER1


CATEGORY_DOC = "categories:\n  - {id: %s, title: T, tier: 1, about: A, entries: [%s]}\n"


@pytest.mark.parametrize(
    ("ident", "entry", "field"),
    [
        ("ok", "{name: 'A_*', about: a, source: s}", "categories[0].entries[0]"),
        ("ok", "{name: A_KEY, about: a}", "categories[0].entries[0].source"),
        ("ok", "{name: A_KEY, about: '', source: s}", "categories[0].entries[0].about"),
        ("ok", "{name: 'BAD NAME', about: a, source: s}", "categories[0].entries[0].name"),
        ("ok", "{name: 'A_*', about: a, source: s, examples: ['NO WAY']}",
         "categories[0].entries[0].examples"),
        ("Bad_Id", "{name: A_KEY, about: a, source: s}", "categories[0].id"),
        ("ok", "", "categories[0].entries"),
    ],
)  # fmt: skip
def test_category_schema_is_strict(tmp_path: Path, ident: str, entry: str, field: str) -> None:
    """A malformed category or entry is a CatalogError naming the file and the field."""
    path = tmp_path / "cat.yaml"
    path.write_text(CATEGORY_DOC % (ident, entry))
    with pytest.raises(CatalogError) as info:
        Catalog.from_file(path)
    assert info.value.field == field
    assert str(path) in str(info.value)


# The Done-when table: every category x every surface. A credentialed child gets
# model-provider keys and base URLs only; no other child gets any catalog name.
def _category_names(cid: str) -> list[str]:
    cat = next(c for c in CATALOG.categories if c.id == cid)
    return [n for e in cat.entries for n in (e.examples if e.is_pattern else (e.name,))]


@pytest.mark.parametrize("surface", list(Surface))
@pytest.mark.parametrize(("cid", "tier"), CATEGORIES)
def test_every_category_on_every_surface(
    make_host: HostFactory, cid: str, tier: Tier, surface: Surface
) -> None:
    """Only a credentialed child keeps a category, and only the model providers (Tier 2)."""
    names = _category_names(cid)
    base = {"PATH": "/bin", **{n: f"fake-{n}" for n in names}}
    env = make_host(dict(base)).build_subprocess_env(base, surface=surface)
    kept = [n for n in names if n in env]
    if tier is Tier.TIER2 and surface is Surface.CREDENTIALED:
        assert kept == names
    else:
        assert kept == []
    assert env["PATH"] == "/bin"
