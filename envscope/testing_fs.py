"""A file-system double for tests of envscope and of hosts that embed it.

``InstrumentedFileSystem`` is the real file system plus:

- call counting: ``calls["scandir"|"stat"|"open"]`` (``lstat`` counts as a
  stat) and ``opened`` (the paths ``read_regular`` was called with);
- fault injection: ``inject(path, errno)`` makes chosen operations on a path
  (or, with ``under=True``, on everything inside a directory) raise
  ``OSError(errno, ...)``; ``deny_dir`` and ``deny_file`` model ``chmod 000``;
- a clock: ``clock_offset_ns`` shifts ``now_ns()`` (a large offset makes every
  file "old", so no manifest is racy and a warm check opens nothing);
- a coarse timestamp clock: ``granularity_ns`` rounds ``st_mtime_ns`` and
  ``st_ctime_ns`` down, as a file system with 1 s or 2 s timestamps would;
- ``read_delay_s``: sleep inside every ``read_regular`` (for single-flight tests);
- a call log: with ``record=True`` every seam call is appended to ``log`` as a
  ``SeamCall`` (``op`` is ``"scandir"``, ``"stat"``, ``"lstat"`` or ``"read"``);
- one fault at the N-th call: ``fail_call(n, fault)`` makes the ``n``-th seam
  call from now (0-based) fail once with a ``CallFault``: an errno (``EACCES``,
  ``ENOENT``, ``ELOOP``, ``ENOTDIR``, ``EIO``), a file that "became" a FIFO, a
  directory, a socket or a symlink (a stat reports that type; a read returns
  ``None``), or a short read (a read returns the first half of the bytes).
  ``fired`` says whether it did. ``applies(op, fault)`` says which faults an
  operation can show (a listing only fails with an errno).

Thread-safe. Nothing here is used by envscope itself.
"""

from __future__ import annotations

import collections
import enum
import errno as errno_mod
import os
import stat as stat_mod
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from envscope.files._fs import DirEntry, RealFileSystem, StatResult

__all__ = ["HOUR_NS", "CallFault", "FakeStat", "InstrumentedFileSystem", "Op", "SeamCall"]

Op = Literal["scandir", "stat", "open"]
_ALL_OPS: tuple[Op, ...] = ("scandir", "stat", "open")
HOUR_NS = 3600 * 1_000_000_000


@dataclass(frozen=True, slots=True)
class FakeStat:
    """A stat result with chosen fields (satisfies ``envscope.files._fs.StatResult``)."""

    st_mode: int
    st_ino: int
    st_dev: int
    st_uid: int
    st_gid: int
    st_size: int
    st_mtime_ns: int
    st_ctime_ns: int

    @classmethod
    def of(cls, st: StatResult, *, granularity_ns: int | None = None) -> FakeStat:
        """Copy ``st``, rounding the timestamps down to ``granularity_ns`` when given."""
        mtime, ctime = st.st_mtime_ns, st.st_ctime_ns
        if granularity_ns:
            mtime -= mtime % granularity_ns
            ctime -= ctime % granularity_ns
        return cls(st.st_mode, st.st_ino, st.st_dev, st.st_uid, st.st_gid, st.st_size, mtime, ctime)


class CallFault(enum.Enum):
    """What ``fail_call`` makes one seam call do."""

    EACCES = errno_mod.EACCES
    ENOENT = errno_mod.ENOENT
    ELOOP = errno_mod.ELOOP
    ENOTDIR = errno_mod.ENOTDIR
    EIO = errno_mod.EIO
    BECAME_FIFO = -stat_mod.S_IFIFO
    BECAME_DIRECTORY = -stat_mod.S_IFDIR
    BECAME_SOCKET = -stat_mod.S_IFSOCK
    BECAME_SYMLINK = -stat_mod.S_IFLNK
    SHORT_READ = -1

    @property
    def errno(self) -> int | None:
        """The errno an errno fault raises; None for the others."""
        return self.value if self.value > 0 else None

    @property
    def file_type(self) -> int | None:
        """The ``S_IF*`` type a "became" fault reports; None for the others."""
        return -self.value if self.value < -1 else None

    @staticmethod
    def applies(op: str, fault: CallFault) -> bool:
        """Whether ``op`` can show ``fault``: a listing only errnos, a stat no short read."""
        if fault.errno is not None:
            return True
        if op == "scandir":
            return False
        return op == "read" or fault is not CallFault.SHORT_READ


@dataclass(frozen=True, slots=True)
class SeamCall:
    """One recorded seam call."""

    op: Literal["scandir", "stat", "lstat", "read"]
    path: str


@dataclass(frozen=True, slots=True)
class _Fault:
    path: str
    err: int
    ops: frozenset[str]
    under: bool

    def matches(self, op: str, path: str) -> bool:
        if op not in self.ops:
            return False
        if self.under:
            return path.startswith(self.path + os.sep)
        return path == self.path


class InstrumentedFileSystem(RealFileSystem):
    """The real file system with counting, fault injection and clock control."""

    def __init__(
        self,
        *,
        clock_offset_ns: int = 0,
        granularity_ns: int | None = None,
        read_delay_s: float = 0.0,
        record: bool = False,
    ) -> None:
        self.clock_offset_ns = clock_offset_ns
        self.granularity_ns = granularity_ns
        self.read_delay_s = read_delay_s
        self.calls: collections.Counter[str] = collections.Counter()
        self.opened: list[str] = []
        self.record = record
        self.log: list[SeamCall] = []
        self.fired = False
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._seq = 0
        self._armed: tuple[int, CallFault] | None = None

    def fail_call(self, index: int, fault: CallFault) -> None:
        """Make the ``index``-th seam call from now (0-based) fail once with ``fault``."""
        with self._lock:
            self._seq = 0
            self._armed = (index, fault)
            self.fired = False

    def inject(
        self,
        path: str | os.PathLike[str],
        err: int,
        *,
        ops: Iterable[Op] = _ALL_OPS,
        under: bool = False,
    ) -> None:
        """Make ``ops`` on ``path`` (or inside it, with ``under``) raise ``OSError(err)``."""
        fault = _Fault(os.path.normpath(os.fspath(path)), err, frozenset(ops), under)
        with self._lock:
            self._faults.append(fault)

    def deny_dir(self, path: str | os.PathLike[str]) -> None:
        """Like ``chmod 000`` on a directory: it cannot be listed, nothing inside can be reached."""
        self.inject(path, errno_mod.EACCES, ops=("scandir",))
        self.inject(path, errno_mod.EACCES, under=True)

    def deny_file(self, path: str | os.PathLike[str]) -> None:
        """Like ``chmod 000`` on a file: it can be stat-ed but not opened."""
        self.inject(path, errno_mod.EACCES, ops=("open",))

    def heal(self) -> None:
        """Remove every injected fault."""
        with self._lock:
            self._faults.clear()

    def reset_counts(self) -> None:
        """Zero the call counters and empty the call log."""
        with self._lock:
            self.calls.clear()
            self.opened.clear()
            self.log.clear()

    def _enter(self, op: Op, path: str, logged: SeamCall) -> CallFault | None:
        """Count, log, raise an injected errno; return a non-errno fault due at this call."""
        norm = os.path.normpath(path)
        due: CallFault | None = None
        with self._lock:
            self.calls[op] += 1
            if op == "open":
                self.opened.append(norm)
            if self.record:
                self.log.append(logged)
            if self._armed is not None and self._armed[0] == self._seq:
                due, self._armed, self.fired = self._armed[1], None, True
            self._seq += 1
            faults = [f for f in self._faults if f.matches(op, norm)]
        if due is not None and due.errno is not None:
            raise OSError(due.errno, os.strerror(due.errno), path)
        if faults:
            err = faults[-1].err
            raise OSError(err, os.strerror(err), path)
        return due

    def scandir(self, path: str) -> list[DirEntry]:
        """Counted, fault-injected ``scandir``."""
        self._enter("scandir", path, SeamCall("scandir", path))
        return super().scandir(path)

    def stat(self, path: str, *, follow_symlinks: bool = True) -> StatResult:
        """Counted, fault-injected ``stat``; timestamps rounded to ``granularity_ns``."""
        due = self._enter("stat", path, SeamCall("stat" if follow_symlinks else "lstat", path))
        st = super().stat(path, follow_symlinks=follow_symlinks)
        if due is not None and due.file_type is not None:
            faked = FakeStat.of(st, granularity_ns=self.granularity_ns)
            return replace(faked, st_mode=stat_mod.S_IMODE(st.st_mode) | due.file_type)
        if self.granularity_ns:
            return FakeStat.of(st, granularity_ns=self.granularity_ns)
        return st

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """Counted, fault-injected, optionally slow ``read_regular``."""
        due = self._enter("open", path, SeamCall("read", path))
        if self.read_delay_s:
            time.sleep(self.read_delay_s)
        data = super().read_regular(path, max_bytes)
        if due is CallFault.SHORT_READ and data is not None:
            return data[: len(data) // 2]
        if due is not None:  # it became a FIFO, a directory, a socket, a symlink to a device
            return None
        return data

    def now_ns(self) -> int:
        """The real clock plus ``clock_offset_ns``."""
        return super().now_ns() + self.clock_offset_ns
