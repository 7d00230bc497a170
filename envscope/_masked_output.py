"""A child's output pipes masked while it runs: ``spawn.popen`` and the asyncio helpers.

``mask_popen(process, redactor)`` puts a pump thread between each of the
child's output pipes and the caller: it reads what the child wrote, masks it
through a ``ByteStream`` (a value split across two reads is still masked) and
writes what is released into a new pipe, whose read end becomes
``process.stdout`` (or ``stderr``) in the mode the caller asked for. The
caller holds real pipes, so ``communicate()`` (which polls file descriptors),
``readline()`` and iteration see masked bytes only. A caller that closes its
end stops the pump, which closes the child's end in turn (the child gets
``SIGPIPE``, as it would have; the host never does, whatever its disposition).

``MaskingProtocol`` is asyncio's subprocess protocol with the same stream
masking before a byte reaches the ``StreamReader``: the reader's flow control
(pausing the child's pipe while the caller does not read) is kept.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
from asyncio.subprocess import SubprocessStreamProtocol
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    import subprocess

    from envscope.redact import ByteStream, Redactor

__all__ = ["MaskingProtocol", "mask_popen"]

_CHUNK = 65536


def mask_popen(process: subprocess.Popen[Any], redactor: Redactor) -> None:
    """Replace ``process.stdout`` and ``process.stderr`` (where piped) with masked pipes.

    Where a pipe or its pump thread cannot be made (no descriptor left, no
    thread), the child, already started, is killed and waited for, its pipes
    closed, and the error raised: no child runs on with its output unread or
    unmasked, and no caller is left without the process to stop it.
    """
    try:
        for attr in ("stdout", "stderr"):
            original: IO[Any] | None = getattr(process, attr)
            if original is not None:
                setattr(process, attr, _masked_pipe(original, redactor.byte_stream()))
    except (OSError, RuntimeError):  # EMFILE, ENFILE; "can't start new thread"
        _reap(process)
        raise


def _reap(process: subprocess.Popen[Any]) -> None:
    """Kill the child, wait for it, close what reads its output (masked or not)."""
    with contextlib.suppress(OSError):  # it may have ended already
        process.kill()
    process.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class PumpEnds:
    """The write ends this process's pumps hold; a forked child closes its copies.

    A pump thread does not survive ``fork()``, but the write end it holds does:
    a child made by a bare ``os.fork`` (a ``multiprocessing`` fork start, a
    daemon) would keep it open, and the caller reading the masked pipe would
    wait for that child's exit to see its end of file. The handlers registered
    with ``os.register_at_fork`` (on first use) take the lock around the fork,
    so the child's set is exact, and close every copy in the child
    (``forget_in_child``, also the reset seam). ``exec`` closes them anyway:
    they are not inheritable.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ends: set[int] = set()
        self._registered = False

    def add(self, fd: int) -> None:
        with self._lock:
            self._ends.add(fd)
            if not self._registered and hasattr(os, "register_at_fork"):
                os.register_at_fork(  # the lock read at each fork: a child makes its own
                    before=lambda: self._lock.acquire(),
                    after_in_parent=lambda: self._lock.release(),
                    after_in_child=self.forget_in_child,
                )
                self._registered = True

    def close(self, fd: int) -> None:
        """Close a pump's write end (under the lock: a fork sees it held or closed, never both)."""
        with self._lock:
            self._ends.discard(fd)
            os.close(fd)

    def held(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._ends)

    def forget_in_child(self) -> None:
        """In a forked child: close every copy, start with none (the lock is the parent's)."""
        ends, self._ends = self._ends, set()
        self._lock = threading.Lock()
        for fd in ends:
            with contextlib.suppress(OSError):
                os.close(fd)


PUMP_ENDS = PumpEnds()


def _masked_pipe(original: IO[Any], stream: ByteStream) -> IO[Any]:
    """A file object like ``original`` reading the masked bytes of what it would have read."""
    read_end, write_end = os.pipe()
    PUMP_ENDS.add(write_end)
    pump = threading.Thread(
        target=_pump,
        args=(original, write_end, stream),
        name="envscope-redact-pump",
        daemon=True,
    )
    try:
        pump.start()
    except RuntimeError:
        os.close(read_end)
        PUMP_ENDS.close(write_end)
        raise
    binary = open(read_end, "rb")  # noqa: SIM115 - the caller owns it, as Popen's own
    if isinstance(original, io.TextIOWrapper):
        return io.TextIOWrapper(binary, encoding=original.encoding, errors=original.errors)
    return binary


def _pump(original: IO[Any], write_end: int, stream: ByteStream) -> None:
    """Copy the child's pipe into ``write_end``, masked, until either side ends.

    ``SIGPIPE`` is blocked in this thread: where the host process left it at its
    default (a program that restored it), a write to the pipe the caller closed
    would kill the host; blocked, the write fails with ``EPIPE`` and the pump stops.
    """
    blocked = _block_sigpipe()
    source = original.fileno()
    try:
        while chunk := os.read(source, _CHUNK):
            _write_all(write_end, stream.feed(chunk))
        _write_all(write_end, stream.close())
    except OSError:  # the caller closed its end (EPIPE), or the pipe broke: stop
        if blocked and hasattr(signal, "sigtimedwait"):
            signal.sigtimedwait({signal.SIGPIPE}, 0)  # the one the write raised, if any
    finally:
        PUMP_ENDS.close(write_end)
        original.close()


def _block_sigpipe() -> bool:
    """Block ``SIGPIPE`` in the calling thread (POSIX); True when it is blocked."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows has no SIGPIPE
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class MaskingProtocol(SubprocessStreamProtocol):
    """asyncio's subprocess stream protocol, each output pipe masked on its way in."""

    def __init__(self, redactor: Redactor, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._streams: dict[int, ByteStream] = {
            1: redactor.byte_stream(),
            2: redactor.byte_stream(),
        }

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        stream = self._streams.get(fd)
        if stream is not None and isinstance(data, bytes):
            data = stream.feed(data)
            if not data:
                return
        super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        stream = self._streams.pop(fd, None)
        if stream is not None:
            rest = stream.close()  # released before the reader's end of file
            if rest:
                super().pipe_data_received(fd, rest)
        super().pipe_connection_lost(fd, exc)
