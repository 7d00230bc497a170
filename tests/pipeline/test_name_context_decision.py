"""Name context in the one decision: an undeclared credential name with a credential's value.

A table over ``decide`` (layers, a credentialed child, ``known_safe``, the
switch), a host-level check (stripped from a terminal child and traced as
``name-context`` with the name's tokens, never the value; kept by a grant,
``known_safe`` and a credentialed child), and a property: with the switch on,
the child is the child with it off minus exactly the entries the rule matches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Catalog, Host, Surface, Trace
from envscope.pipeline.decision import Exemption, decide
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy._layers import Layer
from envscope.policy._name_context import name_context
from envscope.policy._reasons import Reason

RANDOM = "q7Vt2Lm9Xc4Rp8Kd1Wz6Hy3Nb5Gf0Js"
HOME = Path(__file__).parent
W, K = True, False

# (layer, key, value, inherit) -> (withheld, reason, exemption); None: nothing to say
ROWS: list[tuple[Layer, str, str, bool, tuple[bool, Reason, Exemption | None] | None]] = [
    (Layer.BASE, "ACME_API_TOKEN", RANDOM, False, (W, Reason.NAME_CONTEXT, None)),
    (Layer.BASE, "acme_api_token", RANDOM, False, (W, Reason.NAME_CONTEXT, None)),
    (Layer.SCOPE, "ACME_API_TOKEN", RANDOM, False, (W, Reason.NAME_CONTEXT, None)),
    (Layer.EXTRA, "ACME_API_TOKEN", RANDOM, False, (W, Reason.NAME_CONTEXT, None)),
    (Layer.BASE, "DB_PASSWORD", "hunter22!", False, (W, Reason.NAME_CONTEXT, None)),
    (
        Layer.BASE,
        "ACME_API_TOKEN",
        RANDOM,
        True,
        (K, Reason.TIER2_INHERITED, Exemption.TIER2_INHERITED),
    ),
    (Layer.BASE, "SAFE_TOKEN", RANDOM, False, (K, Reason.KNOWN_SAFE, Exemption.KNOWN_SAFE)),
    (Layer.GRANT, "ACME_API_TOKEN", RANDOM, False, None),  # named: the value is decided alone
    (Layer.MCP_LITERAL, "ACME_API_TOKEN", RANDOM, False, None),
    (Layer.FORCED, "ACME_API_TOKEN", RANDOM, False, None),
    (Layer.SPAWN, "ACME_API_TOKEN", RANDOM, False, None),
    (Layer.BASE, "ACME_API_TOKEN", "/run/secrets/acme", False, None),
    (Layer.BASE, "CACHE_KEY", RANDOM, False, None),
    (Layer.BASE, "ACME_PUBLIC_KEY", RANDOM, False, None),
]


def _rule(inherit: bool, *, on: bool = True) -> SecretRule:
    host = Host(
        HOME,
        environ={"PATH": "/b"},
        catalog=Catalog.default(),
        known_safe=["SAFE_TOKEN"],
        name_context=on,
    )
    return host.secret_rule(inherit_credentials=inherit)


@pytest.mark.parametrize(("layer", "key", "value", "inherit", "expected"), ROWS)
def test_the_verdict_of_each_entry(
    layer: Layer,
    key: str,
    value: str,
    inherit: bool,
    expected: tuple[bool, Reason, Exemption | None] | None,
) -> None:
    verdict = decide(_rule(inherit), key, value, layer)
    got = None if verdict is None else (verdict.withheld, verdict.reason, verdict.exemption)
    assert got == expected
    off = decide(_rule(inherit, on=False), key, value, layer)
    assert off is None or off.reason is not Reason.NAME_CONTEXT  # the switch turns it off


def _host(tmp_path: Path, **kwargs: object) -> Host:
    return Host(tmp_path, environ={"PATH": "/b"}, catalog=Catalog.default(), **kwargs)  # type: ignore[arg-type]


def test_a_terminal_child_loses_it_and_the_trace_names_the_tokens(tmp_path: Path) -> None:
    base = {"PATH": "/b", "ACME_API_TOKEN": RANDOM, "ACME_REGION": "eu-west-1"}
    trace = Trace()
    child = _host(tmp_path, name_context=True).build_subprocess_env(base, trace=trace)
    assert "ACME_API_TOKEN" not in child
    assert child["ACME_REGION"] == "eu-west-1"
    removed = trace.removed()["ACME_API_TOKEN"]
    assert removed.reason is Reason.NAME_CONTEXT
    assert removed.note == "name-context: TOKEN"
    assert RANDOM not in repr(list(trace)) + trace.summary()


@pytest.mark.parametrize(
    "keeps",
    [
        {"name_context": False},
        {"name_context": True, "known_safe": ["ACME_API_TOKEN"]},
    ],
    ids=["switched off", "known_safe"],
)
def test_what_keeps_it(tmp_path: Path, keeps: dict[str, object]) -> None:
    child = _host(tmp_path, **keeps).build_subprocess_env({"ACME_API_TOKEN": RANDOM})
    assert child["ACME_API_TOKEN"] == RANDOM


def test_a_grant_and_a_credentialed_child_keep_it(tmp_path: Path) -> None:
    host = _host(tmp_path, name_context=True)
    base = {"ACME_API_TOKEN": RANDOM}
    granted = host.build_subprocess_env({}, extra=base, grant=["ACME_API_TOKEN"])
    assert granted["ACME_API_TOKEN"] == RANDOM
    assert "ACME_API_TOKEN" not in host.build_subprocess_env({}, extra=base)  # not granted
    credentialed = host.build_subprocess_env(base, surface=Surface.CREDENTIALED)
    assert credentialed["ACME_API_TOKEN"] == RANDOM


NAMES = ["ACME_API_TOKEN", "DB_PASSWORD", "CACHE_KEY", "GH_PAT", "REGION", "TOKEN_FILE", "AUTH"]
VALUES = [RANDOM, "hunter22!", "/run/x/token", "eu-west-1", "true", "9f86d081884c7d659a2feaa0c5"]


@given(st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VALUES), max_size=7))
def test_on_is_off_minus_exactly_the_rules_matches_and_their_copies(base: dict[str, str]) -> None:
    """The switch strips the rule's matches and every copy of their values, nothing else."""
    on = _rule_host(True).build_subprocess_env(base)
    off = _rule_host(False).build_subprocess_env(base)
    secrets = {v for k, v in base.items() if name_context(k, v) is not None}
    expected = {
        k: v
        for k, v in off.items()
        if name_context(k, v) is None and not any(s in v for s in secrets)
    }
    assert on == expected


def test_a_copy_under_a_plain_name_goes_with_it(tmp_path: Path) -> None:
    """One rule: the matched value is a secret value of the build, so a copy is stripped too."""
    trace = Trace()
    base = {"ACME_API_TOKEN": RANDOM, "COPY": RANDOM, "WRAPPED": f"Bearer:{RANDOM}"}
    child = _host(tmp_path, name_context=True).build_subprocess_env(base, trace=trace)
    assert child == {}
    assert trace.removed()["COPY"].reason is Reason.ALIAS_OF
    assert "ACME_API_TOKEN" in (trace.removed()["COPY"].note or "")
    kept = _host(tmp_path, name_context=True, known_safe=["ACME_API_TOKEN"])
    assert kept.build_subprocess_env(base) == base  # known_safe: no secret value either


_HOSTS: dict[bool, Host] = {}


def _rule_host(on: bool) -> Host:
    if on not in _HOSTS:
        _HOSTS[on] = Host(HOME, environ={"PATH": "/b"}, catalog=Catalog.default(), name_context=on)
    return _HOSTS[on]


@pytest.mark.parametrize(
    ("line", "stripped"),
    [("", True), ("name_context: true\n", True), ("name_context: false\n", False)],
)
def test_the_config_file_switch(tmp_path: Path, line: str, stripped: bool) -> None:
    """``name_context`` in envscope.yaml reaches the host (default: on)."""
    from envscope.cli.config import load_config

    (tmp_path / "launch").mkdir()
    config = tmp_path / "envscope.yaml"
    config.write_text(f"launch_home: ./launch\n{line}")
    host = load_config(str(config)).build_host(environ={"PATH": "/b", "ACME_API_TOKEN": RANDOM})
    assert ("ACME_API_TOKEN" not in host.build_subprocess_env()) is stripped
