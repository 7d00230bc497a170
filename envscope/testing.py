"""Test helpers for hosts that embed envscope (a pytest plugin).

PYTEST_DONT_REWRITE (this module raises ``AssertionError`` itself; it has no
bare ``assert`` for pytest to rewrite, and it may be imported before pytest
marks it, which would otherwise warn).

Installed with envscope as a ``pytest11`` entry point, so pytest loads it by
itself; with plugin autoloading off, load it with ``-p envscope.testing``. It
gives:

- the ``host_factory`` fixture: ``host_factory(launch_env=..., homes=...,
  plugins=..., managed=..., **host_kwargs)`` writes a home tree under the
  test's ``tmp_path`` (each call a new tree), builds a ``Host`` over a plain
  dict environ (never ``os.environ``), runs ``load_launch_env()`` and returns
  a ``HostTree``;
- ``build_host_tree(root, ...)``: the same without pytest, for any runner;
- ``assert_no_secrets(env, host=...)``: fails naming each key of a child env
  that the home's or the launch home's policy forbids (Tier 1; Tier 2 unless
  the child inherits credentials), that still carries the force prefix, or
  whose value copies such a secret the host holds. Never a value.
- ``assert_output_redacted(output, host=...)``: fails naming each secret the
  host holds (``envscope.redact.for_host``) whose value occurs in a child's
  captured output. Never a value.
- ``incremental_builds_checked()``: within it, every build made from the last
  one where only plain values changed is compared with the full build
  (``IncrementalMismatch``, naming keys, when they differ): the debug switch
  of the incremental build (docs/performance.md).

``import envscope`` never imports this module (nor pytest).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import pytest

from envscope.host import Host
from envscope.pipeline._delta import check_incremental
from envscope.pipeline.decision import decide, describe
from envscope.pipeline.stages import FORCE_PREFIX
from envscope.policy._declarations import norm, record_repr
from envscope.policy._layers import Layer

__all__ = [
    "LAUNCH",
    "HostFactory",
    "HostTree",
    "assert_no_secrets",
    "assert_output_redacted",
    "build_host_tree",
    "dotenv_text",
    "host_factory",
    "incremental_builds_checked",
    "reset_process_caches",
]

LAUNCH = "launch"
"""The name of the launch home in ``homes``-style arguments and ``HostTree.home``."""

_KEY = re.compile(r"[^=#\s'\"\\]+")
_HOME_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

DotenvSpec = Mapping[str, str] | str


def dotenv_text(values: DotenvSpec) -> str:
    """Dotenv text for a mapping (values single-quoted, so spaces, ``#`` and newlines survive).

    A ``str`` is returned as is (raw text, e.g. a deliberately malformed file).
    ``${VAR}`` in a value still interpolates when the file is read.
    """
    if isinstance(values, str):
        return values
    lines = []
    for key, value in values.items():
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a dotenv key envscope.testing can write: {key!r}")
        quoted = value.replace("\\", "\\\\").replace("'", "\\'")
        lines.append(f"{key}='{quoted}'\n")
    return "".join(lines)


@dataclass(frozen=True, slots=True)
class HostTree:
    """A ``Host`` over a home tree on disk, with the paths a test needs."""

    host: Host
    root: Path
    launch_home: Path
    environ: dict[str, str]
    managed_file: Path | None = None
    homes: Mapping[str, Path] = field(default_factory=lambda: MappingProxyType({}))

    def __repr__(self) -> str:
        return record_repr(self, masked=("environ",))  # the environ's keys, never its values

    def home(self, name: str) -> Path:
        """The resolved path of a home written by the factory (``LAUNCH`` is the launch home)."""
        if name == LAUNCH:
            return self.launch_home
        try:
            return self.homes[name]
        except KeyError:
            known = ", ".join(sorted([LAUNCH, *self.homes]))
            raise KeyError(f"no home {name!r} in this tree (homes: {known})") from None


def _write_home(home: Path, dotenv: DotenvSpec | None, plugins: Mapping[str, str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    if dotenv is not None and (isinstance(dotenv, str) or dotenv):
        (home / ".env").write_text(dotenv_text(dotenv), encoding="utf-8")
    for plugin, manifest in plugins.items():
        if not _HOME_NAME.fullmatch(plugin) or plugin in (".", ".."):
            raise ValueError(f"not a plugin directory name: {plugin!r}")
        directory = home / "plugins" / "platforms" / plugin
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "plugin.yaml").write_text(manifest, encoding="utf-8")


def build_host_tree(
    root: str | os.PathLike[str],
    *,
    launch_env: DotenvSpec | None = None,
    homes: Mapping[str, DotenvSpec] | None = None,
    plugins: Mapping[str, Mapping[str, str]] | None = None,
    managed: DotenvSpec | None = None,
    **host_kwargs: Any,
) -> HostTree:
    """Write a home tree under ``root`` and build a loaded ``Host`` over it.

    Layout: ``root/launch`` (the launch home, ``.env`` from ``launch_env``),
    ``root/homes/<name>`` (``.env`` from ``homes[name]``), each home's
    ``plugins/platforms/<plugin>/plugin.yaml`` from ``plugins[home][plugin]``
    (``LAUNCH`` names the launch home there), and ``root/managed.env`` when
    ``managed`` is given. ``environ`` (in ``host_kwargs``) defaults to a small
    plain dict; ``os.environ`` itself is refused. Calls ``load_launch_env()``.
    """
    homes = {} if homes is None else dict(homes)
    plugins = {} if plugins is None else dict(plugins)
    if LAUNCH in homes:
        raise ValueError(f"pass the launch home's .env as launch_env, not homes[{LAUNCH!r}]")
    for name in [*homes, *plugins]:
        if not _HOME_NAME.fullmatch(name) or name in (".", ".."):
            raise ValueError(f"not a home name: {name!r}")
    unknown = sorted(set(plugins) - set(homes) - {LAUNCH})
    if unknown:
        raise ValueError(f"plugins for homes that are not in homes: {', '.join(unknown)}")
    base = Path(os.path.realpath(os.fspath(root)))
    launch = base / LAUNCH
    _write_home(launch, launch_env, plugins.get(LAUNCH, {}))
    written: dict[str, Path] = {}
    for name, dotenv in homes.items():
        written[name] = base / "homes" / name
        _write_home(written[name], dotenv, plugins.get(name, {}))
    managed_file = None
    if managed is not None:
        managed_file = base / "managed.env"
        managed_file.write_text(dotenv_text(managed), encoding="utf-8")
        host_kwargs.setdefault("managed_env_file", managed_file)
    environ: MutableMapping[str, str] | None = host_kwargs.pop("environ", None)
    if environ is os.environ:
        raise ValueError("build_host_tree never uses os.environ: pass a plain dict")
    if environ is None:
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8"}
    if not isinstance(environ, dict):
        raise TypeError(f"environ must be a dict, not {type(environ).__name__}")
    host = Host(launch, environ=environ, **host_kwargs)
    host.load_launch_env()
    return HostTree(
        host=host,
        root=base,
        launch_home=launch,
        environ=environ,
        managed_file=managed_file,
        homes=MappingProxyType(written),
    )


class HostFactory(Protocol):
    """The type of the ``host_factory`` fixture."""

    def __call__(
        self,
        launch_env: DotenvSpec | None = None,
        homes: Mapping[str, DotenvSpec] | None = None,
        plugins: Mapping[str, Mapping[str, str]] | None = None,
        managed: DotenvSpec | None = None,
        **host_kwargs: Any,
    ) -> HostTree: ...


@pytest.fixture(name="host_factory")  # named, so re-exporting it under another name still works
def host_factory(tmp_path: Path) -> HostFactory:
    """Build ``Host``s over fresh home trees under ``tmp_path`` (see ``build_host_tree``)."""
    counter = itertools.count(1)

    def make(
        launch_env: DotenvSpec | None = None,
        homes: Mapping[str, DotenvSpec] | None = None,
        plugins: Mapping[str, Mapping[str, str]] | None = None,
        managed: DotenvSpec | None = None,
        **host_kwargs: Any,
    ) -> HostTree:
        root = tmp_path / f"envscope-host-{next(counter)}"
        root.mkdir()
        return build_host_tree(
            root,
            launch_env=launch_env,
            homes=homes,
            plugins=plugins,
            managed=managed,
            **host_kwargs,
        )

    return make


def assert_no_secrets(
    env: Mapping[str, str],
    *,
    host: Host,
    home: str | os.PathLike[str] | None = None,
    inherit_credentials: bool = False,
) -> None:
    """Fail naming every key of ``env`` that holds what a child must not get (never a value).

    Asks the one decision (``pipeline.decision.decide``, on the host's secret rule
    for the context of ``home``: default the bound home, else the launch home):
    a name the rule denies this child (Tier 1, or Tier 2 unless ``inherit_credentials``; under
    routing the launch home's policy too), any key still starting with
    ``_ENVSCOPE_FORCE_``, and any key whose value is, or holds, a secret value
    of 8 characters or more the rule knows (the host's environ, its launch
    loads, popped or not, the managed values, the bound scope), under whatever
    name. A key a build handed over as given (a grant, an MCP block entry) is
    the caller's word, not a leak.
    """
    __tracebackhide__ = True
    if home is None:
        rule = host.secret_rule(inherit_credentials=inherit_credentials)
    else:
        with host.routed(home):
            rule = host.secret_rule(inherit_credentials=inherit_credentials)
    leaks: list[str] = []
    for key in sorted(env):
        value = env[key]
        if norm(key).startswith(FORCE_PREFIX):
            leaks.append(f"{key} (force prefix not unwrapped)")
            continue
        if host.admitted(key, value, home):
            continue
        # an env under test carries no layer: the binding's record says what is the
        # routed profile's own (as the runtime guard's explicit env)
        verdict = decide(rule, key, value, Layer.BASE, own=rule.is_own(key, value))
        if verdict is not None and verdict.withheld:
            leaks.append(describe(rule, key, verdict))
    if leaks:
        count = f"{len(leaks)} {'key' if len(leaks) == 1 else 'keys'}"
        raise AssertionError(f"child env leaks {count}: {', '.join(leaks)}")


def assert_output_redacted(
    output: str | bytes,
    *,
    host: Host,
    child: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> None:
    """Fail naming every secret whose value occurs in ``output`` (never a value).

    The secrets are ``envscope.redact.for_host``'s for the context of ``home``
    (default the bound home, else the launch home) and ``child`` (the env the
    output's child ran with: what it was granted counts): every value the
    host's one secret rule calls a secret, and every value a source supplied,
    of 8 characters or more, in any of its spellings (JSON, URL-encoded), and
    any credential of a known format (named by its format).
    """
    __tracebackhide__ = True
    from envscope.redact import for_host

    if home is None:
        redactor = for_host(host, child)
    else:
        with host.routed(home):
            redactor = for_host(host, child)
    names = redactor.names_in(output)
    if names:
        count = f"{len(names)} {'secret' if len(names) == 1 else 'secrets'}"
        raise AssertionError(f"output holds {count}: {', '.join(names)}")


@contextlib.contextmanager
def incremental_builds_checked() -> Iterator[None]:
    """Compare every incremental build with the full build while the block runs.

    A build the memo cannot answer, whose inputs differ from its owner's last
    build in plain values only, is made from that build (docs/performance.md,
    "Incremental builds"). Within this block each such child is checked
    against the full build of the same inputs, order included; a difference
    raises ``envscope.pipeline._delta.IncrementalMismatch`` naming the keys.
    The setting before the block is restored after it.
    """
    previous = check_incremental(True)
    try:
        yield
    finally:
        check_incremental(previous)


def reset_process_caches() -> None:
    """Forget what every process-wide cache holds: the next host starts as in a new process.

    The manifests parsed (``PARSES``), the roots scanned (``SCANS``), the dotenv
    texts parsed (``DOTENV_PARSES``), the last ``os.environ`` copy, the
    name-context tokens of names, and the credential format table (read again
    on next use). A host's own caches go with the host. Code made once per
    process (compiled patterns, validation models, the shipped catalog) is not
    data and stays.
    """
    from envscope._inputs import ENVIRON_COPIES
    from envscope.files._dotenv import DOTENV_PARSES
    from envscope.manifests._parse_memo import PARSES
    from envscope.manifests._shared_scans import SCANS
    from envscope.policy._name_context import reset_tokens
    from envscope.policy.formats import reset_table

    for cache in (PARSES, SCANS, DOTENV_PARSES, ENVIRON_COPIES):
        cache.clear()
    reset_tokens()
    reset_table()
