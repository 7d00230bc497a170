"""``home_identity`` and ``home_directory``: the kernel's resolution answers as
``os.path.realpath`` (and ``os.path.isdir``) do.

``_inputs.kernel_realpath`` is a fast copy of ``realpath`` for a path that
exists; every path below is resolved both ways and must name the same
directory, whichever of the two answered.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import pytest

from envscope import _inputs
from envscope._inputs import home_directory, home_identity, kernel_realpath


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Directories, absolute and relative links, a chain, a loop, a dangling link, a file."""
    root = tmp_path.resolve()
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "file").write_text("x")
    (root / "odd (deleted)").mkdir()
    (root / "sp ace").mkdir()
    os.mkdir(os.fsencode(root) + b"/non-utf8-\xff")
    (root / "abs").symlink_to(root / "a")
    (root / "a" / "rel").symlink_to("b")
    (root / "chain").symlink_to("abs")
    (root / "loop").symlink_to("loop")
    (root / "dangling").symlink_to(root / "missing")
    (root / "updir").symlink_to("a/b/..")
    monkeypatch.chdir(root / "a")
    return root


CLONE_FILES = 0x400  # unshare(2): the calling thread takes its own descriptor table

PATHS = [
    "{root}",
    "{root}/a/b",
    "{root}/a/b/",
    "{root}//a///b",
    "/{root}",
    "{root}/abs",
    "{root}/abs/b",
    "{root}/abs/../a",
    "{root}/chain/rel",
    "{root}/a/rel/..",
    "{root}/updir",
    "{root}/a/b/../../abs",
    "{root}/a/file",
    "{root}/a/file/..",
    "{root}/odd (deleted)",
    "{root}/sp ace",
    "{root}/non-utf8-\udcff",
    "{root}/missing",
    "{root}/missing/x/..",
    "{root}/dangling",
    "{root}/dangling/x",
    "{root}/loop",
    "{root}/loop/x",
    ".",
    "..",
    "b",
    "rel",
    "rel/..",
    "./b/../rel",
    "/",
    "//",
    "/proc/self",
    "/proc/self/root",
    "/proc/self/cwd",
]


@pytest.mark.parametrize("shape", PATHS)
@pytest.mark.parametrize("proc", [True, False], ids=["kernel", "no-proc"])
def test_a_home_resolves_as_realpath_does(
    tree: Path, monkeypatch: pytest.MonkeyPatch, shape: str, proc: bool
) -> None:
    """The same identity with the kernel's answer and without ``/proc`` (``realpath`` alone)."""
    if not proc:
        monkeypatch.setattr(_inputs, "PROC_FD", str(tree / "no-proc") + "/")
    path = shape.format(root=tree)
    assert home_identity(path) == os.path.realpath(path)
    assert home_directory(path) == (os.path.realpath(path), os.path.isdir(os.path.realpath(path)))


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="O_PATH is Linux's")
def test_the_kernel_answers_for_a_path_that_exists(tree: Path) -> None:
    """The fast copy is the one that answers where it can (else it would pay nothing)."""
    assert kernel_realpath(str(tree / "chain" / "rel")) == str(tree / "a" / "b")
    assert kernel_realpath(str(tree / "missing")) is None
    assert kernel_realpath(str(tree / "loop")) is None
    assert kernel_realpath(str(tree / "odd (deleted)")) is None  # realpath answers it
    assert kernel_realpath(str(tree / "a" / "file")) == str(tree / "a" / "file")
    assert kernel_realpath(str(tree / "a" / "file"), directory=True) is None
    assert kernel_realpath(str(tree / "abs"), directory=True) == str(tree / "a")


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="O_PATH and unshare are Linux's")
def test_a_thread_with_its_own_descriptor_table_reads_its_own_link(tree: Path) -> None:
    """The link is read in the calling thread's descriptor table (``/proc/thread-self``).

    A thread that unshared its table (``unshare(CLONE_FILES)``) gets descriptor
    numbers the process's main table gives to other files: read through
    ``/proc/self`` the number would name one of those, another home's identity.
    """
    other = os.open(tree / "a" / "file", os.O_RDONLY)  # the lowest free number, in both tables
    found: list[object] = []

    def in_own_table() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_FILES) != 0:
            found.append(OSError(ctypes.get_errno(), "unshare"))
            return
        os.close(other)  # free in this thread's table only: the next open takes it
        found.append(kernel_realpath(str(tree / "chain" / "rel")))

    try:
        worker = threading.Thread(target=in_own_table)
        worker.start()
        worker.join()
    finally:
        os.close(other)
    assert found == [str(tree / "a" / "b")]


def test_a_pipe_link_is_no_answer(monkeypatch: pytest.MonkeyPatch, tree: Path) -> None:
    """A descriptor link that is no absolute path (``pipe:[n]``) leaves it to realpath."""
    r, w = os.pipe()
    try:
        assert kernel_realpath(f"/proc/self/fd/{r}") is None
        assert home_identity(f"/proc/self/fd/{r}") == os.path.realpath(f"/proc/self/fd/{r}")
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("name", ["a", "a/file", "missing", "loop"])
def test_home_directory_asks_the_kernel_once(
    tree: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A directory, a file, a missing path, a loop: one kernel resolution at most, whatever
    answers (the fallback is ``realpath`` and a ``stat``, not the kernel again)."""
    asked: list[str] = []
    real = _inputs.kernel_realpath

    def counting(path: str, *, directory: bool = False) -> str | None:
        asked.append(path)
        return real(path, directory=directory)

    monkeypatch.setattr(_inputs, "kernel_realpath", counting)
    path = str(tree / name)
    assert home_directory(path) == (os.path.realpath(path), os.path.isdir(path))
    assert len(asked) == 1
