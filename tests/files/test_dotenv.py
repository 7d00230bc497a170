"""Reading dotenv files: parsing table, interpolation against an explicit environ, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope import DotenvError
from envscope.files._dotenv import MAX_DOTENV_LINES, parse_dotenv, read_dotenv

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


NEWLINE_TABLE = [
    # (text, universal_newlines, expected)
    ("A='x\r\ny'\r\nB=2\r\n", True, {"A": "x\ny", "B": "2"}),
    ("A='x\r\ny'\r\nB=2\r\n", False, {"A": "x\r\ny", "B": "2"}),
    ('A="x\ry"\rB=2\r', True, {"A": "x\ny", "B": "2"}),
    ('A="x\ry"\rB=2\r', False, {"A": "x\ry", "B": "2"}),
    ('A="x\\r"\r\n', True, {"A": "x\r"}),  # an escaped \r is a value, not a line end
]


@pytest.mark.parametrize(("text", "universal", "expected"), NEWLINE_TABLE)
def test_universal_newlines_inside_values(
    text: str, universal: bool, expected: dict[str, str]
) -> None:
    """Text mode (a file read) makes CRLF and CR an LF inside quoted values; a stream keeps them."""
    got = parse_dotenv(text, path="t.env", universal_newlines=universal)
    assert got == expected


def test_read_dotenv_reads_in_text_mode(tmp_path: Path) -> None:
    """read_dotenv of a CRLF file with a quoted multi-line value yields LF, as python-dotenv."""
    from dotenv import dotenv_values

    path = tmp_path / "crlf.env"
    path.write_bytes(b'PEM="a\r\nb\r\nc"\r\nNEXT=1\r\n')
    assert read_dotenv(str(path)) == {"PEM": "a\nb\nc", "NEXT": "1"}
    assert read_dotenv(str(path)) == dotenv_values(path)


BARE_TABLE = [
    # (text, environ, override, expected) -- python-dotenv's semantics for FOO without "="
    ("FOO\nB=${FOO}\n", {}, False, {"B": ""}),
    ("FOO\nB=${FOO:-d}\n", {}, False, {"B": ""}),  # present without a value: no default
    ("FOO\nB=${FOO:-d}\n", {"FOO": "env"}, False, {"B": "env"}),  # the outside wins
    ("FOO\nB=${FOO:-d}\n", {"FOO": "env"}, True, {"B": ""}),  # the file's (no value) wins
    ("FOO=x\nFOO\nB=${FOO}\n", {}, True, {"B": ""}),  # a bare key drops the earlier value
    ("FOO\nFOO=y\nB=${FOO}\n", {}, True, {"FOO": "y", "B": "y"}),
    ("B=${FOO:-d}\nFOO\n", {}, True, {"B": "d"}),  # only earlier keys are visible
]


@pytest.mark.parametrize(("text", "environ", "override", "expected"), BARE_TABLE)
def test_bare_keys_resolve_like_python_dotenv(
    text: str, environ: dict[str, str], override: bool, expected: dict[str, str]
) -> None:
    """A key without '=' has no value, shadows an earlier one, and ${KEY} of it is empty."""
    assert parse_dotenv(text, path="t.env", environ=environ, override=override) == expected
