"""One rule, three askers (issue 18): the factory, the guard, the CLI's masking and
``envscope.testing`` agree on random hosts, envs, surfaces and routing.

- the guard accepts every env the factory built, in the context it was built in;
- ``--show-values`` masks every key the factory stripped as a secret and none it kept;
- ``assert_no_secrets`` on the parent env flags exactly the keys the factory stripped
  as secrets (stage 1's residue and the MCP allowlist strip for other reasons: those
  keys are not compared).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Catalog, Host, PassthroughRefusedError, Reason, StaticSource, Surface, Trace
from envscope._guard import offences
from envscope.audit.trace import keep_value
from envscope.cli.main import Built, _masker
from envscope.testing import assert_no_secrets

pytestmark = pytest.mark.property

CATALOG = Catalog.default()
DECLARED = ["TELEGRAM_BOT_TOKEN", "GITHUB_TOKEN", "DISCORD_WEBHOOK_URL", "OPENAI_API_KEY",
            "OPENAI_BASE_URL", "QIANFAN_SK", "VAULT_TOKEN"]  # fmt: skip
UNDECLARED = ["MY_VAR", "COPY", "CARRIER", "NOTE", "LANG", "B_THING", "ACME_API_TOKEN", "DB_PASSWD"]
SECRETS = ["secret-one-0123456", "secret-two-abcdefg", "https://hooks.example/abc123", "short"]
SECRET_REASONS = frozenset(
    {Reason.TIER1, Reason.TIER2, Reason.ALIAS_OF, Reason.LAUNCH_CREDENTIAL, Reason.NAME_CONTEXT}
)

PAT = "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"  # a credential format no name declares
plain = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12)
values = st.one_of(
    st.sampled_from(SECRETS),
    st.builds(lambda s, w: w.format(s), st.sampled_from(SECRETS),
              st.sampled_from(["x:{}@h", "Bearer {}", "a,{},b", "'{}'"])),
    # a value built from several secrets of any grade (and plain text) beside each other
    st.builds(lambda parts, sep: sep.join(parts),
              st.lists(st.sampled_from([*SECRETS, PAT]) | plain, min_size=2, max_size=4),
              st.sampled_from([":", " ", ",", "@"])),
    plain,
)  # fmt: skip
envs = st.dictionaries(st.sampled_from(DECLARED + UNDECLARED), values, max_size=7)
FORCED = [f"_ENVSCOPE_FORCE_{name}" for name in DECLARED + UNDECLARED]
extras = st.dictionaries(st.sampled_from(DECLARED + UNDECLARED + FORCED), values, max_size=7)

_ROOT = Path(tempfile.mkdtemp(prefix="envscope-one-rule-")).resolve()
for _home in ("A", "B"):
    (_ROOT / _home).mkdir(exist_ok=True)
_LEAK = re.compile(r"([A-Za-z_]+) \(")


def _host(environ: dict[str, str], *, name_context: bool = False) -> Host:
    # random extras name declared names: dropped and traced, so every build completes
    host = Host(
        _ROOT / "A",
        environ=dict(environ),
        catalog=CATALOG,
        drop_refused_extra=True,
        name_context=name_context,
    )
    host.add_secret_source(StaticSource("vault", {}, credential_names=["VAULT_TOKEN"]))
    return host


def _flagged(env: dict[str, str], host: Host, inherit: bool) -> set[str]:
    """The keys ``assert_no_secrets`` names (none when it passes)."""
    try:
        assert_no_secrets(env, host=host, inherit_credentials=inherit)
    except AssertionError as failed:
        return set(_LEAK.findall(str(failed).partition(": ")[2]))
    return set()


@given(
    environ=envs,
    scope=st.none() | envs,
    surface=st.sampled_from([s for s in Surface if s is not Surface.MCP]),
    name_context=st.booleans(),
)
def test_the_factory_guard_masking_and_testing_agree(
    environ: dict[str, str], scope: dict[str, str] | None, surface: Surface, name_context: bool
) -> None:
    """Built envs pass the guard; masking and assert_no_secrets match the factory's strips."""
    host = _host(environ, name_context=name_context)
    inherit = surface.inherits_credentials
    routed = scope is not None
    context = host.routed(_ROOT / "B", scope=scope) if routed else host.routed(_ROOT / "A")
    with context:
        trace = Trace(fingerprint=keep_value)  # each decision carries its value (for this test)
        child = host.build_subprocess_env(surface=surface, trace=trace)
        assert offences(host, child, implicit=False) == [], "the guard refused a built env"
        rule = host.secret_rule(surface=surface)
        built = Built(None, host, str(_ROOT / "B"), trace, dict(environ), rule)  # type: ignore[arg-type]
        must_mask = _masker(built, {})
        final = trace.final()
        gone = {k for k in environ if child.get(k) != environ[k]}  # stripped or replaced
        as_secret = {
            k
            for k in gone
            if final[k.upper()].reason in SECRET_REASONS
            and final[k.upper()].fingerprint == environ[k]  # the parent's value was the secret
        }
        other = gone - as_secret  # residue, gates, the allowlist, the routed scope's own value
        for key in environ:
            masked = must_mask(key)
            if key in as_secret:
                assert masked, key
            elif key in child and child[key] == environ[key] and key not in (scope or {}):
                # kept from the parent: shown (a routed profile's own value is masked
                # wherever it is a host secret's too: the auditor's view is the host's)
                assert not masked, key
        flagged = _flagged(environ, host, inherit)
    assert flagged - other == as_secret, (flagged, as_secret)


@given(
    environ=envs,
    scope=st.none() | envs,
    extra=extras,
    granted=st.sets(st.sampled_from(DECLARED + UNDECLARED), max_size=3),
    surface=st.sampled_from(list(Surface)),
    name_context=st.booleans(),
)
def test_the_guard_accepts_every_built_env_with_extras_and_grants(
    environ: dict[str, str],
    scope: dict[str, str] | None,
    extra: dict[str, str],
    granted: set[str],
    surface: Surface,
    name_context: bool,
) -> None:
    """Extras, MCP blocks and grants on every surface: the guard passes whatever was built."""
    host = _host(environ, name_context=name_context)
    if surface is Surface.MCP:  # a block never carries the force prefix (an error of its own)
        extra = {k: v for k, v in extra.items() if not k.startswith("_ENVSCOPE_FORCE_")}
    grant = sorted(granted & set(extra))
    context = (
        host.routed(_ROOT / "B", scope=scope) if scope is not None else host.routed(_ROOT / "A")
    )
    with context:
        try:
            child = host.build_subprocess_env(surface=surface, extra=extra, grant=grant)
        except PassthroughRefusedError as refused:  # a grant of the vault's credential
            message = str(refused)
        else:
            assert offences(host, child, implicit=False) == []
            return
    assert "secret source" in message
