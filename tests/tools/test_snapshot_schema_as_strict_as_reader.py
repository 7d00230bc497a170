"""The shipped ``snapshot.schema.json`` refuses what ``diff``'s reader refuses, and the reverse.

Random edits of a full version 2 snapshot and of a version 1 one (a field
removed, replaced by a value of another type or a near miss, a field added at
any depth), read by ``parse_snapshot`` and validated against the schema: the
two verdicts agree. JSON text rules (duplicate keys, nesting, lone surrogates)
are the decoder's and no schema's, so the edits keep to documents.

The schema's patterns are ECMA-262 regular expressions, as JSON Schema says:
``$`` is the end of the string. python-jsonschema runs them with Python's
``re``, whose ``$`` also matches before a final newline, so the validator here
ends each anchored pattern with ``\\Z`` (what ECMA-262 and pydantic mean).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope.errors import SnapshotError
from envscope.schemas import load_schema
from envscope.tools._report import SNAPSHOT_VERSIONS
from envscope.tools._snapshot import parse_snapshot

HEX = "0123456789abcdef"
ORIGIN = {"kind": "manifest", "detail": "chatx", "path": "p/plugin.yaml", "line": 4}
V2: dict[str, Any] = {
    "envscope_snapshot": 2,
    "fingerprint_key_id": HEX,
    "home": "work",
    "surface": "terminal",
    "routed": True,
    "names_fold": False,
    "policy": {"complete": True, "problems": ["p/plugin.yaml:3: name: bad"]},
    "child": ["A", "PATH"],
    "keys": {
        "A": {"in_child": True, "action": "kept", "stage": "sanitize", "reason": "inherited",
              "origin": ORIGIN, "fingerprint": HEX},
        "B_TOKEN": {"in_child": False, "action": "stripped", "stage": "sanitize",
                    "reason": "tier1", "origin": None, "fingerprint": None},
    },
    "warnings": [{"key": "A", "kind": "credential-suffix", "message": "A: looks like one"}],
    "filtered": {"key": ["A"], "only": "kept"},
    "values": {"A": "1"},
}  # fmt: skip
V1: dict[str, Any] = {
    **{k: v for k, v in V2.items() if k not in ("names_fold", "filtered", "values")},
    "envscope_snapshot": 1,
    "keys": {name: {**d, "origin": None if d["origin"] is None else "manifest: chatx"}
             for name, d in V2["keys"].items()},
    "warnings": ["A: looks like one"],
}  # fmt: skip
VALUES: st.SearchStrategy[object] = st.sampled_from(
    [None, True, False, 0, 1, 2, 2.0, 4.5, -1, "", "x", "kept", "vanished", "tier1", "Tier 1",
     "terminal", "daemon", HEX, HEX.upper(), HEX + "\n", HEX[:15] + "\n", "kind-\n", "a b",
     [], ["A"], [1], {}, {"a": 1}, ORIGIN, {**ORIGIN, "line": 0}, {**ORIGIN, "line": 3.0},
     {"kind": "k", "detail": "d"}, {"key": [], "only": None}, "removed", "manifest: chatx"]
)  # fmt: skip


def _ecma_pattern(
    validator: Any, pattern: str, instance: object, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    if isinstance(instance, str):
        spelled = pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern
        if re.search(spelled, instance) is None:
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


ECMA = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {"pattern": _ecma_pattern}
)
SCHEMA = ECMA(load_schema("snapshot"))


def _paths(value: object, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


def _edit(doc: dict[str, Any], path: tuple[Any, ...], how: str, value: object) -> object:
    """``doc`` with the thing at ``path`` removed, replaced, or given a new field ``x_new``."""
    edited = copy.deepcopy(doc)
    if not path:
        return value if how == "replace" else {**edited, "x_new": value}
    parent: Any = edited
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "remove":
        del parent[last]
    elif how == "replace":
        parent[last] = value
    elif isinstance(parent[last], dict):
        parent[last]["x_new"] = value
    else:
        parent[last] = value
    return edited


def _reader_accepts(document: object) -> bool:
    try:
        parse_snapshot(json.dumps(document).encode(), "s.json", SNAPSHOT_VERSIONS)
    except SnapshotError:
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(
    base=st.sampled_from([V2, V1]),
    pick=st.integers(min_value=0),
    how=st.sampled_from(["remove", "replace", "add"]),
    value=VALUES,
    second=st.one_of(st.none(), st.tuples(st.integers(min_value=0), VALUES)),
)
def test_random_edits_are_refused_by_both_or_neither(
    base: dict[str, Any], pick: int, how: str, value: object,
    second: tuple[int, object] | None,
) -> None:  # fmt: skip
    paths = list(_paths(base))
    document = _edit(base, paths[pick % len(paths)], how, value)
    if second is not None and isinstance(document, dict):
        again = list(_paths(document))
        document = _edit(document, again[second[0] % len(again)], "replace", second[1])
    assert _reader_accepts(document) == SCHEMA.is_valid(document), document


def test_both_bases_are_accepted_by_both() -> None:
    """The two starting documents are valid snapshots: every edit starts from an accepted one."""
    for base in (V2, V1):
        assert _reader_accepts(base)
        assert SCHEMA.is_valid(base)


def test_the_plain_validator_differs_only_on_a_final_newline() -> None:
    """Why ``ECMA`` exists: python-jsonschema's ``$`` takes a final newline; envscope does not."""
    document = copy.deepcopy(V2)
    document["keys"]["A"]["reason"] = "inherited\n"
    assert jsonschema.Draft202012Validator(load_schema("snapshot")).is_valid(document)
    assert not SCHEMA.is_valid(document)
    assert not _reader_accepts(document)
