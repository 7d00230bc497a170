"""``_inputs.build_arguments``: its shortcut for the defaults answers as the full check does."""

from __future__ import annotations

import pytest

from envscope._inputs import build_arguments
from envscope.errors import ConfigurationError, EnvscopeError

FLAGS = {"inherit_credentials": False, "scrub": True}


@pytest.mark.parametrize(
    "given",
    [((), (), (), ()), ([], [], [], []), ((), [], (), []), ((), (), [], ())],
    ids=["defaults", "lists", "mixed", "one-list"],
)
def test_the_defaults_shortcut_equals_the_full_check(given: tuple[object, ...]) -> None:
    """Empty tuples (the signatures' defaults) take the shortcut, empty lists the full check:
    the same answer, with the same frozen types."""
    passthrough, grant, resolved, own = given
    got = build_arguments(None, passthrough, grant, FLAGS, resolved, own)  # type: ignore[arg-type]
    want = build_arguments({}, [], [], FLAGS, [], [])
    assert got == want
    assert [type(part) for part in got] == [type(part) for part in want]


@pytest.mark.parametrize("flag", [0, "false", None, 1])
def test_the_shortcut_still_checks_each_flag(flag: object) -> None:
    with pytest.raises(ConfigurationError, match="inherit_credentials: must be True or False"):
        build_arguments(None, (), (), {"inherit_credentials": flag})


EXTRAS = [
    None,
    {},
    {"TASK_ID": "7"},
    {"N": 3, "F": 1.5},
    {"BAD=NAME": "x"},
    {"": "x"},
    {"K": "a\x00b"},
    {"K": True},
    {"K": b"bytes"},
    {"K\ud800": "x"},
    {"K": "\udc80"},
    ["not", "a mapping"],
]


def _answer(extra: object, names: list[str] | tuple[str, ...]) -> object:
    try:
        return build_arguments(extra, names, names, FLAGS, names, names)  # type: ignore[arg-type]
    except EnvscopeError as exc:
        return (type(exc), str(exc))


@pytest.mark.parametrize("extra", EXTRAS, ids=repr)
def test_the_extra_only_shortcut_answers_as_the_full_check(extra: object) -> None:
    """Only ``extra`` given (every name list the signatures' default): the same child
    values, the same frozen types, or the same error naming the key."""
    got, want = _answer(extra, ()), _answer(extra, [])
    assert got == want
    assert isinstance(got, tuple)
    assert isinstance(want, tuple)
    assert [type(part) for part in got] == [type(part) for part in want]
