"""``_inputs.current_env``: the last snapshot itself while the env equals it, else a new one."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import pytest

from envscope._inputs import ENVIRON_COPIES, current_env


class LiveMapping(Mapping[str, str]):
    """A mapping that is no dict (a live proxy): always copied."""

    def __init__(self, data: dict[str, str]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> str:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_a_plain_dict_equal_to_the_last_snapshot_answers_it() -> None:
    live = {"A": "1", "B": "2"}
    first = current_env(live, None)
    assert first == live
    assert first is not live  # a snapshot, never the live dict
    assert current_env(live, first) is first
    live["B"] = "3"
    changed = current_env(live, first)
    assert changed is not first
    assert changed == {"A": "1", "B": "3"}
    assert first == {"A": "1", "B": "2"}  # the last snapshot is never changed
    del live["A"]
    assert current_env(live, changed) == {"B": "3"}


def test_another_mapping_is_copied_every_time() -> None:
    live = LiveMapping({"A": "1"})
    first = current_env(live, None)
    again = current_env(live, first)
    assert again == first == {"A": "1"}
    assert again is not first


def test_os_environ_is_one_snapshot_while_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    ENVIRON_COPIES.clear()
    first = current_env(os.environ, None)
    assert first == dict(os.environ)
    assert current_env(os.environ, first) is first
    monkeypatch.setenv("ENVSCOPE_CURRENT_ENV_TEST", "x")
    changed = current_env(os.environ, first)
    assert changed is not first
    assert changed["ENVSCOPE_CURRENT_ENV_TEST"] == "x"
    assert "ENVSCOPE_CURRENT_ENV_TEST" not in first
