"""POSIX and Windows semantics of names equal ignoring case.

One property over random parents, scopes, extras, passthrough names and
surfaces, built twice, ``Host(windows=False)`` and ``Host(windows=True)``:

- the Windows child never holds two keys equal ignoring case;
- folding the POSIX child the way Windows folds (the upper-case spelling,
  else the first seen) gives exactly the Windows child: the only difference
  is the extra spellings POSIX keeps. A name whose ``extra`` twins differ in
  value is one variable on Windows, holding one of the values, and a rule that
  decides by value (routed, the launch's own value of a credential never comes
  back through ``extra``) may keep another spelling on POSIX: for such a name,
  the Windows value (if any) is one POSIX kept;
- every extra POSIX spelling is undeclared or kept by its tier for that
  surface, and a stripped name is gone in every spelling on both;
- unrouted and without extras, the POSIX child is the parent minus declared
  names, every twin as spelled.

Values are shorter than the alias rule's minimum, so names decide (and, routed,
whether a value is the launch's own value of that name).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from envscope import FORCE_PREFIX as FORCE
from envscope import Catalog, Host, PassthroughRefusedError, Surface, Tier

pytestmark = pytest.mark.property

CATALOG = Catalog.default()
POOL = (
    *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "EDITOR", "FOO", "PATH"),
    *("OPENAI_API_KEY", "OPENAI_BASE_URL", "TELEGRAM_BOT_TOKEN", "GH_TOKEN", "ENVSCOPE_HOME"),
    *("_ENVSCOPE_FORCE_OPENAI_BASE_URL", "_ENVSCOPE_FORCE_MY_VAR", "MY_VAR"),
)
SURFACES = (Surface.TERMINAL, Surface.SCRIPT, Surface.WORKER, Surface.CREDENTIALED)


def recase(name: str, mask: int) -> str:
    """``name`` with the letters picked by ``mask`` lower-cased."""
    return "".join(c.lower() if (mask >> (i % 24)) & 1 else c for i, c in enumerate(name))


def fold(env: dict[str, str]) -> dict[str, str]:
    """One spelling per name, as Windows keeps it: the upper-case one if present, else the first."""
    chosen: dict[str, tuple[str, str]] = {}
    for key, value in env.items():
        up = key.upper()
        if up not in chosen or (key == up and chosen[up][0] != up):
            chosen[up] = (key, value)
    return dict(chosen.values())


masks = st.one_of(st.just(0), st.just(-1), st.integers(0, 2**24))
names = st.builds(recase, st.sampled_from(POOL), masks)
values = st.text(st.characters(codec="ascii", exclude_characters="\x00"), max_size=7)
envs = st.dictionaries(names, values, max_size=8)

_ROOT = Path(tempfile.mkdtemp(prefix="envscope-twins-")).resolve()
for _home in ("A", "B"):
    (_ROOT / _home).mkdir(exist_ok=True)


def build(
    windows: bool,
    base: dict[str, str],
    scope: dict[str, str] | None,
    extra: dict[str, str],
    passthrough: list[str],
    surface: Surface,
) -> dict[str, str]:
    """One child env, routed to B with ``scope`` when one is given."""
    # random extras name declared names: dropped and traced (what the fold compares)
    host = Host(
        _ROOT / "A", environ=dict(base), catalog=CATALOG, windows=windows, drop_refused_extra=True
    )
    kwargs = {"surface": surface, "extra": extra, "passthrough": passthrough}
    if scope is None:
        return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    with host.routed(_ROOT / "B", scope=scope):
        return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]


@given(
    base=envs,
    scope=st.none() | envs,
    extra=envs,
    passthrough=st.lists(names, max_size=2),
    surface=st.sampled_from(SURFACES),
)
@example(  # found by make fuzz: Windows keeps the extra's upper spelling, the launch's value
    base={"OPENAI_API_KEY": ""},
    scope={},
    extra={"OPENAI_API_KEY": "", "openai_api_key": "0"},
    passthrough=[],
    surface=Surface.CREDENTIALED,
)
def test_posix_folds_to_windows(
    base: dict[str, str],
    scope: dict[str, str] | None,
    extra: dict[str, str],
    passthrough: list[str],
    surface: Surface,
) -> None:
    """The Windows child is the POSIX child folded; POSIX only adds undeclared twins."""
    refused = [n for n in passthrough if CATALOG.lookup(n.upper()) or n.upper().startswith(FORCE)]
    if refused:  # a declared or forced name can never pass: refused loudly either way
        for windows_host in (False, True):
            with pytest.raises(PassthroughRefusedError):
                build(windows_host, base, scope, extra, passthrough, surface)
        return
    posix = build(False, base, scope, extra, passthrough, surface)
    windows = build(True, base, scope, extra, passthrough, surface)
    assert len({k.upper() for k in windows}) == len(windows)
    # An extra whose twins differ in value is one variable on Windows (one of the values);
    # POSIX keeps each spelling, and a rule that decides by value may keep another one.
    ambiguous = {
        k.upper().removeprefix(FORCE)
        for k in extra
        for other in extra
        if k != other and k.upper() == other.upper() and extra[k] != extra[other]
    }

    def plain(env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if k.upper() not in ambiguous}

    assert fold(plain(posix)) == plain(windows)
    for key, value in windows.items():
        if key.upper() in ambiguous:  # Windows' one value is a value POSIX kept for the name
            assert value in {v for k, v in posix.items() if k.upper() == key.upper()}, key
    inherits = surface.inherits_credentials
    for key in posix:
        tier = CATALOG.lookup(key.upper())
        assert (
            tier is None
            or (tier.tier is Tier.TIER2 and inherits)
            or key.upper().endswith("OPENAI_BASE_URL")
        ), key  # a forced hand-over of a Tier 2 name is the one declared arrival
        assert not key.upper().startswith("_ENVSCOPE_FORCE_"), key


@given(base=envs, surface=st.sampled_from(SURFACES))
def test_posix_unrouted_child_is_base_minus_declared(
    base: dict[str, str], surface: Surface
) -> None:
    """On POSIX, every undeclared spelling of the parent arrives as spelled and valued."""
    posix = build(False, base, None, {}, [], surface)
    expected = {
        k: v
        for k, v in base.items()
        if not k.upper().startswith("_ENVSCOPE_FORCE_")
        and (
            (decl := CATALOG.lookup(k.upper())) is None
            or (decl.tier is Tier.TIER2 and surface.inherits_credentials)
        )
    }
    if surface is Surface.WORKER:  # a worker is told its home
        expected = {k: v for k, v in expected.items() if k.upper() != "ENVSCOPE_HOME"}
        expected["ENVSCOPE_HOME"] = str(_ROOT / "A")
    assert posix == expected
