"""Size and shape limits of a finished child env (issue 6, item 6)."""

from __future__ import annotations

import pytest

from envscope import EnvValueError, Reason, Trace
from envscope.pipeline.stages import MAX_VALUE_BYTES, validate_block
from tests.conftest import HostFactory


def test_single_variable_over_128_kib_names_the_key(make_host: HostFactory) -> None:
    """A value over 128 KiB is an error naming the key, never the value."""
    big = "x" * MAX_VALUE_BYTES
    with pytest.raises(EnvValueError) as info:
        make_host().build_subprocess_env({"HUGE_VAR": big, "OK": "1"})
    assert info.value.key == "HUGE_VAR"
    assert "xxxx" not in str(info.value)


def test_multibyte_values_are_measured_in_bytes() -> None:
    """The limit counts UTF-8 bytes, not characters."""
    just_under = "é" * ((MAX_VALUE_BYTES - 8) // 2)
    assert validate_block({"K": just_under}, max_total_bytes=10**9) == {"K": just_under}
    with pytest.raises(EnvValueError):
        validate_block({"K": just_under + "éééé"}, max_total_bytes=10**9)


def test_block_total_is_configurable(make_host: HostFactory) -> None:
    """An env block over the host's total is an error naming its largest key."""
    host = make_host(max_env_bytes=1000)
    base = {f"V{i}": "y" * 100 for i in range(9)} | {"BIGGEST": "z" * 200}
    with pytest.raises(EnvValueError, match="env block") as info:
        host.build_subprocess_env(base)
    assert info.value.key == "BIGGEST"
    assert make_host(max_env_bytes=10_000).build_subprocess_env(base) == base


@pytest.mark.parametrize("key", ["", "A=B", "NUL\x00KEY"])
def test_invalid_base_entries_are_dropped_and_recorded(make_host: HostFactory, key: str) -> None:
    """A base name with '=' or NUL, or a NUL value, never reaches a child; the trace says why."""
    trace = Trace()
    env = make_host().build_subprocess_env({key: "v", "NULVAL": "a\x00b", "OK": "1"}, trace=trace)
    assert env == {"OK": "1"}
    assert trace.final()["NULVAL"].reason is Reason.INVALID_NAME
