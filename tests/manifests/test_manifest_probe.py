"""The stat pass (``envscope.manifests._probe``): dangling links as plugin dirs and roots, absence.

A dangling symlink as a plugin directory or as a plugin root (``plugins/``,
``plugins/platforms/``) fails closed: a problem naming the link — fatal under
a platform root in ``"raise"`` mode — never ``complete=True``. A root that is
really absent (``ENOENT``, no link anywhere) is still fine, and so is a
symlink to a file in a root (it is not a plugin directory).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from envscope.errors import ManifestError
from envscope.manifests._probe import State, home_roots, probe
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests._privdrop import give_to_nobody, nobody_tree, run_as_nobody
from tests.manifests.test_faults import (
    CHATX_DECLARED,
    CHATX_DIR,
    PLATFORMS,
    PLUGIN_FAILED,
    RELAY_DECLARED,
    RELAY_DIR,
    RELAY_PREFIX_ONLY,
    SNIPPET,
    Mode,
    _outcome_from_json,
    assert_fails_closed,
    make_host,
    make_tree,
)
from tests.manifests.test_probe_read_race import traced_attempt


def _dangle(rel: str) -> Callable[[Path], None]:
    """Move ``rel`` aside and put a symlink to a vanished target in its place."""

    def apply(home: Path) -> None:
        shutil.rmtree(home / rel)
        (home / rel).symlink_to(home / "vanished" / rel)

    return apply


def _loop(rel: str) -> Callable[[Path], None]:
    def apply(home: Path) -> None:
        shutil.rmtree(home / rel)
        (home / rel).symlink_to(home / rel)

    return apply


@dataclass(frozen=True)
class Case:
    """One broken link: what it does, the path the problem names, what a first scan denies."""

    apply: Callable[[Path], None]
    path: str
    fatal: bool
    first_scan_forbidden: frozenset[str]


ALL_SUFFIXED = CHATX_DECLARED | RELAY_DECLARED | RELAY_PREFIX_ONLY | PLUGIN_FAILED
CASES: dict[str, Case] = {
    "platform plugin dir dangling": Case(_dangle(CHATX_DIR), CHATX_DIR, True, PLUGIN_FAILED),
    "platform plugin dir a symlink loop": Case(
        _loop(CHATX_DIR), f"{CHATX_DIR}/plugin.yaml", True, PLUGIN_FAILED
    ),
    "flat plugin dir dangling": Case(
        _dangle(RELAY_DIR), RELAY_DIR, False, RELAY_DECLARED | RELAY_PREFIX_ONLY
    ),
    "plugins/platforms dangling": Case(_dangle(PLATFORMS), PLATFORMS, True, ALL_SUFFIXED),
    "plugins/ dangling": Case(_dangle("plugins"), PLATFORMS, True, ALL_SUFFIXED),
}


@pytest.mark.parametrize("warm", [False, True], ids=["first-scan", "after-healthy-scan"])
@pytest.mark.parametrize("mode", ["deny", "raise"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dangling_plugin_dir_or_root_fails_closed(
    tmp_path: Path, name: str, mode: Mode, warm: bool
) -> None:
    """A link that cannot be followed is a problem: ManifestError (platform, raise) or denial."""
    case = CASES[name]
    launch, home = make_tree(tmp_path)
    host = make_host(launch, mode, InstrumentedFileSystem(clock_offset_ns=HOUR_NS))
    if warm:
        assert traced_attempt(host, home).complete is True
    case.apply(home)
    outcome = traced_attempt(host, home)
    if mode == "raise" and case.fatal:
        assert isinstance(outcome.error, ManifestError)
        assert outcome.error.path == str(home / case.path)
        return
    assert outcome.error is None
    forbidden = case.first_scan_forbidden | (CHATX_DECLARED | RELAY_DECLARED if warm else set())
    assert_fails_closed(outcome, home=home, path=case.path, forbidden=frozenset(forbidden))


def test_dangling_root_heals_when_its_target_appears(tmp_path: Path) -> None:
    """A dangling plugins/platforms link is re-checked each time and heals once it resolves."""
    launch, home = make_tree(tmp_path)
    real = tmp_path / "elsewhere"
    shutil.move(home / PLATFORMS, real)
    (home / PLATFORMS).symlink_to(tmp_path / "gone")
    host = make_host(launch, "deny", InstrumentedFileSystem(clock_offset_ns=HOUR_NS))
    for _ in range(2):
        assert traced_attempt(host, home).complete is False
    shutil.move(real, tmp_path / "gone")
    healed = traced_attempt(host, home)
    assert healed.complete is True
    assert healed.env is not None
    assert CHATX_DECLARED.isdisjoint(healed.env)


@pytest.mark.parametrize(
    "layout",
    ["no plugins dir", "no platforms dir", "plugins a symlink to a dir without platforms"],
)
def test_really_absent_roots_are_fine(tmp_path: Path, layout: str) -> None:
    """ENOENT with no link in the way is "no plugins": complete, nothing declared."""
    home = tmp_path / "home"
    home.mkdir()
    if layout == "no platforms dir":
        (home / "plugins").mkdir()
    elif layout != "no plugins dir":
        (tmp_path / "real-plugins").mkdir()
        (home / "plugins").symlink_to(tmp_path / "real-plugins")
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    found = probe(fs, home_roots(str(home), None))
    assert [rp.missing for rp in found.roots] == [True, layout == "no plugins dir"]
    host = make_host(Path(os.path.realpath(home)), "raise", fs)
    assert host.policy().complete is True


def test_symlink_to_a_file_in_a_root_is_not_a_plugin(tmp_path: Path) -> None:
    """A root entry linking to a regular file costs one stat and is neither plugin nor problem."""
    root = tmp_path / "plugins" / "platforms"
    root.mkdir(parents=True)
    (tmp_path / "README.md").write_text("docs\n")
    (root / "README.md").symlink_to(tmp_path / "README.md")
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    found = probe(fs, home_roots(str(tmp_path), None))
    assert found.roots[0].candidates == ()
    assert found.roots[0].error is None


def test_broken_plugin_dir_candidate_records_the_link(tmp_path: Path) -> None:
    """The broken candidate names the link, carries its errno and the link's own signature."""
    root = tmp_path / "plugins" / "platforms"
    root.mkdir(parents=True)
    (root / "chatx").symlink_to(tmp_path / "gone")
    found = probe(InstrumentedFileSystem(), home_roots(str(tmp_path), None))
    (cand,) = found.roots[0].candidates
    assert cand.state is State.BROKEN
    assert cand.error == errno.ENOENT
    assert cand.dirpath == str(root / "chatx")
    assert cand.signature is not None
    assert cand.signature.size == len(str(tmp_path / "gone"))


# -- for real, as uid 65534: a link whose target sits in a directory nobody can search ---------

# (id, what is moved behind the link, actions, mode, warm, path named, forbidden, fatal)
RealLinkCase = tuple[str, str, list[list[str]], Mode, bool, str, frozenset[str], bool]
REAL_LINKS: list[RealLinkCase] = [
    ("plugin dir link, first scan", CHATX_DIR, [["chmod", "../private", "000"]], "deny", False,
     f"{CHATX_DIR}/plugin.yaml", PLUGIN_FAILED | RELAY_DECLARED, True),
    ("plugin dir link, first scan, raise", CHATX_DIR, [["chmod", "../private", "000"]], "raise",
     False, f"{CHATX_DIR}/plugin.yaml", PLUGIN_FAILED, True),
    ("plugin dir link after a healthy scan", CHATX_DIR, [["chmod", "../private", "000"]], "deny",
     True, f"{CHATX_DIR}/plugin.yaml", PLUGIN_FAILED | RELAY_DECLARED, True),
    ("platforms root link after a healthy scan", PLATFORMS, [["chmod", "../private", "000"]],
     "deny", True, PLATFORMS, CHATX_DECLARED | RELAY_DECLARED, True),
    ("platforms root link, first scan, raise", PLATFORMS, [["chmod", "../private", "000"]],
     "raise", False, PLATFORMS, frozenset(), True),
]  # fmt: skip


@pytest.mark.privdrop
def test_links_into_unsearchable_dirs_fail_closed_as_nobody() -> None:
    """As uid 65534, a plugin dir or root symlinked into a chmod-000 directory fails closed."""
    with nobody_tree() as top:
        for case_id, moved, *_ in REAL_LINKS:
            make_tree(top / case_id)
            home = top / case_id / "B"
            private = top / case_id / "private"
            private.mkdir()
            shutil.move(home / moved, private / "target")
            (home / moved).symlink_to(private / "target")
        give_to_nobody(top)
        cases = [[c[0], c[2], c[3], c[4]] for c in REAL_LINKS]
        proc = run_as_nobody(SNIPPET, str(top), json.dumps(cases))
        assert proc.returncode == 0, proc.stderr
        results = json.loads(proc.stdout)
        assert len(results) == len(REAL_LINKS)
        for (case_id, _, _, mode, warm, path, forbidden, fatal), got in zip(
            REAL_LINKS, results, strict=True
        ):
            home = Path(os.path.realpath(top / case_id / "B"))
            if warm:
                assert got["healthy"]["complete"] is True, case_id
            outcome = _outcome_from_json(got["outcome"])
            if mode == "raise" and fatal:
                assert outcome.error is not None, case_id
            else:
                assert outcome.error is None, case_id
            assert_fails_closed(outcome, home=home, path=path, forbidden=forbidden)


def test_missing_root_that_cannot_be_checked_fails_closed(tmp_path: Path) -> None:
    """A missing root whose lstat fails (not ENOENT) is a failing root (fatal: a platform one)."""
    launch, home = make_tree(tmp_path)
    shutil.rmtree(home / PLATFORMS)
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    fs.inject(home / PLATFORMS, errno.EACCES, ops=("stat",))
    raised = traced_attempt(make_host(launch, "raise", fs), home)
    assert isinstance(raised.error, ManifestError)
    assert raised.error.path == str(home / PLATFORMS)
    denied = traced_attempt(make_host(launch, "deny", fs), home)
    assert denied.complete is False
    assert denied.env is not None
    assert RELAY_DECLARED.isdisjoint(denied.env)


def test_broken_plugin_dir_is_stable_on_the_warm_path(tmp_path: Path) -> None:
    """An unchanged dangling link probes to the very same root object; a new one is seen."""
    root = tmp_path / "plugins" / "platforms"
    for name in ("alpha", "beta"):
        (root / name).mkdir(parents=True)
        (root / name / "plugin.yaml").write_text("requires_env: [X_TOKEN]\n")
    (root / "gone").symlink_to(tmp_path / "nowhere")
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    roots = home_roots(str(tmp_path), None)
    first = probe(fs, roots)
    again = probe(fs, roots, {rp.root.path: rp for rp in first.roots})
    assert again.roots[0] is first.roots[0]
    assert [c.state for c in first.roots[0].candidates] == [
        State.REGULAR,
        State.REGULAR,
        State.BROKEN,
    ]
    shutil.move(root / "beta", tmp_path / "beta")
    (root / "beta").symlink_to(tmp_path / "vanished")  # a healthy plugin becomes a dangling link
    later = probe(fs, roots, {rp.root.path: rp for rp in again.roots})
    assert [c.state for c in later.roots[0].candidates] == [
        State.REGULAR,
        State.BROKEN,
        State.BROKEN,
    ]


def test_broken_link_whose_lstat_also_fails_has_no_signature(tmp_path: Path) -> None:
    """A link that neither stat nor lstat can read is still a broken plugin dir (no signature)."""
    root = tmp_path / "plugins" / "platforms"
    root.mkdir(parents=True)
    (root / "chatx").symlink_to(tmp_path / "gone")
    fs = InstrumentedFileSystem()
    fs.inject(root / "chatx", errno.EIO, ops=("stat",))
    (cand,) = probe(fs, home_roots(str(tmp_path), None)).roots[0].candidates
    assert cand.state is State.BROKEN
    assert cand.error == errno.EIO
    assert cand.signature is None


@pytest.mark.parametrize(
    ("first_offset", "second_offset", "same", "racy"),
    [
        (HOUR_NS, HOUR_NS, True, False),  # settled, unchanged: the cached object
        (HOUR_NS, 0, False, True),  # the clock moved back into the racy window
        (0, HOUR_NS, False, False),  # racy when probed, settled since
        (0, 0, True, True),  # still racy: the cached object (racy flag and all)
    ],
)
def test_recheck_follows_the_racy_window(
    tmp_path: Path, first_offset: int, second_offset: int, same: bool, racy: bool
) -> None:
    """A candidate comes back as the cached object only if its racy flag holds; one stat each."""
    plugin = tmp_path / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("requires_env: [CHATX_TOKEN]\n")
    fs = InstrumentedFileSystem(clock_offset_ns=first_offset)
    roots = home_roots(str(tmp_path), None)
    first = probe(fs, roots)
    fs.clock_offset_ns = second_offset
    fs.calls.clear()
    again = probe(fs, roots, {rp.root.path: rp for rp in first.roots})
    (before,) = first.roots[0].candidates
    (after,) = again.roots[0].candidates
    assert (after is before, after.racy) == (same, racy)
    assert after == before  # the stamp is the same either way
    assert fs.calls["stat"] == 1  # the one lstat of plugin.yaml
