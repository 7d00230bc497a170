"""The shipped ``plugin.schema.json`` is exactly as strict as the manifest reader.

Every document the reader refuses (its YAML parsed) the schema refuses, and the
reverse: pinned on the manifest corpus and on random manifests of names with
spaces, ``=``, NUL or nothing, flags that disagree, and wrong types. The name
rule itself is pinned character by character over the whole BMP.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope.errors import ManifestError
from envscope.files._yaml import Document, read_document
from envscope.manifests._schema import (
    ENV_NAME_PATTERN,
    _validator,
    env_name_problem,
    parse_manifest,
)
from envscope.schemas import load_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema("plugin")
NAME = re.compile(ENV_NAME_PATTERN)


def test_the_name_pattern_is_the_readers_rule_for_every_character() -> None:
    for code in range(0x10000):
        char = chr(code)
        for name in (char, f"A{char}B"):
            assert (env_name_problem(name) is None) == bool(NAME.fullmatch(name)), hex(code)
    assert env_name_problem("") is not None
    assert NAME.fullmatch("") is None


def _reader_accepts(document: object) -> bool:
    """The reader's schema step on a parsed document (YAML spelling left out of it)."""
    from pydantic import ValidationError

    if not isinstance(document, dict):
        return False
    try:
        _validator()(Document(document, {}), "plugin.yaml")
    except ValidationError:
        return False
    return True


def _schema_accepts(document: object) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(document)


names = st.one_of(
    st.sampled_from(["A_TOKEN", "", "A B", "A=B", "A\x00B", "A\tB", "A\x85B", "é_KEY"]),
    st.text(max_size=6),
    st.integers(),
)
flags = st.one_of(st.none(), st.booleans(), st.sampled_from(["yes", 1, 0]))
entries = st.one_of(
    names,
    st.fixed_dictionaries(
        {"name": names},
        optional={"secret": flags, "password": flags, "category": st.one_of(st.none(), names)},
    ),
)
documents = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=4), st.integers()),
        "kind": st.one_of(st.text(max_size=8), st.none(), st.integers()),
        "requires_env": st.one_of(st.lists(entries, max_size=4), names, st.none()),
        "optional_env": st.lists(entries, max_size=3),
        "version": st.text(max_size=3),
    },
)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_random_manifests_are_refused_by_both_or_neither(document: dict[str, Any]) -> None:
    assert _reader_accepts(document) == _schema_accepts(document)


def _doc(path: Path) -> Document | None:
    """The file's parsed YAML, or None when it does not parse (no document for a schema)."""
    try:
        return read_document(
            path.read_bytes(), str(path), error=ManifestError, kind="manifest", max_bytes=1 << 20
        )
    except ManifestError:
        return None


CORPUS = [p for p in sorted((ROOT / "fixtures" / "manifests").rglob("*.yaml")) if _doc(p)]


def test_the_corpus_holds_refused_and_accepted_manifests() -> None:
    assert {_schema_accepts(doc.root) for p in CORPUS if (doc := _doc(p))} == {True, False}


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_the_corpus_is_refused_by_both_or_neither(path: Path) -> None:
    """Each corpus file whose YAML parses: the reader's verdict is the schema's."""
    doc = _doc(path)
    assert doc is not None
    try:
        parse_manifest(path.read_bytes(), str(path))
        accepted = True
    except ManifestError:
        accepted = False
    assert accepted == _schema_accepts(doc.root)
