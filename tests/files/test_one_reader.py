"""Every file envscope reads goes through one non-blocking reader (``_fs.read_regular_file``).

The class: a FIFO (or a directory, a socket, a symlink to ``/dev/null``) where
a file should be must never hang envscope and is never "empty". The reader
answers ``None`` for it; each caller turns that into its typed error. A
structural test keeps any other file-opening call out of the package, and the
command line's ``scan --plugin`` is driven over each file type.
"""

from __future__ import annotations

import ast
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope.cli import main
from envscope.files._fs import RealFileSystem, read_regular_file
from tests._watchdog import run_with_watchdog

PACKAGE = Path(__file__).resolve().parents[2] / "envscope"

# (module, enclosing function) -> why it may open a file itself.
ALLOWED_OPENS: dict[tuple[str, str], str] = {
    ("files/_fs.py", "read_regular_file"): "the one reader",
    ("cli/main.py", "_cmd_snapshot"): "writes the snapshot the user asked for (not a read)",
    ("cli/main.py", "_silence_stdout"): "opens os.devnull for writing once stdout is gone",
    ("schemas/__init__.py", "load_schema"): "package data read through importlib.resources",
    ("policy/catalog.py", "package_data"): "package data read through importlib.resources",
    ("policy/_catalog_doc.py", "main"): "the maintainer's docs/catalog.md generator (a repo file)",
    ("audit/_fingerprint.py", "load_or_create_key"): "creates the key file O_EXCL (not a read)",
    ("manifests/_inotify.py", "__init__"): "/proc/self/mountinfo, polled for mount changes",
    ("policy/_vault_source.py", "_request"): "an HTTP request to Vault (urllib's opener), no file",
    ("_masked_output.py", "_masked_pipe"): "wraps a new pipe's read end (a descriptor, no name)",
    ("_inputs.py", "kernel_realpath"): "an O_PATH descriptor (no read): the home's real path",
}
_OPENERS = {"open", "fdopen", "read_bytes", "read_text"}


def _opening_calls(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of each call that opens a file by name."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Call):
                func = child.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in _OPENERS:
                    found.append((inner, child.lineno))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_no_module_opens_files_outside_the_one_reader() -> None:
    """Only read_regular_file opens files to read them (the rest are listed writes or in flux)."""
    stray = []
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for where, line in _opening_calls(ast.parse(path.read_text(encoding="utf-8"))):
            seen.add((module, where))
            if (module, where) not in ALLOWED_OPENS:
                stray.append(f"{module}:{line} in {where}()")
    assert stray == []
    assert set(ALLOWED_OPENS) - seen == set(), "a stale allowance: that open is gone"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _devnull(path: Path) -> None:
    path.symlink_to(os.devnull)


def _socket(path: Path) -> None:
    short = tempfile.mkdtemp(prefix="es-")
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(os.path.join(short, "s"))
            os.rename(os.path.join(short, "s"), path)
        finally:
            sock.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)


NOT_REGULAR: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo,
    "directory": _directory,
    "symlink to /dev/null": _devnull,
    "socket": _socket,
}


@pytest.mark.parametrize("kind", sorted(NOT_REGULAR))
def test_reader_answers_none_for_anything_not_regular(tmp_path: Path, kind: str) -> None:
    """read_regular_file and RealFileSystem.read_regular: None, never a hang, never bytes."""
    path = tmp_path / "plugin.yaml"
    NOT_REGULAR[kind](path)
    assert run_with_watchdog(lambda: read_regular_file(str(path), 100)) is None
    assert run_with_watchdog(lambda: RealFileSystem().read_regular(str(path), 100)) is None


@pytest.mark.parametrize("name", ["plugin.yaml", "plugin.yml"])
@pytest.mark.parametrize("kind", sorted(NOT_REGULAR))
def test_scan_plugin_on_a_non_regular_manifest_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, name: str
) -> None:
    """`envscope scan --plugin DIR` with DIR/plugin.yaml a FIFO (etc.) never blocks: exit 2."""
    NOT_REGULAR[kind](tmp_path / name)
    code = run_with_watchdog(lambda: main(["scan", "--plugin", str(tmp_path)]))
    err = capsys.readouterr().err
    assert code == 2
    assert f"{tmp_path / name}: not a regular file" in err
    assert "Traceback" not in err


def test_scan_plugin_reads_plugin_yml_when_plugin_yaml_is_absent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plugin.yml is the fallback, as in the scanner; neither present is exit 2."""
    assert main(["scan", "--plugin", str(tmp_path)]) == 2
    assert "no plugin.yaml or plugin.yml" in capsys.readouterr().err
    (tmp_path / "plugin.yml").write_text("requires_env: [ACME_API_TOKEN]\n")
    assert main(["scan", "--plugin", str(tmp_path)]) == 0
    assert "ACME_API_TOKEN" in capsys.readouterr().out
