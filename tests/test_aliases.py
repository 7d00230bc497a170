"""Value aliases: a secret copied under another name does not survive (issue 6, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, Reason, Surface, Trace
from tests.conftest import HostFactory

SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    ("base", "kwargs", "expected"),
    [
        ({"OPENAI_API_KEY": SECRET, "FOO": SECRET}, {}, {}),
        ({"GH_TOKEN": SECRET, "COPY": SECRET, "OTHER": "x"}, {}, {"OTHER": "x"}),
        ({"OPENAI_API_KEY": SECRET, "FOO": SECRET}, {"surface": Surface.CREDENTIALED},
         {"OPENAI_API_KEY": SECRET, "FOO": SECRET}),
        ({"OPENAI_BASE_URL": "https://api.example.com/v1", "MIRROR": "https://api.example.com/v1"},
         {}, {"MIRROR": "https://api.example.com/v1"}),
        ({"OPENAI_API_KEY": "short", "FOO": "short"}, {}, {"FOO": "short"}),
        ({"OPENAI_API_KEY": SECRET}, {"extra": {"FROM_CALLER": SECRET}}, {}),
        ({"OPENAI_API_KEY": SECRET}, {"extra": {f"{FORCE_PREFIX}OPENAI_API_KEY": SECRET}},
         {"OPENAI_API_KEY": SECRET}),
    ],
)  # fmt: skip
def test_alias_table(
    make_host: HostFactory,
    base: dict[str, str],
    kwargs: dict[str, object],
    expected: dict[str, str],
) -> None:
    """A kept key equal to a stripped secret's value (8+ chars) is stripped; URLs are no secret."""
    env = make_host().build_subprocess_env(base, **kwargs)  # type: ignore[arg-type]
    assert env == expected


def test_alias_names_the_secret_never_the_value(make_host: HostFactory) -> None:
    """The trace says alias-of and names which secret, by key only."""
    trace = Trace()
    make_host().build_subprocess_env({"TELEGRAM_BOT_TOKEN": SECRET, "BOT": SECRET}, trace=trace)
    decision = trace.final()["BOT"]
    assert decision.reason is Reason.ALIAS_OF
    assert decision.note == "same value as TELEGRAM_BOT_TOKEN"
    assert SECRET not in repr(list(trace))


def test_dotenv_interpolated_alias_is_stripped_when_routed(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """FOO=${OPENAI_API_KEY} in the launch .env, exported again by the operator: gone for B."""
    (homes["A"] / ".env").write_text("A_MARKER=a\nFOO=${OPENAI_API_KEY}\n")
    host = make_host({"PATH": "/b", "OPENAI_API_KEY": SECRET, "OPERATOR_COPY": SECRET})
    host.load_launch_env()
    assert host._environ["FOO"] == SECRET
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert SECRET not in env.values()
    assert env["B_MARKER"] == "b"


def test_manifest_secret_without_suffix_counts(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A name a manifest marks secret (no suffix) is a secret for the alias rule."""
    plugin = homes["B"] / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("requires_env:\n  - {name: CHATX_SIGNING, secret: true}\n")
    host = make_host()
    with host.routed(homes["B"], scope={"CHATX_SIGNING": SECRET, "ALSO": SECRET}) as binding:
        assert host.build_subprocess_env({}) == {"ENVSCOPE_HOME": binding.home}


def test_opt_out(make_host: HostFactory) -> None:
    """strip_value_aliases=False keeps aliases (for the rare host where it over-strips)."""
    host = make_host(strip_value_aliases=False)
    assert host.build_subprocess_env({"OPENAI_API_KEY": SECRET, "FOO": SECRET}) == {"FOO": SECRET}
