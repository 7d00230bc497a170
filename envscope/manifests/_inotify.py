"""inotify and the mount table through ``ctypes``: the change-notification gate's notifier.

``LinuxNotifier`` is one gate's view of the process's one inotify instance
(``_Inotify``, shared by every gate: inotify instances are a small per-user
limit), of the calling thread's mount table (``/proc/thread-self/mountinfo``,
polled with the inotify descriptor in one ``poll``) and mount namespace (its
root's mount id, read once per poll: ``unshare`` and ``setns`` change it with
no change in the table polled), of ``statfs`` and of ``statx`` (a clean home's root re-stats,
keeping the GIL). ``Notifier`` is the seam the failure-mode tests inject faults
through (an overflow, the watch limit, a mount change, a file system type, a
failed re-stat). Only the gates holding a watch hear of its events; a gate's queue
is bounded (``MAX_QUEUED``, then one overflow). A collected gate's watches are
released at the next call under the lock (its finalizer takes none).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import struct
import sys
import threading
import weakref
from typing import Protocol

__all__ = [
    "IDENTITY_UNKNOWN",
    "IN_IGNORED",
    "IN_Q_OVERFLOW",
    "MAX_QUEUED",
    "WATCH_MASK",
    "DoubtingNotifier",
    "LinuxNotifier",
    "Notifier",
    "NotifierLost",
    "adopt_lock",
    "failed_identity",
]

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
MAX_QUEUED = 4096
"""Events kept for a gate between two of its checks; more, and they become one overflow."""

_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

Identity = tuple[int, int] | None
"""``(st_dev, st_ino)`` of a path; None when no such path (``ENOENT``, ``ENOTDIR``)."""

IDENTITY_UNKNOWN: tuple[int, int] = (-1, -1)
"""A re-stat that failed for any other reason: equal to no real identity, so it is doubt."""

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
STATX_TYPE = 0x001
STATX_INO = 0x100
# struct statx (linux/stat.h, one layout on every architecture): stx_mask (u32) at 0,
# stx_ino (u64) at 32, stx_dev_major and stx_dev_minor (u32 each) at 136 and 140.
_STATX = struct.Struct("=I28xQ96xII")
_STATX_MODE = struct.Struct("=I24xH2xQ96xII")  # stx_mode (u16) at 28 too
_STATX_SIZE = 256
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR})


def failed_identity(err: int) -> Identity:
    """What a failed re-stat says: None (no such path) for ``ENOENT``/``ENOTDIR``, else doubt."""
    return None if err in _ABSENT else IDENTITY_UNKNOWN


class Notifier(Protocol):
    """The gate's view of inotify and the mount table (a seam: tests inject faults)."""

    def add_watch(self, path: str) -> int:
        """Watch a directory (``WATCH_MASK``); its watch descriptor. Raises ``OSError``."""
        ...

    def rm_watch(self, wd: int) -> None:
        """Stop watching (no error when the watch is already gone)."""
        ...

    def events(self) -> tuple[list[tuple[int, int]], bool]:
        """The queued events ``(wd, mask)`` and whether the mount table changed, without waiting."""
        ...

    def fs_type(self, path: str) -> int | None:
        """The ``statfs`` type of the file system holding ``path``; None when unknown."""
        ...

    def identity(self, path: str) -> Identity:
        """``(st_dev, st_ino)`` of ``path`` (followed), as ``os.stat`` has them, for a re-stat.

        None when there is no such path; ``IDENTITY_UNKNOWN`` on any other failure.
        """
        ...

    def forked(self) -> Notifier:
        """A notifier of this process, after a ``fork()``: the parent's is never touched."""
        ...

    def renewed(self) -> Notifier:
        """A new notifier after this one raised ``NotifierLost`` (no lost number touched)."""
        ...

    def close(self) -> None:
        """Release the inotify descriptor."""
        ...


class NotifierLost(OSError):
    """A descriptor the notifier polls is no longer the one it opened (closed or reused).

    The gate that hears it forgets every home and takes a new notifier: every
    home goes to the stamp, and no descriptor number someone else now holds is
    read, polled or closed again.
    """


class _PollFd(ctypes.Structure):
    """``struct pollfd``."""

    _fields_ = (("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short))


_PollPair = _PollFd * 2  # the inotify and mount-table descriptors (a type costs ~20 µs: once)
_POLL_COUNT = ctypes.c_ulong(2)  # poll(2)'s nfds_t for a ``_PollPair``
_StatxBuffer = ctypes.c_char * _STATX_SIZE
_LinkBuffer = ctypes.c_char * 64  # "mnt:[4026531840]": the namespace's link, 16 bytes today
_LINK_ROOM = ctypes.c_size_t(63)  # a NUL always ends what readlink(2) wrote
_NAMESPACE = b"/proc/thread-self/ns/mnt"
_ROOT = b"/"
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
"""``os.fsencode``'s codec, read once: a re-stat encodes its path without a call into ``os``."""
STATX_MNT_ID = 0x1000
_STATX_MNT = struct.Struct("=I140xQ")  # stx_mask (u32) at 0, stx_mnt_id (u64) at 144
_MOUNT_TABLE = "/proc/thread-self/mountinfo"


class _StatFs(ctypes.Structure):
    # Only ``f_type`` is read: it is the first field on every Linux ABI (a long); the
    # rest of ``struct statfs`` (at most 120 bytes) is padding room.
    _fields_ = (("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 248))


class _Inotify:
    """The process's one inotify instance, shared by every gate (instances are a per-user limit).

    The kernel gives one inode one ``wd``: a watch stays while some gate's queue
    holds it (``_drop`` asks the others); the events read are handed to the
    queues holding their watch.
    """

    _shared: _Inotify | None = None
    _shared_lock = threading.Lock()
    _at_fork = False  # the fork hook is registered (on first use: no side effect at import)
    adopt_lock = threading.Lock()  # a forked child's gates take their own notifiers under it

    def __init__(self) -> None:
        # The process's own symbols hold libc's: ``find_library`` would run ldconfig, a child
        # that inherits the host's env and re-enters the guard from inside its decision.
        libc = ctypes.CDLL(None, use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = (ctypes.c_int, ctypes.c_int)
        self.statfs = libc.statfs
        self.statfs.argtypes = (ctypes.c_char_p, ctypes.POINTER(_StatFs))
        # poll(2) through ``PyDLL``: the call keeps the GIL. It never waits (a zero
        # timeout), and a gate makes it holding its lock: a poll that let go of the GIL
        # there leaves the lock held by a thread that must win the GIL back, and every
        # other building thread queues behind it (benchmarks/README.md, "threads").
        # No argtypes on the per-build calls (poll, statx, readlink: their conversion is
        # a third of a call): each argument is passed as its exact C type (a ``_PollPair``,
        # ``_POLL_COUNT``, an int; an int, bytes, an int mask below 2**31, a buffer).
        self.poll = ctypes.PyDLL(None, use_errno=True).poll
        self.poll.restype = ctypes.c_int
        # statx(2) through ``PyDLL`` too: a clean home's check re-stats its roots, and an
        # ``os.stat`` hands the GIL to another thread three times per warm build. Made only
        # for clean homes, whose every file system is a local one (the allowlist).
        self.statx = ctypes.PyDLL(None, use_errno=True).statx  # AttributeError: no gate
        self.statx.restype = ctypes.c_int
        # readlink(2) keeping the GIL: the mount namespace's link, where statx gives no
        # mount id (before Linux 5.8; ``namespace``): bytes, a char array, ``_LINK_ROOM``.
        self.readlink = ctypes.PyDLL(None, use_errno=True).readlink
        self.readlink.restype = ctypes.c_ssize_t
        if self.identity("/") in (None, IDENTITY_UNKNOWN):  # a seccomp filter, ENOSYS
            raise OSError(errno.ENOSYS, "statx(2) does not answer here: no change gate")
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.fd: int = fd
        self.fd_identity = self.descriptor(fd)
        self.lock = threading.Lock()
        self._queues: list[_Queue] = []
        # Queues of gates that were collected: released at the next call under the lock
        # (a finalizer may run inside any allocation, even while this thread holds the lock).
        self.graveyard: list[_Queue] = []

    @classmethod
    def get(cls) -> _Inotify:
        """The shared instance of this process (made on first use)."""
        with cls._shared_lock:
            if not cls._at_fork:
                os.register_at_fork(after_in_child=cls.forget)
                cls._at_fork = True
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    @classmethod
    def forget(cls) -> None:
        """In a forked child: the parent's instance is its own, never read, watched or closed.

        The child's gates each make their notifier anew (``LinuxNotifier.forked``) on
        the child's own instance, made on first use; the lock may have been held by
        a thread the child does not have.
        """
        cls._shared = None
        cls._shared_lock = threading.Lock()
        cls.adopt_lock = threading.Lock()

    @classmethod
    def drop(cls, lost: _Inotify) -> None:
        """Forget the shared instance when it is ``lost`` (its descriptor is not its own)."""
        with cls._shared_lock:
            if cls._shared is lost and not lost.intact():
                cls._shared = None

    def identity(self, path: str) -> Identity:
        """``statx(2)`` keeping the GIL: ``(makedev(major, minor), ino)``, as ``os.stat`` says.

        None for ``ENOENT``/``ENOTDIR``; ``IDENTITY_UNKNOWN`` for any other failure
        (``EACCES``, ``ELOOP``, a refused call), an answer without the inode, or a
        path ``statx`` cannot be given (a NUL byte).
        """
        raw = path.encode(_FS_ENCODING, _FS_ERRORS) if type(path) is str else os.fsencode(path)
        if b"\0" in raw:
            return IDENTITY_UNKNOWN
        buf = _StatxBuffer()  # one per call: another thread may run before it is read
        if self.statx(AT_FDCWD, raw, 0, STATX_INO, buf) != 0:
            return failed_identity(ctypes.get_errno())
        mask, ino, major, minor = _STATX.unpack_from(buf)
        if not mask & STATX_INO:
            return IDENTITY_UNKNOWN
        return (os.makedev(major, minor), ino)

    def namespace(self) -> int | bytes | None:
        """What names the calling thread's mount namespace; None when nothing can be read.

        Paths resolve in the calling thread's namespace, and ``unshare(CLONE_NEWNS)``
        or ``setns`` changes it with no change in the mount table the notifier
        polls. Both give the thread every mount anew (copies or another
        namespace's), so the mount id of its root changes: ``statx(2)`` of ``/``
        with ``STATX_MNT_ID`` (Linux 5.8+), keeping the GIL, about 1.2 µs and
        3 µs after a spawn. An older kernel: the namespace's link
        (``readlink`` of ``/proc/thread-self/ns/mnt``, ``mnt:[inode]``; about
        7 µs after a spawn).
        """
        buf = _StatxBuffer()  # one per call: another thread may run before it is read
        if self.statx(AT_FDCWD, _ROOT, 0, STATX_MNT_ID, buf) == 0:
            mask, mount_id = _STATX_MNT.unpack_from(buf)
            if mask & STATX_MNT_ID:
                return int(mount_id)
        link = _LinkBuffer()
        if self.readlink(_NAMESPACE, link, _LINK_ROOM) <= 0:
            return None
        found: bytes = link.value
        return found

    def descriptor(self, fd: int) -> tuple[int, int, int] | None:
        """``(mode, dev, ino)`` of an open descriptor (``statx``, keeping the GIL), or None."""
        buf = _StatxBuffer()
        if self.statx(fd, b"", AT_EMPTY_PATH, STATX_TYPE | STATX_INO, buf) != 0:
            return None
        mask, mode, ino, major, minor = _STATX_MODE.unpack_from(buf)
        if mask & (STATX_TYPE | STATX_INO) != STATX_TYPE | STATX_INO:
            return None
        return (mode, os.makedev(major, minor), ino)

    def intact(self) -> bool:
        """True while ``fd`` is still this instance's (an ``anon_inode:inotify``, not reused).

        A host that closed inherited descriptors (``os.closerange``) leaves the number
        closed, or reused by a pipe or a file: each is another identity.
        """
        return self.fd_identity is not None and self.descriptor(self.fd) == self.fd_identity

    def subscribe(self, queue: _Queue) -> None:
        with self.lock:
            self._bury()
            self._queues.append(queue)

    def _bury(self) -> None:
        """Release the watches of collected gates (called holding the lock)."""
        while self.graveyard:
            queue = self.graveyard.pop()
            if queue in self._queues:
                self._queues.remove(queue)
            held, queue.watches = queue.watches, set()
            for wd in held:
                self._drop(wd)

    def add_watch(self, queue: _Queue, path: str) -> int:
        with self.lock:
            self._bury()
            wd: int = self._add(self.fd, os.fsencode(path), WATCH_MASK)
            if wd < 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), path)
            queue.watches.add(wd)
            return wd

    def rm_watch(self, queue: _Queue, wd: int) -> None:
        with self.lock:
            if wd in queue.watches:
                queue.watches.discard(wd)
                self._drop(wd)

    def _drop(self, wd: int) -> None:
        """A queue let go of ``wd``: the kernel's watch goes when no queue holds it."""
        if not any(wd in queue.watches for queue in self._queues):
            self._rm(self.fd, wd)  # EINVAL when the kernel ended it already: nothing to do

    def pump(self) -> None:
        """Read every queued event (non-blocking) into every subscriber's queue."""
        with self.lock:
            self._bury()
            while True:
                try:
                    data = os.read(self.fd, 65536)
                except BlockingIOError:
                    return
                except OSError as exc:  # closed under us (EBADF), or not an inotify read
                    raise NotifierLost(exc.errno, "the inotify descriptor was lost") from None
                if not data:  # end of file: not an inotify instance (one never ends)
                    raise NotifierLost(errno.EBADF, "the inotify descriptor was reused")
                offset = 0
                while offset + _EVENT.size <= len(data):
                    wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                    offset += _EVENT.size + length
                    for queue in self._queues:
                        # Only the gates holding the watch hear of it (an idle gate's queue
                        # must not grow with everyone's events); an overflow reaches all.
                        if wd >= 0 and wd not in queue.watches:
                            continue
                        if len(queue.events) >= MAX_QUEUED:
                            queue.events = [(-1, IN_Q_OVERFLOW)]  # bounded: lost means doubt
                        queue.events.append((wd, mask))
                        if mask & IN_IGNORED:
                            queue.watches.discard(wd)  # the kernel ended the watch


class _Queue:
    """One gate's share of the inotify instance: its events and the watches it holds (mutable)."""

    __slots__ = ("events", "watches")

    def __init__(self) -> None:
        self.events: list[tuple[int, int]] = []
        self.watches: set[int] = set()


class LinuxNotifier:
    """One gate's notifier: the shared inotify instance, mount table and namespace, ``statfs``."""

    def __init__(self) -> None:
        """Raises ``OSError`` where there is no inotify instance, namespace or mount table.

        A mount over a watched directory is seen through the mount table of the
        calling thread's mount namespace, and a change of that namespace through
        ``namespace()``: without either no answer could be trusted, so there is
        no gate (every home is stamped).
        """
        self._inotify = _Inotify.get()  # OSError, AttributeError: no gate
        # the namespace first: one changed before the table is opened is a change seen
        self._namespace = self._inotify.namespace()
        if self._namespace is None:
            raise OSError(errno.ENOENT, "no readable mount namespace", _NAMESPACE.decode())
        mounts = os.open(_MOUNT_TABLE, os.O_RDONLY | os.O_CLOEXEC)
        self._queue = _Queue()
        self._inotify.subscribe(self._queue)
        self._mounts = mounts
        self._mounts_identity = self._inotify.descriptor(mounts)
        self._fds = _PollPair(
            _PollFd(self._inotify.fd, select.POLLIN, 0),
            _PollFd(mounts, select.POLLPRI | select.POLLERR, 0),
        )
        self._finalizer = weakref.finalize(
            self, _release, self._inotify, self._queue, mounts, self._mounts_identity
        )
        self._ready()  # the first poll reports the current mount table: consume it

    def add_watch(self, path: str) -> int:
        """``inotify_add_watch`` with ``WATCH_MASK`` (follows a symlinked directory)."""
        return self._inotify.add_watch(self._queue, path)

    def rm_watch(self, wd: int) -> None:
        """Drop this gate's watch (the kernel's is removed when no gate holds it)."""
        self._inotify.rm_watch(self._queue, wd)

    def _ready(self) -> tuple[bool, bool]:
        """One ``poll(2)``, zero timeout: (the inotify queue has events, the mount table changed).

        Any event on the mount table's descriptor counts as a change (an error, a
        closed descriptor: doubt, never trust). A failed poll raises ``OSError``.
        """
        fds = self._fds
        while self._inotify.poll(fds, _POLL_COUNT, 0) < 0:
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))
        return fds[0].revents != 0, fds[1].revents != 0

    def events(self) -> tuple[list[tuple[int, int]], bool]:
        """One ``poll`` for both descriptors; the inotify queue read only when it has events.

        The inotify descriptor's identity is checked first (``_Inotify.intact``, one
        ``statx``), then the calling thread's mount namespace (``namespace``: another
        one is a loss, the renewed notifier polls its table); the mount table's
        when the poll reports on it (a closed one reports ``POLLNVAL``; a change is
        checked for a reuse). Any of these raises ``NotifierLost``, never a bare
        ``OSError``, a stale answer or a hang.
        """
        inotify = self._inotify
        if not inotify.intact():
            raise NotifierLost(errno.EBADF, "the inotify descriptor was lost")
        if inotify.namespace() != self._namespace:  # unshare, setns: another mount table
            raise NotifierLost(errno.ESTALE, "the mount namespace changed")
        readable, mounts = self._ready()
        if mounts and (
            self._fds[1].revents & select.POLLNVAL
            or inotify.descriptor(self._fds[1].fd) != self._mounts_identity
        ):
            raise NotifierLost(errno.EBADF, "the mount table's descriptor was lost")
        if readable:
            self._inotify.pump()
        queue = self._queue
        with self._inotify.lock:  # waits for another gate's pump that read our events
            found, queue.events = queue.events, []
        return found, mounts

    def fs_type(self, path: str) -> int | None:
        """``statfs(path).f_type``; None when it fails."""
        buf = _StatFs()
        if self._inotify.statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
            return None
        return int(buf.f_type) & 0xFFFFFFFF

    def identity(self, path: str) -> Identity:
        """The shared instance's ``statx`` re-stat (it keeps the GIL): see ``_Inotify.identity``."""
        return self._inotify.identity(path)

    def forked(self) -> Notifier:
        """This gate's notifier in a forked child: the child's own instance and mount table.

        The inherited one is dropped without a call to the kernel (its watches and
        its queue are the parent's); where no instance can be made, one that
        doubts every answer (the stamp answers).
        """
        self._finalizer.detach()  # its queue is the parent's instance's business
        # this process's copy, naming the parent's table (unless the number was reused)
        _close_table(self._inotify, self._mounts, self._mounts_identity)
        return _new_notifier()

    def renewed(self) -> Notifier:
        """A new notifier after ``NotifierLost``: a new instance, no lost number touched.

        The shared instance is dropped when its descriptor is lost (every gate on
        it renews on its next call); while it is intact (only the mount table's
        descriptor was lost) this gate's queue is released on it, its watches
        with it. The mount table's descriptor is closed only while it is still
        the one opened.
        """
        self._finalizer.detach()
        inotify = self._inotify
        if inotify.intact():
            inotify.graveyard.append(self._queue)  # released at the instance's next call
        else:
            _Inotify.drop(inotify)
        _close_table(self._inotify, self._mounts, self._mounts_identity)
        return _new_notifier()

    def close(self) -> None:
        """Release this gate's watches and the mount-table descriptor."""
        self._finalizer()


class DoubtingNotifier:
    """A notifier that can trust nothing (no instance could be made): every home is stamped."""

    def add_watch(self, path: str) -> int:
        """No watch can be placed."""
        raise OSError(errno.ENOSYS, "no inotify instance in this process", path)

    def rm_watch(self, wd: int) -> None:
        """Nothing is watched."""

    def events(self) -> tuple[list[tuple[int, int]], bool]:
        """Events were lost: every home is doubted."""
        return [(-1, IN_Q_OVERFLOW)], True

    def fs_type(self, path: str) -> int | None:
        """Unknown: never a gated file system."""
        return None

    def identity(self, path: str) -> Identity:
        """A re-stat that failed: doubt."""
        return IDENTITY_UNKNOWN

    def forked(self) -> Notifier:
        """A new attempt at a real notifier in the forked child."""
        return _new_notifier()

    def renewed(self) -> Notifier:
        """A new attempt at a real notifier."""
        return _new_notifier()

    def close(self) -> None:
        """Nothing to release."""


def adopt_lock() -> threading.Lock:
    """The lock a forked child's gates take their own notifiers under (new in every child)."""
    return _Inotify.adopt_lock


def _new_notifier() -> Notifier:
    """This process's own notifier, or one that doubts everything where none can be made."""
    try:
        return LinuxNotifier()
    except (OSError, AttributeError):
        return DoubtingNotifier()


def _release(
    inotify: _Inotify, queue: _Queue, mounts: int, identity: tuple[int, int, int] | None
) -> None:
    """A gate's finalizer: takes no lock (``list.append`` is atomic)."""
    inotify.graveyard.append(queue)
    _close_table(inotify, mounts, identity)


def _close_table(inotify: _Inotify, mounts: int, identity: tuple[int, int, int] | None) -> None:
    """Close the mount table's descriptor, only while ``mounts`` is still the table opened.

    After ``closerange`` the number may be someone else's pipe or file: never closed.
    """
    if identity is not None and inotify.descriptor(mounts) == identity:
        with contextlib.suppress(OSError):
            os.close(mounts)
