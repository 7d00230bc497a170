"""Per-home caches on the Host: a fresh ``routed()`` costs about one warm build.

Entering ``host.routed(home)`` for every spawn reuses the home's scope (its
``.env`` is not read again while its signature holds), the launch residue, the
residue verdicts and the build memo its earlier bindings filled, and its
policy. Every input change makes the next ``routed()`` see it (a table); a
racy ``.env`` is never trusted; secret sources are fetched on every
``routed()``; everything kept per home is bounded (LRU) while an evicted home
keeps its declared names. Counted, never timed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from envscope import Catalog, Host
from envscope import _launch as launch_module
from envscope.errors import ConfigurationError
from envscope.files import _dotenv
from envscope.host import MAX_HOMES
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.conftest import write_home

BASE = {"PATH": "/usr/bin", "HOME": "/home/op", "EDITOR": "vi"}


class CountingSource:
    """A secret source that counts its fetches; its values can change between calls."""

    name = "vault"

    def __init__(self) -> None:
        self.fetches = 0
        self.values: dict[str, str] = {"VAULT_DB_URL": "db-1"}
        self.fail = False

    def fetch(self, home: str) -> Mapping[str, str]:
        """The current values (or a failure when told to)."""
        self.fetches += 1
        if self.fail:
            return 42  # type: ignore[return-value]  # not a mapping: a ConfigurationError
        return dict(self.values)


class World:
    """A launch home, a work home, a managed file, a host over a settled clock."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.launch = write_home(tmp_path, "launch", {"LAUNCH_MARKER": "a"})
        self.work = write_home(tmp_path, "work", {"WORK_MARKER": "b", "WORK_PATH": "${PATH}"})
        self.managed = tmp_path / "managed.env"
        self.managed.write_text("MANAGED_FLAG=on\n")
        self.environ: dict[str, str] = dict(BASE)
        self.fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)  # every file is settled
        self.source = CountingSource()
        self.host = Host(
            self.launch,
            environ=self.environ,
            catalog=Catalog.default(),
            managed_env_file=self.managed,
            fs=self.fs,
        )
        self.host.add_secret_source(self.source)
        self.host.load_launch_env()
        self.reads: list[str] = []
        real = _dotenv.read_dotenv

        def counting(path: str, **kwargs: object) -> dict[str, str]:
            self.reads.append(os.path.basename(os.path.dirname(path)))
            return real(path, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(launch_module, "read_dotenv", counting)

    def spawn(self) -> tuple[dict[str, str], object]:
        """One cron-runner spawn: enter routed(work), build once; the child and the share."""
        with self.host.routed(self.work) as binding:
            return self.host.build_subprocess_env(), binding.share


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A fresh world per test."""
    return World(tmp_path, monkeypatch)


def test_a_fresh_binding_reuses_the_homes_scope_share_and_memo(world: World) -> None:
    """The second routed(): no .env read, the same scope objects, share and memo (a memo hit)."""
    first, share = world.spawn()
    world.reads.clear()
    with world.host.routed(world.work) as binding:
        shapes = len(binding.memo)
        child = world.host.build_subprocess_env()
        scope = binding.scope
    assert world.reads == []
    assert binding.share is share
    assert shapes == 1  # the first binding's build is remembered for the next
    assert child == first
    with world.host.routed(world.work) as again:
        assert again.scope is scope
    assert first["WORK_MARKER"] == "b"
    assert first["MANAGED_FLAG"] == "on"
    assert "LAUNCH_MARKER" not in first


def test_an_equal_scope_passed_again_reuses_the_share_and_memo(world: World) -> None:
    """routed(home, scope=...) with an equal mapping (a new object, or the same one) shares
    the first binding's scope objects, residue verdicts and memo; another scope does not."""
    scope = {"WORK_MARKER": "given", "TOKEN_OF_B": "b-value"}
    with world.host.routed(world.work, scope=scope) as first:
        child = world.host.build_subprocess_env()
    for again in (scope, dict(scope)):
        with world.host.routed(world.work, scope=again) as binding:
            assert binding.share is first.share
            assert binding.scope is first.scope
            assert world.host.build_subprocess_env() == child
    scope["WORK_MARKER"] = "changed"  # the caller's mapping changed: a new share
    with world.host.routed(world.work, scope=scope) as binding:
        assert binding.share is not first.share
        assert world.host.build_subprocess_env()["WORK_MARKER"] == "changed"
    with world.host.routed(world.work) as files:  # the home's own files: their own share
        assert files.share is not first.share
        assert world.host.build_subprocess_env()["WORK_MARKER"] == "b"


def _edit_home_env(w: World) -> None:
    (w.work / ".env").write_text("WORK_MARKER=changed\n")


def _edit_launch_env(w: World) -> None:
    (w.launch / ".env").write_text("LAUNCH_MARKER=a\nWORK_MARKER=launch-residue\n")


def _rotate_source(w: World) -> None:
    w.source.values = {"VAULT_DB_URL": "db-2"}


def _edit_managed(w: World) -> None:
    w.managed.write_text("MANAGED_FLAG=off\n")
    w.host._launch.read_managed()  # the host re-reads its managed file on load


def _change_path(w: World) -> None:
    w.environ["PATH"] = "/opt/bin"  # the .env interpolates ${PATH} from the host's globals


CHANGES: dict[str, tuple[Callable[[World], None], Callable[[dict[str, str]], bool]]] = {
    "home .env edited": (_edit_home_env, lambda env: env.get("WORK_MARKER") == "changed"),
    "launch .env edited": (
        _edit_launch_env,
        lambda env: env.get("WORK_MARKER") == "b",  # still its own value, never the residue
    ),
    "secret source rotated": (_rotate_source, lambda env: env.get("VAULT_DB_URL") == "db-2"),
    "managed file edited": (_edit_managed, lambda env: env.get("MANAGED_FLAG") == "off"),
    "interpolated global changed": (_change_path, lambda env: env.get("WORK_PATH") == "/opt/bin"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_every_input_change_reaches_the_next_binding(world: World, name: str) -> None:
    """Each input of the cached scope and residue, changed, shows in the next routed() child."""
    change, holds = CHANGES[name]
    before, share = world.spawn()
    assert not holds(before) or name == "launch .env edited"
    change(world)
    after, new_share = world.spawn()
    assert holds(after), sorted(after)
    if name != "launch .env edited":
        assert new_share is not share  # a new scope object: a new share (a fresh memo)
    else:
        assert world.host.launch_residue() >= {"WORK_MARKER"}


def test_secret_sources_are_fetched_on_every_routed(world: World) -> None:
    """A source's values are never cached: each routed() fetches; a failing fetch raises."""
    world.spawn()
    before = world.source.fetches
    for _ in range(3):
        world.spawn()
    assert world.source.fetches == before + 3
    world.source.fail = True
    with pytest.raises(ConfigurationError, match="vault"), world.host.routed(world.work):
        pass


def test_a_racy_dotenv_is_read_on_every_routed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .env changed within the racy window is never trusted: every routed() reads it again."""
    world = World(tmp_path, monkeypatch)
    world.fs.clock_offset_ns = 0  # the real clock: the files were just written
    for _ in range(3):
        world.spawn()
    assert world.reads.count("work") == 3
    world.fs.clock_offset_ns = HOUR_NS
    world.reads.clear()
    for _ in range(3):
        world.spawn()
    assert world.reads.count("work") == 1  # settled: read once, then trusted


def test_everything_kept_per_home_is_bounded_and_evicted_homes_keep_names(
    tmp_path: Path,
) -> None:
    """MAX_HOMES + 8 homes: policies, shares, scopes bounded; an evicted home keeps its names."""
    launch = write_home(tmp_path, "launch", {"LAUNCH_MARKER": "a"})
    homes = []
    for i in range(MAX_HOMES + 8):
        home = write_home(tmp_path, f"h{i}", {"MARK": str(i)})
        plugin = home / "plugins" / "platforms" / f"p{i}"
        plugin.mkdir(parents=True)
        (plugin / "plugin.yaml").write_text(f"requires_env: [{{name: P{i}_DSN, secret: true}}]\n")
        homes.append(home)
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = Host(
        launch, environ=dict(BASE), catalog=Catalog.default(), fs=fs, on_unreadable_platform="deny"
    )
    for home in homes:
        with host.routed(home):
            host.build_subprocess_env()
    assert len(host._homes) <= MAX_HOMES
    assert len(host._shares) <= MAX_HOMES
    assert len(host._launch._scopes) <= MAX_HOMES
    assert len(host._launch._dotenvs) <= MAX_HOMES
    # home 0 was evicted long ago; a broken edit now must still deny what it declared (P0_DSN
    # has no secret suffix: only the retained name keeps it out)
    (homes[0] / "plugins" / "platforms" / "p0" / "plugin.yaml").write_text("requires_env: {")
    with host.routed(homes[0]):
        env = host.build_subprocess_env({**BASE, "P0_DSN": "s", "P1_DSN": "t"})
    assert "P0_DSN" not in env
    assert env["P1_DSN"] == "t"  # another home's declaration does not reach home 0


@pytest.mark.parametrize("value", [3, "bad\ud800"], ids=["a number", "a lone surrogate"])
def test_a_bad_process_env_value_fails_the_next_routed_however_warm(
    world: World, value: object
) -> None:
    """A value no child env can carry, put into the process env after warm spawns, still fails."""
    world.spawn()
    world.spawn()
    world.environ["LATER"] = value  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="environ"), world.host.routed(world.work):
        pass
