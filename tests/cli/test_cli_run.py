"""`envscope run` as a real spawn (signals, command checks), and a closed stdout, for real."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope.cli._exec import RESTORED_SIGNALS as _RESTORED_SIGNALS
from envscope.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "fixtures" / "demo" / "envscope.yaml")
BASE_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/operator",
    "LANG": "C.UTF-8",
    "ENVSCOPE_FINGERPRINT_KEY": "test-key-of-16-chars",
}
PIPE_BUFFER = 64 * 1024  # Linux's default pipe capacity: outputs below are several times larger


def envscope() -> str:
    """The installed console script of this test session's interpreter."""
    script = shutil.which("envscope", path=str(Path(sys.executable).parent))
    assert script is not None
    return script


def run_envscope(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the console script with the demo config; capture text output."""
    return subprocess.run(
        [envscope(), "--config", CONFIG, *argv],
        capture_output=True, text=True, env=env or BASE_ENV, cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip


def test_run_child_dies_of_sigpipe_like_any_spawn() -> None:
    """`run -- sh -c 'yes | head -n1'` prints y: `yes` is killed by SIGPIPE, not told EPIPE."""
    out = run_envscope("run", "--home", "work", "--", "sh", "-c", "yes | head -n1")
    assert (out.returncode, out.stdout) == (0, "y\n")
    assert "Broken pipe" not in out.stderr
    assert out.stderr == ""


def ignored_signals(status: str) -> set[int]:
    """The signal numbers in the SigIgn mask of a /proc/PID/status text."""
    line = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
    mask = int(line.split()[1], 16)
    return {n for n in range(1, 65) if mask & (1 << (n - 1))}


@pytest.fixture(scope="module")
def child_status() -> str:
    """``/proc/self/status`` of a child exec'd by ``envscope run`` (one run for the module)."""
    out = run_envscope("run", "--", "cat", "/proc/self/status")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("name", [n for n in _RESTORED_SIGNALS if hasattr(signal, n)])
def test_run_child_starts_with_default_dispositions(child_status: str, name: str) -> None:
    """The exec'd child ignores none of the signals Python ignores (what Popen restores)."""
    assert int(getattr(signal, name)) not in ignored_signals(child_status)


def _default_dispositions() -> None:
    """Start a child with every signal at its default (a background job inherits ignores)."""
    for sig in signal.Signals:
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)


def test_restored_signals_cover_what_python_ignores() -> None:
    """Every signal this interpreter itself ignores at start-up is in the restored list."""
    probe = (
        "import signal\n"
        "print(' '.join(s.name for s in signal.Signals"
        " if signal.getsignal(s) is signal.SIG_IGN))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=BASE_ENV,
        preexec_fn=_default_dispositions,  # inherited ignores (nohup, `cmd &`) are not Python's
    )
    assert set(out.stdout.split()) <= set(_RESTORED_SIGNALS)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run"], "run: no command given"),
        (["run", "--"], "run: no command given"),
        (["run", "--home", "work", "--"], "run: no command given"),
        (["run", "--", ""], "run: the command name is empty"),
        (["run", "--", "", "x"], "run: the command name is empty"),
        (["run", "--", "a\0b"], "run: the command name holds a NUL character"),
        (["run", "--", "echo", "secret\0value"], "run: argument 1 holds a NUL character"),
        (["run", "--", "echo", "\ud800"], "run: argument 1 cannot be encoded"),
    ],
    ids=[
        "no-dashes",
        "dashes-only",
        "home-then-nothing",
        "empty-name",
        "empty-name-with-args",
        "nul-in-name",
        "nul-in-arg",
        "unencodable-arg",
    ],
)
def test_run_refuses_bad_commands(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    """A command no exec accepts is exit 2 with a message naming the argument, never its value."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in BASE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    assert main(["--config", CONFIG, *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("envscope: error: ")
    assert message in err
    assert "secret" not in err
    assert "Traceback" not in err


def big_env() -> dict[str, str]:
    """A parent env whose explain/snapshot output is several pipe buffers long."""
    extra = {f"OPERATOR_SETTING_{n:05d}": "x" for n in range(4000)}
    return {**BASE_ENV, **extra}


def big_plugin(tmp_path: Path) -> str:
    """A plugin directory declaring thousands of secrets (a long scan line)."""
    names = "".join(f"  - OPERATOR_SECRET_NUMBER_{n:05d}_TOKEN\n" for n in range(4000))
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "plugin.yaml").write_text(f"name: big\nrequires_env:\n{names}")
    return str(tmp_path / "plugin")


def many_spawns(tmp_path: Path) -> str:
    """A Python file with thousands of spawn sites."""
    path = tmp_path / "spawns.py"
    path.write_text("import os\n" + "os.system('x')\n" * 4000)
    return str(path)


def read_one_line_then_close(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI with stdout on a real pipe, read one line, close the pipe; the result."""
    proc = subprocess.Popen(
        [envscope(), "--config", CONFIG, *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline().decode()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=120), first, err


def big_snapshots(tmp_path: Path) -> tuple[str, str]:
    """Two snapshot files that differ in thousands of keys."""
    keys = {
        f"OPERATOR_SETTING_{n:05d}": {
            "in_child": True, "action": "kept", "stage": "sanitize", "reason": "not-declared",
            "origin": None, "fingerprint": f"{n:016x}",
        }
        for n in range(4000)
    }  # fmt: skip
    base = {
        "envscope_snapshot": 1, "home": "x", "surface": "terminal", "routed": False,
        "policy": {"complete": True, "problems": []}, "warnings": [],
    }  # fmt: skip
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({**base, "child": [], "keys": {}}))
    b.write_text(json.dumps({**base, "child": sorted(keys), "keys": keys}))
    return str(a), str(b)


@pytest.mark.parametrize(
    "command",
    ["explain", "explain-json", "snapshot", "diff", "scan-plugin", "check-spawns"],
)
def test_closed_stdout_exits_quietly(
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    """A reader that closes early (`| head -n1`) ends the command with exit 2, nothing on stderr."""
    env = big_env()
    argv = {
        "explain": lambda: ["explain"],
        "explain-json": lambda: ["explain", "--json"],
        "snapshot": lambda: ["snapshot", "-o", "-"],
        "diff": lambda: ["diff", *big_snapshots(tmp_path)],
        "scan-plugin": lambda: ["scan", "--plugin", big_plugin(tmp_path)],
        "check-spawns": lambda: ["check-spawns", many_spawns(tmp_path)],
    }[command]()
    # The whole output, in-process (its size is not about the process): the real
    # pipe below is what the test pins.
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    main(["--config", CONFIG, *argv])  # diff and check-spawns exit 1: they found something
    full = capsysbinary.readouterr()
    assert len(full.out) > 2 * PIPE_BUFFER  # so the writer must block, then see EPIPE
    assert full.err == b""
    code, first, err = read_one_line_then_close(argv, env)
    assert first
    assert err == ""
    assert code == 2


def _not_executable(tmp: Path) -> str:
    path = tmp / "script.sh"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o644)
    return str(path)


@pytest.mark.parametrize(
    ("make", "code", "message"),
    [
        (lambda _tmp: "/nonexistent/cmd", 127, "run: '/nonexistent/cmd': command not found"),
        (lambda _tmp: "no-such-command-anywhere", 127, "command not found"),
        (lambda _tmp: str(ROOT), 126, "run: cannot execute"),
        (_not_executable, 126, "run: cannot execute"),
    ],
    ids=["missing-path", "missing-on-path", "directory", "not-executable"],
)
def test_run_exit_codes_follow_env1(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    make: Callable[[Path], str],
    code: int,
    message: str,
) -> None:
    """As env(1): a command not found exits 127, one found but not executable 126, on stderr."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in BASE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    assert main(["--config", CONFIG, "run", "--", make(tmp_path)]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("envscope: error: ")
    assert message in err


SECRET = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 2  # OPENAI_API_KEY: the catalog declares it


@pytest.mark.parametrize("redact", [False, True])
def test_run_redact_masks_what_the_command_prints(redact: bool) -> None:
    """A command printing a value the host holds (its own OPENAI_API_KEY) on stdout and stderr:
    with --redact both come back masked, as they arrive; without it, the value itself."""
    script = f'echo "out {SECRET}"; echo "err {SECRET}" >&2; exit 7'
    argv = ["run", *(["--redact"] if redact else []), "--", "bash", "-c", script]
    done = run_envscope(*argv, env={**BASE_ENV, "OPENAI_API_KEY": SECRET})
    assert done.returncode == 7
    if redact:
        assert done.stdout == "out [REDACTED:OPENAI_API_KEY]\n"
        assert done.stderr == "err [REDACTED:OPENAI_API_KEY]\n"
    else:
        assert done.stdout == f"out {SECRET}\n"


def test_run_redact_reports_a_signal_and_a_missing_command() -> None:
    killed = run_envscope("run", "--redact", "--", "bash", "-c", "kill -TERM $$")
    assert killed.returncode == 128 + signal.SIGTERM
    missing = run_envscope("run", "--redact", "--", "no-such-command-envscope")
    assert missing.returncode == 127
    assert "command not found" in missing.stderr


def test_run_redact_streams_output_larger_than_a_pipe() -> None:
    """Both pipes drained as data arrives: a child writing more than a pipe holds to each
    stream does not block, and every byte comes through."""
    size = PIPE_BUFFER * 3
    script = f"head -c {size} /dev/zero | tr '\\0' a; head -c {size} /dev/zero | tr '\\0' b >&2"
    done = run_envscope("run", "--redact", "--", "bash", "-c", script)
    assert done.returncode == 0
    assert done.stdout == "a" * PIPE_BUFFER * 3
    assert done.stderr == "b" * PIPE_BUFFER * 3
