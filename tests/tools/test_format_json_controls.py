"""``--json`` output escapes what a terminal would act on, as the text tables do.

``json.dumps(ensure_ascii=False)`` leaves DEL, C1 controls, bidi overrides and
line separators raw; a key from a profile's ``.env`` may hold one. A property
over any text: the output has no character ``printable`` would escape (but
the structural newlines), and parses back to the same data.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope.cli import main
from envscope.tools._report import format_json
from tests.cli.test_cli import CONFIG, clean_process_env  # noqa: F401 - autouse

CONTROLS = ["\u202e", "\u2066", "\x85", "\x9b", "\x7f", "\u2028", "\x1b", "\U000e0001"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=5))
def test_json_output_is_printable_and_parses_back(data: dict[str, str]) -> None:
    text = format_json(data)
    assert all(c.isprintable() or c == "\n" for c in text)
    assert json.loads(text) == data


@pytest.mark.parametrize("control", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_explain_json_escapes_a_control_in_a_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, control: str
) -> None:
    key = f"EVIL{control}NAME"
    monkeypatch.setenv(key, "plain-value")
    assert main(["--config", CONFIG, "explain", "--json"]) == 0
    out = capsys.readouterr().out
    assert control not in out
    assert key in json.loads(out)["keys"]
    assert "café" in format_json({"k": "café"})  # readable text stays as is
