"""One checker of "a mapping of valid names to string values": extra, a source, a parent env."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pytest

from envscope._inputs import coerce_extra, snapshot_env
from envscope._launch import fetch_source
from envscope.errors import ConfigurationError, EnvscopeError, EnvValueError

SECRET = "hunter2-never-shown-value"


@dataclass(frozen=True, slots=True)
class _Source:
    """A secret source that hands back whatever the test gives it."""

    name: str
    given: object

    def fetch(self, home: str) -> Mapping[str, str]:
        """What the test gave (possibly not a mapping of strings)."""
        return self.given  # type: ignore[return-value]


CALLERS: dict[str, Callable[[object], dict[str, str]]] = {
    "extra": lambda m: coerce_extra(m),  # type: ignore[arg-type]
    "source": lambda m: fetch_source(_Source("vault", m), "/home"),
    "base": lambda m: snapshot_env(m),  # type: ignore[arg-type]
}
WHAT = {"extra": "'", "source": "secret source 'vault'", "base": "base"}

OK = "ok"
# input -> outcome per caller (extra, source, base): OK, or the error class
TABLE: list[tuple[str, object, tuple[object, object, object]]] = [
    ("plain", {"A": "1"}, (OK, OK, OK)),
    ("not a mapping", ["A"], (ConfigurationError, ConfigurationError, ConfigurationError)),
    ("a number value", {"A": 3}, (OK, ConfigurationError, ConfigurationError)),
    ("a None value", {"A": None}, (EnvValueError, ConfigurationError, ConfigurationError)),
    ("a bytes name", {b"A": "1"}, (EnvValueError, ConfigurationError, ConfigurationError)),
    ("NAME=value", {f"A={SECRET}": "1"}, (EnvValueError, ConfigurationError, OK)),
    ("empty name", {"": "1"}, (EnvValueError, ConfigurationError, OK)),
    ("NUL value", {"A": f"{SECRET}\x00"}, (EnvValueError, ConfigurationError, OK)),
    ("surrogate value", {"A": f"{SECRET}\ud800"}, (EnvValueError,) + (ConfigurationError,) * 2),
    ("surrogate name", {"A\ud800": "1"}, (EnvValueError, ConfigurationError, ConfigurationError)),
    ("NAME=value, bad value", {f"B={SECRET}": 7.5}, (EnvValueError,) + (ConfigurationError,) * 2),
]


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize(("label", "given", "outcomes"), TABLE, ids=[t[0] for t in TABLE])
def test_one_entry_rule(
    caller: str, label: str, given: object, outcomes: tuple[object, object, object]
) -> None:
    """Each caller accepts or refuses an entry by the one rule; errors never show a value."""
    expected = outcomes[list(CALLERS).index(caller)]
    if expected is OK:
        got = CALLERS[caller](given)
        assert isinstance(given, dict)
        assert got == {k: str(v) for k, v in given.items()}
        return
    with pytest.raises(EnvscopeError) as info:
        CALLERS[caller](given)
    assert type(info.value) is expected
    shown = str(info.value)
    assert SECRET not in shown
    assert WHAT[caller] in shown or caller == "extra"
    if isinstance(given, dict) and isinstance(next(iter(given)), str):
        assert next(iter(given)).partition("=")[0].encode("ascii", "ignore").decode() in shown
