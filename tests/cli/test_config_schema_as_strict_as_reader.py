"""The shipped ``envscope.schema.json`` refuses what the config model refuses, and the reverse.

On random documents of every top-level field with values of every type,
surface blocks good and bad, and each source type with good and bad entries:
the config model's verdict (its schema step; the file-system checks that
follow, a home that does not exist, are the reader's alone) is the schema's.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pydantic
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope.cli.config import _model
from envscope.errors import EnvscopeError
from envscope.schemas import load_schema

MODEL = _model()
SCHEMA = jsonschema.Draft202012Validator(load_schema("envscope"))
VALUES = st.sampled_from(
    [None, True, 1, 1.5, "x", "", "A B", "ENVSCOPE_HOME", "9BAD", [], ["A"], {}, {"a": "b"},
     "raise", "core", "default", ["desktop"], ["nope"]]
)  # fmt: skip
FIELDS = st.sampled_from(
    ["launch_home", "homes", "managed_env_file", "bundled_plugins", "catalog", "home_env_var",
     "multiplex", "on_unreadable_platform", "known_safe", "mcp_families", "mcp_network_trust",
     "name_context", "bogus"]
)  # fmt: skip
SURFACES = st.dictionaries(
    st.sampled_from(["terminal", "mcp", "script", "bad"]),
    st.sampled_from([{"inherit": "core"}, {"include": ["A"]}, {"set": {"A": "1"}},
                     {"inherit": "nope"}, {"x": 1}, {"default_excludes": "yes"}]),
    max_size=2,
)  # fmt: skip
SOURCES = st.lists(
    st.sampled_from([
        {"type": "keyring", "entries": {"*": {"A_KEY": "svc/user"}}},
        {"type": "pass", "entries": {"*": {"A_KEY": "dev/a"}}},
        {"type": "pass", "entries": {"*": {"A_KEY": 3}}},
        {"type": "vault", "entries": {"*": {"A_KEY": "kv/x#k"}}},
        {"type": "1password", "entries": {"*": {"A_KEY": "op://v/i/f"}}},
        {"type": "nope", "entries": {}},
        {"type": "keyring"},
        {"type": "aws", "entries": {"*": {"A_KEY": "name"}}, "bogus": 1},
    ]),
    max_size=2,
)  # fmt: skip


def _model_accepts(document: dict[str, Any]) -> bool:
    try:
        MODEL.model_validate(document)
    except (pydantic.ValidationError, EnvscopeError):
        return False
    return True


@settings(max_examples=500, deadline=None)
@given(
    base=st.booleans(),
    fields=st.dictionaries(FIELDS, VALUES, max_size=3),
    surfaces=st.one_of(st.none(), SURFACES),
    sources=st.one_of(st.none(), SOURCES),
)
def test_random_configs_are_refused_by_both_or_neither(
    base: bool, fields: dict[str, Any], surfaces: dict[str, Any] | None, sources: list[Any] | None
) -> None:
    document: dict[str, Any] = {"launch_home": "a"} if base else {}
    document.update(fields)
    if surfaces is not None:
        document["surfaces"] = surfaces
    if sources is not None:
        document["sources"] = sources
    assert _model_accepts(document) == SCHEMA.is_valid(document), document
