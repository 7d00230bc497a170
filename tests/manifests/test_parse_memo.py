"""The parse memo answers only for the very bytes (and path) it parsed, and stays bounded.

A table over the owning class (equal answers, what is a new key, what is never
kept, the bounds), a host-level check (a second ``Host`` over the same homes
parses nothing, an edit between hosts is seen, same size included) and a
property (any bytes: the memo's answer, or its error, is the parser's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Catalog, Host
from envscope.errors import ManifestError
from envscope.manifests import _parse_memo
from envscope.manifests._parse_memo import PARSES, ParseMemo
from envscope.manifests._schema import Manifest, parse_manifest

GOOD = b"name: chatx\nrequires_env:\n  - {name: CHATX_DSN, secret: true}\n"
EDITED = b"name: chatx\nrequires_env:\n  - {name: CHATX_DSX, secret: true}\n"  # same size
BROKEN = b"requires_env: {\n"
LAUNCH = b"name: other\nrequires_env:\n  - {name: OTHER_DSN, secret: true}\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths ``parse_manifest`` really ran for (through the memo), the memo empty."""
    ran: list[str] = []

    def counting(data: bytes, path: str) -> Manifest:
        ran.append(path)
        return parse_manifest(data, path)

    monkeypatch.setattr(_parse_memo, "parse_manifest", counting)
    PARSES.clear()
    yield ran
    PARSES.clear()


def _outcome(parse: Callable[[bytes, str], Manifest], data: bytes, path: str) -> object:
    try:
        return parse(data, path)
    except ManifestError as exc:
        return ("error", exc.path, exc.message, exc.line, exc.field)


@pytest.mark.parametrize(
    ("first", "second", "parsed_again"),
    [
        ((GOOD, "a/plugin.yaml"), (GOOD, "a/plugin.yaml"), False),
        ((GOOD, "a/plugin.yaml"), (EDITED, "a/plugin.yaml"), True),  # one byte, same size
        ((GOOD, "a/plugin.yaml"), (GOOD, "b/plugin.yaml"), True),  # the path is in the result
        ((GOOD, "a/plugin.yaml"), (GOOD + b" ", "a/plugin.yaml"), True),
        ((BROKEN, "a/plugin.yaml"), (BROKEN, "a/plugin.yaml"), True),  # an error is never kept
        ((GOOD * 80, "a/plugin.yaml"), (GOOD * 80, "a/plugin.yaml"), True),  # over the size cap
    ],
    ids=["same bytes", "edited", "other path", "grown", "broken", "too large"],
)
def test_the_memo_answers_only_for_the_same_bytes_and_path(
    parses: list[str],
    first: tuple[bytes, str],
    second: tuple[bytes, str],
    parsed_again: bool,
) -> None:
    """Each answer equals the parser's; a new parse happens exactly when the key is new."""
    memo = ParseMemo()
    for data, path in (first, second):
        assert _outcome(memo.parse, data, path) == _outcome(parse_manifest, data, path)
    assert len(parses) == (2 if parsed_again else 1)


def test_the_memo_is_bounded(parses: list[str]) -> None:
    """Full, it empties and fills again: never more than ``entries`` manifests."""
    memo = ParseMemo(entries=3)
    for i in range(10):
        memo.parse(GOOD, f"p{i}/plugin.yaml")
        assert len(memo) <= 3
    memo.clear()
    assert len(memo) == 0


def _home(root: Path, name: str, manifest: bytes) -> Path:
    plugin = root / name / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_bytes(manifest)
    return root / name


def _child(launch: Path, home: Path, env: dict[str, str]) -> dict[str, str]:
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    with host.routed(home):
        return host.build_subprocess_env(env)


def test_a_second_host_parses_nothing_and_sees_an_edit(tmp_path: Path, parses: list[str]) -> None:
    """A new Host over the same homes reads every manifest but parses none; an edit is parsed."""
    launch = _home(tmp_path, "launch", LAUNCH)
    home = _home(tmp_path, "home", GOOD)
    env = {"PATH": "/usr/bin", "CHATX_DSN": "dsn-value", "CHATX_DSX": "other-value"}
    first = _child(launch, home, env)
    assert "CHATX_DSN" not in first
    assert first["CHATX_DSX"] == "other-value"
    ran = len(parses)
    assert ran >= 2
    assert _child(launch, home, env) == first
    assert len(parses) == ran, "a second Host parsed manifests the process had parsed"
    (home / "plugins" / "platforms" / "chatx" / "plugin.yaml").write_bytes(EDITED)
    edited = _child(launch, home, env)
    assert edited["CHATX_DSN"] == "dsn-value"
    assert "CHATX_DSX" not in edited
    assert len(parses) == ran + 1


@given(st.binary(max_size=300) | st.sampled_from([GOOD, EDITED, BROKEN]).map(lambda b: b[:-3]))
def test_any_bytes_give_the_parsers_answer(data: bytes) -> None:
    """Twice through the memo, once through the parser: one outcome (a manifest or its error)."""
    memo = ParseMemo()
    expected = _outcome(parse_manifest, data, "fuzz/plugin.yaml")
    assert _outcome(memo.parse, data, "fuzz/plugin.yaml") == expected
    assert _outcome(memo.parse, data, "fuzz/plugin.yaml") == expected
