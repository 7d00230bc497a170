"""harden_process(): a non-dumpable host keeps same-user processes out of /proc/<pid>/environ."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys

import pytest

import envscope._harden as harden
from tests._privdrop import REPO, run_as_nobody

LINUX = sys.platform.startswith("linux")
linux_only = pytest.mark.skipif(not LINUX, reason="prctl(PR_SET_DUMPABLE) is Linux-only")


def run_python(code: str) -> str:
    """Run a snippet in a fresh interpreter (hardening is per process: never this one)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@linux_only
def test_harden_process_clears_the_dumpable_flag() -> None:
    """On Linux it returns True and the process reads back as not dumpable."""
    out = run_python(
        "import json; from envscope._harden import harden_process, process_dumpable\n"
        "before = process_dumpable(); done = harden_process()\n"
        "print(json.dumps([before, done, process_dumpable()]))"
    )
    assert json.loads(out) == [True, True, False]


def test_non_linux_is_a_documented_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off Linux it returns False (and process_dumpable None) without touching libc."""
    monkeypatch.setattr(harden, "_is_linux", lambda: False)

    def no_libc() -> object:
        raise AssertionError("libc must not be loaded off Linux")

    monkeypatch.setattr(harden, "_prctl", no_libc)
    assert harden.harden_process() is False
    assert harden.process_dumpable() is None


def test_refused_prctl_raises_oserror_with_its_errno(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prctl the kernel refuses (e.g. seccomp) raises OSError instead of failing open."""
    monkeypatch.setattr(harden, "_is_linux", lambda: True)
    calls: list[tuple[int, ...]] = []

    def refusing(*args: int) -> int:
        calls.append(args)
        ctypes.set_errno(errno.EPERM)
        return -1

    monkeypatch.setattr(harden, "_prctl", lambda: refusing)
    with pytest.raises(OSError, match="prctl") as info:
        harden.harden_process()
    assert info.value.errno == errno.EPERM
    assert calls == [(harden.PR_SET_DUMPABLE, 0, 0, 0, 0)]


READ_PARENT = """
import sys
try:
    with open(f"/proc/{sys.argv[1]}/environ", "rb") as fh:
        data = fh.read()
except PermissionError:
    print("denied")
else:
    print("read-marker" if b"HOME=/nonexistent" in data else "read-no-marker")
"""

# Runs as uid 65534 (run_as_nobody sets HOME=/nonexistent: the marker the reader looks for).
# The session's interpreter may sit behind a directory only root can search (setpriv execs it
# before the capabilities go), so the reader child runs on the first interpreter this uid can
# execute itself; it needs only the standard library.
PARENT = """
import json, os, shutil, subprocess, sys
from envscope._harden import harden_process, process_dumpable
reader = sys.argv[1]
candidates = [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]
python = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
if python is None:
    print(json.dumps({"skip": "uid 65534 can execute no Python interpreter"}))
    sys.exit(0)

def probe():
    done = subprocess.run([python, "-I", "-c", reader, str(os.getpid())],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()

before = probe()
hardened = harden_process()
after = probe()
print(json.dumps({"uid": os.getuid(), "before": before, "hardened": hardened,
                  "dumpable": process_dumpable(), "after": after}))
"""


@linux_only
@pytest.mark.privdrop
def test_same_user_child_cannot_read_hardened_parent_environ() -> None:
    """As uid 65534: a same-uid child reads the parent's environ before hardening, not after."""
    proc = run_as_nobody(PARENT, READ_PARENT)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got == {
        "uid": 65534,
        "before": "read-marker",
        "hardened": True,
        "dumpable": False,
        "after": "denied",
    }
