"""``decision.decide``: one verdict per entry, a table over layers, names and values.

Each row is one entry of one layer for one child (credentials inherited or not)
and the verdict the one decision function gives it: withheld or kept, the reason
the trace records, and the exemption that kept it. ``decide_all`` (stage 4's one
pass) must agree with ``decide`` entry by entry, and the consumers ask it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from envscope import Catalog, Host, PassthroughRefusedError, StaticSource
from envscope.pipeline.decision import Exemption, decide, decide_all, describe
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy._layers import Layer
from envscope.policy._reasons import Reason

BOT = "fake-telegram-bot-0123456789"  # TELEGRAM_BOT_TOKEN: Tier 1
OAI = "sk-fake-launch-openai-0123456789"  # OPENAI_API_KEY: Tier 2
VAULT = "fake-vault-token-0123456789"  # VAULT_TOKEN: a secret source's credential
PAT = "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"  # a credential format, declared by no name
OPENAI_FORMAT = (
    "sk-proj-EXAMPLEfakeEXAMPLEfake0123456789EXAMPLEfake0123456789EXAMPT3BlbkFJ"
    "EXAMPLEfakeEXAMPLEfake0123456789EXAMPLEfake0123456789EXAMP"
)
PARENT = {"PATH": "/b", "TELEGRAM_BOT_TOKEN": BOT, "OPENAI_API_KEY": OAI, "VAULT_TOKEN": VAULT}

W, K = True, False  # withheld, kept
# (layer, key, value, inherit) -> (withheld, reason, exemption); None: nothing to say
ROWS: list[tuple[str, Layer, str, str, bool, tuple[bool, Reason, Exemption | None] | None]] = [
    ("tier1-name", Layer.BASE, "TELEGRAM_BOT_TOKEN", BOT, False, (W, Reason.TIER1, None)),
    ("tier1-any-case", Layer.BASE, "telegram_bot_token", "xyz", True, (W, Reason.TIER1, None)),
    ("tier2-name", Layer.BASE, "OPENAI_API_KEY", OAI, False, (W, Reason.TIER2, None)),
    ("tier2-inherited", Layer.BASE, "OPENAI_API_KEY", OAI, True,
     (K, Reason.TIER2_INHERITED, Exemption.TIER2_INHERITED)),
    ("copy", Layer.BASE, "COPY", BOT, True, (W, Reason.ALIAS_OF, None)),
    ("copy-padded", Layer.BASE, "COPY", f" {BOT}\r\n", True, (W, Reason.ALIAS_OF, None)),
    ("inside", Layer.EXTRA, "COPY", f"Bearer {BOT}", True, (W, Reason.ALIAS_OF, None)),
    ("tier2-copy", Layer.EXTRA, "COPY", OAI, False, (W, Reason.ALIAS_OF, None)),
    ("tier2-copy-inherited", Layer.EXTRA, "COPY", OAI, True, None),
    ("plain", Layer.BASE, "PLAIN", "an-ordinary-value", False, None),
    ("short", Layer.BASE, "COPY", BOT[:7], False, None),
    ("format", Layer.BASE, "MY_PAT", PAT, True, (W, Reason.VALUE_SHAPE, None)),
    ("known-safe", Layer.BASE, "SAFE_PAT", PAT, False,
     (K, Reason.KNOWN_SAFE, Exemption.KNOWN_SAFE)),
    ("provider-key", Layer.BASE, "OPENAI_API_KEY", OPENAI_FORMAT, True,
     (K, Reason.PROVIDER_KEY, Exemption.PROVIDER_KEY)),
    ("provider-key-and-rider", Layer.BASE, "OPENAI_API_KEY", f"{OPENAI_FORMAT} {PAT}", True,
     (W, Reason.VALUE_SHAPE, None)),
    ("provider-key-elsewhere", Layer.BASE, "NOTE", OPENAI_FORMAT, True,
     (W, Reason.VALUE_SHAPE, None)),
    ("grant-tier1", Layer.GRANT, "TELEGRAM_BOT_TOKEN", BOT, False,
     (K, Reason.GRANTED, Exemption.GRANT)),
    ("grant-format", Layer.GRANT, "MY_PAT", PAT, False, (K, Reason.GRANTED, Exemption.GRANT)),
    ("literal-format", Layer.MCP_LITERAL, "TOKEN", PAT, False,
     (K, Reason.OPERATOR_LITERAL, Exemption.OPERATOR_LITERAL)),
    ("reference-format", Layer.MCP_REFERENCE, "TOKEN", PAT, False,
     (W, Reason.VALUE_SHAPE, None)),
    ("block-tier1-name", Layer.MCP_LITERAL, "GITHUB_TOKEN", "operator-own-value", False,
     (K, Reason.SERVER_GRANT, Exemption.SERVER_BLOCK)),
    # a Tier 1 block name holding a typed token: the block's grant, the literal in the note
    ("block-tier1-name-typed-token", Layer.MCP_LITERAL, "GITHUB_TOKEN", PAT, False,
     (K, Reason.SERVER_GRANT, Exemption.SERVER_BLOCK)),
    ("block-host-secret", Layer.MCP_LITERAL, "API", BOT, False, (W, Reason.ALIAS_OF, None)),
    ("reference-host-secret", Layer.MCP_REFERENCE, "API", BOT, False,
     (W, Reason.ALIAS_OF, None)),
    ("forced-tier2", Layer.FORCED, "OPENAI_BASE_URL", "https://proxy.invalid/v1", False,
     (K, Reason.FORCED, Exemption.FORCED)),
    ("forced-tier2-copy", Layer.FORCED, "OPENAI_API_KEY", OAI, False,
     (K, Reason.FORCED, Exemption.FORCED)),
    ("forced-tier1-value", Layer.FORCED, "COPY", BOT, False, (W, Reason.ALIAS_OF, None)),
    ("home-var", Layer.HOME_VAR, "ENVSCOPE_HOME", BOT, False, None),
    ("spawn-name", Layer.SPAWN, "TELEGRAM_BOT_TOKEN", "short", False, None),
    ("spawn-value", Layer.SPAWN, "COPY", BOT, True, (W, Reason.ALIAS_OF, None)),
    ("source-credential", Layer.BASE, "COPY", VAULT, True, (W, Reason.ALIAS_OF, None)),
    ("scope-layer", Layer.SCOPE, "COPY", BOT, False, (W, Reason.ALIAS_OF, None)),
    ("argv-copy", Layer.ARGV, "srv.args[0]", f"--token={BOT}", True, (W, Reason.ALIAS_OF, None)),
    ("argv-format", Layer.ARGV, "srv.args[0]", PAT, True, (W, Reason.VALUE_SHAPE, None)),
    ("argv-known-safe-name", Layer.ARGV, "SAFE_PAT", PAT, True, (W, Reason.VALUE_SHAPE, None)),
    ("argv-tier1-name", Layer.ARGV, "TELEGRAM_BOT_TOKEN", "short", False, None),
]  # fmt: skip
IDS = [row[0] for row in ROWS]


def _rule(inherit: bool, *, aliases: bool = True) -> SecretRule:
    host = Host(
        Path(__file__).parent,
        environ=dict(PARENT),
        catalog=Catalog.default(),
        known_safe=["SAFE_PAT"],
        strip_value_aliases=aliases,
    )
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    return host.secret_rule(inherit_credentials=inherit)


@pytest.mark.parametrize(("name", "layer", "key", "value", "inherit", "expected"), ROWS, ids=IDS)
def test_the_verdict_of_each_entry(
    name: str,
    layer: Layer,
    key: str,
    value: str,
    inherit: bool,
    expected: tuple[bool, Reason, Exemption | None] | None,
) -> None:
    """Each entry gets its verdict: withheld or kept, the reason, the named exemption."""
    del name
    verdict = decide(_rule(inherit), key, value, layer)
    got = None if verdict is None else (verdict.withheld, verdict.reason, verdict.exemption)
    assert got == expected
    if verdict is not None:
        assert value.strip() not in repr(verdict) + (verdict.note or "")


@pytest.mark.parametrize("inherit", [False, True])
def test_the_one_pass_agrees_with_each_entry(inherit: bool) -> None:
    """``decide_all`` (stage 4's batched search) equals ``decide`` entry by entry."""
    rule = _rule(inherit)
    entries = [(key, value, layer) for _, layer, key, value, _, _ in ROWS]
    assert decide_all(rule, entries) == [decide(rule, *entry) for entry in entries]


@pytest.mark.parametrize("layer", [Layer.GRANT])
def test_a_grant_of_a_source_credential_is_an_error(layer: Layer) -> None:
    """A granted value holding a secret source's credential: PassthroughRefusedError, no value."""
    with pytest.raises(PassthroughRefusedError, match="never grantable") as refused:
        decide(_rule(False), "COPY", f"x {VAULT}", layer)
    assert VAULT not in str(refused.value)


def test_nothing_covers_a_secret_on_a_command_line() -> None:
    """``ARGV``: a host that keeps copies still has a copy in an argument withheld."""
    verdict = decide(_rule(False, aliases=False), "srv.args[0]", BOT, Layer.ARGV)
    assert verdict is not None
    assert verdict.withheld


def test_a_host_that_keeps_copies_still_withholds_names() -> None:
    """strip_value_aliases=False: a copy is kept, named VALUES_KEPT; a Tier 1 name still goes."""
    rule = _rule(False, aliases=False)
    copy = decide(rule, "COPY", BOT, Layer.BASE)
    assert copy is not None
    assert (copy.withheld, copy.exemption, copy.secret) == (False, Exemption.VALUES_KEPT, True)
    name = decide(rule, "TELEGRAM_BOT_TOKEN", BOT, Layer.BASE)
    assert name is not None
    assert name.withheld


@pytest.mark.parametrize(
    ("key", "value", "inherit", "said"),
    [
        ("TELEGRAM_BOT_TOKEN", BOT, False, "TELEGRAM_BOT_TOKEN (Tier 1)"),
        ("OPENAI_API_KEY", OAI, False,
         "OPENAI_API_KEY (Tier 2, child does not inherit credentials)"),
        ("COPY", BOT, False, "COPY (the value of TELEGRAM_BOT_TOKEN)"),
        ("COPY", f"Bearer {BOT}", False, "COPY (holds the value of TELEGRAM_BOT_TOKEN)"),
        ("MY_PAT", PAT, False, "MY_PAT (a credential by its name and value: PAT)"),
        ("NOTES", PAT, False, "NOTES (holds a github-classic-pat credential)"),
    ],
)  # fmt: skip
def test_one_wording_of_a_withheld_entry(key: str, value: str, inherit: bool, said: str) -> None:
    """``describe`` words every withheld entry one way (the guard and testing print it)."""
    rule = _rule(inherit)
    verdict = decide(rule, key, value, Layer.BASE)
    assert verdict is not None
    assert describe(rule, key, verdict) == said


PACKAGE = Path(__file__).resolve().parents[2] / "envscope"
# The rule's own value search is asked by the decision function alone.
ASKS_THE_RULE = {"pipeline/decision.py", "pipeline/secret_rule.py"}
CONSUMERS = {
    "_guard.py", "testing.py", "cli/main.py", "pipeline/_sanitize.py", "mcp.py", "redact.py"
}  # fmt: skip


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }


def test_only_the_decision_function_decides_an_entry() -> None:
    """No module outside the decision function asks the rule whether a value or name is withheld."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        asked = _calls(path) & {"secret_in", "withholds", "find_in", "shape"}
        if asked and relative not in ASKS_THE_RULE:
            offenders.append(f"{relative}: {sorted(asked)}")
    assert offenders == []


@pytest.mark.parametrize("module", sorted(CONSUMERS))
def test_each_consumer_asks_the_decision_function(module: str) -> None:
    """Stage 4, the guard, envscope.testing, the CLI's masking, the MCP argv check and a host's
    redactor call it (``held_as_secret`` is its auditor's view, ``RuleVerdicts.deciding`` and
    ``withheld`` its remembered form, all in the decision module)."""
    asked = {"decide", "decide_all", "held_as_secret", "deciding", "withheld"}
    assert _calls(PACKAGE / module) & asked


# Routed to B, whose own scope holds a copy of the launch bot token and the launch
# OpenAI key: whether an entry is B's own is its layer's word, never its value's.
ROUTED_ROWS: list[tuple[str, Layer, str, str, tuple[bool, Reason] | None]] = [
    ("scope-copy", Layer.SCOPE, "COPY", BOT, None),  # B's own: B's secrets only
    ("base-copy", Layer.BASE, "COPY", BOT, (W, Reason.ALIAS_OF)),  # the host's: a launch secret
    ("extra-copy", Layer.EXTRA, "COPY", BOT, (W, Reason.ALIAS_OF)),
    ("passthrough-copy", Layer.PASSTHROUGH, "COPY", BOT, (W, Reason.ALIAS_OF)),
    ("spawn-copy", Layer.SPAWN, "COPY", BOT, None),  # no layer: the binding's record
    ("spawn-other-key", Layer.SPAWN, "OTHER", BOT, (W, Reason.ALIAS_OF)),
    ("scope-key", Layer.SCOPE, "OPENAI_API_KEY", OAI, (K, Reason.TIER2_INHERITED)),
    ("base-key", Layer.BASE, "OPENAI_API_KEY", OAI, (W, Reason.TIER2)),  # a launch credential
    ("managed-key", Layer.MANAGED, "OPENAI_API_KEY", OAI, (W, Reason.TIER2)),
    # a literal of B's own MCP config is B's; the operator's (or the host code's) is not
    ("mcp-own-copy", Layer.MCP_OWN, "COPY", BOT, None),
    ("mcp-literal-copy", Layer.MCP_LITERAL, "COPY", BOT, (W, Reason.ALIAS_OF)),
    ("mcp-own-format", Layer.MCP_OWN, "TOKEN", PAT, (K, Reason.OPERATOR_LITERAL)),
    ("mcp-own-tier1-name", Layer.MCP_OWN, "TELEGRAM_BOT_TOKEN", BOT, (K, Reason.SERVER_GRANT)),
]
ROUTED_IDS = [row[0] for row in ROUTED_ROWS]


@pytest.mark.parametrize(("name", "layer", "key", "value", "expected"), ROUTED_ROWS, ids=ROUTED_IDS)
def test_own_is_the_layers_word_not_the_values(
    tmp_path: Path,
    name: str,
    layer: Layer,
    key: str,
    value: str,
    expected: tuple[bool, Reason] | None,
) -> None:
    """A routed entry equal to one of B's own pairs is B's own only when its layer says so."""
    del name
    host = Host(Path(__file__).parent, environ=dict(PARENT), catalog=Catalog.default())
    scope = {"COPY": BOT, "OPENAI_API_KEY": OAI}
    with host.routed(tmp_path, scope=scope):
        rule = host.secret_rule(inherit_credentials=True)
        verdict = decide(rule, key, value, layer)
        assert decide_all(rule, [(key, value, layer)]) == [verdict]
    got = None if verdict is None else (verdict.withheld, verdict.reason)
    assert got == expected
    # the caller that knows better says so: an own entry of any layer answers to B alone
    mine = decide(rule, key, value, layer, own=True)
    assert mine is None or not mine.withheld or mine.reason is Reason.TIER1


@pytest.mark.parametrize(
    ("key", "value", "held"),
    [
        ("OPENAI_API_KEY", "sk-proj-" + "Q1w2E3r4" * 5, True),  # a declared name
        ("BUILD_LABEL", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", True),  # a credential format
        ("PAGER", "less -R", False),
        ("BUILD_ID", "88808f71-16f2-4171-a874-cf4690045443", False),
    ],
)
def test_held_as_secret_is_the_auditor_s_view_of_decide(key: str, value: str, held: bool) -> None:
    """One function for explain --show-values and a host's redactor: decide as the host's own."""
    from envscope.pipeline.decision import held_as_secret

    host = Host(Path(__file__).parent, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    rule = host.secret_rule()
    verdict = decide(rule, key, value, Layer.BASE)
    assert held_as_secret(rule, key, value) is held
    assert held is (verdict is not None and verdict.secret)
