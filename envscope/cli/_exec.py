"""How ``envscope run`` starts its command: what exec accepts, signals put back, exec.

Without ``--redact`` the command replaces envscope (``exec_command``), as
``env(1)`` does; ``check_command`` refuses first what no exec accepts, as a
usage error naming the argument (never its text).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

from envscope.cli._parser import UsageError

__all__ = ["RESTORED_SIGNALS", "check_command", "exec_command", "restore_signals"]

# The dispositions Python sets at start-up that survive exec (a handler does not, an
# ignored signal does): the ones subprocess.Popen(restore_signals=True) restores.
RESTORED_SIGNALS = ("SIGPIPE", "SIGXFZ", "SIGXFSZ")


def restore_signals() -> None:
    """Put back the default disposition of every signal Python ignores at start-up."""
    for name in RESTORED_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, signal.SIG_DFL)


def exec_command(cmd: Sequence[str], env: Mapping[str, str]) -> int:
    """Replace this process with ``cmd`` under ``env`` (on Windows: run it and wait)."""
    if os.name != "posix":  # pragma: no cover - exercised on Windows only
        return subprocess.run(list(cmd), env=dict(env), check=False).returncode
    restore_signals()  # the child starts as a spawn would, not with Python's SIG_IGNs
    os.execvpe(cmd[0], list(cmd), dict(env))  # replaces this process
    return 0  # reached only when a test stubs execvpe


def check_command(cmd: Sequence[str]) -> None:
    """Refuse what no exec accepts: no command, an empty name, NUL, unencodable text."""
    if not cmd:
        raise UsageError("run: no command given (envscope run [--home H] -- CMD ARGS...)")
    if not cmd[0]:
        raise UsageError("run: the command name is empty")
    for position, arg in enumerate(cmd):
        what = "the command name" if position == 0 else f"argument {position}"
        if "\0" in arg:
            raise UsageError(f"run: {what} holds a NUL character")
        try:
            os.fsencode(arg)
        except UnicodeError:
            raise UsageError(f"run: {what} cannot be encoded for the file system") from None
