"""The notifier's one ``poll(2)``: what it reports, how it fails, and that it keeps the GIL."""

from __future__ import annotations

import ctypes
import errno
import os
import select
from collections.abc import Iterator
from pathlib import Path

import pytest

from envscope.manifests._gate import create_gate
from envscope.manifests._inotify import _POLL_COUNT, LinuxNotifier

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")


@pytest.fixture
def notifier() -> Iterator[LinuxNotifier]:
    """A real notifier (the shared inotify queue read empty first), closed after the test."""
    made = LinuxNotifier()
    made.events()  # another test's events on the process's one inotify descriptor
    yield made
    made.close()


def _select_poll(notifier: LinuxNotifier) -> tuple[bool, bool]:
    """The same question asked of ``select.poll`` (the reference the ctypes call must match)."""
    fds = notifier._fds
    poller = select.poll()
    for entry in fds:
        poller.register(entry.fd, entry.events)
    ready = {fd for fd, mask in poller.poll(0) if mask}
    return fds[0].fd in ready, len(fds) > 1 and fds[1].fd in ready


def _pending_event(notifier: LinuxNotifier, tmp_path: Path) -> None:
    """Watch a directory and change it: the inotify queue has an event."""
    notifier.add_watch(str(tmp_path))
    (tmp_path / "changed").write_text("x")


def _drained(notifier: LinuxNotifier, tmp_path: Path) -> None:
    """An event that was read already: nothing is pending."""
    _pending_event(notifier, tmp_path)
    notifier.events()


def _hung_up_mount_fd(notifier: LinuxNotifier, tmp_path: Path) -> None:
    """The mount table's slot polls a pipe whose writer is gone (POLLHUP: any event counts)."""
    read, write = os.pipe()
    os.close(write)
    notifier._fds[1].fd = read


STATES = {
    "idle": lambda notifier, tmp_path: None,
    "an inotify event pending": _pending_event,
    "the event read already": _drained,
    "an event on the mount descriptor": _hung_up_mount_fd,
}


@pytest.mark.parametrize("state", list(STATES))
def test_the_poll_answers_as_select_poll_does(
    notifier: LinuxNotifier, tmp_path: Path, state: str
) -> None:
    """In every state, the ctypes poll and ``select.poll`` see the same descriptors ready."""
    STATES[state](notifier, tmp_path)
    expected = _select_poll(notifier)
    assert notifier._ready() == expected
    assert (
        expected
        == {
            "idle": (False, False),
            "an inotify event pending": (True, False),
            "the event read already": (False, False),
            "an event on the mount descriptor": (False, True),
        }[state]
    )


def test_an_interrupted_poll_is_asked_again(
    notifier: LinuxNotifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EINTR: the poll is made again, and its answer is the one returned."""
    real, calls = notifier._inotify.poll, []

    def interrupted_once(fds: object, n: int, timeout: int) -> int:
        calls.append(timeout)
        if len(calls) == 1:
            ctypes.set_errno(errno.EINTR)
            return -1
        return int(real(fds, n, timeout))

    monkeypatch.setattr(notifier._inotify, "poll", interrupted_once)
    assert notifier._ready() == (False, False)
    assert calls == [0, 0]


def test_a_failed_poll_raises(notifier: LinuxNotifier, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any other error is an ``OSError`` (the build fails loudly, never trusts the gate)."""

    def failing(fds: object, n: int, timeout: int) -> int:
        ctypes.set_errno(errno.EBADF)
        return -1

    monkeypatch.setattr(notifier._inotify, "poll", failing)
    with pytest.raises(OSError, match=os.strerror(errno.EBADF)) as raised:
        notifier.events()
    assert raised.value.errno == errno.EBADF


def test_the_poll_keeps_the_gil(notifier: LinuxNotifier) -> None:
    """The poll is a ``PyDLL`` function: made under the gate's lock, it keeps the GIL."""
    flags = notifier._inotify.poll._flags_
    assert flags & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]
    # no argtypes: the count is passed as poll(2)'s nfds_t, for both descriptors
    assert type(_POLL_COUNT) is ctypes.c_ulong
    assert _POLL_COUNT.value == len(notifier._fds) == 2
