"""git's rule for ``check-spawns``: a tracked file is checked even where ``.gitignore`` matches.

The index reader is pinned to ``git ls-files`` itself for index versions 2, 3
and 4 (with extended flags and prefix compression), a worktree's ``.git``
file and broken indexes; the walk is pinned to git's own answer of which
files are the project's (``git ls-files --cached --others --exclude-standard``)
over a tree of tracked and untracked files under file and directory patterns.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envscope.tools._git_index import parse_index, tracked
from envscope.tools._spawn_files import CheckError, python_files

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")

FILES = [
    "a.py", "sub/b.py", "sub/deep/c.py", "with space/d.py", "ünï/cöde.py",
    "gen/tracked.py", "gen/untracked.py", "gen/nested/tracked.py", "gen/nested/free.py",
    "local_settings.py", "build_tools/x.py", "notes/keep.py", "notes/drop.py",
    "p" * 120 + ".py",
]  # fmt: skip
IGNORE = "gen/\nlocal_settings.py\nnotes/*\n!notes/keep.py\n"
FORCED = ["gen/tracked.py", "gen/nested/tracked.py", "local_settings.py"]


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo), "LANG": "C.UTF-8",
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("import os, subprocess\nsubprocess.run(['x'], env=None)\n")
    (repo / ".gitignore").write_text(IGNORE)
    _git(repo, "add", "-A")
    _git(repo, "add", "-f", *FORCED)
    _git(repo, "rm", "-q", "--cached", "a.py")  # an untracked file nothing ignores
    return repo


def _ls(repo: Path, *args: str) -> set[str]:
    return {p for p in _git(repo, "ls-files", "-z", *args).split("\0") if p}


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_reads_as_git_ls_files(tmp_path: Path, version: int) -> None:
    repo = _repo(tmp_path)
    _git(repo, "update-index", "--index-version", str(version))
    _git(repo, "update-index", "--skip-worktree", "sub/b.py")  # an extended flag (v3+)
    found = tracked(str(repo))
    assert found is not None
    assert found.files == _ls(repo)
    assert found.holds(str(repo / "gen" / "tracked.py"))
    assert not found.holds(str(repo / "gen" / "untracked.py"))
    assert found.holds_under(str(repo / "gen" / "nested"))
    assert not found.holds_under(str(repo / "notes" / "nope"))


def test_a_worktrees_git_file_leads_to_its_index(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "x")
    _git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    found = tracked(str(tmp_path / "wt"))
    assert found is not None
    assert found.files == _ls(tmp_path / "wt")


@pytest.mark.parametrize(
    "data",
    [b"", b"DIRX" + bytes(8), b"DIRC" + (5).to_bytes(4, "big") + bytes(4),
     b"DIRC" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(30),
     b"DIRC" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(62) + b"no-nul",
     b"DIRC" + (4).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(62) + b"\x05a\0"],
    ids=["empty", "magic", "version-5", "cut-short", "no-nul", "strip-past-start"],
)  # fmt: skip
def test_an_index_it_cannot_read_is_none(data: bytes) -> None:
    assert parse_index(data) is None


@pytest.mark.parametrize("version", [2, 4])
def test_the_walk_checks_what_git_calls_the_projects(tmp_path: Path, version: int) -> None:
    """Tracked files under an ignore pattern are checked; untracked ignored ones are not."""
    repo = _repo(tmp_path)
    _git(repo, "update-index", "--index-version", str(version))
    errors: list[CheckError] = []
    walked = {
        os.path.relpath(p, repo).replace(os.sep, "/") for p in python_files([str(repo)], errors)
    }
    gits = {p for p in _ls(repo, "--cached", "--others", "--exclude-standard") if p.endswith(".py")}
    assert errors == []
    assert walked == gits
    assert {"gen/tracked.py", "gen/nested/tracked.py", "local_settings.py"} <= walked
    assert not {"gen/untracked.py", "gen/nested/free.py", "notes/drop.py"} & walked


def test_exclude_leaves_out_a_tracked_file_too(tmp_path: Path) -> None:
    """--exclude is the user's word: it holds for tracked files as well."""
    repo = _repo(tmp_path)
    errors: list[CheckError] = []
    walked = {os.path.relpath(p, repo) for p in python_files([str(repo)], errors, ["gen/"])}
    assert not any(p.startswith("gen") for p in walked)
    assert "local_settings.py" in walked
