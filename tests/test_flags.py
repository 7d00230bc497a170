"""Every boolean keyword of every entry point takes True or False, or fails naming itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import envscope
from envscope import Host, spawn
from envscope.errors import ConfigurationError
from tests.conftest import HostFactory

# a value that is not a bool: truthy text that reads as "no", a falsy number, a truthy one, None
NOT_BOOLS: list[object] = ["false", "", 0, 1, None]

Call = Callable[[Host, str, object], object]


def _kw(keyword: str, value: object) -> dict[str, Any]:
    """One keyword argument of any value (the point is a value of the wrong type)."""
    return {keyword: value}


def _module_level(host: Host, keyword: str, value: object) -> object:
    """The module-level factory with ``host`` as the default host."""
    envscope.configure(host)
    return envscope.build_subprocess_env(**_kw(keyword, value))


CALLS: dict[str, Call] = {
    "Host.build_subprocess_env": lambda h, k, v: h.build_subprocess_env(**_kw(k, v)),
    "envscope.build_subprocess_env": lambda h, k, v: _module_level(h, k, v),
    "spawn.run": lambda h, k, v: spawn.run(h, ["/bin/true"], surface="terminal", **_kw(k, v)),
    "Host.secret_rule": lambda h, k, v: h.secret_rule(**_kw(k, v)),
    "Host.explain": lambda h, k, v: h.explain(**_kw(k, v)),
}
FLAGS: dict[str, tuple[str, ...]] = {
    "Host.build_subprocess_env": ("inherit_credentials", "strip_launch_profile", "scrub"),
    "envscope.build_subprocess_env": ("inherit_credentials", "strip_launch_profile", "scrub"),
    "spawn.run": ("inherit_credentials",),
    "Host.secret_rule": ("inherit_credentials",),
    "Host.explain": ("inherit_credentials", "strip_launch_profile"),
}
CASES = [(call, flag) for call, flags in FLAGS.items() for flag in flags]


@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
@pytest.mark.parametrize(("call", "flag"), CASES, ids=[f"{c}-{f}" for c, f in CASES])
def test_a_flag_that_is_no_bool_is_an_error(
    make_host: HostFactory, call: str, flag: str, value: object
) -> None:
    """``inherit_credentials="false"`` would hand over credentials; ``scrub=0`` skip the scrub."""
    host = make_host({"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-never-handed-over-0123456789"})
    with pytest.raises(ConfigurationError, match=flag):
        CALLS[call](host, flag, value)


@pytest.mark.parametrize("value", NOT_BOOLS, ids=repr)
@pytest.mark.parametrize("keyword", ["multiplex", "windows", "strip_value_aliases"])
def test_a_host_flag_that_is_no_bool_is_an_error(
    tmp_path: Path, keyword: str, value: object
) -> None:
    """The host's own flags too (``windows=None`` is the one non-bool allowed: detect)."""
    if keyword == "windows" and value is None:
        Host(tmp_path, environ={}, windows=None)
        return
    with pytest.raises(ConfigurationError, match=keyword):
        Host(tmp_path, environ={}, **_kw(keyword, value))
