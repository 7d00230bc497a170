"""The per-home manifest cache (``envscope.manifests._cache``): stamps, failing closed, threads."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from envscope.errors import ConfigurationError, ManifestError
from envscope.manifests._cache import RETAINED_PER_HOME, ManifestCache
from envscope.policy._declarations import HomeDeclarations, OriginKind
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests._privdrop import give_to_nobody, nobody_tree, run_as_nobody

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "scan"
CHATX = "plugins/platforms/chatx"
MANIFEST = f"{CHATX}/plugin.yaml"
CHATX_NAMES = {"CHATX_BOT_TOKEN", "CHATX_SIGNING_SECRET"}
HOME_NAMES = CHATX_NAMES | {
    "YMLONLY_API_KEY",
    "BOTH_YAML_TOKEN",
    "HIDDEN_API_KEY",
    "DASHED_PASSWORD",
    "FLATPLAT_TOKEN",
}
Mode = Literal["raise", "deny"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private copy of ``fixtures/scan/home``."""
    dest = tmp_path / "home"
    shutil.copytree(FIXTURE / "home", dest, symlinks=True)
    return Path(os.path.realpath(dest))


@pytest.fixture
def fs() -> InstrumentedFileSystem:
    """A counting, fault-injecting seam whose clock is an hour ahead (no file is racy)."""
    return InstrumentedFileSystem(clock_offset_ns=HOUR_NS)


class Checker:
    """One cache over one home, with the counts of the last call."""

    def __init__(self, home: Path, fs: InstrumentedFileSystem, mode: Mode = "deny") -> None:
        self.home, self.fs = home, fs
        self.cache = ManifestCache(bundled_root=None, fs=fs, on_unreadable_platform=mode)

    def __call__(self, mode: Mode | None = None) -> HomeDeclarations:
        self.fs.reset_counts()
        return self.cache.declarations(str(self.home), str(self.home), on_unreadable_platform=mode)

    @property
    def opens(self) -> int:
        return self.fs.calls["open"]


def same_size_edit(path: Path) -> None:
    """Rewrite in place (same inode, same size): CHATX_CHANNEL becomes CHATX_WEB_KEY."""
    data = path.read_bytes()
    new = data.replace(b"CHATX_CHANNEL", b"CHATX_WEB_KEY")
    assert new != data
    assert len(new) == len(data)
    with path.open("r+b") as fh:
        fh.write(new)


def restore_times(path: Path, st: os.stat_result) -> None:
    """``touch -r``: put back the old atime and mtime."""
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


# -- invalidation: what a warm check must notice ------------------------------------


def _touch_r(home: Path) -> None:
    manifest = home / MANIFEST
    st = manifest.stat()
    same_size_edit(manifest)
    restore_times(manifest, st)
    after = manifest.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )


def _cp_p(home: Path) -> None:
    manifest = home / MANIFEST
    st = manifest.stat()
    other = home / "other.yaml"
    shutil.copy2(manifest, other)
    same_size_edit(other)
    restore_times(other, st)
    shutil.copy2(other, manifest)
    after = manifest.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )


def _atomic_rename(home: Path) -> None:
    manifest = home / MANIFEST
    st = manifest.stat()
    tmp = manifest.with_name(".plugin.yaml.tmp")
    shutil.copy2(manifest, tmp)
    same_size_edit(tmp)
    restore_times(tmp, st)
    os.replace(tmp, manifest)


def _new_plugin(home: Path) -> None:
    (home / "plugins/platforms/newp").mkdir()
    (home / "plugins/platforms/newp/plugin.yaml").write_text("requires_env: [NEWP_TOKEN]\n")


def _swap_dir_for_symlink(home: Path) -> None:
    elsewhere = home.parent / "elsewhere-chatx"
    shutil.copytree(home / CHATX, elsewhere)  # copy2: same mtimes
    st = (home / MANIFEST).stat()
    same_size_edit(elsewhere / "plugin.yaml")
    restore_times(elsewhere / "plugin.yaml", st)
    shutil.rmtree(home / CHATX)
    (home / CHATX).symlink_to(elsewhere)


def _yaml_beside_yml(home: Path) -> None:
    (home / "plugins/platforms/ymlonly/plugin.yaml").write_text(
        "requires_env: [YMLONLY_NEW_TOKEN]\n"
    )


def _flat_becomes_platform(home: Path) -> None:
    path = home / "plugins/memory/plugin.yaml"
    path.write_text(path.read_text().replace("kind: memory", "kind: platform"))


def _manifest_becomes_fifo(home: Path) -> None:
    (home / MANIFEST).unlink()
    os.mkfifo(home / MANIFEST)


# (id, mutate, added, removed)
INVALIDATION: list[tuple[str, Callable[[Path], None], set[str], set[str]]] = [
    ("touch -r after a same-size edit", _touch_r, {"CHATX_WEB_KEY"}, set()),
    ("cp -p from a same-size file", _cp_p, {"CHATX_WEB_KEY"}, set()),
    ("atomic rename with the old mtime", _atomic_rename, {"CHATX_WEB_KEY"}, set()),
    ("new plugin directory", _new_plugin, {"NEWP_TOKEN"}, set()),
    ("deleted plugin releases names", lambda h: shutil.rmtree(h / CHATX), set(), CHATX_NAMES),
    ("deleted manifest releases names", lambda h: (h / MANIFEST).unlink(), set(), CHATX_NAMES),
    ("directory swapped for a symlink", _swap_dir_for_symlink, {"CHATX_WEB_KEY"}, set()),
    (
        "plugin.yaml appears beside plugin.yml",
        _yaml_beside_yml,
        {"YMLONLY_NEW_TOKEN"},
        {"YMLONLY_API_KEY"},
    ),
    ("flat kind becomes platform", _flat_becomes_platform, {"MEMORY_API_KEY"}, set()),
]


@pytest.mark.parametrize(
    ("mutate", "added", "removed"),
    [c[1:] for c in INVALIDATION],
    ids=[c[0] for c in INVALIDATION],
)
def test_invalidation(
    home: Path,
    fs: InstrumentedFileSystem,
    mutate: Callable[[Path], None],
    added: set[str],
    removed: set[str],
) -> None:
    """A warm check opens nothing while nothing changed, and sees each kind of change."""
    check = Checker(home, fs)
    before = check()
    assert set(before.secrets) == HOME_NAMES
    assert check() is before
    assert check.opens == 0
    mutate(home)
    after = check()
    assert set(after.secrets) == (HOME_NAMES | added) - removed
    assert after.complete
    assert after.generation > before.generation


def test_manifest_replaced_by_fifo_fails_closed(home: Path, fs: InstrumentedFileSystem) -> None:
    """A FIFO in place of a manifest is never opened; it is a problem and its names stay denied."""
    check = Checker(home, fs)
    assert set(check().secrets) == HOME_NAMES
    _manifest_becomes_fifo(home)
    after = check()
    assert not after.complete
    assert [p.path for p in after.problems] == [str(home / MANIFEST)]
    assert set(after.secrets) >= CHATX_NAMES
    assert "CHATX_" in after.deny_prefixes
    assert str(home / MANIFEST) not in fs.opened


@pytest.mark.parametrize("granularity_s", [1, 2])
def test_same_size_rewrite_within_one_clock_tick(home: Path, granularity_s: int) -> None:
    """With coarse timestamps a same-tick rewrite keeps its signature; the racy rule sees it."""
    tick = granularity_s * 1_000_000_000
    fs = InstrumentedFileSystem(granularity_ns=tick)  # the real clock: fresh files are racy
    check = Checker(home, fs)
    manifest = home / MANIFEST
    time.sleep((tick - time.time_ns() % tick) / 1e9 + 0.02)  # start of a fresh tick
    manifest.write_bytes(manifest.read_bytes())  # v1, written in this tick
    first = check()
    signature = fs.stat(str(manifest))
    same_size_edit(manifest)  # v2, same tick
    assert fs.stat(str(manifest)) == signature, "the rewrite must be invisible to the stamp"
    assert "CHATX_WEB_KEY" in check().secrets
    assert "CHATX_WEB_KEY" not in first.secrets
    fs.clock_offset_ns = HOUR_NS  # later: the file is old now
    settled = check()
    assert check.opens > 0  # the racy result is re-checked once more
    assert check() is settled
    assert check.opens == 0


# -- the warm-check budget -----------------------------------------------------------


def _only_regular_manifests(home: Path) -> None:
    shutil.rmtree(home / "plugins/platforms/ymlonly")
    shutil.rmtree(home / "plugins/nomanifest")


# (id, prepare, with bundled root, scandirs, stats)
BUDGET: list[tuple[str, Callable[[Path], None], bool, int, int]] = [
    ("6 regular manifests, 2 roots", _only_regular_manifests, False, 2, 6),
    ("6 regular manifests + bundled", _only_regular_manifests, True, 3, 7),
    ("plugin.yml and no-manifest dirs cost 2", lambda h: None, False, 2, 10),
    ("a symlinked manifest costs 2", lambda h: _link_manifest(h), False, 2, 11),
]


def _link_manifest(home: Path) -> None:
    shutil.move(home / MANIFEST, home / "chatx.yaml")
    (home / MANIFEST).symlink_to(home / "chatx.yaml")


@pytest.mark.parametrize(
    ("prepare", "bundled", "scandirs", "stats"),
    [b[1:] for b in BUDGET],
    ids=[b[0] for b in BUDGET],
)
def test_warm_check_budget(
    home: Path,
    fs: InstrumentedFileSystem,
    prepare: Callable[[Path], None],
    bundled: bool,
    scandirs: int,
    stats: int,
) -> None:
    """A warm check: one scandir per root, one stat per regular manifest, zero opens."""
    prepare(home)
    cache = ManifestCache(bundled_root=str(FIXTURE / "bundled") if bundled else None, fs=fs)
    first = cache.declarations(str(home), str(home))
    fs.reset_counts()
    assert cache.declarations(str(home), str(home)) is first
    assert dict(fs.calls) == {"scandir": scandirs, "stat": stats}


# -- failing closed -----------------------------------------------------------------


def _fail_root(home: Path, fs: InstrumentedFileSystem) -> Callable[[], None]:
    root = home / "plugins/platforms"
    fs.deny_dir(root)
    root.chmod(0o000)

    def repair() -> None:
        fs.heal()
        root.chmod(0o755)

    return repair


def _fail_plugin_dir(home: Path, fs: InstrumentedFileSystem) -> Callable[[], None]:
    fs.deny_dir(home / CHATX)
    (home / CHATX).chmod(0o000)

    def repair() -> None:
        fs.heal()
        (home / CHATX).chmod(0o755)

    return repair


def _fail_manifest(home: Path, fs: InstrumentedFileSystem) -> Callable[[], None]:
    fs.deny_file(home / MANIFEST)
    (home / MANIFEST).chmod(0o000)

    def repair() -> None:
        fs.heal()
        (home / MANIFEST).chmod(0o644)

    return repair


def _fail_dangling(home: Path, fs: InstrumentedFileSystem) -> Callable[[], None]:
    shutil.move(home / MANIFEST, home / "saved.yaml")
    (home / MANIFEST).symlink_to(home / "gone.yaml")

    def repair() -> None:
        shutil.move(home / "saved.yaml", home / "gone.yaml")

    return repair


def _fail_malformed(home: Path, fs: InstrumentedFileSystem) -> Callable[[], None]:
    saved = (home / MANIFEST).read_bytes()
    (home / MANIFEST).write_text("requires_env: CHATX_BOT_TOKEN\n")

    def repair() -> None:
        (home / MANIFEST).write_bytes(saved)

    return repair


Failure = Callable[[Path, InstrumentedFileSystem], Callable[[], None]]
# (id, make it fail (returns the repair), path the problem names, prefix denied)
FAILURES: list[tuple[str, Failure, str, str | None]] = [
    ("EACCES on the platforms root", _fail_root, "plugins/platforms", ""),
    ("EACCES on the plugin dir", _fail_plugin_dir, MANIFEST, "CHATX_"),
    ("EACCES on the manifest", _fail_manifest, MANIFEST, "CHATX_"),
    ("dangling manifest symlink", _fail_dangling, MANIFEST, "CHATX_"),
    ("malformed manifest", _fail_malformed, MANIFEST, "CHATX_"),
]
FAILURE_ARGS = [f[1:] for f in FAILURES]
FAILURE_IDS = [f[0] for f in FAILURES]


@pytest.mark.parametrize(("fail", "where", "prefix"), FAILURE_ARGS, ids=FAILURE_IDS)
def test_first_scan_failure_denies_by_prefix(
    home: Path, fs: InstrumentedFileSystem, fail: Failure, where: str, prefix: str | None
) -> None:
    """A first-scan failure: partial, named, the plugin's prefix denied, the rest declared."""
    fail(home, fs)
    result = Checker(home, fs)()
    assert not result.complete
    assert [p.path for p in result.problems] == [str(home / where)]
    assert set(result.deny_prefixes) == {prefix}  # "" = every secret-suffixed name
    if prefix is not None:
        origin = result.deny_prefixes[prefix]
        assert (origin.kind, origin.path) == (OriginKind.PARTIAL_SCAN, str(home / where))
    assert "FLATPLAT_TOKEN" in result.secrets
    assert not CHATX_NAMES & set(result.secrets)


@pytest.mark.parametrize(("fail", "where", "prefix"), FAILURE_ARGS, ids=FAILURE_IDS)
def test_platform_failure_raises_and_the_closed_result_is_cached(
    home: Path, fs: InstrumentedFileSystem, fail: Failure, where: str, prefix: str | None
) -> None:
    """Raise mode names the file; the same closed result is cached and served in deny mode."""
    fail(home, fs)
    check = Checker(home, fs, mode="raise")
    with pytest.raises(ManifestError) as info:
        check()
    assert info.value.path == str(home / where)
    with pytest.raises(ManifestError):
        check()  # still raises while it lasts
    assert check.opens == 0
    closed = check("deny")
    assert check.opens == 0
    assert not closed.complete
    assert set(closed.deny_prefixes) == {prefix}


@pytest.mark.parametrize(("fail", "where", "prefix"), FAILURE_ARGS, ids=FAILURE_IDS)
def test_failure_after_healthy_scan_keeps_names_without_flapping(
    home: Path, fs: InstrumentedFileSystem, fail: Failure, where: str, prefix: str | None
) -> None:
    """Names survive two failing builds (no re-open), then a repair is rechecked at once."""
    check = Checker(home, fs)
    healthy = check()
    repair = fail(home, fs)
    first = check()
    assert set(first.secrets) >= HOME_NAMES
    assert not first.complete
    assert first.generation > healthy.generation
    second = check()
    assert second is first
    assert check.opens == 0  # an unchanged failure is not re-opened
    repair()
    repaired = check()
    assert check.opens > 0
    assert repaired.complete
    assert set(repaired.secrets) == HOME_NAMES
    assert dict(repaired.deny_prefixes) == {}


def test_dangling_link_is_rechecked_when_its_target_appears(
    home: Path, fs: InstrumentedFileSystem
) -> None:
    """The link itself is unchanged, but the stamp follows it: creating the target rescans."""
    repair = _fail_dangling(home, fs)
    check = Checker(home, fs)
    assert not check().complete
    repair()
    assert set(check().secrets) >= CHATX_NAMES


def test_deleted_plugin_after_partial_scan_releases_names(
    home: Path, fs: InstrumentedFileSystem
) -> None:
    """Kept names go once a complete scan no longer finds the plugin."""
    check = Checker(home, fs)
    check()
    _fail_plugin_dir(home, fs)
    assert set(check().secrets) >= CHATX_NAMES
    fs.heal()
    shutil.rmtree(home / CHATX)
    released = check()
    assert released.complete
    assert set(released.secrets) == HOME_NAMES - CHATX_NAMES


def test_unreadable_flat_manifest_never_raises(home: Path, fs: InstrumentedFileSystem) -> None:
    """A flat plugin's unreadable manifest (kind unknown) denies by prefix in raise mode too."""
    fs.deny_file(home / "plugins/memory/plugin.yaml")
    result = Checker(home, fs, mode="raise")()
    assert not result.complete
    assert "MEMORY_" in result.deny_prefixes
    assert set(result.secrets) == HOME_NAMES


def test_malformed_platform_manifest_keeps_the_others(
    home: Path, fs: InstrumentedFileSystem
) -> None:
    """A malformed manifest raises with line and field; deny mode keeps every other declaration."""
    broken = home / "plugins/platforms/broken"
    broken.mkdir()
    (broken / "plugin.yaml").write_text("name: broken\nrequires_env:\n  - {secret: yes}\n")
    check = Checker(home, fs, mode="raise")
    with pytest.raises(ManifestError) as info:
        check()
    assert info.value.path == str(broken / "plugin.yaml")
    assert info.value.line == 3
    assert info.value.field is not None
    assert info.value.field.startswith("requires_env[0]")
    result = check("deny")
    assert set(result.secrets) == HOME_NAMES
    assert "BROKEN_" in result.deny_prefixes


def test_deny_prefixes_persist_while_the_scan_stays_partial(
    home: Path, fs: InstrumentedFileSystem
) -> None:
    """A later partial scan keeps earlier deny prefixes; a complete one drops them."""
    check = Checker(home, fs)
    repair_chatx = _fail_manifest(home, fs)
    assert set(check().deny_prefixes) == {"CHATX_"}
    repair_chatx()
    fs.deny_file(home / "plugins/memory/plugin.yaml")
    (home / "plugins/memory/plugin.yaml").chmod(0o000)
    assert set(check().deny_prefixes) == {"CHATX_", "MEMORY_"}
    fs.heal()
    (home / "plugins/memory/plugin.yaml").chmod(0o644)
    healed = check()
    assert healed.complete
    assert dict(healed.deny_prefixes) == {}


# -- generations, eviction, configuration ----------------------------------------------


def test_generation_and_identity(home: Path, fs: InstrumentedFileSystem) -> None:
    """A warm check returns the same object; a rescan with equal results too; a change bumps it."""
    check = Checker(home, fs)
    first = check()
    assert first.generation >= 1
    assert check() is first
    manifest = home / MANIFEST
    manifest.write_bytes(manifest.read_bytes())  # new ctime, same declarations
    assert check() is first
    assert check.opens > 0
    same_size_edit(manifest)
    assert check().generation > first.generation


def test_results_are_immutable(home: Path, fs: InstrumentedFileSystem) -> None:
    """A cached result cannot be changed by a caller."""
    result = Checker(home, fs)()
    with pytest.raises(TypeError):
        result.secrets["X_TOKEN"] = result.secrets["CHATX_BOT_TOKEN"]  # type: ignore[index]


def test_bounded_lru_and_clear(tmp_path: Path, fs: InstrumentedFileSystem) -> None:
    """Past maxsize the least recently used home is rescanned; clear() forgets every home."""
    homes = []
    for name in ("a", "b"):
        shutil.copytree(FIXTURE / "home", tmp_path / name)
        homes.append(str(tmp_path / name))
    cache = ManifestCache(bundled_root=None, fs=fs, maxsize=1)

    def opens(home: str) -> int:
        fs.reset_counts()
        cache.declarations(home, home)
        return fs.calls["open"]

    assert opens(homes[0]) > 0
    assert opens(homes[0]) == 0
    assert opens(homes[1]) > 0
    assert opens(homes[0]) > 0  # evicted by b
    cache.clear()
    assert opens(homes[0]) > 0


@pytest.mark.parametrize(("fail", "where", "prefix"), FAILURE_ARGS, ids=FAILURE_IDS)
def test_retention_survives_eviction(
    tmp_path: Path, fs: InstrumentedFileSystem, fail: Failure, where: str, prefix: str | None
) -> None:
    """A home evicted from the LRU keeps every name it had when its next scan is partial."""
    homes = []
    for name in ("a", "b", "c"):
        shutil.copytree(FIXTURE / "home", tmp_path / name, symlinks=True)
        homes.append(Path(os.path.realpath(tmp_path / name)))
    a = homes[0]
    cache = ManifestCache(bundled_root=None, fs=fs, maxsize=1)

    def check(home: Path) -> HomeDeclarations:
        fs.reset_counts()
        return cache.declarations(str(home), str(home), on_unreadable_platform="deny")

    healthy = check(a)
    assert set(healthy.secrets) == HOME_NAMES
    for other in homes[1:]:
        check(other)  # evicts a (maxsize 1)
    repair = fail(a, fs)
    broken = check(a)
    assert fs.calls["scandir"] > 0  # a real rescan, not a cache hit
    assert broken.complete is False
    assert set(broken.secrets) == HOME_NAMES  # retained by name, not only by prefix
    assert str(a / where) in {p.path for p in broken.problems}
    assert prefix in broken.deny_prefixes
    repair()
    assert set(check(a).secrets) == HOME_NAMES


@pytest.mark.parametrize(("fail", "where", "prefix"), FAILURE_ARGS, ids=FAILURE_IDS)
def test_a_home_past_the_retention_bound_fails_closed_exactly_like_a_first_scan(
    tmp_path: Path, fs: InstrumentedFileSystem, fail: Failure, where: str, prefix: str | None
) -> None:
    """The record is an LRU: a home pushed out of it is rescanned as if never seen, still closed."""
    bound = RETAINED_PER_HOME  # maxsize 1
    homes = []
    for i in range(bound + 1):
        shutil.copytree(FIXTURE / "home", tmp_path / f"h{i}", symlinks=True)
        homes.append(Path(os.path.realpath(tmp_path / f"h{i}")))
    a = homes[0]
    cache = ManifestCache(bundled_root=None, fs=fs, maxsize=1)
    for home in homes:  # a first: the others push it out of the results, then of the record
        assert set(cache.declarations(str(home), str(home)).secrets) == HOME_NAMES
    assert cache.retained_homes == bound
    fail(a, fs)
    evicted = cache.declarations(str(a), str(a), on_unreadable_platform="deny")
    first = ManifestCache(bundled_root=None, fs=fs, maxsize=1).declarations(
        str(a), str(a), on_unreadable_platform="deny"
    )
    assert evicted.replace(generation=0) == first.replace(generation=0)
    assert evicted.complete is False
    assert str(a / where) in {p.path for p in evicted.problems}
    assert prefix in evicted.deny_prefixes  # a first scan fails closed by itself


def test_retention_record_is_bounded_by_what_plugins_declared(
    tmp_path: Path, fs: InstrumentedFileSystem
) -> None:
    """Homes that declare nothing leave no record; a deleted plugin leaves it; clear() resets it."""
    cache = ManifestCache(bundled_root=None, fs=fs, maxsize=2)
    for i in range(20):
        empty = tmp_path / f"empty{i}"
        (empty / "plugins").mkdir(parents=True)
        cache.declarations(str(empty), str(empty))
    assert cache.retained_homes == 0
    home = tmp_path / "home"
    shutil.copytree(FIXTURE / "home", home, symlinks=True)
    cache.declarations(str(home), str(home), on_unreadable_platform="deny")
    assert cache.retained_homes == 1
    shutil.rmtree(home / "plugins")  # every plugin deleted: a complete scan declaring nothing
    released = cache.declarations(str(home), str(home))
    assert released.complete is True
    assert dict(released.secrets) == {}
    assert cache.retained_homes == 0
    shutil.copytree(FIXTURE / "home", home, dirs_exist_ok=True, symlinks=True)
    cache.declarations(str(home), str(home), on_unreadable_platform="deny")
    assert cache.retained_homes == 1
    cache.clear()
    assert cache.retained_homes == 0


@pytest.mark.parametrize(
    "kwargs",
    [{"on_unreadable_platform": "ignore"}, {"maxsize": 0}],
    ids=["bad mode", "zero maxsize"],
)
def test_bad_configuration(kwargs: dict[str, Any]) -> None:
    """A mode other than raise/deny, or a maxsize below 1, is a configuration error."""
    with pytest.raises(ConfigurationError):
        ManifestCache(bundled_root=None, **kwargs)


# -- threads -------------------------------------------------------------------------


def test_single_flight_under_threads(home: Path) -> None:
    """Eight threads asking for one cold home at once: one scan, one result object."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS, read_delay_s=0.05)
    cache = ManifestCache(bundled_root=None, fs=fs)
    barrier = threading.Barrier(8)
    results: list[HomeDeclarations] = []

    def worker() -> None:
        barrier.wait()
        results.append(cache.declarations(str(home), str(home)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 8
    assert all(r is results[0] for r in results)
    assert len(fs.opened) == len(set(fs.opened)) == 7  # each manifest parsed once


class _GatedFS(InstrumentedFileSystem):
    """Blocks every read under one home until released."""

    def __init__(self, gated: str) -> None:
        super().__init__(clock_offset_ns=HOUR_NS)
        self.gated = gated
        self.entered = threading.Event()
        self.release = threading.Event()

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        if path.startswith(self.gated):
            self.entered.set()
            assert self.release.wait(30)
        return super().read_regular(path, max_bytes)


def test_global_lock_is_not_held_while_scanning(tmp_path: Path) -> None:
    """Home B is served while home A's scan is stuck reading a manifest."""
    for name in ("a", "b"):
        shutil.copytree(FIXTURE / "home", tmp_path / name)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    fs = _GatedFS(a + os.sep)
    cache = ManifestCache(bundled_root=None, fs=fs)
    worker = threading.Thread(target=cache.declarations, args=(a, a))
    worker.start()
    try:
        assert fs.entered.wait(30)
        assert set(cache.declarations(b, b).secrets) == HOME_NAMES
    finally:
        fs.release.set()
        worker.join(30)


class _GatedReadFS(InstrumentedFileSystem):
    """Blocks the first read until released."""

    def __init__(self) -> None:
        super().__init__(clock_offset_ns=HOUR_NS)
        self.entered = threading.Event()
        self.release = threading.Event()

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(30)
        return super().read_regular(path, max_bytes)


def test_queued_callers_take_the_next_scan_without_probing(home: Path) -> None:
    """Two callers queued behind a stale scan: one rescans, the other takes its result unprobed."""
    fs = _GatedReadFS()
    cache = ManifestCache(bundled_root=None, fs=fs)
    key = str(home)
    stale = threading.Thread(target=cache.declarations, args=(key, key))
    stale.start()
    assert fs.entered.wait(30)
    same_size_edit(home / MANIFEST)  # after the stale scan's probe
    results: list[HomeDeclarations] = []
    queued = [
        threading.Thread(target=lambda: results.append(cache.declarations(key, key)))
        for _ in range(2)
    ]
    for t in queued:
        t.start()
    deadline = time.monotonic() + 30
    while cache._flights[key].users < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    fs.reset_counts()
    fs.release.set()
    for t in (stale, *queued):
        t.join(30)
    assert results[0] is results[1]
    assert "CHATX_WEB_KEY" in results[0].secrets
    assert fs.calls["scandir"] == 2  # one probe of the two roots: the other caller did not probe


# -- for real, as uid 65534 ----------------------------------------------------------

SNIPPET = r"""
import json, os, sys
from envscope.manifests._cache import ManifestCache
from envscope.errors import ManifestError
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
home, plan = sys.argv[1], json.loads(sys.argv[2])
fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
cache = ManifestCache(bundled_root=None, fs=fs)
out = []
for step in plan:
    if step[0] == "chmod":
        os.chmod(os.path.join(home, step[1]), int(step[2], 8))
        continue
    fs.reset_counts()
    try:
        d = cache.declarations(home, home, on_unreadable_platform=step[1])
    except ManifestError as exc:
        out.append({"error": os.path.relpath(exc.path, home), "opened": len(fs.opened)})
        continue
    out.append({
        "secrets": sorted(d.secrets),
        "deny": sorted(d.deny_prefixes),
        "complete": d.complete,
        "problems": [os.path.relpath(p.path, home) for p in d.problems],
        "opened": len(fs.opened),
    })
print(json.dumps(out))
"""

ALL = sorted(HOME_NAMES)
NO_CHATX = sorted(HOME_NAMES - CHATX_NAMES)


def ok(opened: int | None = None) -> dict[str, Any]:
    """A complete result with every home name."""
    got: dict[str, Any] = {"secrets": ALL, "deny": [], "complete": True, "problems": []}
    if opened is not None:
        got["opened"] = opened
    return got


def partial(
    secrets: list[str], deny: list[str], problem: str, opened: int | None = None
) -> dict[str, Any]:
    """A partial result naming one problem."""
    got: dict[str, Any] = {
        "secrets": secrets,
        "deny": deny,
        "complete": False,
        "problems": [problem],
    }
    if opened is not None:
        got["opened"] = opened
    return got


# (id, plan, expected per build)
PRIVDROP: list[tuple[str, list[list[str]], list[dict[str, Any]]]] = [
    (
        "chmod 000 plugin dir after a healthy scan, then back",
        [
            ["build", "deny"],
            ["chmod", CHATX, "000"],
            ["build", "deny"],
            ["build", "deny"],
            ["build", "raise"],
            ["chmod", CHATX, "755"],
            ["build", "deny"],
        ],
        [
            ok(),
            partial(ALL, ["CHATX_"], MANIFEST),
            partial(ALL, ["CHATX_"], MANIFEST, opened=0),
            {"error": MANIFEST, "opened": 0},
            ok(),
        ],
    ),
    (
        "chmod 000 manifest after a healthy scan, then back",
        [
            ["build", "deny"],
            ["chmod", MANIFEST, "000"],
            ["build", "deny"],
            ["build", "deny"],
            ["chmod", MANIFEST, "644"],
            ["build", "deny"],
        ],
        [
            ok(),
            partial(ALL, ["CHATX_"], MANIFEST),
            partial(ALL, ["CHATX_"], MANIFEST, opened=0),
            ok(),
        ],
    ),
    (
        "unreadable manifest on the first scan",
        [["chmod", MANIFEST, "000"], ["build", "raise"], ["build", "deny"]],
        [{"error": MANIFEST}, partial(NO_CHATX, ["CHATX_"], MANIFEST, opened=0)],
    ),
    (
        "unlistable platforms root after a healthy scan, then back",
        [
            ["build", "deny"],
            ["chmod", "plugins/platforms", "000"],
            ["build", "deny"],
            ["build", "raise"],
            ["chmod", "plugins/platforms", "755"],
            ["build", "deny"],
        ],
        [
            ok(),
            partial(ALL, [""], "plugins/platforms"),
            {"error": "plugins/platforms", "opened": 0},
            ok(),
        ],
    ),
    (
        "flat kind: memory manifest unreadable",
        [["chmod", "plugins/memory/plugin.yaml", "000"], ["build", "raise"]],
        [partial(ALL, ["MEMORY_"], "plugins/memory/plugin.yaml")],
    ),
]


@pytest.mark.privdrop
@pytest.mark.parametrize(
    ("plan", "expected"), [p[1:] for p in PRIVDROP], ids=[p[0] for p in PRIVDROP]
)
def test_permissions_for_real(plan: list[list[str]], expected: list[dict[str, Any]]) -> None:
    """Real chmod as uid 65534: fail closed, no flapping, raise for platform roots only."""
    with nobody_tree() as top:
        home = top / "home"
        shutil.copytree(FIXTURE / "home", home)
        give_to_nobody(top)
        proc = run_as_nobody(SNIPPET, str(home), json.dumps(plan))
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
    assert len(got) == len(expected)
    for seen, want in zip(got, expected, strict=True):
        assert {k: seen.get(k) for k in want} == want
