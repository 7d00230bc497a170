"""First contact: --version, help everywhere, filters, colour, width, loud homes,
auditing the running host (--pid, --host), and diffs that cannot be compared."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import envscope
from envscope.cli import main
from envscope.cli._parser import parser
from envscope.cli._source import read_process_environ
from envscope.tools._report import MIN_SHRUNK_WIDTH
from tests._privdrop import run_as_nobody
from tests.cli.test_cli import CONFIG, DEMO, ROOT, clean_process_env  # noqa: F401 - autouse

ESC = "\x1b["


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    """`envscope --version` and `-V` print the package version and exit 0."""
    assert main([flag]) == 0
    assert capsys.readouterr().out == f"envscope {envscope.__version__}\n"


def _actions(
    command: str = "envscope", top: argparse.ArgumentParser | None = None
) -> Iterator[tuple[str, argparse.Action]]:
    """Every action of every command, nested ones (``sources check``) included."""
    for action in (top or parser("0"))._actions:
        yield command, action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                assert sub.description, f"{name} has no description"
                inner = name if command == "envscope" else f"{command} {name}"
                yield from (item for item in _actions(inner, sub) if item[0] != command)


@pytest.mark.parametrize(
    ("command", "option"),
    [(c, a.dest) for c, a in _actions()],
)
def test_every_option_has_help(command: str, option: str) -> None:
    """Every option and positional of every command carries a help text."""
    actions = {a.dest: a for c, a in _actions() if c == command}
    text = actions[option].help
    assert text
    assert text != argparse.SUPPRESS


def test_every_command_is_listed_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """`envscope --help` lists each command with its one-line summary."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("explain", "snapshot", "diff", "scan", "run", "check-spawns"):
        assert re.search(rf"^\s+{command}\s+\S", out, re.M), command


def _rows(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("KEY"))
    end = lines.index("", start)
    return [line.split()[0] for line in lines[start + 1 : end]]


@pytest.mark.parametrize(
    ("args", "rows"),
    [
        (["--key", "openai_api_key"], ["OPENAI_API_KEY"]),
        (["--key", "PATH", "--key", "HOME"], ["HOME", "PATH"]),
        (["--only", "kept"], ["CHATX_WORKSPACE", "DEFAULT_MODEL", "ENVSCOPE_HOME", "HOME", "LANG",
                              "ORG_POLICY_FLAG", "PATH"]),
        (["--only", "removed"], ["ANTHROPIC_API_KEY", "CHATX_SIGNING_SECRET",
                                 "DISCORD_ALLOWED_CHANNELS", "ENVSCOPE_FINGERPRINT_KEY",
                                 "LAUNCH_ONLY_SETTING", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN"]),
        (["--only", "kept", "--key", "OPENAI_API_KEY", "--key", "PATH"], ["PATH"]),
    ],
    ids=["one-key", "two-keys", "kept", "removed", "kept-and-key"],
)  # fmt: skip
def test_explain_key_and_only(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    rows: list[str],
) -> None:
    """--key NAME (any case, repeatable) and --only kept|removed pick rows, in text and JSON."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    assert main(["--config", CONFIG, "explain", "--home", "work", *args]) == 0
    assert _rows(capsys.readouterr().out) == rows
    assert main(["--config", CONFIG, "explain", "--home", "work", "--json", *args]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["keys"]) == rows


def test_explain_key_that_no_build_saw(capsys: pytest.CaptureFixture[str]) -> None:
    """A --key no decision names says so instead of printing an empty table."""
    assert main(["--config", CONFIG, "explain", "--key", "NOT_THERE"]) == 0
    assert "(no key matches)" in capsys.readouterr().out


class _Tty:
    """A stand-in stdout that says it is a terminal."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        """Nothing buffered."""

    def isatty(self) -> bool:
        return True


# (--color, NO_COLOR, FORCE_COLOR, stdout is a terminal, coloured)
COLOR: list[tuple[str | None, str | None, str | None, bool, bool]] = [
    (None, None, None, True, True),
    (None, None, None, False, False),
    (None, "1", None, True, False),
    (None, "", None, True, True),  # NO_COLOR set but empty does not count (no-color.org)
    (None, None, "1", False, True),
    (None, "1", "1", False, False),  # NO_COLOR wins over FORCE_COLOR
    ("always", "1", None, False, True),  # the flag wins over the env
    ("never", None, "1", True, False),
    ("auto", None, None, True, True),
]


@pytest.mark.parametrize(("flag", "no_color", "force", "tty", "colored"), COLOR)
def test_color_choice(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: str | None,
    no_color: str | None,
    force: str | None,
    tty: bool,
    colored: bool,
) -> None:
    """Colour follows --color, then NO_COLOR (non-empty), then FORCE_COLOR, then the terminal."""
    for name, value in (("NO_COLOR", no_color), ("FORCE_COLOR", force)):
        if value is not None:
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("COLUMNS", "400")
    fake = _Tty()
    if tty:
        monkeypatch.setattr(sys, "stdout", fake)
    argv = ["--config", CONFIG, "explain", "--home", "work"]
    argv += ["--color", flag] if flag else []
    assert main(argv) == 0
    out = "".join(fake.parts) if tty else capsys.readouterr().out
    assert (ESC in out) is colored


@pytest.mark.parametrize("columns", [60, 100, 140])
@pytest.mark.parametrize(
    "argv",
    [["explain", "--home", "work"], ["explain", "--home", "work", "--show-values"],
     ["diff", "home:work", "home:personal"]],
    ids=["explain", "show-values", "diff"],
)  # fmt: skip
def test_tables_fit_the_width(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    columns: int,
    argv: list[str],
) -> None:
    """$COLUMNS bounds each table row: the origin (or WHY) column is cut with an ellipsis."""
    monkeypatch.setenv("COLUMNS", str(columns))
    main(["--config", CONFIG, *argv])
    out = capsys.readouterr().out
    table = out.split("\n\n")[1].splitlines()
    header = table[0]
    cut = ["ORIGIN", "VALUE"] if "VALUE" in header else ["WHY"] if "WHY" in header else ["ORIGIN"]
    # what cannot be cut: the columns before the first cut one, and each cut one at its minimum
    floor = header.index(cut[0]) + len(cut) * MIN_SHRUNK_WIDTH + 2 * (len(cut) - 1)
    assert max(map(len, table)) <= max(columns, floor)
    assert any("…" in line for line in table)


def test_no_width_limit_on_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    """Without $COLUMNS and a terminal nothing is cut (what a pipe or a file gets)."""
    main(["--config", CONFIG, "explain", "--home", "work"])
    assert "…" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("document", "home"),
    [("launch_home: ./launch\nhomes: {work: ./typo}\n", "work"),
     ("launch_home: ./gone\n", None)],
    ids=["routed", "launch"],
)  # fmt: skip
@pytest.mark.parametrize("strict", [False, True])
def test_missing_configured_home_is_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    document: str,
    home: str | None,
    strict: bool,
) -> None:
    """A config home that does not exist exits 2 (as --home does), with or without --strict."""
    (tmp_path / "launch").mkdir()
    config = tmp_path / "envscope.yaml"
    config.write_text(document)
    argv = ["--config", str(config), "explain", *(["--home", home] if home else [])]
    assert main([*argv, *(["--strict"] if strict else [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"envscope: error: {config}: ")
    assert "names a home that is not an existing directory" in err


def test_diff_under_different_fingerprint_keys_is_a_finding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two snapshots of one build made under different keys never end 'no differences', exit 0."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    monkeypatch.setenv("ENVSCOPE_FINGERPRINT_KEY", "first-key-of-enough-length")
    assert main(["--config", CONFIG, "snapshot", "--home", "personal", "-o", str(a)]) == 0
    monkeypatch.setenv("ENVSCOPE_FINGERPRINT_KEY", "other-key-of-enough-length")
    assert main(["--config", CONFIG, "snapshot", "--home", "personal", "-o", str(b)]) == 0
    capsys.readouterr()
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "no differences" not in out
    assert re.search(r"\d+ incomparable$", out.splitlines()[-1])
    assert main(["diff", str(a), str(b), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fingerprints_comparable"] is False
    assert {d["change"] for d in data["differences"]} == {"incomparable"}
    assert main(["diff", str(a), str(a)]) == 0  # the same key: comparable, no differences


@pytest.fixture
def host_process() -> Iterator[int]:
    """A running 'host' whose env holds what the auditor's shell does not."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/operator", "LANG": "C.UTF-8",
           "ONLY_IN_THE_HOST": "host-value-1", "TELEGRAM_BOT_TOKEN": "fake-host-tg-token",
           "ENVSCOPE_FINGERPRINT_KEY": "host-key-of-enough-length"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{proc.pid}/environ").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)  # pragma: no cover - the exec has not happened yet
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_pid_pins_the_parent_env(capsys: pytest.CaptureFixture[str], host_process: int) -> None:
    """--pid PID audits the env the host process started with, not the auditor's shell."""
    argv = ["--config", CONFIG, "explain", "--home", "work", "--json"]
    assert main([*argv, "--pid", str(host_process)]) == 0
    keys = json.loads(capsys.readouterr().out)["keys"]
    assert keys["ONLY_IN_THE_HOST"]["in_child"] is True
    assert keys["TELEGRAM_BOT_TOKEN"]["in_child"] is False
    assert main(argv) == 0
    assert "ONLY_IN_THE_HOST" not in json.loads(capsys.readouterr().out)["keys"]


# (what /proc/PID holds, the pid given, words in the error)
PROC_FAULTS: list[tuple[str, str, str]] = [
    ("missing", "4242", "no such process"),
    ("empty", "4242", "shows an empty env"),
    ("directory", "4242", "cannot read the env of process 4242"),
    ("fine", "0", "is not a process id"),
    ("fine", "-3", "is not a process id"),
    ("fine", "abc", "is not a process id"),
    ("fine", "١٢", "is not a process id"),  # non-ASCII digits
    ("no-proc", "4242", "no"),
]


@pytest.mark.parametrize(("state", "pid", "words"), PROC_FAULTS)
def test_pid_faults_say_why(tmp_path: Path, state: str, pid: str, words: str) -> None:
    """An unreadable, missing or empty environ (or a bad pid) is an error saying so."""
    proc = tmp_path / "4242"
    proc.mkdir()
    if state == "no-proc":  # a system without /proc (macOS, Windows)
        tmp_path = tmp_path / "proc-is-missing"
        words = f"no {tmp_path} here (Linux)"
    if state == "empty":
        (proc / "environ").write_bytes(b"")
    elif state == "directory":
        (proc / "environ").mkdir()
    elif state == "fine":
        (proc / "environ").write_bytes(b"A=1\0")
    with pytest.raises(envscope.EnvscopeError, match=re.escape(words)):
        read_process_environ(pid, proc_root=str(tmp_path))


def test_pid_environ_is_decoded_like_os_environ(tmp_path: Path) -> None:
    """NAME=VALUE entries are read as os.environ reads them; other entries are skipped."""
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "environ").write_bytes(b"A=1\0B=x=y\0noequals\0=v\0C=\xff\0")
    env = read_process_environ("7", proc_root=str(tmp_path))
    assert env == {"A": "1", "B": "x=y", "C": os.fsdecode(b"\xff")}


def test_pid_environ_with_a_name_twice_is_what_the_process_sees(tmp_path: Path) -> None:
    """A raw env block may name a variable twice: getenv() and os.environ see the first."""
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "environ").write_bytes(b"TOKEN=first\0A=1\0TOKEN=second\0A=2\0")
    assert read_process_environ("7", proc_root=str(tmp_path)) == {"TOKEN": "first", "A": "1"}
    seen = subprocess.run(
        [sys.executable, "-c", "import os, sys; sys.stdout.write(os.environ['TOKEN'])"],
        env={"TOKEN": "first"}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert seen == "first"


@pytest.mark.parametrize(
    ("status", "words"),
    [(f"Name:\thost\nUid:\t{os.getuid()}\t{os.getuid()}\t0\t0\n", "this user's, but not dumpable"),
     ("Name:\thost\nUid:\t4321\t4321\t4321\t4321\n", "belongs to another user"),
     (None, "belongs to another user")],
    ids=["same-user", "another-user", "no-status"],
)  # fmt: skip
def test_pid_permission_denied_says_whose_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str | None, words: str
) -> None:
    """EACCES on environ: this user's non-dumpable process is told apart from another user's."""
    import envscope.cli._source as source
    from envscope.files._fs import read_regular_file as real

    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "environ").write_bytes(b"A=1\0")
    if status is not None:
        (tmp_path / "7" / "status").write_text(status)

    def denied(path: str, limit: int) -> bytes | None:
        if path.endswith("environ"):
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(source, "read_regular_file", denied)
    with pytest.raises(envscope.FileError, match=re.escape(words)):
        read_process_environ("7", proc_root=str(tmp_path))


@pytest.mark.privdrop
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_pid_of_a_hardened_process_of_the_same_user_says_so_for_real() -> None:
    """As uid 65534, --pid of a uid-65534 host that called harden_process(): the real hint."""
    from tests._privdrop import _command, run_as_nobody

    code = (
        "import sys, time; from envscope import harden_process; harden_process(); "
        "print('ready', flush=True); time.sleep(60)"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "SECRET_OF_HOST": "hardened-v1"}
    host = subprocess.Popen(_command(code, ()), env=env, cwd="/", stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert host.stdout is not None
        assert host.stdout.readline().strip() == "ready"
        audit = (
            "import sys; from envscope.cli import main; "
            "sys.exit(main(['--config', sys.argv[1], 'explain', '--pid', sys.argv[2]]))"
        )
        done = run_as_nobody(audit, CONFIG, str(host.pid))
    finally:
        host.kill()
        host.communicate()
    assert done.returncode == 2, done.stderr
    assert "this user's, but not dumpable" in done.stderr
    assert "harden_process()" in done.stderr
    assert "hardened-v1" not in done.stderr


@pytest.mark.privdrop
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_pid_of_another_users_process_is_refused_for_real(host_process: int) -> None:
    """As uid 65534, --pid of root's process is exit 2 saying permission denied (a real run)."""
    code = (
        "import sys; from envscope.cli import main; "
        "sys.exit(main(['--config', sys.argv[1], 'explain', '--pid', sys.argv[2]]))"
    )
    done = run_as_nobody(code, CONFIG, str(host_process))
    assert done.returncode == 2, done.stderr
    assert f"/proc/{host_process}/environ: cannot read the env of process" in done.stderr
    assert "permission denied" in done.stderr
    assert "fake-host-tg-token" not in done.stderr


HOST_MODULE = """
import os
from envscope import Host

DEMO = {demo!r}


def make_host():
    return Host(os.path.join(DEMO, "launch"), managed_env_file=os.path.join(DEMO, "managed.env"),
                bundled_plugins=os.path.join(DEMO, "bundled"))


host = make_host()
not_a_host = 42
"""


@pytest.fixture
def host_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A host package in the current directory with an instance and a factory."""
    name = f"agent_host_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(HOST_MODULE.format(demo=str(DEMO)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("attr", ["host", "make_host"])
@pytest.mark.parametrize(
    "command",
    [["explain", "--json"], ["snapshot", "-o", "-"], ["scan", "--json"],
     ["diff", "home:launch", "home:launch"]],
    ids=["explain", "snapshot", "scan", "diff"],
)  # fmt: skip
def test_host_factory_builds_the_host_for_every_command(
    capsys: pytest.CaptureFixture[str], host_module: str, attr: str, command: list[str]
) -> None:
    """--host MODULE:ATTR (an instance or a factory) builds the host from its code, no config."""
    code = main([*command, "--host", f"{host_module}:{attr}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    if command[0] in ("explain", "snapshot"):
        data = json.loads(out)
        assert data["home"] == "launch"
        assert data["keys"]["TELEGRAM_BOT_TOKEN"]["in_child"] is False  # from the launch .env


def test_host_factory_with_pid_reads_the_process_env(
    capsys: pytest.CaptureFixture[str],
    host_module: str,
    host_process: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--host with --pid imports the host under the process's env (what its factory saw)."""
    monkeypatch.setattr(os, "environ", os.environ.copy())  # the command replaces its own env
    argv = ["explain", "--json", "--host", f"{host_module}:host", "--pid", str(host_process)]
    assert main(argv) == 0
    keys = json.loads(capsys.readouterr().out)["keys"]
    assert keys["ONLY_IN_THE_HOST"]["in_child"] is True


@pytest.mark.parametrize(
    ("spec", "words"),
    [("nocolon", "is not MODULE:ATTR"), (":host", "is not MODULE:ATTR"),
     ("no_such_module_xyz:host", "no module named 'no_such_module_xyz'"),
     ("{mod}:missing", "has no attribute 'missing'"),
     ("{mod}:not_a_host", "is a int, not an envscope Host")],
    ids=["no-colon", "no-module", "no-such-module", "no-attribute", "not-a-host"],
)  # fmt: skip
def test_host_factory_mistakes_are_exit_2(
    capsys: pytest.CaptureFixture[str], host_module: str, spec: str, words: str
) -> None:
    """A --host that is not MODULE:ATTR, cannot import, or is not a Host: exit 2 saying so."""
    assert main(["explain", "--host", spec.format(mod=host_module)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("envscope: error: --host: ")
    assert words in err


SECRET = "host-code-secret-value-0123456789"
BROKEN_HOSTS = {
    "factory raises": (f"def make():\n    raise RuntimeError({SECRET!r})\n", "make",
                       "the factory raised RuntimeError"),
    "factory raises its own error": (
        f"class Oops(ValueError):\n    pass\n\ndef make():\n    raise Oops({SECRET!r})\n",
        "make", "the factory raised Oops"),
    "factory raises its own Exception subclass": (
        f"class Oops(Exception):\n    pass\n\ndef make():\n    raise Oops({SECRET!r})\n",
        "make", "the factory raised Oops"),
    "factory raises its package's error": (
        f"import host_errors\n\ndef make():\n    raise host_errors.HostError({SECRET!r})\n",
        "make", "the factory raised HostError"),
    "factory raises an error imported by name": (
        f"from host_errors import HostError\n\ndef make():\n    raise HostError({SECRET!r})\n",
        "make", "the factory raised HostError"),
    "a lazily loaded module beside the error": (
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('lazy_broken')\n"
        "spec.loader = importlib.util.LazyLoader(spec.loader)\n"
        "lazy = sys.modules['lazy_broken'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(lazy)\n"
        f"class Oops(Exception):\n    pass\n\ndef make():\n    raise Oops({SECRET!r})\n",
        "make", "the factory raised Oops"),
    "import raises its package's error": (
        f"import host_errors\nraise host_errors.HostError({SECRET!r})\n",
        "make", "raised HostError"),
    "factory needs an argument": ("def make(config):\n    return config\n", "make",
                                  "needs arguments (config)"),
    "factory needs a keyword": ("def make(*, token):\n    return token\n", "make",
                                "needs arguments (token)"),
    "syntax error": (f"x = {SECRET!r} +\n", "make", "SyntaxError at "),
    "indentation error": ("def make():\nreturn 1\n", "make", "IndentationError at "),
    "import raises": (f"raise KeyError({SECRET!r})\n", "make", "raised KeyError"),
    "a missing dependency": ("import no_such_dependency_xyz\n", "make",
                             "no module named 'no_such_dependency_xyz'"),
}  # fmt: skip


@pytest.mark.parametrize("case", BROKEN_HOSTS)
def test_a_broken_host_is_one_line_exit_2_no_traceback_no_value(tmp_path: Path, case: str) -> None:
    """--host over code that fails in any way: one error line, exit 2, nothing it quoted."""
    source, attr, words = BROKEN_HOSTS[case]
    (tmp_path / "broken_host.py").write_text(source)
    (tmp_path / "host_errors.py").write_text("class HostError(Exception):\n    pass\n")
    (tmp_path / "lazy_broken.py").write_text("raise RuntimeError('loaded only when read')\n")
    done = subprocess.run(
        [sys.executable, "-m", "envscope", "explain", "--host", f"broken_host:{attr}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("envscope: error: --host: broken_host:")
    assert words in done.stderr
    assert "Traceback" not in done.stderr
    assert SECRET not in done.stderr + done.stdout


@pytest.mark.parametrize("where", ["before", "after"])
def test_host_and_config_together_is_exit_2(
    capsys: pytest.CaptureFixture[str], host_module: str, where: str
) -> None:
    """--host and --config both name a host: exit 2 instead of silently picking one."""
    both = ["--host", f"{host_module}:host", "--config", CONFIG]
    argv = [*both, "explain"] if where == "before" else ["explain", *both]
    assert main(argv) == 2
    assert "--host and --config each name the host" in capsys.readouterr().err


def test_host_factory_home_is_a_path(capsys: pytest.CaptureFixture[str], host_module: str) -> None:
    """With --host, --home takes 'launch' or a directory; a name is an error naming the rule."""
    spec = f"{host_module}:host"
    work = str(DEMO / "profiles" / "work")
    assert main(["explain", "--json", "--host", spec, "--home", work]) == 0
    assert json.loads(capsys.readouterr().out)["routed"] is True
    assert main(["explain", "--host", spec, "--home", "work"]) == 2
    assert "with --host, --home takes 'launch' or a path" in capsys.readouterr().err


def test_root_is_the_repository() -> None:
    """The demo config the tests use is the repository's."""
    assert (ROOT / "fixtures" / "demo" / "envscope.yaml").is_file()
