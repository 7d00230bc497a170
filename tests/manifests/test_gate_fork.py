"""A change gate belongs to one process: a forked child never takes the parent's events.

After ``fork()`` parent and child share one inotify instance. Real forks here:
the parent's gate is proven engaged (a build answered with no probe), the
parent changes a manifest, a forked child builds (with the inherited host, and
with a host of its own for other homes, evicting them), and then the parent
builds: it must see the change (equal to the stamped host's child), and its
kernel watches are all still there. The reverse: what the child's gate
answers never depends on the parent having read first.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import Catalog, Host
from envscope.manifests._gate import ChangeGate, create_gate
from envscope.manifests._inotify import DoubtingNotifier, LinuxNotifier
from tests._watchdog import run_with_watchdog
from tests.manifests.test_gate import in_place, make_world, manifest

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")


def _kernel_watches(fd: int) -> set[str]:
    """The kernel's watches of one inotify instance (``/proc/self/fdinfo``): ``wd``s, in hex."""
    with open(f"/proc/self/fdinfo/{fd}", encoding="utf-8") as fh:
        return set(re.findall(r"^inotify wd:(\w+)", fh.read(), re.M))


def _in_child(work: Callable[[], bool], how: str = "os.fork") -> int | None:
    """Run ``work()`` in a forked child; its exit status (0: it returned True)."""
    if how == "multiprocessing":
        process = multiprocessing.get_context("fork").Process(target=_exit_with, args=(work,))
        process.start()
        process.join(120)
        return process.exitcode
    return _wait(_fork(work))


def _fork(work: Callable[[], bool]) -> int:
    """Fork; the child runs ``work()`` and exits 0 when it returned True. The child's pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        code = 1
        try:
            code = 0 if work() else 3
        finally:
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    """A forked child's exit status."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _exit_with(work: Callable[[], bool]) -> None:  # pragma: no cover - runs in the child
    sys.exit(0 if work() else 3)


@pytest.mark.parametrize("how", ["os.fork", "multiprocessing"])
@pytest.mark.parametrize("child_work", ["inherited host", "own host", "evicting host"])
def test_a_forked_child_never_takes_the_parents_events(
    tmp_path: Path, child_work: str, how: str
) -> None:
    """The parent sees its change after a child built; its watches are all still there."""
    w = make_world(tmp_path)
    gate = w.gated._homes.manifests()._gate
    assert gate is not None
    gate._max_homes = 2  # a child that serves other homes evicts the parent's
    fd = w.notifier._inotify.fd
    watches = _kernel_watches(fd) & {format(wd, "x") for wd in w.notifier._queue.watches}
    assert watches, "the parent's gate watches its home"
    in_place(w)  # a new secret declared: the parent's next build must strip it

    def work() -> bool:
        if child_work == "inherited host":
            if w.gated_calls() == 0:  # the child forgot the parent's homes: the stamp answers
                return False
            for _ in range(3):
                w.build(w.gated)
            return True
        own = Host(w.launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
        host = own if child_work == "own host" else w.gated
        for i in range(4):
            home = w.root / f"child-home-{i}"
            (home / "plugins" / "platforms" / "x").mkdir(parents=True)
            (home / "plugins" / "platforms" / "x" / "plugin.yaml").write_text(manifest("XCHAT"))
            for _ in range(2):
                with host.routed(home, scope={}):
                    host.build_subprocess_env()
        w.build(w.gated)
        return True

    assert _in_child(work, how) == 0
    assert watches <= _kernel_watches(fd)  # the child removed none of the parent's
    assert w.gated_calls() > 0, "the parent's gate answered: the child took its event"
    assert w.build(w.gated) == w.build(w.stamped)
    assert "PCHAT_EXTRA" not in w.build(w.gated)


def test_the_childs_gate_answers_for_itself(tmp_path: Path) -> None:
    """In the child, a change made after the fork is seen, though the parent read first."""
    w = make_world(tmp_path)
    read, write = os.pipe()

    def work() -> bool:
        os.close(write)
        os.read(read, 1)  # the parent changed the manifest and built (it read the events)
        return w.build(w.gated) == w.build(w.stamped) and "PCHAT_EXTRA" not in w.build(w.gated)

    pid = _fork(work)
    os.close(read)
    in_place(w)
    assert "PCHAT_EXTRA" not in w.build(w.gated)
    os.write(write, b"x")
    os.close(write)
    assert _wait(pid) == 0


def test_a_gate_with_no_notifier_of_its_own_stamps_every_build(tmp_path: Path) -> None:
    """Where the child cannot make an inotify instance, every answer is doubt (the stamp)."""
    gate = ChangeGate(DoubtingNotifier())
    root = str(tmp_path)
    begun = gate.begin("home", (root,), ())
    assert begun.failed
    assert not gate.unchanged("home")
    assert isinstance(DoubtingNotifier().forked(), LinuxNotifier)  # an instance can be made here


def _closed(w: object, how: str) -> list[int]:
    """``os.closerange`` as a daemonizing host runs it: the gate's descriptors gone or reused.

    Returns the descriptors this test opened in their place (to close afterwards).
    """
    notifier = w.notifier  # type: ignore[attr-defined]
    numbers = [notifier._inotify.fd]
    if notifier._mounts is not None:
        numbers.append(notifier._mounts)
    opened: list[int] = []
    for fd in numbers:
        os.close(fd)
        if how == "pipe":
            read, write = os.pipe()
            os.dup2(read, fd)
            opened += [fd, read, write]
        elif how == "file":
            other = os.open(w.platform_manifest, os.O_RDONLY)  # type: ignore[attr-defined]
            os.dup2(other, fd)
            opened += [fd, other]
    return opened


@pytest.mark.parametrize("how", ["closed", "pipe", "file"])
def test_a_host_that_closes_inherited_descriptors_keeps_building_correctly(
    tmp_path: Path, how: str
) -> None:
    """closerange: no bare OSError, no stale answer, no hang; the gate re-arms afterwards."""
    w = make_world(tmp_path)
    opened = _closed(w, how)
    try:
        in_place(w)  # a secret declared after the descriptors were lost
        w.gated_fs.reset_counts()
        gated = run_with_watchdog(lambda: w.build(w.gated), 10.0)
        assert sum(w.gated_fs.calls.values()) > 0, "the gate answered after a loss"
        assert gated == w.build(w.stamped)
        assert "PCHAT_EXTRA" not in gated
        for _ in range(3):  # re-armed on a new instance: equal, then answered by the gate
            assert w.build(w.gated) == w.build(w.stamped)
        assert w.gated_calls() == 0, "the gate never re-armed"
    finally:
        for fd in opened:
            with contextlib.suppress(OSError):
                os.close(fd)


def test_an_unreadable_mount_table_means_no_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No mount table (``EACCES``): no gate (every home stamped), never a gate blind to mounts."""
    real_open = os.open

    def refusing(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith("/mountinfo"):
            raise PermissionError(13, "refused", path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing)
    assert create_gate() is None
    assert isinstance(DoubtingNotifier().renewed(), DoubtingNotifier)
    host = Host(tmp_path, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    assert host._homes.manifests()._gate is None


def test_a_closed_mount_table_descriptor_alone_is_a_loss(tmp_path: Path) -> None:
    """Only the mount table's descriptor closed: POLLNVAL is a loss, not a mount change forever."""
    w = make_world(tmp_path)
    mounts = w.notifier._mounts
    assert mounts is not None
    old_queue = w.notifier._queue
    assert old_queue.watches
    os.close(mounts)
    in_place(w)
    assert w.gated_calls() > 0, "the gate answered after its mount table was lost"
    assert w.build(w.gated) == w.build(w.stamped)
    for _ in range(3):  # a new notifier: the gate re-arms and answers again
        assert w.build(w.gated) == w.build(w.stamped)
    assert w.gated_calls() == 0, "the gate never re-armed"
    assert not old_queue.watches, "the lost notifier's watches were never released"


def test_a_released_notifier_never_closes_a_reused_mount_table_number() -> None:
    """closerange, then the number reused by a pipe: releasing the notifier leaves the pipe open."""
    notifier = LinuxNotifier()
    number = notifier._mounts
    os.close(number)
    read, write = os.pipe()
    os.dup2(read, number)
    try:
        notifier.close()
        assert os.fstat(number).st_ino == os.fstat(write).st_ino  # still the pipe
    finally:
        for fd in {number, read, write}:
            with contextlib.suppress(OSError):
                os.close(fd)


def test_a_forked_child_never_closes_a_reused_mount_table_number() -> None:
    """The number reused by a pipe before the fork: the child's new notifier leaves it open."""
    notifier = LinuxNotifier()
    number = notifier._mounts
    os.close(number)
    read, write = os.pipe()
    os.dup2(read, number)

    def work() -> bool:
        child = notifier.forked()
        pipe = os.fstat(write).st_ino  # both ends of a pipe share its inode
        try:  # the number still names the pipe (not closed, nor reused by the child's own)
            return os.fstat(number).st_ino == pipe
        finally:
            child.close()

    try:
        assert _wait(_fork(work)) == 0
    finally:
        notifier._finalizer.detach()
        for fd in {number, read, write}:
            with contextlib.suppress(OSError):
                os.close(fd)
