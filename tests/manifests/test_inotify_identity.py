"""The re-stat of a clean home's roots: ``statx`` keeping the GIL, answering as ``os.stat`` does.

The notifier's ``identity`` (``statx`` through ``ctypes.PyDLL``) and the
gate's ``_identity`` (``os.stat``, made where a probe may be slow) must give
the same answer for every path: the gate records one and compares the other.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.manifests import _gate
from envscope.manifests._gate import create_gate
from envscope.manifests._inotify import IDENTITY_UNKNOWN, LinuxNotifier
from tests._privdrop import give_to_nobody, nobody_tree, run_as_nobody

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")


@pytest.fixture
def notifier() -> Iterator[LinuxNotifier]:
    """A real notifier, closed after the test."""
    made = LinuxNotifier()
    yield made
    made.close()


def _tree(tmp: Path) -> dict[str, tuple[str, str]]:
    """Each path kind -> (the path, the answer expected: an identity, absent or unknown)."""
    (tmp / "dir").mkdir()
    (tmp / "file").write_text("x")
    (tmp / "link-to-dir").symlink_to(tmp / "dir")
    (tmp / "link-to-file").symlink_to(tmp / "file")
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    (tmp / "loop").symlink_to(tmp / "loop")
    return {
        "a directory": (str(tmp / "dir"), "identity"),
        "a file": (str(tmp / "file"), "identity"),
        "a symlink to a directory (followed)": (str(tmp / "link-to-dir"), "identity"),
        "a symlink to a file (followed)": (str(tmp / "link-to-file"), "identity"),
        "a trailing slash": (str(tmp / "dir") + "/", "identity"),
        "a dotted path": (str(tmp / "dir" / ".." / "file"), "identity"),
        "a relative path": (os.path.relpath(tmp / "dir"), "identity"),
        "a non-UTF-8 name": (str(tmp / "dir") + "/../\udcff-missing", "absent"),
        "the root": ("/", "identity"),
        "procfs": ("/proc", "identity"),
        "sysfs": ("/sys", "identity"),
        "a tmpfs": ("/dev/shm", "identity"),
        "a missing path": (str(tmp / "missing"), "absent"),
        "a dangling symlink": (str(tmp / "dangling"), "absent"),
        "a file used as a directory (ENOTDIR)": (str(tmp / "file" / "child"), "absent"),
        "the empty path": ("", "absent"),
        "a symlink loop (ELOOP)": (str(tmp / "loop"), "unknown"),
        "a name too long (ENAMETOOLONG)": (str(tmp / ("n" * 300)), "unknown"),
        "a NUL byte": (str(tmp / "dir") + "\0/x", "unknown"),
    }


def _kind(answer: object) -> str:
    if answer is None:
        return "absent"
    if answer == IDENTITY_UNKNOWN:
        return "unknown"
    return "identity"


def test_statx_answers_as_os_stat_for_every_kind_of_path(
    notifier: LinuxNotifier, tmp_path: Path
) -> None:
    """Every path kind: the ``statx`` identity equals ``os.stat``'s and is the kind expected."""
    for name, (path, expected) in _tree(tmp_path).items():
        got = notifier.identity(path)
        assert got == _gate._identity(path), name
        assert _kind(got) == expected, name
        if expected == "identity":
            st = os.stat(path)
            assert got == (st.st_dev, st.st_ino), name


def test_statx_identity_differs_after_a_replace(notifier: LinuxNotifier, tmp_path: Path) -> None:
    """A directory renamed away and a copy moved in: a new identity (the gate's root row)."""
    root = tmp_path / "root"
    root.mkdir()
    before = notifier.identity(str(root))
    root.rename(tmp_path / "old")
    root.mkdir()
    after = notifier.identity(str(root))
    assert before != after
    assert after == _gate._identity(str(root))


def _failing(err: int) -> Callable[..., int]:
    def statx(*args: object) -> int:
        ctypes.set_errno(err)
        return -1

    return statx


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (errno.ENOENT, None),
        (errno.ENOTDIR, None),
        (errno.EACCES, IDENTITY_UNKNOWN),
        (errno.EPERM, IDENTITY_UNKNOWN),  # a seccomp filter refusing statx
        (errno.ENOSYS, IDENTITY_UNKNOWN),
        (errno.EIO, IDENTITY_UNKNOWN),
    ],
)
def test_a_failed_statx_is_absent_only_for_enoent_and_enotdir(
    notifier: LinuxNotifier,
    monkeypatch: pytest.MonkeyPatch,
    err: int,
    expected: object,
) -> None:
    """Any failure but "no such path" is doubt (``IDENTITY_UNKNOWN``), never an absent root."""
    monkeypatch.setattr(notifier._inotify, "statx", _failing(err))
    assert notifier.identity("/") == expected


def test_an_answer_without_the_inode_is_doubt(
    notifier: LinuxNotifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``statx`` succeeding without ``STATX_INO`` in its mask: doubt, not an identity."""

    def no_inode(dirfd: int, path: bytes, flags: int, mask: int, buf: object) -> int:
        return 0  # the buffer stays zeroed: stx_mask == 0

    monkeypatch.setattr(notifier._inotify, "statx", no_inode)
    assert notifier.identity("/") == IDENTITY_UNKNOWN


@pytest.mark.parametrize("answer", [None, IDENTITY_UNKNOWN])
def test_no_gate_where_statx_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, answer: object
) -> None:
    """A process whose ``statx`` of ``/`` fails (ENOSYS, a seccomp filter) makes no gate."""
    from envscope.manifests._inotify import _Inotify

    monkeypatch.setattr(_Inotify, "_shared", None)  # the process's instance, made again
    monkeypatch.setattr(_Inotify, "identity", lambda self, path: answer)
    with pytest.raises(OSError, match="statx"):
        LinuxNotifier()
    assert create_gate() is None
    assert _Inotify._shared is None


def test_statx_keeps_the_gil(notifier: LinuxNotifier) -> None:
    """The re-stat is a ``PyDLL`` function: a warm build's re-stats hand the GIL to nobody."""
    flags = notifier._inotify.statx._flags_
    assert flags & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]


_AS_NOBODY = """
import json, sys
from envscope.manifests import _gate
from envscope.manifests._inotify import LinuxNotifier
n = LinuxNotifier()
print(json.dumps([[list(a) if a else a for a in (n.identity(p), _gate._identity(p))]
                  for p in sys.argv[1:]]))
"""


def test_an_unsearchable_parent_is_doubt_for_an_unprivileged_user() -> None:
    """As uid 65534, a root behind a ``chmod 000`` directory: both re-stats say unknown (EACCES)."""
    with nobody_tree() as top:
        closed = top / "closed"
        (closed / "root").mkdir(parents=True)
        (top / "open").mkdir()
        give_to_nobody(top)
        closed.chmod(0o000)
        try:
            done = run_as_nobody(_AS_NOBODY, str(closed / "root"), str(top / "open"))
        finally:
            closed.chmod(0o755)
        assert done.returncode == 0, done.stderr
        (behind, behind_stat), (open_, open_stat) = json.loads(done.stdout)
        assert behind == behind_stat == list(IDENTITY_UNKNOWN)
        assert open_ == open_stat
        st = os.stat(top / "open")
        assert open_ == [st.st_dev, st.st_ino]


def test_the_walk_check_names_every_file_system_above_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_crossed``: the ancestors as given and resolved, known devices left out, doubt as None."""
    (tmp_path / "real" / "root").mkdir(parents=True)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    here = os.stat(tmp_path).st_dev
    crossed = _gate._crossed([str(tmp_path / "via" / "root")], set())
    assert crossed is not None
    assert here in crossed
    assert os.stat("/").st_dev in crossed
    assert _gate._crossed([str(tmp_path / "via" / "root")], {here, os.stat("/").st_dev}) == {
        d: p for d, p in crossed.items() if d not in (here, os.stat("/").st_dev)
    }
    missing = _gate._crossed([str(tmp_path / "gone" / "deeper" / "root")], set())
    assert missing is not None
    assert here in missing
    seen: list[str] = []
    real = _gate._identity

    def recording(path: str) -> tuple[int, int] | None:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(_gate, "_identity", recording)
    _gate._crossed([str(tmp_path / "via" / "root")], set())
    assert str(tmp_path / "via") in seen
    assert str(tmp_path / "real") in seen
    monkeypatch.setattr(
        _gate, "_identity", lambda path: IDENTITY_UNKNOWN if path == str(tmp_path) else real(path)
    )
    assert _gate._crossed([str(tmp_path / "via" / "root")], set()) is None


@given(st.text(st.characters(), max_size=12) | st.sampled_from(["\udcff", "a\udc80b", "\ud800"]))
def test_a_re_stat_encodes_its_path_as_os_fsencode_does(name: str) -> None:
    """The re-stat's inlined encoding is ``os.fsencode``'s (equal bytes, or the same error)."""
    from envscope.manifests import _inotify

    try:
        want: bytes | type[BaseException] = os.fsencode(name)
    except UnicodeEncodeError as exc:
        want = type(exc)
    try:
        got: bytes | type[BaseException] = name.encode(_inotify._FS_ENCODING, _inotify._FS_ERRORS)
    except UnicodeEncodeError as exc:
        got = type(exc)
    assert got == want
