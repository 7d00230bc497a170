"""A secret only the launch home declares, under a name with no credential token.

Under routing the stricter of the target's and the launch's policies answers a
name (``SecretRule.declaration``), so such a name is decided by its name: the
reason a trace records and the error a caller sees are the name's. Its value
would be withheld anyway (a value under a declared name is a host secret, so
it is its own alias): these tests pin *why* the child does not get it, which
a rule that read only the target's policy for this name would change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Action, EnvValueError, Host, OriginKind, Reason, Stage, Trace

NAME = "LCHAT_ROOM"  # no credential token (``_name_context.credential_tokens``): never by context
LAUNCH_VALUE = "room-of-the-launch-0001"


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(launch, profile, the launch's manifest declaring ``NAME`` a secret)."""
    launch, profile = tmp_path / "launch", tmp_path / "profile"
    plugin = launch / "plugins" / "platforms" / "lchat"
    plugin.mkdir(parents=True)
    profile.mkdir()
    manifest = plugin / "plugin.yaml"
    manifest.write_text(f"name: lchat\nrequires_env:\n  - {{name: {NAME}, secret: true}}\n")
    return launch, profile, manifest


def _host(launch: Path, **options: object) -> Host:
    host = Host(launch, environ={"PATH": "/usr/bin", NAME: LAUNCH_VALUE}, **options)  # type: ignore[arg-type]
    host.load_launch_env()
    return host


@pytest.mark.parametrize("value", [LAUNCH_VALUE, "another-room-0002", "zq"])
def test_in_extra_it_is_refused_by_its_name(homes: tuple[Path, Path, Path], value: str) -> None:
    """Whatever the value (the launch's, another, one too short to be a secret value)."""
    launch, profile, _ = homes
    host = _host(launch)
    with host.routed(profile), pytest.raises(EnvValueError) as info:
        host.build_subprocess_env({"PATH": "/x"}, extra={NAME: value})
    assert info.value.key == NAME
    assert "Tier 1" in str(info.value)
    assert value not in str(info.value)


@pytest.mark.parametrize("value", [LAUNCH_VALUE, "another-room-0002", "zq"])
def test_dropped_from_extra_the_trace_names_the_launch_manifest(
    homes: tuple[Path, Path, Path], value: str
) -> None:
    launch, profile, manifest = homes
    host = _host(launch, drop_refused_extra=True)
    trace = Trace()
    with host.routed(profile):
        child = host.build_subprocess_env({"PATH": "/x"}, extra={NAME: value}, trace=trace)
    assert NAME not in child
    last = trace.for_key(NAME)[-1]
    assert (last.action, last.stage, last.reason) == (Action.STRIPPED, Stage.SANITIZE, Reason.TIER1)
    assert last.origin is not None
    assert (last.origin.kind, last.origin.path) == (OriginKind.MANIFEST, str(manifest))


def test_in_the_parent_env_it_is_launch_residue_by_its_name(
    homes: tuple[Path, Path, Path],
) -> None:
    launch, profile, manifest = homes
    host = _host(launch)
    trace = Trace()
    with host.routed(profile):
        child = host.build_subprocess_env(trace=trace)
    assert NAME not in child
    (decision,) = trace.for_key(NAME)
    assert (decision.stage, decision.reason) == (Stage.RESIDUE, Reason.LAUNCH_CREDENTIAL)
    assert decision.origin is not None
    assert decision.origin.path == str(manifest)


def test_the_profiles_own_value_answers_to_its_own_policy(
    homes: tuple[Path, Path, Path],
) -> None:
    """The routed profile's own ``.env`` value is its own: the launch's declaration is not
    asked (no oracle on launch secrets), and the profile's policy declares nothing."""
    launch, profile, _ = homes
    (profile / ".env").write_text(f"{NAME}=the-profile-room\n")
    host = _host(launch)
    with host.routed(profile):
        assert host.build_subprocess_env()[NAME] == "the-profile-room"
