"""Property: every CLI command, given any arguments and any file bytes, exits 0, 1 or 2.

``envscope.cli.main(argv)`` is driven with arbitrary arguments (text with NUL,
surrogates, control characters, option look-alikes) against a temporary host
whose config, launch and profile ``.env`` files, plugin manifest, snapshot and
Python file hold either a valid document, a valid one with one field replaced
by an odd YAML/JSON value, or arbitrary bytes. No exception may escape
``main`` and nothing printed may look like a traceback. ``run`` never execs
here: ``os.execvpe`` is replaced by a recorder.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from envscope.cli import main

pytestmark = pytest.mark.property

CONFIG = """\
launch_home: ./launch
homes:
  work: ./work
managed_env_file: ./managed.env
bundled_plugins: ./bundled
catalog: default
home_env_var: ENVSCOPE_HOME
multiplex: false
on_unreadable_platform: deny
surfaces:
  script:
    inherit: core
    include: ["DEFAULT_*"]
    set: {PAGER: cat}
"""
CONFIG_FIELDS = [line.split(":")[0].strip() for line in CONFIG.splitlines() if ":" in line]
DOTENV = "OPENAI_API_KEY=fake-openai-key-123\nTELEGRAM_BOT_TOKEN=fake-bot-token-456\nX=1\n"
PLUGIN = "name: chat\nkind: platform\nrequires_env:\n  - CHAT_BOT_TOKEN\n  - name: CHAT_URL\n"
ENTRY = {"action": "kept", "stage": "s", "reason": "r", "origin": None, "fingerprint": "00"}
SNAPSHOT = json.dumps({"envscope_snapshot": 1, "child": ["A"], "keys": {"A": ENTRY}})
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@st.composite
def snapshots(draw: st.DrawFn) -> bytes:
    """A snapshot with one top-level or entry field replaced by any JSON value (or removed)."""
    entry: dict[str, object] = dict(ENTRY)
    keys: dict[str, object] = {"A": entry}
    snap: dict[str, object] = {"envscope_snapshot": 1, "child": ["A"], "keys": keys}
    target = draw(st.sampled_from(["envscope_snapshot", "child", "keys", "entry", *ENTRY]))
    where, name = (keys, "A") if target == "entry" else (entry if target in ENTRY else snap, target)
    if draw(st.booleans()):
        where.pop(name, None)
    else:
        where[name] = draw(JSON_VALUES)
    return json.dumps(snap).encode()


PYTHON = "import os, subprocess\nenv = os.environ.copy()\nsubprocess.run(['x'], env=env)\n"

ODD_VALUES = [
    "", "null", "~", "[", "]", "{", "}", "[]", "{}", "0", "-1", "1e999", "true", "'\\0'",
    '"\\0"', '"\\ud800"', "!!python/object:os.system x", "*alias", "&a [*a]", "'\x1b[2J'",
    "[" * 2000, "a" * 5000, "/nonexistent", "./launch", ".", "/dev/null", '"a\\u0000b"',
    "{PAGER: [1]}", "[[[]]]", "-", "---", "...", "%YAML 9.9", "? x",
]  # fmt: skip


def mutated(document: str, fields: list[str]) -> st.SearchStrategy[bytes]:
    """The document, the document with one field's value replaced, or arbitrary bytes."""
    one_field = st.tuples(st.sampled_from(fields), st.sampled_from(ODD_VALUES)).map(
        lambda fv: "\n".join(
            f"{line.split(':')[0]}: {fv[1]}" if line.strip().startswith(fv[0] + ":") else line
            for line in document.splitlines()
        ).encode("utf-8", "surrogatepass")
    )
    return st.one_of(
        st.just(document.encode()),
        one_field,
        st.binary(max_size=300),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


FILES = st.fixed_dictionaries(
    {
        "envscope.yaml": mutated(CONFIG, CONFIG_FIELDS),
        "launch/.env": mutated(DOTENV, ["OPENAI_API_KEY", "X"]),
        "work/.env": mutated(DOTENV, ["TELEGRAM_BOT_TOKEN", "X"]),
        "managed.env": mutated("X=2\n", ["X"]),
        "work/plugins/platforms/chat/plugin.yaml": mutated(
            PLUGIN, ["name", "kind", "requires_env"]
        ),
        "bundled/tg/plugin.yaml": mutated(PLUGIN, ["name", "requires_env"]),
        "snap.json": st.one_of(st.just(SNAPSHOT.encode()), snapshots(), st.binary(max_size=200)),
        "code.py": st.one_of(st.just(PYTHON.encode()), st.binary(max_size=200)),
    }
)

WORDS = st.one_of(
    st.sampled_from(
        ["work", "launch", "-", "--", "--json", "home:work", "home:work/credentialed",
         "home:/x", "terminal", "mcp", "snap.json", "code.py", "work/plugins/platforms/chat",
         "launch/.env", "missing.json", ".", "/dev/null", "", "\0", "\ud800", "\x1b[2J", "-o",
         "--home", "--surface", "--plugin", "--show-values", "--strict", "--show-allowed"]
    ),
    st.text(max_size=20),
)  # fmt: skip

COMMANDS = st.sampled_from(
    [
        ["explain"], ["explain", "--json", "--show-values"], ["explain", "--strict"],
        ["snapshot", "-o", "-"], ["snapshot", "-o", "out.json"], ["diff", "snap.json"],
        ["diff", "-"], ["scan"], ["scan", "--plugin", "work/plugins/platforms/chat"],
        ["run", "--"], ["check-spawns"], [],
    ]
)  # fmt: skip


@contextlib.contextmanager
def host_tree(files: dict[str, bytes]) -> Iterator[Path]:
    """A temporary host directory holding the files, as the working directory."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="envscope-cli-fuzz-") as tmp:
        root = Path(tmp)
        for name, data in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(old)


def run_main(argv: list[str], stdin: bytes) -> tuple[int, str, str]:
    """main(argv) with captured stdout/stderr, a byte stdin, a fixed environ and no real exec."""
    out, err = io.StringIO(), io.StringIO()
    execs: list[object] = []
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/home/op", "ENVSCOPE_FINGERPRINT_KEY": "fuzz-k"}
    with (
        mock.patch.dict(os.environ, environ, clear=True),
        mock.patch.object(os, "execvpe", lambda *a: execs.append(a)),
        mock.patch.object(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@given(
    files=FILES,
    command=COMMANDS,
    words=st.lists(WORDS, max_size=5),
    stdin=st.one_of(st.just(SNAPSHOT.encode()), snapshots(), st.binary(max_size=100)),
)
def test_cli_exits_0_1_or_2(
    files: dict[str, bytes], command: list[str], words: list[str], stdin: bytes
) -> None:
    """Any command, arguments and file bytes: exit 0/1/2, no exception, no traceback."""
    # check-spawns over an absolute path walks that tree (``/``: the whole machine, a minute)
    assume(command != ["check-spawns"] or not any(w.startswith("/") for w in words))
    with host_tree(files):
        code, out, err = run_main(["--config", "envscope.yaml", *command, *words], stdin)
    assert code in (0, 1, 2)
    assert "Traceback" not in out + err
    if code == 2 and err:
        assert err.startswith(("envscope: error: ", "usage: ")), err


@given(argv=st.lists(WORDS, max_size=6))
def test_cli_any_argv_without_config(argv: list[str]) -> None:
    """Any argv at all (no config, no files): exit 0/1/2 and no exception escapes main."""
    with host_tree({}):
        code, out, err = run_main(argv, b"")
    assert code in (0, 1, 2)
    assert "Traceback" not in out + err
