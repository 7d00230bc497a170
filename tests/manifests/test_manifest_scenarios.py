"""End to end through ``Host``: per-home manifests and the fail-closed cache."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from envscope import Host, ManifestError, PassthroughRefusedError, Surface, Tier
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.conftest import HostFactory

CHATX = """\
name: chatx
kind: platform
requires_env:
  - name: CHATX_SIGNING_SECRET
    secret: true
  - CHATX_WORKSPACE
"""
BASE = {"CHATX_SIGNING_SECRET": "s", "CHATX_WEBHOOK_KEY": "w", "CHATX_WORKSPACE": "ws"}


def platform_plugin(home: Path, name: str, text: str, *, flat: bool = False) -> Path:
    """Write ``<home>/plugins/platforms/<name>/plugin.yaml`` (or the flat location)."""
    where = home / "plugins" / name if flat else home / "plugins" / "platforms" / name
    where.mkdir(parents=True, exist_ok=True)
    path = where / "plugin.yaml"
    path.write_text(text)
    return path


def fs_old() -> InstrumentedFileSystem:
    """A seam whose clock is an hour ahead, so every manifest is settled (not racy)."""
    return InstrumentedFileSystem(clock_offset_ns=HOUR_NS)


def build_b(host: Host, home: Path, **kw: object) -> dict[str, str]:
    """Build a child routed to ``home`` from BASE with an empty scope."""
    with host.routed(home, scope={}):
        return host.build_subprocess_env(BASE, strip_launch_profile=False, **kw)  # type: ignore[arg-type]


def test_manifest_secret_is_per_home(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """B's platform manifest strips its secret from B's children only; passthrough refused."""
    platform_plugin(homes["B"], "chatx", CHATX)
    host = make_host()
    for surface in (Surface.TERMINAL, Surface.CREDENTIALED):
        assert "CHATX_SIGNING_SECRET" not in build_b(host, homes["B"], surface=surface)
    with pytest.raises(PassthroughRefusedError, match="CHATX_SIGNING_SECRET"):
        build_b(host, homes["B"], surface=Surface.MCP, passthrough=["CHATX_SIGNING_SECRET"])
    assert host.build_subprocess_env(BASE)["CHATX_SIGNING_SECRET"] == "s"
    assert host.policy(homes["B"]).tier_of("chatx_signing_secret") is Tier.TIER1
    origin = host.policy(homes["B"]).reasons["CHATX_SIGNING_SECRET"]
    assert origin.path is not None
    assert origin.path.endswith("chatx/plugin.yaml")
    assert origin.line == 4


@pytest.mark.parametrize("restore_mtime", [False, True])
def test_in_place_edit_is_seen(
    make_host: HostFactory, homes: dict[str, Path], restore_mtime: bool
) -> None:
    """An in-place edit adding a _KEY name is seen on the next build, mtime restored or not."""
    path = platform_plugin(homes["B"], "chatx", CHATX)
    host = make_host(fs=fs_old())
    assert "CHATX_WEBHOOK_KEY" in build_b(host, homes["B"])
    before = os.stat(path)
    with open(path, "a") as fh:  # in place: same inode
        fh.write("  - CHATX_WEBHOOK_KEY\n")
    if restore_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_ino == before.st_ino
    assert "CHATX_WEBHOOK_KEY" not in build_b(host, homes["B"])


def test_deleting_manifest_releases_names(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Deleting the manifest releases its names on the next build."""
    path = platform_plugin(homes["B"], "chatx", CHATX)
    host = make_host(fs=fs_old())
    assert "CHATX_SIGNING_SECRET" not in build_b(host, homes["B"])
    path.unlink()
    assert build_b(host, homes["B"])["CHATX_SIGNING_SECRET"] == "s"
    assert host.policy(homes["B"]).complete


def test_unsearchable_plugin_dir_after_healthy_scan_never_flaps(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """chmod 000 on the plugin dir keeps the names stripped; restoring the mode too."""
    platform_plugin(homes["B"], "chatx", CHATX)
    fs = fs_old()
    host = make_host(fs=fs, on_unreadable_platform="deny")
    assert "CHATX_SIGNING_SECRET" not in build_b(host, homes["B"])
    fs.deny_dir(homes["B"] / "plugins" / "platforms" / "chatx")
    for _ in range(2):
        assert "CHATX_SIGNING_SECRET" not in build_b(host, homes["B"])
        assert host.policy(homes["B"]).complete is False
    fs.heal()
    assert "CHATX_SIGNING_SECRET" not in build_b(host, homes["B"])
    assert host.policy(homes["B"]).complete is True


def test_unreadable_manifest_on_first_scan_denies_prefix(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An unreadable manifest on a first scan denies secret-suffixed names under its prefix."""
    path = platform_plugin(homes["B"], "chatx", CHATX)
    fs = fs_old()
    fs.deny_file(path)
    host = make_host(fs=fs, on_unreadable_platform="deny")
    env = build_b(host, homes["B"])
    assert "CHATX_SIGNING_SECRET" not in env
    assert "CHATX_WEBHOOK_KEY" not in env
    assert env["CHATX_WORKSPACE"] == "ws"
    policy = host.policy(homes["B"])
    assert policy.complete is False
    assert any(p.path == str(path) for p in policy.problems)


def test_partial_scan_rechecked_once_failing_entry_changes(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A partial scan is re-checked on the next build once the failing entry changes."""
    path = platform_plugin(homes["B"], "chatx", "name: chatx\nrequires_env: CHATX_X\n")
    fs = fs_old()
    host = make_host(fs=fs, on_unreadable_platform="deny")
    assert host.policy(homes["B"]).complete is False
    fs.reset_counts()
    assert host.policy(homes["B"]).complete is False
    assert fs.calls["open"] == 0  # an unchanged failure is not re-read on every spawn
    path.write_text(CHATX + "  - CHATX_WEBHOOK_KEY\n")
    policy = host.policy(homes["B"])
    assert policy.complete is True
    assert policy.tier_of("CHATX_WEBHOOK_KEY") is Tier.TIER1


def test_malformed_manifest_reported_without_dropping_others(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A malformed broken/plugin.yaml is reported and the other manifests still count."""
    platform_plugin(homes["B"], "chatx", CHATX)
    bad = platform_plugin(
        homes["B"], "broken", "name: broken\nkind: platform\nrequires_env: X\n", flat=True
    )
    host = make_host()
    policy = host.policy(homes["B"])
    assert policy.tier_of("CHATX_SIGNING_SECRET") is Tier.TIER1
    assert policy.complete is False
    assert [p.path for p in policy.problems] == [str(bad)]
    assert policy.problems[0].field == "requires_env"
    assert policy.tier_of("BROKEN_API_KEY") is Tier.TIER1


def test_unreadable_platform_manifest_raises_naming_file(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An unreadable platform manifest raises naming the file; a flat memory one does not."""
    path = platform_plugin(homes["B"], "chatx", CHATX)
    flat = platform_plugin(homes["B"], "notes", "name: notes\nkind: memory\n", flat=True)
    fs = fs_old()
    fs.deny_file(flat)
    host = make_host(fs=fs)
    assert host.policy(homes["B"]).complete is False  # the flat one: recorded, not raised
    fs.deny_file(path)
    os.chmod(path, 0o000)  # as root this only changes ctime; the seam supplies the EACCES
    for _ in range(2):  # every build raises while the failure lasts
        with pytest.raises(ManifestError) as info:
            build_b(host, homes["B"])
        assert info.value.path == str(path)


def test_unreadable_bundled_manifest_raises(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """An unreadable bundled manifest fails the policy of every home."""
    bundled = homes["root"] / "bundled"
    path = platform_plugin(bundled, "tg", "name: tg\nrequires_env: [TG_SECRET]\n")
    path = bundled / "plugins" / "platforms" / "tg" / "plugin.yaml"
    shutil.move(str(path.parent), str(bundled / "tg"))
    fs = fs_old()
    host = make_host(fs=fs, bundled_plugins=bundled)
    assert host.policy().tier_of("TG_SECRET") is Tier.TIER1
    fs.deny_file(bundled / "tg" / "plugin.yaml")
    os.chmod(bundled / "tg" / "plugin.yaml", 0o000)
    with pytest.raises(ManifestError, match=r"tg/plugin\.yaml"):
        host.build_subprocess_env({})


def test_dunder_skipped_dot_dir_scanned(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """__cache__/plugin.yaml declares nothing; .hidden/plugin.yaml is scanned."""
    platform_plugin(homes["B"], "__cache__", "name: c\nrequires_env: [CACHE_SECRET]\n")
    platform_plugin(homes["B"], ".hidden", "name: h\nrequires_env: [HIDDEN_SECRET]\n")
    policy = make_host().policy(homes["B"])
    assert policy.tier_of("CACHE_SECRET") is None
    assert policy.tier_of("HIDDEN_SECRET") is Tier.TIER1


def test_manifest_never_reclassifies_catalog_names(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """secret: false does not demote OPENAI_API_KEY; a manifest does not promote Tier 2."""
    platform_plugin(
        homes["B"],
        "compat",
        "name: compat\nrequires_env:\n  - {name: OPENAI_API_KEY, secret: false}\n"
        "  - {name: ANTHROPIC_API_KEY, secret: true}\n",
    )
    host = make_host()
    policy = host.policy(homes["B"])
    assert policy.tier_of("OPENAI_API_KEY") is Tier.TIER2
    assert policy.tier_of("ANTHROPIC_API_KEY") is Tier.TIER2
    base = {"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"}
    with host.routed(homes["B"], scope=base) as binding:
        told = {"ENVSCOPE_HOME": binding.home}
        assert host.build_subprocess_env({}, surface=Surface.CREDENTIALED) == {**base, **told}
        assert host.build_subprocess_env({}) == told


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\nrequires_env: CHATX_TOKEN\n", "requires_env"),
        (
            "name: x\nrequires_env:\n  - {name: CHATX_TOKEN, secret: 'yes'}\n",
            "requires_env[0].secret",
        ),
    ],
)
def test_invalid_manifest_names_file_and_field(
    make_host: HostFactory, homes: dict[str, Path], text: str, field: str
) -> None:
    """A string requires_env or a non-bool secret is an error naming the file and the field."""
    path = platform_plugin(homes["B"], "chatx", text)
    with pytest.raises(ManifestError) as info:
        make_host().policy(homes["B"])
    assert info.value.path == str(path)
    assert info.value.field == field
    denied = make_host(on_unreadable_platform="deny").policy(homes["B"])
    assert denied.tier_of("CHATX_TOKEN") is Tier.TIER1
    assert denied.problems[0].field == field


def test_symlink_loop_is_no_manifest_dangling_is_reported(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A symlink loop in place of a manifest is no manifest; a dangling link is reported."""
    loop_dir = homes["B"] / "plugins" / "platforms" / "loop"
    loop_dir.mkdir(parents=True)
    os.symlink(loop_dir / "plugin.yaml", loop_dir / "plugin.yaml")
    host = make_host()
    assert host.policy(homes["B"]).complete is True
    dangling_dir = homes["B"] / "plugins" / "platforms" / "dangle"
    dangling_dir.mkdir()
    os.symlink(dangling_dir / "missing.yaml", dangling_dir / "plugin.yaml")
    with pytest.raises(ManifestError, match="dangle"):
        host.policy(homes["B"])
    policy = make_host(on_unreadable_platform="deny").policy(homes["B"])
    assert policy.complete is False
    assert policy.tier_of("DANGLE_BOT_TOKEN") is Tier.TIER1


def test_warm_build_syscall_budget(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """A warm build does one scandir per root and one stat per manifest, and opens nothing."""
    for name in ("chatx", "chaty", "chatz"):
        platform_plugin(homes["B"], name, CHATX.replace("chatx", name))
    platform_plugin(homes["B"], "memo", "name: memo\nkind: memory\n", flat=True)
    fs = fs_old()
    host = make_host(fs=fs)
    with host.routed(homes["B"], scope={}):  # entering checks the launch home once
        host.build_subprocess_env(BASE)
        fs.reset_counts()
        host.build_subprocess_env(BASE)  # a warm build: stage 1 included
    roots = 2  # plugins/platforms and plugins (no bundled root configured)
    candidates = 4
    assert fs.calls["open"] == 0
    assert fs.calls["scandir"] == roots
    assert fs.calls["stat"] == candidates
    assert fs.opened == []


def test_errno_injection_on_root_fails_closed(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """An unlistable platforms root keeps every name the home already had."""
    platform_plugin(homes["B"], "chatx", CHATX)
    fs = fs_old()
    host = make_host(fs=fs, on_unreadable_platform="deny")
    assert host.policy(homes["B"]).tier_of("CHATX_SIGNING_SECRET") is Tier.TIER1
    root = homes["B"] / "plugins" / "platforms"
    fs.inject(root, errno.EACCES, ops=("scandir",))
    os.chmod(root, 0o000)
    policy = host.policy(homes["B"])
    os.chmod(root, 0o755)
    assert policy.complete is False
    assert policy.tier_of("CHATX_SIGNING_SECRET") is Tier.TIER1


BAD_CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "manifests" / "bad"
BAD_FILES = sorted(p.name for p in BAD_CORPUS.iterdir() if p.name != "README.md")


def generated_bad(kind: str) -> bytes:
    """Bad manifests too big to commit: over 256 KiB, and nested 1000 deep."""
    if kind == "huge":
        return b"name: huge\nrequires_env:\n" + b"  - HUGE_NAME_PADDING_XXXXXXXXXXXXXXXXXX\n" * 8000
    return b"name: deep\nextra: " + b"[" * 1000 + b"]" * 1000 + b"\n"


@pytest.mark.parametrize("name", [*BAD_FILES, "generated:huge", "generated:deep"])
def test_every_bad_manifest_leaves_the_home_failing_closed(
    make_host: HostFactory, homes: dict[str, Path], name: str
) -> None:
    """Each malformed manifest: a typed error naming the file, and a home policy failing closed."""
    data = (
        generated_bad(name.split(":")[1])
        if name.startswith("generated:")
        else (BAD_CORPUS / name).read_bytes()
    )
    path = platform_plugin(homes["B"], "chatx", CHATX)
    host = make_host(fs=fs_old(), on_unreadable_platform="deny")
    assert host.policy(homes["B"]).tier_of("CHATX_SIGNING_SECRET") is Tier.TIER1
    path.write_bytes(data)
    policy = host.policy(homes["B"])
    assert policy.complete is False
    assert [p.path for p in policy.problems] == [str(path)]
    assert policy.tier_of("CHATX_SIGNING_SECRET") is Tier.TIER1  # kept from the healthy scan
    assert policy.tier_of("CHATX_BOT_TOKEN") is Tier.TIER1  # denied by prefix
    fresh = make_host(fs=fs_old(), on_unreadable_platform="deny").policy(homes["B"])
    assert fresh.tier_of("CHATX_ANY_SECRET") is Tier.TIER1  # first scan: prefix denied
    with pytest.raises(ManifestError) as info:
        make_host(fs=fs_old()).policy(homes["B"])
    assert info.value.path == str(path)
