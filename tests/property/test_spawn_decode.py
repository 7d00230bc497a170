"""Property: the spawn check reads a source file exactly as Python's compiler reads it."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.tools._spawn_check import SpawnSite, check_source, source_text

pytestmark = pytest.mark.property

# Pieces that exercise the decoder: BOMs, cookies (good, odd, unknown, bytes-to-bytes),
# shebangs, blank lines, non-ASCII bytes, utf-7 shifts, NUL, and ordinary code.
PIECES = [
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"# -*- coding: utf-7 -*-\n",
    b"# coding: latin-1\n",
    b"# coding=cp1252\n",
    b"# vim: set fileencoding=utf-8 :\n",
    b"# coding: utf-16\n",
    b"# coding: rot13\n",
    b"# coding: no-such-codec\n",
    b"#!/usr/bin/env python\n",
    b"\n",
    b"\r\n",
    b"import os\n",
    b"os.system('x')\n",
    b"os.system+ACg-'x'+ACk-\n",
    b"x = '\xe9\x80\xff'\n",
    b"s = '\xc3\xa9'\n",
    b"\x00",
    b"pass\n",
]


def compiled(data: bytes) -> str | None:
    """``ast.dump`` of what Python compiles from the bytes, or None when it refuses."""
    try:
        return ast.dump(ast.parse(data))
    except (SyntaxError, ValueError):
        return None


def text_tree(data: bytes) -> str | None:
    """``ast.dump`` of the text the spawn check decodes (for comments and columns), or None."""
    try:
        text, undecodable = source_text(data)
        return None if undecodable else ast.dump(ast.parse(text))
    except (SyntaxError, ValueError, LookupError):
        return None


def sites(data: bytes) -> list[SpawnSite] | None:
    """What check_source reports for the bytes, or None when it refuses them."""
    try:
        return check_source(data, "x.py")
    except (SyntaxError, ValueError, LookupError):  # UnicodeDecodeError is a ValueError
        return None


SOURCES = st.lists(st.sampled_from(PIECES), max_size=8).map(b"".join) | st.binary(max_size=64)


@given(SOURCES)
def test_checked_exactly_when_python_compiles(data: bytes) -> None:
    """check_source accepts the bytes exactly when Python compiles them (never fewer files)."""
    assert (sites(data) is None) == (compiled(data) is None)


@given(SOURCES)
def test_decoded_text_is_what_python_reads(data: bytes) -> None:
    """Where the text decodes cleanly and Python compiles, the text parses to Python's tree."""
    expected = compiled(data)
    text = text_tree(data)
    if expected is not None and text is not None:
        assert text == expected
