"""Reading dotenv files: parsing table, interpolation against an explicit environ, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope import DotenvError
from envscope._dotenv import MAX_DOTENV_LINES, parse_dotenv, read_dotenv

TABLE = [
    ("A=1\n", {}, {"A": "1"}),
    ("export A=1\n", {}, {"A": "1"}),
    ("A='x y'\nB=\"q\\nr\"\n", {}, {"A": "x y", "B": "q\nr"}),
    ("# comment\n\nA=1 # trailing\n", {}, {"A": "1"}),
    ("A=1\r\nB=2\r\n", {}, {"A": "1", "B": "2"}),
    ("A=1\nA=2\n", {}, {"A": "2"}),
    ("NOVALUE\nA=\n", {}, {"A": ""}),
    ("A=x\nB=${A}-${OUT}\n", {"OUT": "o"}, {"A": "x", "B": "x-o"}),
    ("B=${MISSING:-dflt}\n", {}, {"B": "dflt"}),
    ("A=file\nB=${A}\n", {"A": "env"}, {"A": "file", "B": "env"}),
]


@pytest.mark.parametrize(("text", "environ", "expected"), TABLE)
def test_parse_table(text: str, environ: dict[str, str], expected: dict[str, str]) -> None:
    """Dotenv text parses as python-dotenv would, interpolating against file + environ."""
    assert parse_dotenv(text, path="t.env", environ=environ) == expected


def test_override_prefers_file_values_for_interpolation() -> None:
    """With override, the file's own earlier value wins over environ in ${VAR}."""
    assert parse_dotenv("A=file\nB=${A}\n", path="t", environ={"A": "env"}, override=True) == {
        "A": "file",
        "B": "file",
    }


def test_interpolation_never_reads_process_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """${VAR} never silently resolves against the real os.environ."""
    monkeypatch.setenv("ENVSCOPE_TEST_LEAK", "leaked")
    assert parse_dotenv("A=${ENVSCOPE_TEST_LEAK}\n", path="t") == {"A": ""}


@pytest.mark.parametrize(
    ("text", "line"),
    [("A=1\nB='unterminated\n", 2), ("A=1\n'=x\n", 2)],
)
def test_malformed_line_names_file_and_line(text: str, line: int) -> None:
    """A malformed line is a DotenvError naming the file and the line."""
    with pytest.raises(DotenvError) as info:
        parse_dotenv(text, path="bad.env")
    assert info.value.path == "bad.env"
    assert info.value.line == line


def test_nul_in_value_is_rejected() -> None:
    """A NUL byte in a value is an error naming the key, never the value."""
    with pytest.raises(DotenvError, match="'A'") as info:
        parse_dotenv('A="sec\x00ret"\n', path="n.env")
    assert "sec" not in str(info.value)


def test_too_many_lines() -> None:
    """More than MAX_DOTENV_LINES lines is rejected naming the file."""
    with pytest.raises(DotenvError, match=r"big\.env"):
        parse_dotenv("A=1\n" * (MAX_DOTENV_LINES + 1), path="big.env")


def test_read_missing_and_required(tmp_path: Path) -> None:
    """A missing file is empty unless required."""
    assert read_dotenv(str(tmp_path / "none")) == {}
    with pytest.raises(DotenvError, match="not found"):
        read_dotenv(str(tmp_path / "none"), missing_ok=False)


def test_read_bom_and_bad_utf8(tmp_path: Path) -> None:
    """A UTF-8 BOM is tolerated; invalid UTF-8 is an error naming the file."""
    good = tmp_path / "bom.env"
    good.write_bytes(b"\xef\xbb\xbfA=1\n")
    assert read_dotenv(str(good)) == {"A": "1"}
    bad = tmp_path / "bad.env"
    bad.write_bytes(b"A=\xff\n")
    with pytest.raises(DotenvError, match="UTF-8"):
        read_dotenv(str(bad))


def test_read_fifo_and_directory_never_block(tmp_path: Path) -> None:
    """A FIFO or a directory in place of a dotenv file is an error, never a hang."""
    fifo = tmp_path / "fifo.env"
    os.mkfifo(fifo)
    with pytest.raises(DotenvError, match="not a regular file"):
        read_dotenv(str(fifo))
    with pytest.raises(DotenvError, match="not a regular file"):
        read_dotenv(str(tmp_path))


def test_read_oversize(tmp_path: Path) -> None:
    """A dotenv file over 1 MiB is rejected naming the file."""
    big = tmp_path / "big.env"
    big.write_bytes(b"A=" + b"x" * (1024 * 1024) + b"\n")
    with pytest.raises(DotenvError, match="larger than"):
        read_dotenv(str(big))


def test_unreadable_is_an_error(tmp_path: Path) -> None:
    """A dangling symlink loop is a DotenvError naming the file."""
    loop = tmp_path / "loop.env"
    os.symlink(loop, loop)
    with pytest.raises(DotenvError, match="cannot read"):
        read_dotenv(str(loop))
