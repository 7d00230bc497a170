"""Shared fixtures: home trees on disk and hosts over a plain-dict environ."""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path

import pytest
from coverage import Coverage
from coverage.exceptions import CoverageWarning

import envscope
from envscope import Catalog, Host
from envscope.files._dotenv import DOTENV_PARSES
from envscope.manifests._parse_memo import PARSES
from envscope.manifests._shared_scans import SCANS
from envscope.testing import incremental_builds_checked


def write_home(root: Path, name: str, dotenv: Mapping[str, str] | str | None = None) -> Path:
    """Create a home directory with an optional ``.env`` (a mapping or raw text)."""
    home = root / name
    home.mkdir(parents=True, exist_ok=True)
    if dotenv is not None:
        text = (
            dotenv if isinstance(dotenv, str) else "".join(f"{k}={v}\n" for k, v in dotenv.items())
        )
        (home / ".env").write_text(text)
    return Path(os.path.realpath(home))


def platform_plugin(home: Path, name: str, text: str) -> None:
    """Write ``plugins/platforms/<name>/plugin.yaml`` under a home."""
    plugin = home / "plugins" / "platforms" / name
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "plugin.yaml").write_text(text)


def fake_env(names: list[str] | frozenset[str] | set[str]) -> dict[str, str]:
    """``{NAME: "fake-NAME"}`` for each name."""
    return {name: f"fake-{name}" for name in names}


HostFactory = Callable[..., Host]


def build(host: Host, home: Path | None, **kwargs: object) -> dict[str, str]:
    """One build, routed to ``home`` when one is given."""
    if home is None:
        return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    with host.routed(home):
        return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, Path]:
    """A launch home A and a profile home B, each with a small ``.env``."""
    a = write_home(tmp_path, "A", {"A_MARKER": "a", "SOME_MODEL": "gpt-a"})
    b = write_home(tmp_path, "B", {"B_MARKER": "b"})
    return {"A": a, "B": b, "root": Path(os.path.realpath(tmp_path))}


@pytest.fixture
def make_host(homes: dict[str, Path]) -> HostFactory:
    """Build a Host over home A with a plain-dict environ (kwargs pass through)."""

    def factory(environ: dict[str, str] | None = None, **kwargs: object) -> Host:
        env = (
            {"PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C.UTF-8"}
            if environ is None
            else environ
        )
        kwargs.setdefault("catalog", Catalog.default())
        return Host(homes["A"], environ=env, **kwargs)  # type: ignore[arg-type]

    return factory


# What ``envscope run`` resets before it execs (``cli._exec.restore_signals``): a test that
# stubs the exec would leave the worker with SIGPIPE at its default, killed by any later
# write to a closed pipe.
_SIGNALS = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, n))


@pytest.fixture(autouse=True)
def _reset_process_state() -> Iterator[None]:
    """Every test starts and ends with no default host, empty process-wide memos, and
    the signal dispositions it started with; each incremental build is checked against
    the full build."""
    memos = (SCANS, PARSES, DOTENV_PARSES)
    dispositions = [(number, signal.getsignal(number)) for number in _SIGNALS]
    envscope.configure(None)
    for memo in memos:
        memo.clear()
    with incremental_builds_checked():  # every incremental build in the suite is checked
        yield
    envscope.configure(None)
    for memo in memos:
        memo.clear()
    for number, disposition in dispositions:
        if disposition is not None:  # None: set outside Python, left as it is
            signal.signal(number, disposition)


UNMEASURED = ("property", "no_cover")
"""Markers whose tests run with coverage paused (the stress suites; see docs/concepts.md)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Pause a running coverage for a stress test (setup, call and teardown), then resume it.

    Under the tracer the Hypothesis suites and the soak cost about twice their
    CPU time; the coverage gate measures the behaviour tests (docs/concepts.md).
    """
    cov = Coverage.current()
    if cov is None or not any(item.get_closest_marker(name) for name in UNMEASURED):
        return (yield)
    cov.stop()
    try:
        return (yield)
    finally:
        with warnings.catch_warnings():  # a restart re-checks what the run imported at start
            warnings.filterwarnings("ignore", "Already imported", CoverageWarning)
            cov.start()
