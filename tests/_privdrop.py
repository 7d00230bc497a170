"""Run a snippet of Python as uid/gid 65534 through ``setpriv``, for real permission checks.

Root ignores file modes, so a ``chmod 000`` test run as root proves nothing.
``run_as_nobody`` re-runs the interpreter of the test session as 65534 with
``setpriv --reuid=65534 --regid=65534 --clear-groups`` and a clean environment
(``PYTHONPATH`` = the repository). When that cannot work it skips with the
reason: not POSIX, no ``setpriv``, not root, or uid 65534 cannot run
``sys.executable`` and import ``envscope`` (checked once by a probe run).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NOBODY = 65534
REPO = Path(__file__).resolve().parent.parent
_PROBE = "import envscope.manifests._cache, envscope.testing_fs"


def _command(code: str, args: tuple[str, ...]) -> list[str]:
    setpriv = shutil.which("setpriv") or "setpriv"
    return [
        setpriv,
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        sys.executable,
        "-c",
        code,
        *args,
    ]


def _run(code: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
    }
    return subprocess.run(
        _command(code, args),
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@functools.cache
def unavailable_reason() -> str | None:
    """Why snippets cannot run as uid 65534 here, or None when they can."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "privilege drop needs POSIX"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    if os.geteuid() != 0:
        return "dropping to uid 65534 needs root"
    probe = _run(_PROBE, (), timeout=120)
    if probe.returncode != 0:
        tail = probe.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return (
            f"uid {NOBODY} cannot run {sys.executable} and import envscope from {REPO}: "
            f"{tail[0]} (make the interpreter and the repository world-readable/traversable)"
        )
    return None


def run_as_nobody(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code args...`` as uid/gid 65534; skip with the reason when impossible."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return _run(code, args, timeout)


@contextmanager
def nobody_tree() -> Iterator[Path]:
    """A fresh temp directory owned by uid 65534 (chown what you add with ``give_to_nobody``)."""
    top = Path(tempfile.mkdtemp(prefix="envscope-privdrop-"))
    try:
        closed = [p for p in top.parents if not p.stat().st_mode & stat.S_IXOTH]
        if closed:
            pytest.skip(
                f"uid {NOBODY} cannot traverse {closed[0]} (set TMPDIR to a world-traversable dir)"
            )
        top.chmod(0o755)
        os.chown(top, NOBODY, NOBODY)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def give_to_nobody(root: Path) -> None:
    """``chown -R 65534:65534 root`` (without following symlinks)."""
    os.chown(root, NOBODY, NOBODY, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)
