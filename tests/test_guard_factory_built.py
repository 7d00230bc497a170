"""The guard's first question about an explicit env: is it a child a build in this context
made (``factory-built``)? Such an env passes without the rule being asked; any other env,
however close to one, is checked entry by entry as always."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import envscope
from envscope import Host, SpawnBlockedError
from tests.conftest import write_home

BOT = "fake-telegram-bot-token-0001"
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
Env = dict[str, str]


@pytest.fixture
def hosted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Host, Path, list[int]]]:
    """A guarded host (launch home A, a Tier 1 secret in its env), a second home B, and a
    count of the spawns that asked the context's rule."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT)
    host = Host(write_home(tmp_path, "A", {"A_THING": "a"}))
    home_b = write_home(tmp_path, "B", {"B_THING": "b"})
    asked: list[int] = []
    real = Host._context_verdicts

    def counting(self: Host, *args: Any, **kwargs: Any) -> Any:
        asked.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Host, "_context_verdicts", counting)
    envscope.guard(host, mode="raise")
    yield host, home_b, asked
    envscope.guard(Host(str(tmp_path)), mode="off")


def _spawn(env: Env) -> bool:
    """True when the spawn ran, False when the guard blocked it."""
    try:
        subprocess.run([TRUE], env=env, check=True)
    except SpawnBlockedError:
        return False
    return True


# (what the host code does to the child before spawning it, the rule asked, the spawn runs)
CHANGES: dict[str, tuple[Callable[[Env], Env], bool, bool]] = {
    "the child as built": (lambda child: child, False, True),
    "a copy of it": (dict, False, True),
    "one entry added": (lambda child: {**child, "NOTE": "x"}, True, True),
    "one value changed": (lambda child: {**child, "PATH": child["PATH"] + ":/x"}, True, True),
    "the same pairs in another order": (lambda child: dict(reversed(child.items())), True, True),
    "a host secret added": (lambda child: {**child, "COPY": BOT}, True, False),
    "an entry removed": (lambda child: dict(list(child.items())[1:]), True, True),
}


@pytest.mark.parametrize("routed", [False, True], ids=["unrouted", "routed"])
@pytest.mark.parametrize("case", CHANGES)
def test_a_child_passes_as_built_and_anything_else_is_checked(
    hosted: tuple[Host, Path, list[int]], case: str, routed: bool
) -> None:
    host, home_b, asked = hosted
    change, checked, runs = CHANGES[case]
    if routed:
        with host.routed(home_b):
            child = host.build_subprocess_env()
            assert _spawn(change(child)) is runs
    else:
        child = host.build_subprocess_env()
        assert _spawn(change(child)) is runs
    assert bool(asked) is checked


def test_a_child_built_for_another_home_is_checked(hosted: tuple[Host, Path, list[int]]) -> None:
    """A's memo does not hold B's child: spawned in A's context, the rule is asked."""
    host, home_b, asked = hosted
    with host.routed(home_b):
        child = host.build_subprocess_env()
    assert _spawn(child)
    assert asked == [1]


def test_an_inherited_env_is_always_checked(hosted: tuple[Host, Path, list[int]]) -> None:
    """``env=None`` is the process env, never a factory child: checked (and here blocked)."""
    host, _, asked = hosted
    host.build_subprocess_env()
    with pytest.raises(SpawnBlockedError):
        subprocess.run([TRUE], check=True)
    assert asked == [1]


def test_a_factory_built_pass_leaves_a_debug_record(
    hosted: tuple[Host, Path, list[int]], caplog: pytest.LogCaptureFixture
) -> None:
    host, _, _ = hosted
    child = host.build_subprocess_env()
    with caplog.at_level("DEBUG", logger="envscope.guard"):
        assert _spawn(child)
    lines = [r.getMessage() for r in caplog.records if r.name == "envscope.guard"]
    assert lines == ["subprocess.Popen: a factory-built env (factory-built)"]
