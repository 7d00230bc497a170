"""The process's one inotify instance, shared by every gate: who hears what, and when a watch goes.

The kernel's own list of watches is read from ``/proc/self/fdinfo/<fd>`` (one
``inotify wd:`` line per watch), so each test checks the kernel, not only the
notifier's bookkeeping.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from envscope.manifests._gate import create_gate
from envscope.manifests._inotify import LinuxNotifier, _Inotify

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")


def kernel_watches() -> set[int]:
    """The watch descriptors the kernel holds on the shared inotify instance."""
    fd = _Inotify.get().fd
    lines = Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
    # "inotify wd:5f ino:… sdev:… mask:…": the kernel prints the descriptor in hex
    return {
        int(line.split()[1].split(":")[1], 16) for line in lines if line.startswith("inotify wd:")
    }


@pytest.fixture
def two() -> Iterator[tuple[LinuxNotifier, LinuxNotifier]]:
    """Two notifiers (two gates' views) on the shared instance, its queue read empty first."""
    a, b = LinuxNotifier(), LinuxNotifier()
    a.events()
    b.events()
    yield a, b
    a.close()
    b.close()


def _touch(directory: Path, name: str = "f") -> None:
    (directory / name).write_text(name)


def test_only_the_gates_holding_a_watch_hear_its_events(
    two: tuple[LinuxNotifier, LinuxNotifier], tmp_path: Path
) -> None:
    """A gate that does not watch a directory gets none of its events."""
    a, b = two
    wd = a.add_watch(str(tmp_path))
    _touch(tmp_path)
    assert {w for w, _ in a.events()[0]} == {wd}
    assert b.events()[0] == []


def test_a_shared_watch_stays_until_the_last_gate_drops_it(
    two: tuple[LinuxNotifier, LinuxNotifier], tmp_path: Path
) -> None:
    """Two gates on one directory share the kernel's watch; it goes when both dropped it."""
    a, b = two
    wd = a.add_watch(str(tmp_path))
    assert b.add_watch(str(tmp_path)) == wd  # one inode, one descriptor
    a.add_watch(str(tmp_path))  # a gate re-arming the same path
    a.rm_watch(wd)
    assert wd in kernel_watches()
    _touch(tmp_path)
    assert a.events()[0] == []  # a dropped it
    assert {w for w, _ in b.events()[0]} == {wd}
    b.rm_watch(wd)
    assert wd not in kernel_watches()


def test_a_collected_gates_watches_are_released(tmp_path: Path) -> None:
    """A notifier that is collected without ``close`` gives its watches back at the next call."""
    keeper = LinuxNotifier()
    try:
        shared, alone = tmp_path / "shared", tmp_path / "alone"
        shared.mkdir()
        alone.mkdir()
        gone = LinuxNotifier()
        wd_shared = gone.add_watch(str(shared))
        wd_alone = gone.add_watch(str(alone))
        assert keeper.add_watch(str(shared)) == wd_shared
        del gone
        gc.collect()
        keeper.events()  # the next call under the lock buries the collected queue
        watches = kernel_watches()
        assert wd_shared in watches
        assert wd_alone not in watches
        _touch(shared)
        assert {w for w, _ in keeper.events()[0]} == {wd_shared}
    finally:
        keeper.close()


def test_a_removed_directory_drops_its_watch_everywhere(
    two: tuple[LinuxNotifier, LinuxNotifier], tmp_path: Path
) -> None:
    """The kernel's IN_IGNORED (the directory is gone) reaches every holder and ends the watch."""
    a, b = two
    gone = tmp_path / "gone"
    gone.mkdir()
    wd = a.add_watch(str(gone))
    b.add_watch(str(gone))
    os.rmdir(gone)
    assert wd in {w for w, _ in a.events()[0]}
    assert wd in {w for w, _ in b.events()[0]}
    assert wd not in kernel_watches()
    a.rm_watch(wd)  # dropping a watch the kernel ended is no error
    b.rm_watch(wd)
