"""Every public API that takes names refuses a bare string (it would declare its letters)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import Catalog, ConfigurationError, Host, SurfacePolicy


def _host(tmp_path: Path, **kwargs: object) -> Host:
    return Host(tmp_path, environ={"PATH": "/b"}, catalog=Catalog.default(), **kwargs)  # type: ignore[arg-type]


CALLS: dict[str, Callable[[Path, object], object]] = {
    "Host(global_names)": lambda p, v: _host(p, global_names=v),
    "Host(allow_injection)": lambda p, v: _host(p, allow_injection=v),
    "build_subprocess_env(passthrough)": lambda p, v: _host(p).build_subprocess_env(
        passthrough=v  # type: ignore[arg-type]
    ),
    "register_adapter(requires_env)": lambda p, v: _host(p).register_adapter("acme", v),  # type: ignore[arg-type]
    "Catalog.with_names(tier1)": lambda p, v: Catalog.default().with_names(tier1=v),  # type: ignore[arg-type]
    "Catalog.with_names(tier2)": lambda p, v: Catalog.default().with_names(tier2=v),  # type: ignore[arg-type]
    "SurfacePolicy(include)": lambda p, v: SurfacePolicy(include=v),  # type: ignore[arg-type]
    "SurfacePolicy(exclude)": lambda p, v: SurfacePolicy(exclude=v),  # type: ignore[arg-type]
}

BAD = {
    "bare str": "ACME_API_TOKEN",
    "bytes": b"ACME_API_TOKEN",
    "a mapping": {"ACME_API_TOKEN": "x"},
    "a number": 7,
    "a non-str item": ["OK_NAME", 3],
    "a name with =": ["A=B"],
    "a name with NUL": ["A\x00B"],
}


@pytest.mark.parametrize("value", list(BAD.values()), ids=list(BAD))
@pytest.mark.parametrize("call", list(CALLS.values()), ids=list(CALLS))
def test_names_parameters_refuse_what_is_not_a_list_of_names(
    tmp_path: Path, call: Callable[[Path, object], object], value: object
) -> None:
    """A bare string, bytes, a mapping, a number or a bad item is a ConfigurationError."""
    with pytest.raises(ConfigurationError):
        call(tmp_path, value)


@pytest.mark.parametrize("call", list(CALLS.values()), ids=list(CALLS))
def test_names_parameters_take_a_list_or_a_tuple(
    tmp_path: Path, call: Callable[[Path, object], object]
) -> None:
    """A list or a tuple of names is accepted."""
    call(tmp_path, ["ACME_API_TOKEN"])
    call(tmp_path, ("ACME_API_TOKEN",))


def test_an_adapter_declares_the_whole_name(tmp_path: Path) -> None:
    """register_adapter with a one-item list declares the name, not its letters."""
    host = _host(tmp_path)
    host.register_adapter("acme", ["ACME_API_TOKEN"])
    policy = host.policy()
    assert policy.tier_of("ACME_API_TOKEN") is not None
    assert policy.tier_of("A") is None


# -- one name rule: every checker of an env name agrees with ``valid_name`` ---------

NAME_TABLE = ["", "A=B", "=A", "A\x00B", "OK_NAME", "lower", "_X1", "1ABC", "A B", "É_NAME"]


def _name_checkers() -> dict[str, Callable[[str], bool]]:
    """Each place that decides whether a string is an environment name, as a predicate."""
    from envscope._inputs import coerce_extra, valid_name
    from envscope.errors import EnvValueError
    from envscope.manifests._schema import env_name_problem
    from envscope.pipeline.stages import validate_block
    from envscope.policy.sources import credential_names_of

    def extra_accepts(name: str) -> bool:
        try:
            coerce_extra({name: "v"})
        except EnvValueError:
            return False
        return True

    def source_accepts(candidate: str) -> bool:
        class _Source:
            name = "s"
            credential_names = (candidate,)

        try:
            credential_names_of(_Source())
        except ConfigurationError:
            return False
        return True

    return {
        "valid_name": valid_name,
        "coerce_extra": extra_accepts,
        "validate_block": lambda n: n in validate_block({n: "v"}, max_total_bytes=1 << 20),
        "manifest env_name_problem": lambda n: env_name_problem(n) is None,
        "source credential_names": source_accepts,
        "Catalog.with_names": lambda n: _catalog_accepts(n),
    }


def _catalog_accepts(name: str) -> bool:
    try:
        Catalog.default().with_names(tier1=[name])
    except ConfigurationError:
        return False
    return True


@pytest.mark.parametrize("name", NAME_TABLE)
@pytest.mark.parametrize("checker", list(_name_checkers()))
def test_no_checker_accepts_a_name_valid_name_refuses(checker: str, name: str) -> None:
    """A name with ``=`` or NUL, or an empty one, is refused by every checker (one rule)."""
    from envscope._inputs import valid_name

    accepts = _name_checkers()[checker](name)
    if not valid_name(name):
        assert not accepts
    elif checker in {"valid_name", "coerce_extra", "validate_block"}:
        assert accepts  # the execve rule itself: nothing stricter
