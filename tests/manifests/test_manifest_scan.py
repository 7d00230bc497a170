"""Manifest scanning (``envscope.manifests._scan``) and the file seam (``envscope.files._fs``)."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import threading
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

from envscope.files._fs import DirEntry, RealFileSystem
from envscope.manifests._scan import (
    RACY_WINDOW_NS,
    ScanResult,
    State,
    home_roots,
    probe,
    scan,
)
from envscope.manifests._schema import MAX_MANIFEST_BYTES
from envscope.policy._declarations import OriginKind, plugin_prefix
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "scan"
CHATX_NAMES = {"CHATX_BOT_TOKEN", "CHATX_SIGNING_SECRET"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A private copy of ``fixtures/scan`` (``home/`` and ``bundled/``)."""
    dest = tmp_path / "scan"
    shutil.copytree(FIXTURE, dest, symlinks=True)
    return Path(os.path.realpath(dest))


def old_fs() -> InstrumentedFileSystem:
    """A counting seam whose clock is an hour ahead, so no fixture file is racy."""
    return InstrumentedFileSystem(clock_offset_ns=HOUR_NS)


def run_scan(
    home: Path, bundled: Path | None = None, fs: InstrumentedFileSystem | None = None
) -> ScanResult:
    """Probe and scan one home the way the cache does."""
    fs = old_fs() if fs is None else fs
    found = probe(fs, home_roots(str(home), None if bundled is None else str(bundled)))
    return scan(fs, found)


def in_thread(fn: Callable[[], object], timeout: float = 10.0) -> None:
    """Run ``fn`` in a thread and fail if it is still running after ``timeout`` (it blocked)."""
    worker = threading.Thread(target=fn, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "blocked"


@pytest.fixture
def chdir_to(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Change directory for the test only (AF_UNIX paths are short)."""
    return monkeypatch.chdir


def make_socket(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    """Bind an AF_UNIX socket at ``path`` (by a short relative name) while the generator lives."""
    chdir(path.parent)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path.name)
        yield
    finally:
        sock.close()


# -- which names the fixture tree declares -----------------------------------

NAME_FATES = [
    ("CHATX_BOT_TOKEN", True, "platforms/: secret suffix"),
    ("CHATX_SIGNING_SECRET", True, "platforms/: secret: true"),
    ("CHATX_CHANNEL", False, "no suffix, no flag"),
    ("CHATX_DEBUG_TOKEN", False, "secret: false"),
    ("YMLONLY_API_KEY", True, "plugin.yml when plugin.yaml is absent"),
    ("BOTH_YAML_TOKEN", True, "plugin.yaml wins"),
    ("BOTH_YML_TOKEN", False, "plugin.yml shadowed by plugin.yaml"),
    ("HIDDEN_API_KEY", True, "dot directories are scanned"),
    ("CACHE_API_KEY", False, "__dunder__ directories are skipped"),
    ("DASHED_PASSWORD", True, "password: true"),
    ("PLATFORMS_ROOT_TOKEN", False, "plugins/platforms is not a flat plugin"),
    ("FLATPLAT_TOKEN", True, "flat plugin with kind: platform"),
    ("MEMORY_API_KEY", False, "flat plugin of another kind"),
    ("BUNDLEDCHAT_TOKEN", True, "bundled root: every manifest counts"),
]


@pytest.mark.parametrize(("name", "declared", "why"), NAME_FATES, ids=[f[2] for f in NAME_FATES])
def test_fixture_tree_declares(tree: Path, name: str, declared: bool, why: str) -> None:
    """Each fixture name is declared (Tier 1) or not, by the scanning rules."""
    result = run_scan(tree / "home", tree / "bundled")
    assert (name in result.secrets) is declared, why
    assert result.complete
    assert result.problems == () == result.fatal


def test_fixture_tree_origins_and_prefixes(tree: Path) -> None:
    """Declarations name their manifest and line; prefixes cover every platform plugin found."""
    result = run_scan(tree / "home", tree / "bundled")
    origin = result.secrets["CHATX_SIGNING_SECRET"].origin
    assert origin.kind is OriginKind.MANIFEST
    assert origin.detail == "chatx"
    assert origin.path == str(tree / "home/plugins/platforms/chatx/plugin.yaml")
    assert origin.line == 6
    assert result.plugin_prefixes == {
        "CHATX_",
        "YMLONLY_",
        "BOTH_",
        "HIDDEN_",
        "_DASH_ED_",
        "FLATPLAT_",
        "BUNDLEDCHAT_",
    }
    assert dict(result.deny_prefixes) == {}


def test_probe_opens_nothing_and_scan_reads_each_manifest_once(tree: Path) -> None:
    """The probe only lists and stats; the scan opens each counted candidate once."""
    fs = old_fs()
    found = probe(fs, home_roots(str(tree / "home"), str(tree / "bundled")))
    assert fs.calls["open"] == 0
    assert fs.calls["scandir"] == 3
    scan(fs, found)
    assert sorted(fs.opened) == sorted(set(fs.opened))
    assert not any(p.endswith("__cache__/plugin.yaml") for p in fs.opened)
    assert not any(p.endswith("both/plugin.yml") for p in fs.opened)


# -- what stands in place of a manifest ----------------------------------------


def _fifo(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    os.mkfifo(path)
    yield


def _directory(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.mkdir()
    yield


def _loop(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.symlink_to(path.name)
    yield


def _loop_with_yml(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.symlink_to(path.name)
    (path.parent / "plugin.yml").write_text("requires_env: [CHATX_YML_TOKEN]\n")
    yield


def _dangling(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.symlink_to("missing.yaml")
    yield


def _link_to_file(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    target = path.parent.parent / "elsewhere.yaml"
    target.write_text("requires_env: [CHATX_LINKED_TOKEN]\n")
    path.symlink_to(target)
    yield


def _oversize(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.write_bytes(b"requires_env: [CHATX_BIG_TOKEN]\n" + b"#" * MAX_MANIFEST_BYTES)
    yield


def _malformed(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    path.write_text("name: chatx\nrequires_env: CHATX_BOT_TOKEN\n")
    yield


Maker = Callable[[Path, Callable[[Path], None]], Generator[None, None, None]]

# (id, maker, names declared, problem?, manifest opened?)
IN_PLACE: list[tuple[str, Maker, set[str], bool, bool]] = [
    ("fifo", _fifo, set(), True, False),
    ("socket", make_socket, set(), True, False),
    ("directory", _directory, set(), True, False),
    ("symlink loop", _loop, set(), False, False),
    ("symlink loop, plugin.yml", _loop_with_yml, {"CHATX_YML_TOKEN"}, False, False),
    ("dangling symlink", _dangling, set(), True, False),
    ("symlink to a file", _link_to_file, {"CHATX_LINKED_TOKEN"}, False, True),
    ("oversize", _oversize, set(), True, True),
    ("malformed", _malformed, set(), True, True),
]


@pytest.mark.parametrize(
    ("maker", "names", "problem", "opened"),
    [c[1:] for c in IN_PLACE],
    ids=[c[0] for c in IN_PLACE],
)
def test_what_stands_in_place_of_a_manifest(
    tree: Path,
    chdir_to: Callable[[Path], None],
    maker: Maker,
    names: set[str],
    problem: bool,
    opened: bool,
) -> None:
    """Non-regular manifests are never opened but are problems; loops are absent."""
    manifest = tree / "home/plugins/platforms/chatx/plugin.yaml"
    manifest.unlink()
    fs = old_fs()
    results: list[ScanResult] = []
    live = maker(manifest, chdir_to)
    next(live)
    try:
        in_thread(lambda: results.append(run_scan(tree / "home", fs=fs)))
    finally:
        live.close()
    (result,) = results
    assert {n for n in result.secrets if n.startswith("CHATX_")} == names
    assert (str(manifest) in fs.opened) is opened
    if problem:
        (only,) = result.problems
        assert only.path == str(manifest)
        assert only.plugin == "chatx"
        assert result.fatal == result.problems
        assert result.deny_prefixes["CHATX_"].kind is OriginKind.PARTIAL_SCAN
        assert result.deny_prefixes["CHATX_"].path == str(manifest)
    else:
        assert result.complete
        assert "CHATX_" not in result.deny_prefixes


def test_malformed_manifest_names_line_and_field(tree: Path) -> None:
    """A validation error keeps the file, line and field, and the other plugins still declare."""
    manifest = tree / "home/plugins/platforms/chatx/plugin.yaml"
    manifest.write_text("name: chatx\nrequires_env: CHATX_BOT_TOKEN\n")
    result = run_scan(tree / "home")
    (only,) = result.problems
    assert (only.path, only.line, only.field) == (str(manifest), 2, "requires_env")
    assert "YMLONLY_API_KEY" in result.secrets
    assert "FLATPLAT_TOKEN" in result.secrets


# -- problems: fatal under platform roots only -----------------------------------

FATALITY = [
    ("platforms/", "home/plugins/platforms/chatx", "CHATX_", True),
    ("bundled", "bundled/bundledchat", "BUNDLEDCHAT_", True),
    ("flat kind: platform", "home/plugins/flatplat", "FLATPLAT_", False),
    ("flat kind: memory", "home/plugins/memory", "MEMORY_", False),
]


@pytest.mark.parametrize(
    ("plugin", "prefix", "fatal"), [f[1:] for f in FATALITY], ids=[f[0] for f in FATALITY]
)
def test_malformed_manifest_is_fatal_only_under_platform_roots(
    tree: Path, plugin: str, prefix: str, fatal: bool
) -> None:
    """A bad manifest denies its prefix anywhere, and is fatal under bundled/ and platforms/."""
    manifest = tree / plugin / "plugin.yaml"
    manifest.write_text("requires_env: {not: a list}\n")
    result = run_scan(tree / "home", tree / "bundled")
    assert [p.path for p in result.problems] == [str(manifest)]
    assert bool(result.fatal) is fatal
    assert prefix in result.deny_prefixes
    assert (prefix in result.plugin_prefixes) is fatal


def test_unreadable_flat_manifest_denies_prefix_but_is_not_fatal(tree: Path) -> None:
    """A flat manifest that cannot be opened: kind unknown, so deny by prefix, never fatal."""
    fs = old_fs()
    manifest = tree / "home/plugins/memory/plugin.yaml"
    fs.deny_file(manifest)
    result = run_scan(tree / "home", fs=fs)
    (only,) = result.problems
    assert only.path == str(manifest)
    assert "EACCES" in only.message
    assert result.fatal == ()
    assert "MEMORY_" in result.deny_prefixes


# -- roots -----------------------------------------------------------------------


def _no_plugins(home: Path) -> None:
    shutil.rmtree(home / "plugins")


def _plugins_is_file(home: Path) -> None:
    shutil.rmtree(home / "plugins")
    (home / "plugins").write_text("not a directory\n")


def _platforms_is_file(home: Path) -> None:
    shutil.rmtree(home / "plugins/platforms")
    (home / "plugins/platforms").write_text("not a directory\n")


def _no_platforms(home: Path) -> None:
    shutil.rmtree(home / "plugins/platforms")


# (id, mutate, bundled exists?, problem roots (relative to tree), FLATPLAT_TOKEN declared?)
ROOTS: list[tuple[str, Callable[[Path], None], bool, set[str], bool]] = [
    ("no plugins dir", _no_plugins, True, set(), False),
    ("no platforms dir", _no_platforms, True, set(), True),
    ("bundled root missing", lambda home: None, False, set(), True),
    (
        "plugins is a file",
        _plugins_is_file,
        True,
        {"home/plugins", "home/plugins/platforms"},
        False,
    ),
    ("platforms is a file", _platforms_is_file, True, {"home/plugins/platforms"}, True),
]


@pytest.mark.parametrize(
    ("mutate", "bundled", "problems", "flat"), [r[1:] for r in ROOTS], ids=[r[0] for r in ROOTS]
)
def test_roots(
    tree: Path,
    mutate: Callable[[Path], None],
    bundled: bool,
    problems: set[str],
    flat: bool,
) -> None:
    """A missing root declares nothing and is fine; a root that is a file makes the scan partial."""
    mutate(tree / "home")
    bundled_root = tree / ("bundled" if bundled else "no-such-bundled")
    result = run_scan(tree / "home", bundled_root)
    assert {p.path for p in result.problems} == {str(tree / p) for p in problems}
    assert all("ENOTDIR" in p.message and p.plugin is None for p in result.problems)
    assert result.complete == (not problems)
    assert ("FLATPLAT_TOKEN" in result.secrets) is flat
    assert ("BUNDLEDCHAT_TOKEN" in result.secrets) is bundled
    assert set(result.deny_prefixes) == ({""} if problems else set())  # "" = deny all suffixed


def test_unlistable_root_is_a_problem_with_its_errno(tree: Path) -> None:
    """EACCES on listing a root: partial, named, every secret-suffixed name denied, others count."""
    fs = old_fs()
    fs.inject(tree / "home/plugins/platforms", errno.EACCES, ops=("scandir",))
    result = run_scan(tree / "home", tree / "bundled", fs=fs)
    (only,) = result.problems
    assert only.path == str(tree / "home/plugins/platforms")
    assert "EACCES" in only.message
    assert result.fatal == result.problems
    assert "FLATPLAT_TOKEN" in result.secrets
    assert "BUNDLEDCHAT_TOKEN" in result.secrets
    assert set(result.deny_prefixes) == {""}
    assert result.deny_prefixes[""].path == str(tree / "home/plugins/platforms")
    assert "" not in result.plugin_prefixes  # never a gate prefix


def test_unsearchable_plugin_dir_is_a_problem_for_that_plugin(tree: Path) -> None:
    """A plugin directory that cannot be searched names its manifest path and denies its prefix."""
    fs = old_fs()
    fs.deny_dir(tree / "home/plugins/platforms/chatx")
    result = run_scan(tree / "home", fs=fs)
    (only,) = result.problems
    assert only.path == str(tree / "home/plugins/platforms/chatx/plugin.yaml")
    assert only.plugin == "chatx"
    assert "CHATX_" in result.deny_prefixes
    assert "YMLONLY_API_KEY" in result.secrets


def test_symlinked_plugin_dir_is_followed(tree: Path) -> None:
    """A symlink to a plugin directory is a plugin directory."""
    platforms = tree / "home/plugins/platforms"
    shutil.move(platforms / "chatx", tree / "real-chatx")
    (platforms / "chatx").symlink_to(tree / "real-chatx")
    assert set(run_scan(tree / "home").secrets) >= CHATX_NAMES


def test_racy_flag_follows_the_clock(tree: Path) -> None:
    """A manifest changed within the racy window marks the probe racy; an old one does not."""
    roots = home_roots(str(tree / "home"), None)
    assert probe(InstrumentedFileSystem(), roots).racy
    assert not probe(InstrumentedFileSystem(clock_offset_ns=RACY_WINDOW_NS + HOUR_NS), roots).racy


def test_probe_states(tree: Path) -> None:
    """The probe records what it found per plugin directory (absent for no manifest)."""
    found = probe(old_fs(), home_roots(str(tree / "home"), None))
    states = {c.dirname: c.state for r in found.roots for c in r.candidates}
    assert states == {
        "-dash.ed": State.REGULAR,
        ".hidden": State.REGULAR,
        "both": State.REGULAR,
        "chatx": State.REGULAR,
        "ymlonly": State.REGULAR,
        "flatplat": State.REGULAR,
        "memory": State.REGULAR,
        "nomanifest": State.ABSENT,
    }


# -- RealFileSystem.read_regular and scandir ------------------------------------


def test_read_regular_reads_at_most_max_plus_one(tmp_path: Path) -> None:
    """A regular file is read whole, or cut at max_bytes + 1 so the caller can reject it."""
    small, big = tmp_path / "small", tmp_path / "big"
    small.write_bytes(b"abc")
    big.write_bytes(b"x" * 200_000)
    fs = RealFileSystem()
    assert fs.read_regular(str(small), 10) == b"abc"
    assert fs.read_regular(str(big), 100_000) == b"x" * 100_001


def _fifo_only(path: Path, chdir: Callable[[Path], None]) -> Generator[None, None, None]:
    os.mkfifo(path)
    yield


@pytest.mark.parametrize(
    "maker", [_fifo_only, _directory, make_socket], ids=["fifo", "directory", "socket"]
)
def test_read_regular_returns_none_for_non_regular(
    tmp_path: Path, chdir_to: Callable[[Path], None], maker: Maker
) -> None:
    """A FIFO (no writer), a directory or a socket is never read, and opening never blocks."""
    target = tmp_path / "thing"
    live = maker(target, chdir_to)
    next(live)
    got: list[bytes | None] = []
    try:
        in_thread(lambda: got.append(RealFileSystem().read_regular(str(target), 10)))
    finally:
        live.close()
    assert got == [None]


def test_read_regular_raises_oserror_for_missing(tmp_path: Path) -> None:
    """A missing file is an OSError with its errno (the scanner makes it a problem)."""
    with pytest.raises(OSError, match="No such file") as info:
        RealFileSystem().read_regular(str(tmp_path / "nope"), 10)
    assert info.value.errno == errno.ENOENT


def test_scandir_entries(tmp_path: Path) -> None:
    """Entries say whether they are directories (following links) and whether they are links."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    (tmp_path / "ld").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nope")
    got = {
        e.name: (e.is_dir, e.is_symlink, e.path) for e in RealFileSystem().scandir(str(tmp_path))
    }
    assert got == {
        "d": (True, False, str(tmp_path / "d")),
        "f": (False, False, str(tmp_path / "f")),
        "ld": (True, True, str(tmp_path / "ld")),
        "dangling": (False, True, str(tmp_path / "dangling")),
    }


def test_scandir_entries_equal_constructed_ones(tmp_path: Path) -> None:
    """Each entry RealFileSystem lists equals (and hashes as) DirEntry(...) of os.scandir."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    (tmp_path / "ld").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nope")
    listing = RealFileSystem().scandir(str(tmp_path))
    expected = [DirEntry(e.name, e.path, e.is_dir(), e.is_symlink()) for e in os.scandir(tmp_path)]
    assert sorted(listing, key=repr) == sorted(expected, key=repr)
    assert {hash(e) for e in listing} == {hash(e) for e in expected}


@pytest.mark.parametrize(("follow", "is_link"), [(True, False), (False, True)])
def test_stat_follows_links_unless_told_not_to(tmp_path: Path, follow: bool, is_link: bool) -> None:
    """RealFileSystem.stat is os.stat: follow_symlinks=False is an lstat of the link itself."""
    (tmp_path / "target").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    st = RealFileSystem().stat(str(tmp_path / "link"), follow_symlinks=follow)
    assert stat.S_ISLNK(st.st_mode) is is_link
    assert stat.S_ISREG(st.st_mode) is not is_link


class _VanishingFS(InstrumentedFileSystem):
    """A manifest that stops being a regular file between the probe and the read."""

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        self.calls["open"] += 1
        return None


def test_manifest_gone_irregular_after_probe_is_a_problem_of_every_manifest(tree: Path) -> None:
    """A read that finds no regular file is a problem naming each manifest, never "nothing"."""
    fs = _VanishingFS(clock_offset_ns=HOUR_NS)
    result = run_scan(tree / "home", fs=fs)
    assert fs.calls["open"] == 7
    assert dict(result.secrets) == {}
    assert not result.complete
    assert len(result.problems) == 7
    assert all("no longer a regular file" in p.message for p in result.problems)
    assert {plugin_prefix(p.plugin or "") for p in result.problems} <= set(result.deny_prefixes)


class _Unreadable:
    """An ``os.DirEntry`` look-alike whose type cannot be read."""

    name = "odd"
    path = "/nowhere/odd"

    def is_symlink(self) -> bool:
        raise PermissionError(errno.EACCES, "denied")

    def is_dir(self) -> bool:
        raise PermissionError(errno.EACCES, "denied")


class _Listing:
    def __enter__(self) -> list[_Unreadable]:
        return [_Unreadable()]

    def __exit__(self, *exc: object) -> None:
        return None


def test_scandir_entry_of_unknown_type_counts_as_a_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fail closed: an entry whose type cannot be read is tried as a plugin directory."""
    monkeypatch.setattr(os, "scandir", lambda path: _Listing())
    (entry,) = RealFileSystem().scandir("/nowhere")
    assert (entry.name, entry.is_dir, entry.is_symlink) == ("odd", True, False)
