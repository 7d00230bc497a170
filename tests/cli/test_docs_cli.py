"""docs/cli.md, docs/audit.md and the README show real output: each ``<!-- output: ARGS -->`` block.

Run with ``ENVSCOPE_UPDATE_DOCS=1`` to rewrite the blocks after an intended change.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from envscope.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"
AUDIT = ROOT / "docs" / "audit.md"
BLOCK = re.compile(r"(<!-- output: (?P<args>.*?) -->\n```text\n)(?P<body>.*?)(```)", re.S)
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/operator", "LANG": "C.UTF-8",
       "ENVSCOPE_FINGERPRINT_KEY": "demo-key-for-the-docs"}  # fmt: skip


ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=")


def render(args: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """What ``[NAME=VALUE...] envscope --config fixtures/demo/envscope.yaml ARGS`` prints.

    Leading ``NAME=VALUE`` words set the env of that one run, as in a shell
    (``COLUMNS=100 explain``); stdout comes first, then stderr.
    """
    argv = shlex.split(args)
    with monkeypatch.context() as patch:
        while argv and ASSIGNMENT.match(argv[0]):
            name, _, value = argv.pop(0).partition("=")
            patch.setenv(name, value)
        if not {"--plugin", "--host", "check-spawns"} & set(argv):
            argv = ["--config", "fixtures/demo/envscope.yaml", *argv]
        code = main(argv)
    out, err = capsys.readouterr()
    return out + err + ("" if code == 0 else f"(exit code {code})\n")


@pytest.mark.parametrize("doc", [DOC, README, AUDIT], ids=["cli.md", "README.md", "audit.md"])
def test_documented_output_is_real(
    doc: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each documented command output matches what the command prints today."""
    update = bool(os.environ.get("ENVSCOPE_UPDATE_DOCS"))
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    text = doc.read_text()
    blocks = list(BLOCK.finditer(text))
    assert blocks, f"{doc.name} has no output blocks"
    if update:
        doc.write_text(
            BLOCK.sub(lambda m: m[1] + render(m["args"], capsys, monkeypatch) + m[4], text)
        )
        return
    for match in blocks:
        assert render(match["args"], capsys, monkeypatch) == match["body"], match["args"]
