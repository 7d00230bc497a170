"""Differential property: ``read_dotenv`` reads a file exactly as python-dotenv does.

Generated files mix line endings (``\\n``, ``\\r\\n``, a lone ``\\r``) per line,
quoted multi-line values, keys written without ``=``, ``export``, comments
and ``${VAR}`` / ``${VAR:-default}`` references to the file's own keys and to
one outside variable. python-dotenv (``DotEnv(...).dict()``, what
``dotenv_values`` and ``load_dotenv`` use) reads the same file with the same
outside environment; a key it maps to None (written without ``=``) is one
envscope leaves out, as ``load_dotenv`` sets nothing for it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from dotenv.main import DotEnv
from hypothesis import given
from hypothesis import strategies as st

from envscope.files._dotenv import read_dotenv

pytestmark = pytest.mark.property

PREFIX = "ENVSCOPE_DIFF_"
KEYS = [f"{PREFIX}{n}" for n in ("A", "B", "C", "a")]
OUTSIDE = f"{PREFIX}OUT"
ENDS = ("\n", "\r\n", "\r")

_plain = st.text(st.sampled_from("abcXYZ019 -_./:@"), max_size=8)
_ref = st.builds(
    lambda name, default: "${" + name + ("" if default is None else ":-" + default) + "}",
    st.sampled_from([*KEYS, OUTSIDE, f"{PREFIX}NEVER"]),
    st.none() | st.text(st.sampled_from("dflt"), max_size=4),
)
_piece = st.one_of(_plain, _ref)
_value = st.lists(_piece, max_size=3).map("".join)
_multiline = st.lists(_value, min_size=1, max_size=3)  # joined by the line end in use


@st.composite
def lines(draw: st.DrawFn) -> tuple[str, str]:
    """One line (or a multi-line quoted binding) and the line end that follows it."""
    end = draw(st.sampled_from(ENDS))
    key = draw(st.sampled_from(KEYS))
    export = draw(st.sampled_from(("", "export ")))
    kind = draw(st.sampled_from(("plain", "single", "double", "bare", "comment", "blank")))
    if kind == "plain":
        text = f"{export}{key}={draw(_value).strip()}"
    elif kind in ("single", "double"):
        quote = "'" if kind == "single" else '"'
        inner = draw(st.sampled_from(ENDS)).join(draw(_multiline))
        text = f"{export}{key}={quote}{inner}{quote}"
    elif kind == "bare":
        text = f"{export}{key}"
    elif kind == "comment":
        text = "# " + draw(_plain)
    else:
        text = ""
    return text, end


@given(
    body=st.lists(lines(), max_size=8),
    outside=st.none() | _plain,
    override=st.booleans(),
)
def test_read_dotenv_agrees_with_python_dotenv(
    body: list[tuple[str, str]], outside: str | None, override: bool
) -> None:
    """Same file, same outside env: envscope's values equal python-dotenv's (None keys left out)."""
    data = "".join(text + end for text, end in body).encode("utf-8")
    patched = {} if outside is None else {OUTSIDE: outside}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "gen.env"
        path.write_bytes(data)
        with mock.patch.dict(os.environ, patched):
            for name in (*KEYS, f"{PREFIX}NEVER", *(() if outside is not None else (OUTSIDE,))):
                os.environ.pop(name, None)
            expected = DotEnv(str(path), interpolate=True, override=override).dict()
            got = read_dotenv(str(path), environ=dict(os.environ), override=override)
    assert got == {k: v for k, v in expected.items() if v is not None}
    assert list(got) == [k for k, v in expected.items() if v is not None]  # same order
