"""``read_dotenv`` parses a text it parsed before only when that text could answer differently.

A table over the reader (what is a new parse: another text, another path, a
``$`` anywhere, a text over the cap, an error), the answers are fresh dicts,
and a property: any text read twice through the memo gives ``parse_dotenv``'s
own answer or error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.errors import DotenvError
from envscope.files import _dotenv
from envscope.files._dotenv import DOTENV_PARSES, parse_dotenv, read_dotenv

PLAIN = "A=1\nTOKEN=abc\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts ``parse_dotenv`` really parsed for ``read_dotenv``, the memo empty."""
    ran: list[str] = []

    def counting(text: str, **kwargs: object) -> dict[str, str]:
        ran.append(text)
        return parse_dotenv(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_dotenv, "parse_dotenv", counting)
    DOTENV_PARSES.clear()
    yield ran
    DOTENV_PARSES.clear()


def _outcome(path: Path, environ: dict[str, str] | None = None) -> object:
    try:
        return read_dotenv(str(path), environ=environ)
    except DotenvError as exc:
        return ("error", exc.path, exc.message, exc.line)


@pytest.mark.parametrize(
    ("first", "second", "parsed_again"),
    [
        ((PLAIN, "a.env"), (PLAIN, "a.env"), False),
        ((PLAIN, "a.env"), ("A=1\nTOKEN=abd\n", "a.env"), True),  # one character, same size
        ((PLAIN, "a.env"), (PLAIN, "b.env"), True),  # the path is in its errors
        (("A=${HOME}\n", "a.env"), ("A=${HOME}\n", "a.env"), True),  # reads environ
        (("A=1 # costs $5\n", "a.env"), ("A=1 # costs $5\n", "a.env"), True),  # any $
        (("A='x\n", "a.env"), ("A='x\n", "a.env"), True),  # an error is never kept
        ((PLAIN * 2000, "a.env"), (PLAIN * 2000, "a.env"), True),  # over the size cap
    ],
    ids=["same", "edited", "other path", "interpolated", "a dollar", "broken", "too large"],
)
def test_a_text_is_parsed_again_exactly_when_it_could_answer_differently(
    tmp_path: Path,
    parses: list[str],
    first: tuple[str, str],
    second: tuple[str, str],
    parsed_again: bool,
) -> None:
    for text, name in (first, second):
        path = tmp_path / name
        path.write_text(text)
        assert _outcome(path, {"HOME": "/home/op"}) == _direct(path, text)
    assert len(parses) == (2 if parsed_again else 1)


def _direct(path: Path, text: str) -> object:
    """What ``parse_dotenv`` itself answers for the file (as ``read_dotenv`` calls it)."""
    try:
        return parse_dotenv(
            text, path=str(path), environ={"HOME": "/home/op"}, universal_newlines=True
        )
    except DotenvError as exc:
        return ("error", exc.path, exc.message, exc.line)


def test_an_interpolated_text_follows_its_environ(tmp_path: Path, parses: list[str]) -> None:
    path = tmp_path / ".env"
    path.write_text("URL=http://${HOST}/\n")
    assert read_dotenv(str(path), environ={"HOST": "a"}) == {"URL": "http://a/"}
    assert read_dotenv(str(path), environ={"HOST": "b"}) == {"URL": "http://b/"}


def test_each_answer_is_a_fresh_dict(tmp_path: Path, parses: list[str]) -> None:
    path = tmp_path / ".env"
    path.write_text(PLAIN)
    first = read_dotenv(str(path))
    first["INJECTED"] = "x"
    assert read_dotenv(str(path)) == {"A": "1", "TOKEN": "abc"}
    assert len(parses) == 1


TEXT = st.text(alphabet="AB=_ '\"#\\\n\r\tx1$", max_size=60)


@given(text=TEXT)
def test_any_text_read_twice_gives_the_parsers_answer(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("memo") / ".env"
    path.write_bytes(text.encode())
    expected = _direct(path, text)
    assert _outcome(path, {"HOME": "/home/op"}) == expected
    assert _outcome(path, {"HOME": "/home/op"}) == expected
