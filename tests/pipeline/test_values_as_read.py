"""Values are compared as read: format characters count as padding, like whitespace.

A secret stored wrapped in a BOM or a zero-width space (a ``.env`` saved by an
editor, a value pasted from a web page) is the same secret as its clean copy,
and the reverse: a table over the padding characters, where they sit, and
which side holds them; factory, guard and ``envscope.testing`` agree.
"""

from __future__ import annotations

import pytest

from envscope import Surface
from envscope._guard import offences
from envscope.pipeline._secret_values import as_read
from envscope.testing import assert_no_secrets
from tests.conftest import HostFactory

TOKEN = "fake-telegram-bot-token-0001"
PADDING = {
    "bom": "\ufeff",
    "zero-width space": "\u200b",
    "zero-width non-joiner": "\u200c",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "soft hyphen": "\u00ad",
    "no-break space": "\u00a0",
    "ideographic space": "\u3000",
    "crlf": "\r\n",
    "bom and space": "\ufeff ",
}
PLACES = {
    "before": lambda pad, s: pad + s,
    "after": lambda pad, s: s + pad,
    "around": lambda pad, s: pad + s + pad,
}


@pytest.mark.parametrize("pad", sorted(PADDING))
@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("wrapped", ["stored", "copy"])
def test_a_padded_secret_matches_its_clean_copy(
    make_host: HostFactory, pad: str, place: str, wrapped: str
) -> None:
    """Either side padded: the copy under another name is stripped, and every checker agrees."""
    padded = PLACES[place](PADDING[pad], TOKEN)
    stored, copy = (padded, TOKEN) if wrapped == "stored" else (TOKEN, padded)
    host = make_host({"PATH": "/usr/bin", "TELEGRAM_BOT_TOKEN": stored})
    env = host.build_subprocess_env(
        {"PATH": "/usr/bin", "BOT_COPY": copy}, surface=Surface.TERMINAL
    )
    assert "BOT_COPY" not in env
    assert offences(host, {"BOT_COPY": copy}, implicit=False) == [
        "BOT_COPY (the value of TELEGRAM_BOT_TOKEN)"
    ]
    with pytest.raises(AssertionError, match="BOT_COPY"):
        assert_no_secrets({"BOT_COPY": copy}, host=host)


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ("plain", "plain"),
        ("  spaced\n", "spaced"),
        ("\ufeffbom", "bom"),
        ("zw\u200b", "zw"),
        ("\u200b\ufeff\u00a0both\u2060 ", "both"),
        ("in\u200bside", "in\u200bside"),  # inside a value: not padding
        ("\u200b", ""),
        ("é-accented-é", "é-accented-é"),
    ],
)
def test_as_read_table(value: str, read: str) -> None:
    """Only surrounding padding goes; a character inside a value stays."""
    assert as_read(value) == read
