"""The static spawn-site check: which calls bypass the factory, aliases, allow comments, files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from envscope.tools._spawn_check import (
    REASON_ENVIRON,
    REASON_MISSING,
    REASON_NO_PARAM,
    REASON_NONE,
    REASON_SPLAT,
    SKIP_DIRS,
    SpawnSite,
    check_paths,
    check_source,
    exit_status,
    format_spawn_sites,
)

SPAWNS = Path(__file__).resolve().parents[2] / "fixtures" / "spawns"

Expected = list[tuple[str, int, bool]]


def found(source: str) -> Expected:
    """``(call, line, allowed)`` for each site ``check_source`` reports in a dedented snippet."""
    sites = check_source(textwrap.dedent(source).lstrip("\n"), "snippet.py")
    return [(s.call, s.line, s.allowed) for s in sites]


POPEN_10 = "['x'], -1, None, None, None, None, None, True, False, None"

# (id, the line after "import subprocess", the call reported on it or None)
SUBPROCESS_CASES: list[tuple[str, str, str | None]] = [
    ("run-no-env", "subprocess.run(['ls'])", "subprocess.run"),
    ("run-env", "subprocess.run(['ls'], env=env)", None),
    ("run-empty-env", "subprocess.run(['ls'], env={})", None),
    ("run-env-none", "subprocess.run(['ls'], env=None)", "subprocess.run"),
    ("popen", "subprocess.Popen('ls')", "subprocess.Popen"),
    ("call", "subprocess.call('ls')", "subprocess.call"),
    ("check_call", "subprocess.check_call('ls')", "subprocess.check_call"),
    ("check_output", "subprocess.check_output('ls')", "subprocess.check_output"),
    ("getoutput", "subprocess.getoutput('ls')", "subprocess.getoutput"),
    ("getstatusoutput", "subprocess.getstatusoutput('ls')", "subprocess.getstatusoutput"),
    ("splat", "subprocess.run(['ls'], **kw)", "subprocess.run"),
    ("splat-and-env", "subprocess.run(['ls'], env=e, **kw)", None),
    ("star-args", "subprocess.run(*argv)", "subprocess.run"),
    ("positional-env", f"subprocess.Popen({POPEN_10}, env)", None),
    ("positional-env-none", f"subprocess.Popen({POPEN_10}, None)", "subprocess.Popen"),
    ("positional-short", "subprocess.Popen(['x'], -1)", "subprocess.Popen"),
    ("other-attr", "subprocess.list2cmdline(['ls'])", None),
    ("nested-call", "subprocess.run(subprocess.check_output(x, env=e).split())", "subprocess.run"),
    ("lambda", "f = lambda: subprocess.run(['ls'])", "subprocess.run"),
]

# (id, source, expected sites)
OTHER_CASES: list[tuple[str, str, Expected]] = [
    ("unimported", "subprocess.run(['ls'])", []),
    ("relative-import", "from .subprocess import run\nrun(['ls'])", []),
    ("method-named-run", "class S:\n    def run(self): ...\nS().run()", []),
    ("pexpect", "import pexpect\npexpect.spawn('bash')", [("pexpect.spawn", 2, False)]),
    ("pexpect-env", "import pexpect\npexpect.spawn('bash', env=e)", []),
    (
        "ptyprocess",
        "from ptyprocess import PtyProcess\nPtyProcess.spawn(['bash'])",
        [("ptyprocess.PtyProcess.spawn", 2, False)],
    ),
]

ASYNCIO_CASES: list[tuple[str, str, Expected]] = [
    (
        "exec",
        "import asyncio\nasyncio.create_subprocess_exec('ls')",
        [("asyncio.create_subprocess_exec", 2, False)],
    ),
    (
        "shell",
        "import asyncio\nasyncio.create_subprocess_shell('ls')",
        [("asyncio.create_subprocess_shell", 2, False)],
    ),
    ("exec-env", "import asyncio\nasyncio.create_subprocess_exec('ls', env=e)", []),
    (
        "exec-splat",
        "import asyncio\nasyncio.create_subprocess_exec(*argv, **kw)",
        [("asyncio.create_subprocess_exec", 2, False)],
    ),
    (
        "import-submodule",
        "import asyncio.subprocess\nasyncio.subprocess.create_subprocess_exec('ls')",
        [("asyncio.create_subprocess_exec", 2, False)],
    ),
    (
        "submodule-alias",
        "import asyncio.subprocess as aio\naio.create_subprocess_shell('ls')",
        [("asyncio.create_subprocess_shell", 2, False)],
    ),
    (
        "from-submodule",
        "from asyncio.subprocess import create_subprocess_shell as css\ncss('ls')",
        [("asyncio.create_subprocess_shell", 2, False)],
    ),
    ("asyncio-subprocess-has-no-run", "from asyncio import subprocess\nsubprocess.run(x)", []),
]

# (id, the line after "import os, pty", the call reported on it or None)
OS_CASES: list[tuple[str, str, str | None]] = [
    ("system", "os.system('ls')", "os.system"),
    ("popen", "os.popen('ls')", "os.popen"),
    ("pty", "pty.spawn(['bash'])", "pty.spawn"),
    ("execve", "os.execve(p, argv, env)", None),
    ("execve-environ", "os.execve(p, argv, os.environ)", "os.execve"),
    ("execle", "os.execle(p, 'a', 'b', env)", None),
    ("execle-environ", "os.execle(p, 'a', os.environ)", "os.execle"),
    ("spawnve-star", "os.spawnve(*args)", None),
    ("execve-keyword", "os.execve(p, argv, env=os.environ.copy())", "os.execve"),
    ("posix_spawn", "os.posix_spawn(p, argv, env)", None),
    ("posix_spawn-environ", "os.posix_spawn(p, argv, os.environ)", "os.posix_spawn"),
    ("path-join", "os.path.join('a', 'b')", None),
]

NO_VARIANT = ["execv", "execl", "execvp", "execlp", "spawnv", "spawnl", "spawnvp", "spawnlp"]
ENV_VARIANT = [f"{name}e" for name in NO_VARIANT]

ALIAS_CASES: list[tuple[str, str, Expected]] = [
    ("module-alias", "import subprocess as sp\nsp.run(x)", [("subprocess.run", 2, False)]),
    ("from-alias", "from subprocess import Popen as P\nP(x)", [("subprocess.Popen", 2, False)]),
    ("from-os", "from os import system\nsystem('ls')", [("os.system", 2, False)]),
    ("os-alias", "import os as o\no.popen('ls')", [("os.popen", 2, False)]),
    ("posix-module", "import posix\nposix.system('ls')", [("os.system", 2, False)]),
    (
        "star-os",
        "from os import *\nsystem('ls')\nexecvp(a, b)",
        [("os.system", 2, False), ("os.execvp", 3, False)],
    ),
    ("star-subprocess", "from subprocess import *\nrun(x)", [("subprocess.run", 2, False)]),
    ("assigned", "import subprocess\nrun = subprocess.run\nrun(x)", [("subprocess.run", 3, False)]),
    ("annotated", "import os\nsh: object = os.system\nsh('ls')", [("os.system", 3, False)]),
    ("chained-assign", "import os\na = b = os.system\nb('ls')", [("os.system", 3, False)]),
    (
        "module-rebound",
        "import subprocess\nsp = subprocess\nsp.call(x)",
        [("subprocess.call", 3, False)],
    ),
    ("attribute-target-untracked", "import os\nobj.sh = os.system\nobj.sh(x)", []),
    (
        "import-fallback",
        "try:\n    import pty\nexcept ImportError:\n    pty = None\npty.spawn(['sh'])",
        [("pty.spawn", 5, False)],
    ),
    (
        "function-import",
        "def a():\n    from subprocess import run\n    run(['x'])\ndef b():\n    run(['x'])",
        [("subprocess.run", 3, False)],
    ),
    (
        "module-import-seen-in-function",
        "import os\ndef f():\n    def g():\n        os.system('x')",
        [("os.system", 4, False)],
    ),
    (
        "local-import-shadows",
        "from subprocess import run\ndef main():\n    from asyncio import run\n    run(go())",
        [],
    ),
]

ENVIRON_CASES: list[tuple[str, bool]] = [
    ("os.environ", True),
    ("os.environ.copy()", True),
    ("dict(os.environ)", True),
    ("dict(os.environ, X='1')", True),
    ("{**os.environ, 'X': '1'}", True),
    ("{'X': '1', **os.environ}", True),
    ("os.environ | {'X': '1'}", True),
    ("{'X': '1'} | os.environ", True),
    ("{**os.environ.copy()}", True),
    ("os.environb", True),
    ("{'PATH': os.environ['PATH']}", False),
    ("dict(PATH=os.environ['PATH'])", False),
    ("{**extra}", False),
    ("env | extra", False),
    ("os.environ.get('X')", False),
    ("factory.copy()", False),
]


@pytest.mark.parametrize(
    ("line", "call"), [pytest.param(s, c, id=i) for i, s, c in SUBPROCESS_CASES]
)
def test_subprocess_calls(line: str, call: str | None) -> None:
    """subprocess spawns need an explicit, non-None env (keyword or Popen's positional)."""
    assert found(f"import subprocess\n{line}") == ([] if call is None else [(call, 2, False)])


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(src, exp, id=name) for name, src, exp in OTHER_CASES],
)
def test_other_calls(source: str, expected: Expected) -> None:
    """Unresolvable names are not reported; pexpect and ptyprocess spawns need env= too."""
    assert found(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(src, exp, id=name) for name, src, exp in ASYNCIO_CASES],
)
def test_asyncio_calls(source: str, expected: Expected) -> None:
    """asyncio's create_subprocess_* need env=, however asyncio.subprocess is imported."""
    assert found(source) == expected


@pytest.mark.parametrize(("line", "call"), [pytest.param(s, c, id=i) for i, s, c in OS_CASES])
def test_os_calls(line: str, call: str | None) -> None:
    """os/pty calls without an env are findings; env variants only when handed os.environ."""
    assert found(f"import os, pty\n{line}") == ([] if call is None else [(call, 2, False)])


@pytest.mark.parametrize("name", NO_VARIANT)
def test_exec_spawn_without_env_variant(name: str) -> None:
    """Every os.exec*/spawn* without the ``e`` suffix is a finding that names its env variant."""
    sites = check_source(f"import os\nos.{name}(a, b)\n", "x.py")
    assert [(s.call, s.line) for s in sites] == [(f"os.{name}", 2)]
    assert f"os.{name}e " in sites[0].reason


@pytest.mark.parametrize("name", ENV_VARIANT)
def test_exec_spawn_env_variant_is_fine(name: str) -> None:
    """Every os.exec*e/spawn*e given an env is not a finding."""
    assert found(f"import os\nos.{name}(a, b, c, env)") == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(src, exp, id=name) for name, src, exp in ALIAS_CASES],
)
def test_aliases_resolve(source: str, expected: Expected) -> None:
    """Import aliases, star imports and assignments resolve per scope to the spawn function."""
    assert found(source) == expected


@pytest.mark.parametrize(("expr", "inherits"), ENVIRON_CASES)
def test_env_is_parent_environ(expr: str, inherits: bool) -> None:
    """env= set to os.environ or an obvious copy/merge of it is a finding; picking values is not."""
    sites = check_source(f"import os, subprocess\nsubprocess.run(['x'], env={expr})\n", "x.py")
    assert [s.reason for s in sites] == ([REASON_ENVIRON] if inherits else [])


def test_environ_from_import_alias() -> None:
    """``from os import environ as E`` then ``env=E`` is still the parent environment."""
    assert found("from os import environ as E\nimport subprocess\nsubprocess.run(x, env=E)") == [
        ("subprocess.run", 3, False)
    ]


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ("subprocess.run(['x'])", REASON_MISSING),
        ("subprocess.run(['x'], env=None)", REASON_NONE),
        ("subprocess.run(['x'], env=os.environ)", REASON_ENVIRON),
        ("os.system('x')", REASON_NO_PARAM),
        ("pty.spawn(['x'])", REASON_NO_PARAM),
        (
            "os.execv(p, a)",
            "takes no env: the child inherits the parent environment (use os.execve",
        ),
        ("subprocess.run(['x'], **options)", "**options"),
        ("subprocess.run(['x'], **self.popen_options)", "**self.popen_options"),
    ],
)
def test_reasons(call: str, reason: str) -> None:
    """Each kind of bypass says why: env=None and **kwargs are named as such."""
    sites = check_source(f"import os, pty, subprocess\n{call}\n", "x.py")
    assert len(sites) == 1
    assert reason in sites[0].reason


def test_deep_splat_is_reported_with_its_source_elided() -> None:
    """A **splat too deep to print is still a finding; the reason elides its source."""
    deep = " | ".join(["kw"] * 2000)
    sites = check_source(f"import subprocess\nsubprocess.run(x, **({deep}))\n", "x.py")
    assert [s.reason for s in sites] == [REASON_SPLAT.format(src="...")]


def test_env_none_reason_says_it_inherits() -> None:
    """An explicit env=None is reported because it inherits, and the reason says so."""
    assert "env=None" in REASON_NONE
    assert "inherits" in REASON_NONE


ALLOW_CASES: list[tuple[str, str, Expected]] = [
    (
        "same-line",
        "import os\nos.system('x')  # envscope: allow-inherit",
        [("os.system", 2, True)],
    ),
    (
        "first-line",
        "import subprocess\nsubprocess.run(  # envscope: allow-inherit\n    ['x'],\n)",
        [("subprocess.run", 2, True)],
    ),
    (
        "last-line",
        "import subprocess\nsubprocess.run(\n    ['x'],\n)  # envscope: allow-inherit -- why",
        [("subprocess.run", 2, True)],
    ),
    (
        "middle-line",
        "import subprocess\nsubprocess.run(\n    x,  # envscope: allow-inherit\n    check=True,\n)",
        [("subprocess.run", 2, True)],
    ),
    (
        "no-space",
        "import os\nos.system('x')  #envscope:allow-inherit",
        [("os.system", 2, True)],
    ),
    (
        "line-after-call",
        "import os\nos.system('x')\n# envscope: allow-inherit",
        [("os.system", 2, False)],
    ),
    (
        "line-before-call",
        "import os\n# envscope: allow-inherit\nos.system('x')",
        [("os.system", 3, False)],
    ),
    (
        "in-a-string",
        "import os\nos.system('# envscope: allow-inherit')",
        [("os.system", 2, False)],
    ),
    (
        "other-directive",
        "import os\nos.system('x')  # envscope: allow",
        [("os.system", 2, False)],
    ),
    (
        "only-the-call-it-spans",
        "import os\nos.system('a')  # envscope: allow-inherit\nos.system('b')",
        [("os.system", 2, True), ("os.system", 3, False)],
    ),
]


@pytest.mark.parametrize(
    ("source", "expected"),
    [pytest.param(src, exp, id=name) for name, src, exp in ALLOW_CASES],
)
def test_allow_comment(source: str, expected: Expected) -> None:
    """``# envscope: allow-inherit`` in a comment on any line of the call marks it allowed."""
    assert found(source) == expected


@pytest.mark.parametrize(
    ("source", "col"),
    [
        ("import os\nos.system('x')\n", 1),
        ("import os\nif x:\n    os.system('x')\n", 5),
        ("import os\ns = 'ééé'; os.system('x')\n", 12),
        ("import os\ns = '日本'; os.system('x')\n", 11),
    ],
)
def test_columns_are_one_based_characters(source: str, col: int) -> None:
    """Columns are 1-based and count characters, not UTF-8 bytes."""
    assert [s.col for s in check_source(source, "x.py")] == [col]


def test_syntax_error_propagates_from_check_source() -> None:
    """check_source raises SyntaxError naming the path and line."""
    with pytest.raises(SyntaxError) as info:
        check_source("import os\ndef broken(:\n", "bad.py")
    assert (info.value.filename, info.value.lineno) == ("bad.py", 2)


def test_site_str() -> None:
    """A site prints as ``path:line:col: call: reason`` (``(allowed)`` when allowed)."""
    site = SpawnSite("a.py", 3, 5, "os.system", "why", allowed=False)
    assert str(site) == "a.py:3:5: os.system: why"
    assert str(SpawnSite("a.py", 3, 5, "os.system", "why", allowed=True)).endswith(" (allowed)")


_EXPECT = re.compile(r"#\s*expect: (?P<call>[\w.]+)(?P<allowed> allowed)?")


def expectations(path: Path) -> Expected:
    """The ``expect: CALL [allowed]`` markers of a fixture, as ``(call, line, allowed)``."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _EXPECT.search(line)
        if match:
            out.append((match["call"], number, match["allowed"] is not None))
    return out


@pytest.mark.parametrize("name", ["terminal_tool.py", "legacy_cron.py", "clean.py"])
def test_fixtures_match_their_markers(name: str) -> None:
    """Each realistic fixture reports exactly the sites its ``expect:`` comments mark."""
    path = SPAWNS / name
    sites, errors = check_paths([str(path)])
    assert errors == []
    assert [(s.call, s.line, s.allowed) for s in sites] == expectations(path)
    assert all(s.path == str(path) for s in sites)


def test_fixture_markers_are_not_empty() -> None:
    """The fixtures mark findings and allowed sites (so the marker test cannot pass vacuously)."""
    marks = expectations(SPAWNS / "terminal_tool.py") + expectations(SPAWNS / "legacy_cron.py")
    assert len(marks) >= 10
    assert any(allowed for _, _, allowed in marks)


def test_check_paths_walks_a_directory_sorted() -> None:
    """A directory is walked for ``*.py`` files; sites come back by path, then line."""
    sites, errors = check_paths([str(SPAWNS)])
    assert errors == []
    keys = [(s.path, s.line, s.col) for s in sites]
    assert keys == sorted(keys)
    assert {Path(s.path).name for s in sites} == {"terminal_tool.py", "legacy_cron.py"}


def write(path: Path, text: str | bytes) -> Path:
    """Write a file (creating parents) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


BAD = "import os\nos.system('x')\n"


@pytest.mark.parametrize("skipped", sorted(SKIP_DIRS))
def test_skip_dirs_are_pruned(tmp_path: Path, skipped: str) -> None:
    """Files under .venv, __pycache__, .git, node_modules (…) are not walked; others are."""
    write(tmp_path / "pkg" / skipped / "inner" / "a.py", BAD)
    kept = write(tmp_path / "pkg" / "mod.py", BAD)
    write(tmp_path / "pkg" / "notes.txt", BAD)
    sites, errors = check_paths([str(tmp_path)])
    assert errors == []
    assert [s.path for s in sites] == [str(kept)]


def test_skip_dirs_pinned() -> None:
    """The pruned directory names are pinned."""
    assert (
        frozenset(
            {
                ".venv",
                "__pycache__",
                ".git",
                "node_modules",
                ".tox",
                ".nox",
                "site-packages",
                "build",
            }
        )
        == SKIP_DIRS
    )


def test_named_file_is_checked_even_inside_a_skipped_dir(tmp_path: Path) -> None:
    """A file named explicitly is checked whatever its directory or extension."""
    path = write(tmp_path / ".venv" / "script", BAD)
    sites, _ = check_paths([str(path)])
    assert [s.call for s in sites] == ["os.system"]


def test_same_file_twice_is_checked_once(tmp_path: Path) -> None:
    """A file reached twice (named and walked) yields its sites once."""
    path = write(tmp_path / "a.py", BAD)
    sites, _ = check_paths([str(path), str(tmp_path), str(tmp_path / "." / "a.py")])
    assert len(sites) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"import os\ndef broken(:\n", "bad.py:2: cannot parse: "),
        (b"import os\nx = '\xff'\n", "bad.py: not valid UTF-8 at byte 15"),
        (b"x = 1\x00\n", "bad.py"),
        (b"x = " + b"(" * 300 + b"1" + b")" * 300 + b"\n", "bad.py:1: cannot parse: "),
        (b"x = " + b"-" * 100_000 + b"1\n", "bad.py: cannot parse: too deeply nested"),
        (b"x = " + b"|".join([b"a"] * 5000) + b"\n", "bad.py: cannot parse: too deeply nested"),
    ],
    ids=["syntax", "not-utf8", "nul", "nested-parens", "deep-unary", "deep-binop"],
)
def test_unparsable_files_are_errors(tmp_path: Path, content: bytes, message: str) -> None:
    """A file that cannot be decoded or parsed is an error string naming it, not an exception."""
    write(tmp_path / "ok.py", BAD)
    bad = write(tmp_path / "bad.py", content)
    sites, errors = check_paths([str(tmp_path)])
    assert [s.call for s in sites] == ["os.system"]
    assert len(errors) == 1
    assert errors[0].startswith(str(bad))
    assert message in errors[0]


def test_bom_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 file starting with a byte-order mark parses."""
    path = write(tmp_path / "bom.py", b"\xef\xbb\xbf" + BAD.encode())
    sites, errors = check_paths([str(path)])
    assert (len(sites), errors) == (1, [])


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    """A path that does not exist is an error naming it."""
    missing = tmp_path / "nope.py"
    sites, errors = check_paths([str(missing)])
    assert sites == []
    assert errors == [f"{missing}: cannot read: No such file or directory"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """A ``*.py`` FIFO, named or walked, is an error (not a hang and not a silent skip)."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    expected: tuple[list[SpawnSite], list[str]] = ([], [f"{fifo}: cannot read: not a regular file"])
    assert check_paths([str(fifo)]) == expected
    assert check_paths([str(tmp_path)]) == expected


def test_unlistable_directory_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory that cannot be listed is an error naming it; its siblings are still checked."""
    write(tmp_path / "locked" / "a.py", BAD)
    kept = write(tmp_path / "open" / "b.py", BAD)
    real_scandir = os.scandir

    def scandir(path: str) -> Iterator[os.DirEntry[str]]:
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    sites, errors = check_paths([str(tmp_path)])
    assert [s.path for s in sites] == [str(kept)]
    assert errors == [f"{tmp_path / 'locked'}: cannot list: Permission denied"]


@pytest.mark.parametrize(
    ("target", "strerror"),
    [("missing.py", "No such file or directory"), ("loop.py", "Too many levels of symbolic links")],
    ids=["dangling", "looping"],
)
@pytest.mark.parametrize("named", [False, True], ids=["walked", "named"])
def test_unreadable_py_symlink_is_an_error(
    tmp_path: Path, target: str, strerror: str, named: bool
) -> None:
    """A dangling or looping ``*.py`` symlink, walked or named, is an error (exit 2)."""
    link = tmp_path / "loop.py" if target == "loop.py" else tmp_path / "gone.py"
    link.symlink_to(tmp_path / target)
    ok = write(tmp_path / "ok.py", BAD)
    sites, errors = check_paths([str(link) if named else str(tmp_path)])
    assert errors == [f"{link}: cannot read: {strerror}"]
    assert [s.path for s in sites] == ([] if named else [str(ok)])
    assert exit_status(sites, errors) == 2


def test_dangling_symlink_that_is_not_python_is_ignored(tmp_path: Path) -> None:
    """A walked broken symlink that is not ``*.py`` holds no source: nothing to report."""
    (tmp_path / "notes").symlink_to(tmp_path / "missing")
    assert check_paths([str(tmp_path)]) == ([], [])


def test_symlinked_package_directory_is_followed(tmp_path: Path) -> None:
    """A package directory that is a symlink is walked like any other."""
    real = write(tmp_path / "elsewhere" / "pkg" / "mod.py", BAD).parent
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pkg").symlink_to(real, target_is_directory=True)
    sites, errors = check_paths([str(tree)])
    assert errors == []
    assert [s.path for s in sites] == [str(tree / "pkg" / "mod.py")]


def test_directory_symlink_loops_end(tmp_path: Path) -> None:
    """Symlinks back to an ancestor or to each other are walked once: every file once, no hang."""
    write(tmp_path / "a" / "m.py", BAD)
    (tmp_path / "a" / "up").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "b").symlink_to(tmp_path / "c", target_is_directory=True)
    (tmp_path / "c").symlink_to(tmp_path / "b", target_is_directory=True)
    (tmp_path / "alias").symlink_to(tmp_path / "a", target_is_directory=True)
    sites, errors = check_paths([str(tmp_path)])
    assert errors == []
    assert len(sites) == 1


def test_file_reached_through_two_links_is_checked_once(tmp_path: Path) -> None:
    """A ``*.py`` symlink to another checked file reports the file once."""
    real = write(tmp_path / "a.py", BAD)
    (tmp_path / "b.py").symlink_to(real)
    sites, errors = check_paths([str(tmp_path)])
    assert (errors, [s.path for s in sites]) == ([], [str(real)])


# (id, file bytes, the sites (calls) it holds, or the error it is)
ENCODING_CASES: list[tuple[str, bytes, list[str] | str]] = [
    ("utf-8", BAD.encode(), ["os.system"]),
    ("bom", b"\xef\xbb\xbf" + BAD.encode(), ["os.system"]),
    (
        "utf-7-hides-call",
        b"# -*- coding: utf-7 -*-\nimport os\nos.system+ACg-'x'+ACk-\n",
        ["os.system"],
    ),
    ("latin-1", b"# coding: latin-1\nimport os\nx = '\xe9'; os.system(x)\n", ["os.system"]),
    (
        "cookie-line-2",
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nimport os\nos.system('\x80')\n",
        ["os.system"],
    ),
    ("not-utf-8", b"import os\nx = '\xff'\n", "not valid UTF-8 at byte 15"),
    ("not-ascii", b"# coding: ascii\nx = '\xff'\n", "not valid ascii at byte 21"),
    ("unknown-codec", b"# coding: no-such-codec\nx = 1\n", "cannot parse: unknown encoding"),
    (
        "bytes-codec",
        b"# coding: rot13\nx = 1\n",
        "cannot decode: its coding cookie names no text encoding",
    ),
    (
        "bom-and-other-cookie",
        b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",
        "cannot parse: encoding problem",
    ),
    ("utf-16-cookie", b"# coding: utf-16\nx = 1\n", "bad.py: not valid utf-16"),
]


@pytest.mark.parametrize(
    ("content", "expected"), [pytest.param(c, e, id=i) for i, c, e in ENCODING_CASES]
)
def test_source_is_decoded_as_python_decodes_it(
    tmp_path: Path, content: bytes, expected: list[str] | str
) -> None:
    """BOM and PEP 263 cookies decide the text as for Python; a codec Python refuses is an error."""
    path = write(tmp_path / "bad.py", content)
    sites, errors = check_paths([str(path)])
    if isinstance(expected, str):
        assert sites == []
        assert len(errors) == 1
        assert errors[0].startswith(str(path))
        assert expected in errors[0]
    else:
        assert errors == []
        assert [s.call for s in sites] == expected


SITES = [
    SpawnSite("a.py", 2, 1, "os.system", REASON_NO_PARAM, allowed=False),
    SpawnSite("a.py", 9, 5, "subprocess.run", REASON_MISSING, allowed=True),
    SpawnSite("b.py", 4, 3, "subprocess.run", REASON_NONE, allowed=False),
]


@pytest.mark.parametrize(
    ("sites", "errors", "show_allowed", "expected"),
    [
        ([], [], False, "0 spawn sites bypass the factory (0 allowed)\n"),
        (
            SITES,
            [],
            False,
            f"a.py:2:1: os.system: {REASON_NO_PARAM}\n"
            f"b.py:4:3: subprocess.run: {REASON_NONE}\n"
            "2 spawn sites bypass the factory (1 allowed)\n",
        ),
        (
            SITES[:2],
            ["c.py:3: cannot parse: invalid syntax"],
            True,
            f"a.py:2:1: os.system: {REASON_NO_PARAM}\n"
            f"a.py:9:5: subprocess.run: {REASON_MISSING} (allowed)\n"
            "1 spawn site bypasses the factory (1 allowed); 1 file could not be checked\n",
        ),
        (
            [],
            ["x: e", "y: e"],
            False,
            "0 spawn sites bypass the factory (0 allowed); 2 files could not be checked\n",
        ),
    ],
    ids=["empty", "findings", "allowed-shown-and-error", "errors-only"],
)
def test_format_spawn_sites(
    sites: list[SpawnSite], errors: list[str], show_allowed: bool, expected: str
) -> None:
    """The report lists findings (allowed ones only on request) and a summary counting errors
    (each error goes to stderr, printed by the command line)."""
    assert format_spawn_sites(sites, errors, show_allowed=show_allowed) == expected


@pytest.mark.parametrize(
    ("sites", "errors", "status"),
    [
        ([], [], 0),
        ([SITES[1]], [], 0),
        (SITES, [], 1),
        ([], ["x: e"], 2),
        (SITES, ["x: e"], 2),
    ],
    ids=["clean", "only-allowed", "finding", "error", "error-wins"],
)
def test_exit_status(sites: list[SpawnSite], errors: list[str], status: int) -> None:
    """Exit 2 when any file was not checked, 1 on a non-allowed site, else 0."""
    assert exit_status(sites, errors) == status


def test_import_envscope_does_not_load_the_check() -> None:
    """``import envscope`` stays cheap: the spawn check loads only on use."""
    code = "import sys, envscope\nprint('envscope.tools._spawn_check' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "name", ["\x1b[2J.py", "bell\x07.py", "a\u202eb.py"], ids=["ansi", "bell", "bidi"]
)
def test_paths_are_printed_escaped(tmp_path: Path, name: str) -> None:
    """A file name with control characters is escaped in findings and errors (no raw escapes)."""
    write(tmp_path / name, BAD)
    write(tmp_path / f"bad-{name}", b"def f(:\n")
    sites, errors = check_paths([str(tmp_path)])
    text = format_spawn_sites(sites, errors)
    assert len(sites) == 1
    assert len(errors) == 1
    assert all(c.isprintable() for c in text.replace("\n", ""))


@pytest.mark.parametrize("path", ["a\0b.py", "\ud800.py"], ids=["nul", "surrogate"])
def test_invalid_path_is_an_error(path: str) -> None:
    """A path no file system call accepts is an error naming it escaped, not an exception."""
    sites, errors = check_paths([path])
    assert sites == []
    assert len(errors) == 1
    assert errors[0].endswith(": cannot read: not a valid path")
    assert errors[0].isprintable()
