"""The tricky-dotenv corpus: every file in fixtures/dotenv reads as its README row says."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from dotenv.variables import parse_variables

from envscope.errors import DotenvError
from envscope.files._dotenv import (
    MAX_BLANK_RUN_COST,
    MAX_DOTENV_BYTES,
    MAX_DOTENV_LINES,
    MAX_EXPANDED_CHARS,
    _interpolate,
    parse_dotenv,
    read_dotenv,
)
from tests._watchdog import run_with_watchdog

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "dotenv"
README = CORPUS / "README.md"
NOT_CORPUS = frozenset({"README.md", ".gitattributes"})
ENVIRON = {"HOME": "/home/op", "TELEGRAM_BOT_TOKEN": "fake-TELEGRAM_BOT_TOKEN"}
PLANTED = "xoxb-7731-planted-secret"
ISOLATED_WATCHDOG_S = 20.0
REPO = CORPUS.parent.parent
_ERROR = re.compile(r"DotenvError line (?P<line>-|\d+): (?P<text>.+)")


class Outcome(NamedTuple):
    """A README outcome: a mapping, or an error line and message fragment."""

    mapping: dict[str, str] | None
    line: int | None
    text: str | None


class Row(NamedTuple):
    name: str
    outcome: Outcome
    raw: str


def parse_outcome(cell: str) -> Outcome:
    """`{json}` → a mapping; `DotenvError line N: text` → an error; anything else → neither."""
    if cell.startswith("`") and cell.endswith("`"):
        return Outcome(json.loads(cell[1:-1]), None, None)
    match = _ERROR.fullmatch(cell)
    if match is None:
        return Outcome(None, None, None)
    line = None if match["line"] == "-" else int(match["line"])
    return Outcome(None, line, match["text"])


def read_rows(prefix: str) -> list[Row]:
    """README rows whose first cell starts with ``prefix`` (then a backticked name)."""
    rows = []
    for text in README.read_text(encoding="utf-8").splitlines():
        if not text.startswith(f"| {prefix}`"):
            continue
        first, _what, outcome = (cell.strip() for cell in text.strip().strip("|").split(" | "))
        name = first[len(prefix) :].strip("`")
        rows.append(Row(name, parse_outcome(outcome), outcome))
    return rows


ROWS = read_rows("")
GENERATED_ROWS = read_rows("(generated) ")


def value_tokens(data: bytes) -> set[str]:
    """Words (4+ characters) of a file that are not names (left of the first ``=``)."""
    text = data.decode("utf-8", "replace")
    words = set(re.findall(r"[A-Za-z0-9_./+-]{4,}", text))
    names = {line.partition("=")[0].strip() for line in re.split(r"\r\n|\r|\n", text)}
    return words - names


_ISOLATED = """
import json, sys
from envscope.files._dotenv import read_dotenv
from envscope.errors import DotenvError
try:
    out = {"mapping": read_dotenv(sys.argv[1], environ=json.loads(sys.argv[2]))}
except DotenvError as exc:
    out = {"error": [exc.path, exc.message, exc.line]}
print(json.dumps(out))
"""


def read_isolated(path: str) -> dict[str, str]:
    """read_dotenv in a child interpreter killed after ISOLATED_WATCHDOG_S.

    A CPU-bound hang inside one regex call holds the GIL, so a thread
    watchdog could not even report it; a child process can be killed.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", _ISOLATED, path, json.dumps(ENVIRON)],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=ISOLATED_WATCHDOG_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"read_dotenv still running after {ISOLATED_WATCHDOG_S} s (a hang)")
    out = json.loads(done.stdout)
    if "error" in out:
        err_path, message, line = out["error"]
        raise DotenvError(err_path, message, line=line)
    mapping: dict[str, str] = out["mapping"]
    return mapping


def read_watched(path: str, *, isolated: bool = False) -> dict[str, str]:
    """read_dotenv(path, environ=ENVIRON) under a watchdog (a thread, or a child process)."""
    if isolated:
        return read_isolated(path)
    result = run_with_watchdog(lambda: read_dotenv(path, environ=ENVIRON))
    assert isinstance(result, dict)
    return result


def parse_watched(tmp_path: Path, text: str) -> dict[str, str]:
    """parse ``text`` (through a file) in a child process under the watchdog."""
    path = tmp_path / "t.env"
    path.write_bytes(text.encode("utf-8"))
    return read_isolated(str(path))


def check_outcome(path: str, outcome: Outcome, *, isolated: bool = False) -> None:
    """read_dotenv(path) gives the outcome's mapping or its error (path, line, text)."""
    if outcome.mapping is not None:
        assert read_watched(path, isolated=isolated) == outcome.mapping
        return
    assert outcome.text is not None
    with pytest.raises(DotenvError) as info:
        read_watched(path, isolated=isolated)
    err = info.value
    assert err.path == path
    assert err.line == outcome.line
    assert outcome.text in err.message
    rendered = str(err)
    assert rendered.startswith(path)
    if err.line is not None:
        assert rendered.startswith(f"{path}:{err.line}: ")


# -- the committed corpus -----------------------------------------------------------


def test_corpus_is_large_and_fully_described() -> None:
    """At least 30 corpus files; README has exactly one row per file, each with an outcome."""
    files = sorted(p.name for p in CORPUS.iterdir() if p.name not in NOT_CORPUS)
    assert len(files) >= 30
    assert sorted(row.name for row in ROWS) == files
    for row in ROWS:
        assert row.outcome.mapping is not None or row.outcome.text is not None, row.raw
    errors = [row for row in ROWS if row.outcome.mapping is None]
    assert len(errors) >= 10


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_corpus_file_reads_as_described(row: Row) -> None:
    """Each corpus file parses to its documented mapping, or fails naming the file and line."""
    check_outcome(str(CORPUS / row.name), row.outcome)


ERROR_ROWS = [row for row in ROWS if row.outcome.mapping is None]


@pytest.mark.parametrize("row", ERROR_ROWS, ids=[row.name for row in ERROR_ROWS])
def test_corpus_error_holds_no_value_from_the_file(row: Row) -> None:
    """No word of the failing file other than a name appears in the error (path aside)."""
    path = str(CORPUS / row.name)
    with pytest.raises(DotenvError) as info:
        read_dotenv(path, environ=ENVIRON)
    rendered = str(info.value).replace(path, "")
    leaked = sorted(t for t in value_tokens((CORPUS / row.name).read_bytes()) if t in rendered)
    assert leaked == []


def test_planted_values_never_appear() -> None:
    """Ten or more failing files plant a credential-like value; no error echoes it."""
    holders = [row for row in ERROR_ROWS if PLANTED.encode() in (CORPUS / row.name).read_bytes()]
    assert len(holders) >= 10
    for row in holders:
        path = CORPUS / row.name
        assert PLANTED in value_tokens(path.read_bytes())
        with pytest.raises(DotenvError) as info:
            read_dotenv(str(path), environ=ENVIRON)
        assert PLANTED not in str(info.value)
        assert "planted" not in repr(info.value)


# -- generated at test time --------------------------------------------------------------


@dataclass(frozen=True)
class Generated:
    """Builds one case in a directory; ``expect`` checks a mapping outcome (None: an error row)."""

    build: Callable[[Path], Path]
    expect: Callable[[Mapping[str, str]], bool] | None = None
    isolated: bool = False  # CPU-bound if it regressed: watch it from another process


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(data)
        return path

    return build


def _fifo(tmp: Path) -> Path:
    path = tmp / "fifo.env"
    os.mkfifo(path)
    return path


def _directory(tmp: Path) -> Path:
    path = tmp / "dir.env"
    path.mkdir()
    return path


def _socket(tmp: Path) -> Path:
    path = tmp / "s.env"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()  # the socket file stays; nobody listens
    return path


def _dangling(tmp: Path) -> Path:
    path = tmp / "dangling.env"
    os.symlink(tmp / "nowhere.env", path)
    return path


def _loop(tmp: Path) -> Path:
    path = tmp / "loop.env"
    os.symlink(path, path)
    return path


def _lines(count: int, end: bytes) -> bytes:
    return b"".join(b"K%d=v%s" % (i, end) for i in range(count))


DOLLAR_BOMB = "${" * ((MAX_DOTENV_BYTES - 2) // 2)

GENERATED: dict[str, Generated] = {
    "fifo": Generated(_fifo),
    "directory": Generated(_directory),
    "socket": Generated(_socket),
    "dangling_symlink": Generated(_dangling, lambda m: m == {}),
    "symlink_loop": Generated(_loop),
    "lines_10000": Generated(
        _write("l.env", _lines(MAX_DOTENV_LINES, b"\n")), lambda m: len(m) == MAX_DOTENV_LINES
    ),
    "lines_10001": Generated(_write("l.env", _lines(MAX_DOTENV_LINES + 1, b"\n"))),
    "lines_10001_cr": Generated(_write("l.env", _lines(MAX_DOTENV_LINES + 1, b"\r"))),
    "bytes_1mib": Generated(
        _write("big.env", b"A=" + b"x" * (MAX_DOTENV_BYTES - 3) + b"\n"),
        lambda m: m == {"A": "x" * (MAX_DOTENV_BYTES - 3)},
    ),
    "bytes_over_1mib": Generated(_write("big.env", b"A=" + b"x" * (MAX_DOTENV_BYTES - 1))),
    "blank_runs": Generated(
        _write("blank.env", b"A=1\nB=x" + b" " * 20_000 + b"y\n"), isolated=True
    ),
    "dollar_brace_bomb": Generated(
        _write("bomb.env", b"A=" + DOLLAR_BOMB.encode()),
        lambda m: m == {"A": DOLLAR_BOMB},
        isolated=True,
    ),
}


def test_generated_cases_are_documented() -> None:
    """Each generated case has a README row and each row a builder; outcome kinds agree."""
    assert sorted(row.name for row in GENERATED_ROWS) == sorted(GENERATED)
    for row in GENERATED_ROWS:
        is_error = row.outcome.text is not None
        assert is_error == (GENERATED[row.name].expect is None), row.raw


@pytest.mark.parametrize("row", GENERATED_ROWS, ids=[row.name for row in GENERATED_ROWS])
def test_generated_case_reads_as_described(tmp_path: Path, row: Row) -> None:
    """Each generated file reads as documented within the watchdog (FIFO, socket, limits, bombs)."""
    case = GENERATED[row.name]
    path = str(case.build(tmp_path))
    if case.expect is None:
        check_outcome(path, row.outcome, isolated=case.isolated)
        return
    assert case.expect(read_watched(path, isolated=case.isolated))


def test_dangling_symlink_is_missing_for_a_required_file(tmp_path: Path) -> None:
    """A dangling symlink where a required file (the managed one) should be is 'file not found'."""
    path = str(_dangling(tmp_path))
    with pytest.raises(DotenvError, match="file not found") as info:
        read_dotenv(path, missing_ok=False)
    assert info.value.path == path


def test_fifo_with_a_writer_attached_is_still_refused(tmp_path: Path) -> None:
    """A FIFO whose writer keeps it open (data waiting) is refused, not read, and never hangs."""
    path = _fifo(tmp_path)
    reader_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer open without blocking
    writer_fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer_fd, f"A={PLANTED}\n".encode())
        with pytest.raises(DotenvError, match="not a regular file") as info:
            run_with_watchdog(lambda: read_dotenv(str(path)))
        assert PLANTED not in str(info.value)
    finally:
        os.close(writer_fd)
        os.close(reader_fd)


# -- names ------------------------------------------------------------------------------------

BAD_NAMES = [
    pytest.param("A=1\n'B=C'=2\n", 2, id="equals-via-quotes"),
    pytest.param("A=1\nB\x00C=2\n", 2, id="nul"),
    pytest.param("=1\n", 1, id="empty"),
    pytest.param("A=1\n\n''=2\n", 3, id="empty-quoted"),
    pytest.param("A=1\nexport =2\n", 2, id="export-then-empty"),
]


@pytest.mark.parametrize(("text", "line"), BAD_NAMES)
def test_invalid_names_are_errors_naming_file_and_line(text: str, line: int) -> None:
    """A name with '=' or NUL, or an empty name, is a DotenvError naming the file and line."""
    with pytest.raises(DotenvError) as info:
        parse_dotenv(text, path="names.env")
    assert (info.value.path, info.value.line) == ("names.env", line)


# -- regressions for the fixes in envscope/files/_dotenv.py -------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("A=1\n\n\nB='x\n", 4, id="blank-lines"),
        pytest.param("A=1\n# note\n   \n\t\nB='x\n", 5, id="comment-and-blanks"),
        pytest.param("A=1\r\n\r\nB='x\r\n", 3, id="crlf-blank"),
        pytest.param("A=1\r\rB='x\r", 3, id="cr-blank"),
        pytest.param("\n\nA=\x00\n", 3, id="nul-after-leading-blanks"),
    ],
)
def test_error_line_is_the_binding_line_not_the_blank_lines_before_it(text: str, line: int) -> None:
    """A malformed binding after blank lines or comments reports its own line."""
    with pytest.raises(DotenvError) as info:
        parse_dotenv(text, path="t.env")
    assert info.value.line == line


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_line_limit_is_inclusive_and_counts_every_line_ending(end: str) -> None:
    """Exactly MAX_DOTENV_LINES lines parse; one more fails, also with CRLF or lone-CR endings."""
    text = "".join(f"K{i}=v{end}" for i in range(MAX_DOTENV_LINES))
    assert len(parse_dotenv(text, path="t.env")) == MAX_DOTENV_LINES
    assert len(parse_dotenv(text.rstrip(end), path="t.env")) == MAX_DOTENV_LINES
    with pytest.raises(DotenvError, match="more than"):
        parse_dotenv(text + "LAST=1", path="t.env")


def test_invalid_utf8_error_names_the_line(tmp_path: Path) -> None:
    """Invalid UTF-8 is a DotenvError naming the line of the bad byte (a BOM does not shift it)."""
    path = tmp_path / "u.env"
    path.write_bytes(b"\xef\xbb\xbfA=1\n\xff=2\n")
    with pytest.raises(DotenvError, match="UTF-8") as info:
        read_dotenv(str(path))
    assert info.value.line == 2


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("A=" + "${" * 200_000, id="dollar-brace"),
        pytest.param("A=" + "${x:" * 100_000, id="dollar-brace-colon"),
        pytest.param("A=" + "${x:-" * 80_000, id="dollar-brace-default"),
        pytest.param("A=" + "${" * 100_000 + "}", id="one-close-at-the-end"),
    ],
)
def test_hostile_interpolation_finishes(tmp_path: Path, text: str) -> None:
    """Many unclosed ${ in a value resolve without hanging (python-dotenv's regex is quadratic)."""
    assert set(parse_watched(tmp_path, text)) == {"A"}


def test_long_blank_runs_are_refused_naming_the_line(tmp_path: Path) -> None:
    """Blank runs costing more than the budget fail on the run's line, within the watchdog."""
    text = "A=1\n# c\nB=x" + " " * 5000 + "y\n"
    with pytest.raises(DotenvError, match="runs of blank") as info:
        parse_watched(tmp_path, text)
    assert info.value.line == 3
    count = MAX_BLANK_RUN_COST // 200**2 + 1
    many = "".join(f"K{i}=x" + " " * 200 + "y\n" for i in range(count))
    with pytest.raises(DotenvError, match="runs of blank") as info:
        parse_watched(tmp_path, many)
    assert info.value.line == count


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("A=x" + " " * 4096 + "y\n", id="one-run-of-4096"),
        pytest.param("A=x" + " " * 9000 + "# aligned\n", id="run-before-comment"),
        pytest.param("".join(f"K{i}=a{' ' * 16}b\n" for i in range(5000)), id="short-runs"),
    ],
)
def test_blank_runs_within_budget_are_accepted(tmp_path: Path, text: str) -> None:
    """Blank runs that cost python-dotenv little (short, one moderate, before '#') still parse."""
    assert parse_watched(tmp_path, text)


INTERPOLATION_CASES = [
    "",
    "plain",
    "${A}",
    "${A}${B}",
    "x${A}y",
    "${A:-d}",
    "${UNSET:-d}",
    "${UNSET:-}",
    "${UNSET:x}",
    "${A:x}}",
    "${:-d}",
    "${}",
    "${",
    "${A",
    "${A:-",
    "${A:-d",
    "$${A}",
    "${${A}}",
    "${A:-${B}}",
    "${A:-x:y}",
    "${A:}",
    "${A:-}}",
    "}${A}{",
    "${A}:${B}:-${C}",
    "${:}",
    "${-}",
    "${::-}",
]


@pytest.mark.parametrize("value", INTERPOLATION_CASES)
def test_interpolation_matches_python_dotenv(value: str) -> None:
    """envscope's linear ${VAR} resolver gives python-dotenv's result on edge cases."""
    env = {"A": "va", "B": "vb", "": "empty-name"}
    expected = "".join(atom.resolve(env) for atom in parse_variables(value))
    assert _interpolate(value, env) == expected


def test_expansion_bomb_is_refused_naming_the_line(tmp_path: Path) -> None:
    """${A}${A} doubling line after line stops at MAX_EXPANDED_CHARS, naming the line."""
    lines = ["K0=xxxxxxxx"] + [f"K{i}=${{K{i - 1}}}${{K{i - 1}}}" for i in range(1, 25)]
    with pytest.raises(DotenvError, match="after") as info:
        parse_watched(tmp_path, "\n".join(lines) + "\n")
    # 8 * 2**i characters on line i + 1; the running total passes 4 Mi on line 20.
    assert info.value.line == 20
    assert MAX_EXPANDED_CHARS == 4 * MAX_DOTENV_BYTES


def test_expansion_within_budget_is_kept() -> None:
    """Copying a large value a few times stays within the budget and resolves exactly."""
    big = "y" * 100_000
    result = parse_dotenv(f"BIG={big}\nA=${{BIG}}\nB=${{BIG}}-${{A}}\n", path="t.env")
    assert result == {"BIG": big, "A": big, "B": f"{big}-{big}"}


class CountingEnviron(Mapping[str, str]):
    """A read-only environ that counts whole-mapping iteration (a copy iterates it)."""

    def __init__(self, data: dict[str, str]) -> None:
        self.data = data
        self.iterations = 0

    def __getitem__(self, key: str) -> str:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        self.iterations += 1
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("override", [False, True])
def test_interpolation_looks_names_up_without_copying_the_environ(override: bool) -> None:
    """Each ${VAR} is looked up in place: the environ is never copied (no quadratic work)."""
    environ = CountingEnviron({"HOME": "/home/op", "X": "env-x"})
    text = "".join(f"K{i}=${{HOME}}-${{X}}-${{K0}}\n" for i in range(200))
    result = parse_dotenv(text, path="t.env", environ=environ, override=override)
    assert environ.iterations == 0
    assert result["K0"] == "/home/op-env-x-"
    assert result["K199"] == "/home/op-env-x-/home/op-env-x-"
