"""Snapshots read by `envscope diff`: every malformed shape is exit 2 naming the file and field."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from envscope.cli import main
from envscope.errors import SnapshotError
from envscope.tools._report import SNAPSHOT_VERSIONS
from envscope.tools._snapshot import parse_snapshot

PLANTED = "planted-value-never-printed"
ENTRY = {
    "in_child": True,
    "action": "kept",
    "stage": "sanitize",
    "reason": "not-declared",
    "origin": None,
    "fingerprint": "0123456789abcdef",
}


def snapshot(**changes: Any) -> dict[str, Any]:
    """A valid snapshot with top-level fields replaced (``None`` removes one)."""
    snap: dict[str, Any] = {
        "envscope_snapshot": 1,
        "home": "h",
        "surface": "terminal",
        "routed": False,
        "policy": {"complete": True, "problems": []},
        "child": ["A"],
        "keys": {"A": dict(ENTRY)},
        "warnings": [],
    }
    for key, value in changes.items():
        if value is None:
            snap.pop(key)
        else:
            snap[key] = value
    return snap


def entry(**changes: Any) -> dict[str, Any]:
    """A snapshot whose one entry has fields replaced (``None`` removes one)."""
    info: dict[str, Any] = dict(ENTRY)
    for key, value in changes.items():
        if value is None:
            info.pop(key)
        else:
            info[key] = value
    return snapshot(keys={"A": info})


def v2(**changes: Any) -> dict[str, Any]:
    """A version 2 snapshot (``origin`` an object) whose one entry has fields replaced."""
    snap = entry(**changes)
    snap["envscope_snapshot"] = 2
    snap["fingerprint_key_id"] = None
    return snap


def raw(obj: object) -> bytes:
    """JSON bytes of an object."""
    return json.dumps(obj).encode()


# (id, file bytes, the field named (or None), words in the message)
MALFORMED: list[tuple[str, bytes, str | None, str]] = [
    ("empty-file", b"", None, "not JSON"),
    ("not-json", b"{\n  'a': 1", None, "not JSON (line 2)"),
    ("not-utf", b'{"a": "\x80\x81"}', None, "not JSON"),
    ("nested-too-deep", b"[" * 100_000, None, "nested too deeply"),
    ("top-level-list", raw([snapshot()]), None, "the top level is a list"),
    ("top-level-string", raw(PLANTED), None, "the top level is a string"),
    ("no-version", raw(snapshot(envscope_snapshot=None)), None, "not an envscope snapshot"),
    ("version-true", raw(snapshot(envscope_snapshot=True)), None, "not an envscope snapshot"),
    ("version-text", raw(snapshot(envscope_snapshot="1")), None, "not an envscope snapshot"),
    ("version-3", raw(snapshot(envscope_snapshot=3)), None, "not an envscope snapshot"),
    ("version-0", raw(snapshot(envscope_snapshot=0)), None, "not an envscope snapshot"),
    ("missing-keys", raw(snapshot(keys=None)), "keys", "missing"),
    ("keys-list", raw(snapshot(keys=[PLANTED])), "keys", "must be an object, got a list"),
    ("keys-null", raw({**snapshot(), "keys": None}), "keys", "got null"),
    ("missing-child", raw(snapshot(child=None)), "child", "missing"),
    ("child-text", raw(snapshot(child=PLANTED)), "child", "must be a list, got a string"),
    ("child-item-number", raw(snapshot(child=["A", 7])), "child[1]", "must be a string"),
    ("entry-number", raw(snapshot(keys={"A": 1})), "keys.A", "must be an object, got a number"),
    ("entry-list", raw(snapshot(keys={"A": [PLANTED]})), "keys.A", "must be an object"),
    ("entry-text", raw(snapshot(keys={"A": PLANTED})), "keys.A", "must be an object"),
    ("missing-action", raw(entry(action=None)), "keys.A.action", "missing"),
    ("action-list", raw(entry(action=[PLANTED])), "keys.A.action", "must be one of 'kept'"),
    ("action-unknown", raw(entry(action="vanished")), "keys.A.action", "got a string"),
    ("stage-number", raw(entry(stage=3)), "keys.A.stage", "'extra', got a number"),
    ("reason-prose", raw(entry(reason="Not declared")), "keys.A.reason", "does not match"),
    ("missing-origin", raw(entry(origin=None)), "keys.A.origin", "missing"),
    ("missing-fingerprint", raw(entry(fingerprint=None)), "keys.A.fingerprint", "missing"),
    ("fingerprint-not-hex", raw(entry(fingerprint=PLANTED)), "keys.A.fingerprint", "match"),
    ("missing-home", raw(snapshot(home=None)), "home", "missing"),
    ("surface-unknown", raw(snapshot(surface="daemon")), "surface", "must be one of"),
    ("routed-text", raw(snapshot(routed="no")), "routed", "true or false, got a string"),
    (
        "policy-problem-number",
        raw(snapshot(policy={"complete": True, "problems": [1]})),
        "policy.problems[0]",
        "must be a string",
    ),
    ("warning-record-in-v1", raw(snapshot(warnings=[{"key": "A"}])), "warnings[0]", "a string"),
    ("key-id-short", raw(snapshot(fingerprint_key_id="abc")), "fingerprint_key_id", "match"),
    (
        "v2-missing-key-id",
        raw({k: v for k, v in v2().items() if k != "fingerprint_key_id"}),
        "fingerprint_key_id",
        "missing",
    ),
    (
        "v2-warning-text",
        raw(v2() | {"warnings": ["A: looks like a token"]}),
        "warnings[0]",
        "must be an object, got a string",
    ),
    (
        "v2-origin-extra-field",
        raw(v2(origin={"kind": "k", "detail": "d", "path": None, "line": None, "value": PLANTED})),
        "keys.A.origin.value",
        "not a field",
    ),
    (
        "v2-origin-line-0",
        raw(v2(origin={"kind": "k", "detail": "d", "path": None, "line": 0})),
        "keys.A.origin.line",
        "at least 1",
    ),
    (
        "v2-filtered-only-other",
        raw(v2() | {"filtered": {"key": [], "only": "all"}}),
        "filtered.only",
        "must be one of",
    ),
    ("v2-names-fold-null", raw(v2() | {"names_fold": None}), "names_fold", "got null"),
    ("reason-object", raw(entry(reason={PLANTED: 1})), "keys.A.reason", "got an object"),
    ("origin-number", raw(entry(origin=5)), "keys.A.origin", "must be a string or null"),
    ("fingerprint-list", raw(entry(fingerprint=[PLANTED])), "keys.A.fingerprint", "or null"),
    ("fingerprint-bool", raw(entry(fingerprint=True)), "keys.A.fingerprint", "got a boolean"),
    ("v2-origin-text", raw(v2(origin=PLANTED)), "keys.A.origin", "must be an object or null"),
    ("v2-origin-list", raw(v2(origin=[PLANTED])), "keys.A.origin", "got a list"),
    ("v2-origin-no-kind", raw(v2(origin={"detail": "d"})), "keys.A.origin.kind", "missing"),
    (
        "v2-origin-detail-number",
        raw(v2(origin={"kind": "k", "detail": 1})),
        "keys.A.origin.detail",
        "must be a string, got a number",
    ),
    (
        "v2-origin-path-number",
        raw(v2(origin={"kind": "k", "detail": "d", "path": 1})),
        "keys.A.origin.path",
        "must be a string or null",
    ),
    (
        "v2-origin-line-text",
        raw(v2(origin={"kind": "k", "detail": "d", "path": None, "line": "3"})),
        "keys.A.origin.line",
        "must be a number or null, got a string",
    ),
    (
        "v2-origin-line-bool",
        raw(v2(origin={"kind": "k", "detail": "d", "path": None, "line": True})),
        "keys.A.origin.line",
        "got a boolean",
    ),
    (
        "control-characters-in-key",
        raw(snapshot(keys={"A\x1b[2J": 1})),
        "keys.A\\x1b[2J",
        "must be an object",
    ),
    (
        "duplicate-key",
        b'{"envscope_snapshot": 1, "child": [], "keys": {"A": {}, "A": {}}}',
        None,
        "the key A appears twice",
    ),
]


@pytest.mark.parametrize(
    ("data", "field", "words"), [pytest.param(d, f, w, id=i) for i, d, f, w in MALFORMED]
)
def test_malformed_snapshot_is_a_typed_error(data: bytes, field: str | None, words: str) -> None:
    """parse_snapshot raises SnapshotError naming the file and the field, with no value."""
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(data, "snap.json", SNAPSHOT_VERSIONS)
    error = info.value
    assert (error.path, error.field) == ("snap.json", field)
    assert words in str(error)
    assert PLANTED not in str(error)
    assert PLANTED not in repr(error.args)


@pytest.mark.parametrize("data", [pytest.param(d, id=i) for i, d, _, _ in MALFORMED])
@pytest.mark.parametrize("side", ["a", "b", "stdin"])
def test_diff_on_malformed_snapshot_exits_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    data: bytes,
    side: str,
) -> None:
    """`envscope diff` on a malformed snapshot (either side, or stdin) is exit 2 naming it."""
    good = tmp_path / "good.json"
    good.write_bytes(raw(snapshot()))
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    operand = "-" if side == "stdin" else str(bad)
    argv = ["diff", operand, str(good)] if side != "b" else ["diff", str(good), operand]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"envscope: error: {operand}: ")
    assert err.count("\n") == 1
    assert PLANTED not in err
    assert "\x1b" not in err


def test_valid_snapshot_with_extra_fields_is_accepted() -> None:
    """Fields a newer writer may add, where the schema leaves them open, are left alone."""
    snap = entry(extra_field=[1, 2])
    snap["new_top_level"] = {"x": 1}
    snap["policy"]["new_policy_field"] = True
    assert parse_snapshot(raw(snap), "s.json", SNAPSHOT_VERSIONS) == snap


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.parametrize("kind", ["fifo", "directory", "missing"])
def test_snapshot_operand_that_is_not_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """A FIFO (read without blocking), a directory or a missing path is exit 2 naming it."""
    path = tmp_path / "snap.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    assert main(["diff", str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"envscope: error: {path}: cannot read snapshot: ")


def test_snapshot_path_with_nul_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A snapshot path holding NUL (possible through main(argv)) is exit 2, not a traceback."""
    assert main(["diff", "a\0b", "c"]) == 2
    assert "holds a NUL character" in capsys.readouterr().err


@pytest.mark.parametrize(
    "origin",
    [
        None,
        {"kind": "catalog", "detail": "d", "path": None, "line": None},
        {"kind": "manifest", "detail": "chatx", "path": "p/plugin.yaml", "line": 4},
        {"kind": "manifest", "detail": "chatx", "path": "p/plugin.yaml", "line": 4.0},
    ],
    ids=["null", "no-path", "path-and-line", "line-written-as-4.0"],
)
def test_version_2_origin_objects_are_read(origin: object) -> None:
    """A version 2 snapshot's origin object (or null) is accepted as written."""
    snap = v2()
    snap["keys"]["A"]["origin"] = origin
    assert parse_snapshot(raw(snap), "s.json", SNAPSHOT_VERSIONS) == snap
