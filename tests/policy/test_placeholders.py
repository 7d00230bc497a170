"""One placeholder rule: name context's value test and the format table's URL filter agree.

A table over ``is_placeholder`` (slots, filler runs, stand-in words, and what
is none of them), and a property: whatever stand-in a template holds, neither
name context (under a password name) nor the format table (as a URL's
password) takes it for a credential, and a value that is no stand-in is one
for both.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.policy._name_context import name_context
from envscope.policy._placeholders import is_placeholder
from envscope.policy.formats import find_format

STAND_INS = ["<PASSWORD>", "${DB_PASSWORD}", "$DB_PASSWORD", "{password}", "{{password}}",
             "%DB_PASSWORD%", "[password]", "%s", "%(password)s", "xxxxxx", "******", "000000",
             "changeme", "change-me", "your-password", "my_secret", "REDACTED", "Password",
             "pass", "pwd", "passwd", "TODO"]  # fmt: skip
NOT_STAND_INS = ["guest", "hunter2hunter2", "p4ssw0rd!", "xxxxx", "{password}x", "%x",
                 "s3cr3t-v4lue", "password1", "mysecret", "<a>b"]  # fmt: skip


@pytest.mark.parametrize("text", STAND_INS)
def test_stand_ins(text: str) -> None:
    assert is_placeholder(text)
    assert is_placeholder(f"  {text} ")


@pytest.mark.parametrize("text", NOT_STAND_INS)
def test_not_stand_ins(text: str) -> None:
    assert not is_placeholder(text)


WORD = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=20
)
SLOTS = st.one_of(
    WORD.map(lambda w: f"<{w}>"),
    WORD.map(lambda w: f"{{{w}}}"),
    WORD.map(lambda w: f"{{{{{w}}}}}"),
    WORD.map(lambda w: f"[{w}]"),
    WORD.map(lambda w: f"%({w})s"),
    st.sampled_from("x*.#-_0").flatmap(lambda c: st.integers(6, 40).map(lambda n: c * n)),
    st.sampled_from(STAND_INS),
)


@given(SLOTS)
def test_a_stand_in_is_no_credential_for_either_reader(slot: str) -> None:
    assert is_placeholder(slot)
    assert name_context("DB_PASSWORD", slot) is None
    found = find_format(f"postgres://app:{slot}@db.internal:5432/app")
    assert found is None or found.name != "url-with-password"


@given(st.sampled_from(NOT_STAND_INS))
def test_what_is_no_stand_in_is_a_password_for_both(text: str) -> None:
    url = f"postgres://app:{text}@db.internal:5432/app"
    found = find_format(url)
    if "@" not in text and "/" not in text and " " not in text:
        assert found is not None
        assert found.name == "url-with-password"
    if len(text) >= 8:
        assert name_context("DB_PASSWORD", text) == ("PASSWORD",)
