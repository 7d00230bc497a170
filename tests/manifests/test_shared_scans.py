"""Caches of one process share settled probes and complete scans, and nothing else.

A table over ``ManifestCache`` with a shared table (what happened between a
first cache's check and a second cache's first check → what the second one
reads, and that its answer is a fresh cache's), the bounds of
``SharedScans``, the default (the process's table over the real file system
only, never a seam's), a host-level check (a second ``Host`` over built
homes reads no manifest and sees an edit) and a differential property (any
sequence of edits and caches: a sharing cache answers as a cache that shares
nothing).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, Host
from envscope.errors import ManifestError
from envscope.files import _fs
from envscope.files._fs import RealFileSystem
from envscope.manifests._cache import ManifestCache
from envscope.manifests._probe import Root, RootKind, home_roots
from envscope.manifests._shared_scans import SCANS, SharedScans
from envscope.policy._declarations import HomeDeclarations
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem


def manifest(name: str, *secrets: str) -> str:
    lines = "".join(f"  - {{name: {s}, secret: true}}\n" for s in secrets)
    return f"name: {name}\nrequires_env:\n{lines}" if secrets else f"name: {name}\n"


def put(root: Path, plugin: str, text: str) -> Path:
    path = root / plugin / "plugin.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A bundled root of two platforms and a home with two platform plugins."""
    put(tmp_path / "bundled", "alpha", manifest("alpha", "ALPHA_TOKEN"))
    put(tmp_path / "bundled", "beta", manifest("beta", "BETA_API_KEY"))
    platforms = tmp_path / "home" / "plugins" / "platforms"
    put(platforms, "chatx", manifest("chatx", "CHATX_BOT_TOKEN"))
    put(platforms, "mailx", manifest("mailx", "MAILX_PASSWORD"))
    return tmp_path


def checker(
    tree: Path, shared: SharedScans | None, offset: int = HOUR_NS
) -> Callable[[], tuple[HomeDeclarations | str, list[str]]]:
    """A new cache over the tree's home: each call → (its declarations or error, files opened)."""
    fs = InstrumentedFileSystem(clock_offset_ns=offset)
    cache = ManifestCache(bundled_root=str(tree / "bundled"), fs=fs, shared=shared)
    home = str(tree / "home")

    def check() -> tuple[HomeDeclarations | str, list[str]]:
        fs.reset_counts()
        try:
            found: HomeDeclarations | str = cache.declarations(home, home)
        except ManifestError as exc:
            found = f"ManifestError: {exc.path}: {exc.message}"
        return found, [p for p in fs.opened if p.endswith(".yaml")]

    return check


def answer(found: HomeDeclarations | str) -> object:
    """What a check declared (generation aside: each cache counts its own)."""
    if isinstance(found, str):
        return found
    return (
        {n: (d.tier, d.origin) for n, d in found.secrets.items()},
        found.plugin_prefixes,
        dict(found.deny_prefixes),
        found.complete,
        found.problems,
    )


def _nothing(tree: Path) -> None:
    return None


def _grow(tree: Path) -> None:
    put(tree / "home/plugins/platforms", "chatx", manifest("chatx", "CHATX_BOT_TOKEN", "CHATX_KEY"))


def _add(tree: Path) -> None:
    put(tree / "home/plugins/platforms", "newx", manifest("newx", "NEWX_TOKEN"))


def _remove(tree: Path) -> None:
    shutil.rmtree(tree / "home/plugins/platforms/mailx")


def _break(tree: Path) -> None:
    put(tree / "home/plugins/platforms", "chatx", "requires_env: {\n")


def _bundled(tree: Path) -> None:
    put(tree / "bundled", "beta", manifest("beta", "BETA_API_KEY", "BETA_SECRET"))


ALL = 4  # every manifest of the tree (two bundled, two in the home): a scan reads them all


@pytest.mark.parametrize(
    ("between", "second_reads", "third_reads"),
    [
        (_nothing, 0, 0),  # the stamp is the first cache's: its complete scan answers
        (_grow, ALL, 0),  # a new stamp: read, then shared from the second cache on
        (_add, ALL + 1, 0),
        (_remove, ALL - 1, 0),
        (_bundled, ALL, 0),  # the bundled root is part of every home's stamp
        (_break, ALL, ALL),  # a scan with a problem is never shared: each cache reads it
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_a_second_cache_reads_only_what_its_stamp_does_not_vouch_for(
    tree: Path, between: Callable[[Path], None], second_reads: int, third_reads: int
) -> None:
    shared = SharedScans()
    first, opened = checker(tree, shared)()
    assert len(opened) == ALL
    between(tree)
    second, opened2 = checker(tree, shared)()
    third, opened3 = checker(tree, shared)()
    fresh, _ = checker(tree, None)()
    assert (len(opened2), len(opened3)) == (second_reads, third_reads)
    assert answer(second) == answer(third) == answer(fresh)
    if between is not _nothing:
        assert answer(second) != answer(first)


def test_a_racy_probe_is_never_shared(tree: Path) -> None:
    shared = SharedScans()
    for _ in range(2):  # the clock is the file's own: every manifest was just written
        _, opened = checker(tree, shared, offset=0)()
        assert len(opened) == ALL
    held = shared.expected(home_roots(str(tree / "home"), str(tree / "bundled")))
    assert shared.sizes()["scans"] == 0
    assert all(not rp.candidates for rp in held.values())  # only the missing flat root


def test_the_tables_are_bounded_and_emptied_when_full(tree: Path) -> None:
    shared = SharedScans(roots_kept=3, scans_kept=1)
    checker(tree, shared)()
    assert shared.sizes() == {"roots": 3, "scans": 1}  # bundled, platforms, flat (missing)
    _grow(tree)
    _, opened = checker(tree, shared)()
    assert shared.sizes() == {"roots": 3, "scans": 1}  # each emptied, then the new probe
    assert len(opened) == ALL
    assert checker(tree, shared)()[1] == []
    shared.clear()
    assert shared.sizes() == {"roots": 0, "scans": 0}


def test_an_expected_root_must_be_the_same_root() -> None:
    shared = SharedScans()
    assert shared.expected((Root(RootKind.FLAT, "/nowhere"),)) == {}
    assert shared.scanned(()) is None


@pytest.mark.parametrize(
    ("fs", "shares"),
    [
        (None, True),  # the cache's own real file system
        (RealFileSystem(), True),
        (InstrumentedFileSystem(clock_offset_ns=HOUR_NS), False),  # a seam answers for itself
    ],
    ids=["default", "real", "seam"],
)
def test_by_default_only_the_real_file_system_shares_the_process_table(
    tree: Path, fs: RealFileSystem | None, shares: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RealFileSystem, "now_ns", lambda self: time.time_ns() + HOUR_NS)
    SCANS.clear()
    cache = ManifestCache(bundled_root=str(tree / "bundled"), fs=fs)
    cache.declarations(str(tree / "home"), str(tree / "home"))
    assert (SCANS.sizes()["scans"] == 1) is shares
    SCANS.clear()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The manifests the real file system read; its clock an hour ahead (nothing racy)."""
    seen: list[str] = []
    real = _fs.read_regular_file

    def counting(path: str, max_bytes: int) -> bytes | None:
        if path.endswith(".yaml"):
            seen.append(path)
        return real(path, max_bytes)

    monkeypatch.setattr(_fs, "read_regular_file", counting)
    monkeypatch.setattr(RealFileSystem, "now_ns", lambda self: time.time_ns() + HOUR_NS)
    SCANS.clear()
    yield seen
    SCANS.clear()


def test_a_second_host_reads_no_manifest_and_still_sees_an_edit(
    tree: Path, reads: list[str]
) -> None:
    env = {"PATH": "/usr/bin", "CHATX_BOT_TOKEN": "t" * 20, "CHATX_KEY": "k" * 20}

    def child() -> dict[str, str]:
        host = Host(tree / "home", environ=env, catalog=Catalog.default(),
                    bundled_plugins=str(tree / "bundled"))  # fmt: skip
        return host.build_subprocess_env()

    first = child()
    assert reads
    assert "CHATX_BOT_TOKEN" not in first
    assert "CHATX_KEY" in first
    reads.clear()
    assert child() == first
    assert reads == []
    _grow(tree)  # declares CHATX_KEY
    assert "CHATX_KEY" not in child()
    assert any(p.endswith("chatx/plugin.yaml") for p in reads)


EDITS = [_nothing, _grow, _add, _remove, _break, _bundled]


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(EDITS), st.booleans()), max_size=6))
def test_a_sharing_cache_answers_as_a_cache_that_shares_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[Callable[[Path], None], bool]],
) -> None:
    """Any edits, each followed by a check of a new cache or of the last one: same answers."""
    root = tmp_path_factory.mktemp("shared")
    put(root / "bundled", "alpha", manifest("alpha", "ALPHA_TOKEN"))
    put(root / "home/plugins/platforms", "chatx", manifest("chatx", "CHATX_BOT_TOKEN"))
    put(root / "home/plugins/platforms", "mailx", manifest("mailx", "MAILX_PASSWORD"))
    shared = SharedScans()
    sharing, alone = checker(root, shared), checker(root, None)
    for edit, new_cache in steps:
        if (root / "home/plugins/platforms/mailx").exists() or edit is not _remove:
            edit(root)
        if new_cache:
            sharing = checker(root, shared)
        assert answer(sharing()[0]) == answer(alone()[0])
