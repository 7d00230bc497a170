"""Name context on the shipped corpora: no false positive, and the share of credential names caught.

``fixtures/platform-envs/`` holds the documented default environments of CI
and cloud runtimes (each file cites its sources; values are the documented
examples); ``fixtures/real-envs/`` whole environments as hosts hold them;
``fixtures/credential-names.json`` the credential variables common tools
document (each row cites its source), joined by the platforms' own
credentials. No value of the first two may be taken for a credential, by name
context or by the format table; at least ``CAUGHT_GOAL`` of the credential
names, each given a random value, must be (the figure docs/concepts.md states).
A host build checks the same end to end.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from envscope import Catalog, Host
from envscope.policy._name_context import name_context
from envscope.policy.formats import find_format

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PLATFORMS = sorted((FIXTURES / "platform-envs").glob("*.json"))
REAL_ENVS = sorted((FIXTURES / "real-envs").glob("*.json"))
CAUGHT_GOAL = 0.95


def _platform(path: Path) -> dict[str, object]:
    found: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _non_secrets(path: Path) -> dict[str, str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    env: dict[str, str] = data.get("env", data)
    return env


def _credential_names() -> list[tuple[str, str]]:
    """(name, where it is documented) for every credential row of the corpora."""
    rows = json.loads((FIXTURES / "credential-names.json").read_text(encoding="utf-8"))["rows"]
    found = [(r["name"], r["source"]) for r in rows]
    for path in PLATFORMS:
        sources = _platform(path)["sources"]
        assert isinstance(sources, list)
        found += [(name, sources[0]) for name in _platform(path)["credentials"]]  # type: ignore[attr-defined]
    return found


def _random_value(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))


@pytest.mark.parametrize("path", PLATFORMS, ids=[p.stem for p in PLATFORMS])
def test_each_platform_corpus_cites_its_sources(path: Path) -> None:
    data = _platform(path)
    assert isinstance(data["platform"], str)
    assert data["sources"]
    assert all(str(s).startswith("https://") for s in data["sources"])  # type: ignore[attr-defined]
    assert len(_non_secrets(path)) >= 9
    credentials = data["credentials"]
    assert isinstance(credentials, dict)
    assert not set(credentials) & set(_non_secrets(path))


def test_each_credential_row_cites_its_source() -> None:
    rows = json.loads((FIXTURES / "credential-names.json").read_text(encoding="utf-8"))["rows"]
    assert len(rows) >= 80
    assert all(r["tool"] and r["source"].startswith("https://") for r in rows)
    assert len({r["name"] for r in rows}) == len(rows)


@pytest.mark.parametrize("path", PLATFORMS + REAL_ENVS, ids=[p.stem for p in PLATFORMS + REAL_ENVS])
def test_no_documented_non_secret_is_taken_for_a_credential(path: Path) -> None:
    """Name context and the format table: 0 false positives on both corpora."""
    env = _non_secrets(path)
    by_name = {k: name_context(k, v) for k, v in env.items() if name_context(k, v) is not None}
    by_format = {k: f.name for k, v in env.items() if (f := find_format(v)) is not None}
    assert (by_name, by_format) == ({}, {})


def test_the_share_of_documented_credential_names_caught() -> None:
    """Each documented credential name with a random 40-character value: name context catches
    at least ``CAUGHT_GOAL`` of them."""
    rng = random.Random(30)
    rows = _credential_names()
    missed = [name for name, _ in rows if name_context(name, _random_value(rng)) is None]
    caught = 1 - len(missed) / len(rows)
    assert caught >= CAUGHT_GOAL, f"{caught:.1%} of {len(rows)} caught; missed: {missed}"


def test_a_terminal_child_keeps_every_documented_non_secret_and_loses_the_credentials(
    tmp_path: Path,
) -> None:
    """End to end: the platforms' non-secrets reach a terminal child unchanged; of the
    credential names (random values) at most ``1 - CAUGHT_GOAL`` reach it."""
    rng = random.Random(31)
    plain: dict[str, str] = {}
    for path in PLATFORMS:
        plain |= _non_secrets(path)
    credentials = {name: _random_value(rng) for name, _ in _credential_names()}
    host = Host(tmp_path, environ={**plain, **credentials}, catalog=Catalog.default())
    child = host.build_subprocess_env()
    assert {k: v for k, v in plain.items() if child.get(k) != v} == {}
    reached = sorted(set(credentials) & set(child))
    assert len(reached) <= (1 - CAUGHT_GOAL) * len(credentials), reached
