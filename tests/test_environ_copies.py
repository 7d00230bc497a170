"""Copies of ``os.environ`` (``_inputs.EnvironCopies``): ``dict(os.environ)``, decoded once."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope._inputs import ENVIRON_COPIES, EnvironCopies, snapshot_env

PREFIX = "ENVSCOPE_TEST_COPY_"
NAMES = [f"{PREFIX}{i}" for i in range(4)]


@contextmanager
def restored_environ() -> Iterator[None]:
    """Writes to ``os.environ`` inside are undone on the way out."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for name in [n for n in os.environ if n not in before]:
            del os.environ[name]
        os.environ.update(before)
        ENVIRON_COPIES.clear()


def _set(name: str, value: Any) -> None:
    os.environ[name] = value


def _set_raw(name: str, value: Any) -> None:
    os.environb[name.encode()] = value  # bytes that are not UTF-8 come back surrogate-escaped


def _delete(name: str, _: Any) -> None:
    os.environ.pop(name, None)


values = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
raw_values = st.binary().filter(lambda b: b"\x00" not in b)
operations = st.one_of(
    st.tuples(st.just(_set), st.sampled_from(NAMES), values),
    st.tuples(st.just(_set_raw), st.sampled_from(NAMES), raw_values),
    st.tuples(st.just(_delete), st.sampled_from(NAMES), st.just("")),
)


@settings(max_examples=60)
@given(st.lists(operations, max_size=12))
def test_every_copy_equals_dict_of_os_environ(
    ops: list[tuple[Callable[[str, Any], None], str, Any]],
) -> None:
    """Whatever was set, reset, deleted or written as raw bytes, a copy is ``dict(os.environ)``."""
    with restored_environ():
        for op, name, value in ops:
            op(name, value)
            assert ENVIRON_COPIES.copy(os.environ) == dict(os.environ)
            assert snapshot_env(os.environ, "environ") == dict(os.environ)


def _counting_environ(data: dict[Any, Any]) -> tuple[os._Environ[str], list[int]]:
    """An ``os._Environ`` over ``data`` whose decoders count their calls."""
    calls = [0]

    def decode(value: Any) -> Any:
        calls[0] += 1
        return value.decode("utf-8", "surrogateescape")

    def encode(value: Any) -> Any:
        return value.encode("utf-8", "surrogateescape")

    return os._Environ(data, encode, decode, encode, decode), calls


def test_an_unchanged_environ_is_decoded_once() -> None:
    """Copies of an unchanged environ decode nothing; one change decodes it again, once."""
    environ, calls = _counting_environ({b"A": b"1", b"B": b"2"})
    copies = EnvironCopies()
    assert copies.copy(environ) == {"A": "1", "B": "2"}
    assert calls[0] == 4
    for _ in range(3):
        assert copies.copy(environ) == {"A": "1", "B": "2"}
    assert calls[0] == 4
    environ["B"] = "3"
    assert copies.copy(environ) == {"A": "1", "B": "3"}
    assert calls[0] == 8
    copies.clear()
    copies.copy(environ)
    assert calls[0] == 12


def test_each_copy_is_the_callers_own() -> None:
    """Changing one copy changes neither the environ nor the next copy."""
    environ, _ = _counting_environ({b"A": b"1"})
    copies = EnvironCopies()
    first = copies.copy(environ)
    first["A"] = "changed"
    first["NEW"] = "x"
    assert copies.copy(environ) == {"A": "1"}
    assert dict(environ) == {"A": "1"}


class _LookAlike(dict[str, str]):
    """A mapping with ``os._Environ``'s attribute names whose store says something else."""

    _data: ClassVar[dict[bytes, bytes]] = {b"STALE": b"x"}

    def decodekey(self, value: bytes) -> str:
        return value.decode()

    decodevalue = decodekey


@pytest.mark.parametrize(
    "mapping",
    [{"A": "1"}, {}, type("Other", (dict,), {})(A="1"), _LookAlike(A="1")],
    ids=["dict", "empty", "dict-subclass", "look-alike"],
)
def test_a_mapping_that_is_not_os_environ_is_copied_plainly(mapping: dict[str, str]) -> None:
    """Anything without ``os._Environ``'s encoded store is read through its mapping interface."""
    assert EnvironCopies().copy(mapping) == dict(mapping)
