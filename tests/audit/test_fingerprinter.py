"""``fingerprinter``: keyed once, cheap per value, and the same digests as the keyed MAC.

The digest is BLAKE2b keyed with the host's key over the label, the name's
length, the name and the value; the fingerprinter's state copy and its memo
must give exactly that, for any name and value, before and after the memo
starts over.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope.audit import _fingerprint as fp_module
from envscope.audit._fingerprint import MEMO_ENTRIES, fingerprint, fingerprinter

KEY = hashlib.blake2b(b"a test key of enough characters", digest_size=32).digest()


def reference(key: bytes, name: str, value: str) -> str:
    """The MAC written out: label, 8-byte name length, name, value (surrogates escaped)."""
    name_bytes = name.encode("utf-8", "surrogateescape")
    data = (
        b"envscope fingerprint v2\x00"
        + len(name_bytes).to_bytes(8, "big")
        + name_bytes
        + value.encode("utf-8", "surrogateescape")
    )
    return hashlib.blake2b(data, key=key, digest_size=8).hexdigest()


@pytest.mark.parametrize(
    ("name", "value"),
    [("OPENAI_API_KEY", "sk-x"), ("A", ""), ("", "v"), ("AB", "C"), ("A", "BC"), ("É", "\udcff")],
)
def test_fingerprinter_equals_the_mac(name: str, value: str) -> None:
    """Each row: the fingerprinter, its memo hit and ``fingerprint`` all give the MAC."""
    of = fingerprinter(KEY)
    assert of(name, value) == reference(KEY, name, value)
    assert of(name, value) == reference(KEY, name, value)  # the memo's answer
    assert fingerprint(KEY, name, value) == reference(KEY, name, value)


@pytest.mark.property
@given(name=st.text(max_size=20), value=st.text(max_size=40))
def test_fingerprinter_property(name: str, value: str) -> None:
    """For any name and value the fingerprinter gives the MAC (name and value are bound)."""
    assert fingerprinter(KEY)(name, value) == reference(KEY, name, value)


def test_memo_starts_over_without_changing_a_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MEMO_ENTRIES pairs the memo is cleared; every digest stays the MAC."""
    monkeypatch.setattr(fp_module, "MEMO_ENTRIES", 8)
    of = fingerprinter(KEY)
    pairs = [(f"N{i}", f"v{i}") for i in range(20)]
    for _ in range(2):
        assert [of(n, v) for n, v in pairs] == [reference(KEY, n, v) for n, v in pairs]
    assert MEMO_ENTRIES >= 1024  # the shipped memo holds a large host's env


def test_a_replayed_recording_is_fingerprinted_by_each_traces_own_function() -> None:
    """A recording's fingerprinted rows are reused only for the very same function."""
    from envscope.audit.trace import Trace, keep_value
    from envscope.policy._reasons import Action, Reason, Stage

    capture = Trace(fingerprint=keep_value)
    capture.record("OPENAI_API_KEY", Action.STRIPPED, Stage.SANITIZE, Reason.TIER2, value="sk-1")
    recording = capture.recording()
    one, two = fingerprinter(KEY), fingerprinter(KEY[::-1])
    digests = []
    for fn in (one, one, two, one):
        trace = Trace(fingerprint=fn)
        trace.replay(recording)
        digests.append([d.fingerprint for d in trace])
    key2 = KEY[::-1]
    assert digests[0] == digests[1] == digests[3] == [reference(KEY, "OPENAI_API_KEY", "sk-1")]
    assert digests[2] == [reference(key2, "OPENAI_API_KEY", "sk-1")]
