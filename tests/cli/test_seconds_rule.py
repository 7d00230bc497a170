"""One rule for a number of seconds at both seams: a keyword in Python, a key of the config.

A source's ``ttl`` (``Host.add_secret_source``, a ``sources:`` item's ``ttl:``)
and each type's ``timeout`` (its class's keyword, the item's ``timeout:``) take
the same values in Python and in the config file, and refuse the same ones
(``policy._source_entries.seconds_problem``). A timeout is finite and at most
a day: a NaN, an infinity or a number the OS cannot take would raise
``ValueError`` or ``OverflowError`` at the first fetch instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import (
    AgeFileSource,
    AwsSecretsSource,
    BitwardenSource,
    Catalog,
    ConfigFileError,
    ConfigurationError,
    Host,
    OnePasswordSource,
    PassSource,
    StaticSource,
    VaultSource,
)
from envscope.cli.config import load_config

# (as the config file spells it, the value Python gets, a good ttl, a good timeout)
SECONDS = [
    ("300", 300, True, True),
    ("0.5", 0.5, True, True),
    ("86400", 86400, True, True),
    ("86401", 86401, True, False),
    ("1.0e+300", 1e300, True, False),  # YAML 1.1 reads 1e300 as text
    (".inf", math.inf, True, False),
    ("0", 0, False, False),
    ("0.0", 0.0, False, False),
    ("-1", -1, False, False),
    ("-.inf", -math.inf, False, False),
    (".nan", math.nan, False, False),
    ("true", True, False, False),
    ("'60'", "60", False, False),
]
IDS = [row[0] for row in SECONDS]

# type -> (its class, made with ``timeout``; what else the config item needs)
TYPES: dict[str, tuple[Callable[[object], object], str]] = {
    "pass": (lambda t: PassSource({}, timeout=t), ""),  # type: ignore[arg-type]
    "1password": (lambda t: OnePasswordSource({}, timeout=t), ""),  # type: ignore[arg-type]
    "bitwarden": (lambda t: BitwardenSource({}, timeout=t), ""),  # type: ignore[arg-type]
    "age": (lambda t: AgeFileSource({}, identities="k", timeout=t), ", identities: k"),  # type: ignore[arg-type]
    "vault": (lambda t: VaultSource({}, timeout=t), ""),  # type: ignore[arg-type]
    "aws": (lambda t: AwsSecretsSource({}, timeout=t), ""),  # type: ignore[arg-type]
}


def _config_takes(tmp_path: Path, item: str) -> bool:
    """True when a config whose one source is ``item`` loads; False when it is refused."""
    (tmp_path / "launch").mkdir(exist_ok=True)
    path = tmp_path / "envscope.yaml"
    path.write_text(f"launch_home: launch\nsources:\n  - {item}\n")
    try:
        load_config(str(path))
    except ConfigFileError as exc:
        line = exc.line
    else:
        return True
    assert line == 3  # the item's line: the error says where
    return False


def _python_takes(make: Callable[[], object]) -> bool:
    try:
        make()
    except ConfigurationError:
        return False
    return True


@pytest.mark.parametrize(("spelled", "value", "good", "_"), SECONDS, ids=IDS)
def test_a_ttl_is_taken_or_refused_alike_in_python_and_in_the_config(
    tmp_path: Path, spelled: str, value: object, good: bool, _: bool
) -> None:
    host = Host(tmp_path, environ={}, catalog=Catalog.default())
    in_python = _python_takes(lambda: host.add_secret_source(StaticSource("s", {}), ttl=value))  # type: ignore[arg-type]
    in_config = _config_takes(tmp_path, f"{{type: pass, ttl: {spelled}, entries: {{}}}}")
    assert (in_python, in_config) == (good, good)


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize(("spelled", "value", "_", "good"), SECONDS, ids=IDS)
def test_a_timeout_is_taken_or_refused_alike_in_python_and_in_the_config(
    tmp_path: Path, kind: str, spelled: str, value: object, _: bool, good: bool
) -> None:
    make, more = TYPES[kind]
    in_python = _python_takes(lambda: make(value))
    in_config = _config_takes(
        tmp_path, f"{{type: {kind}, timeout: {spelled}, entries: {{}}{more}}}"
    )
    assert (in_python, in_config) == (good, good)


def test_a_refused_timeout_names_the_class_and_the_key() -> None:
    with pytest.raises(
        ConfigurationError, match=r"^VaultSource: timeout must be a number of seconds"
    ):
        VaultSource({}, timeout=math.nan)
