"""The error tree is total: every public entry point returns or raises an ``EnvscopeError``.

Each test feeds one entry point arbitrary values of its declared parameter
types (and a few values of the wrong type a caller could pass by mistake)
and arbitrary bytes for the files it reads. Anything but a result or an
``EnvscopeError`` subclass fails the test.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, EnvscopeError, Host, StaticSource, Surface, Trace
from envscope.files._dotenv import read_dotenv
from envscope.manifests._schema import parse_manifest

pytestmark = pytest.mark.property
FEW = settings(max_examples=100)

text = st.text(max_size=12)
name = st.one_of(st.sampled_from(["PATH", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "X"]), text)
env = st.dictionaries(name, text, max_size=6)
anything = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), text, st.binary(max_size=8),
    st.lists(text, max_size=3), st.dictionaries(text, text, max_size=2),
)  # fmt: skip
names = st.one_of(st.lists(name, max_size=4), anything)
surface = st.one_of(
    st.sampled_from(list(Surface)), st.sampled_from([s.value for s in Surface]), text
)
values = st.one_of(text, st.integers(), st.floats(), anything)
extra = st.one_of(st.none(), st.dictionaries(name, values, max_size=4), anything)


def outcome(call: Callable[[], object]) -> None:
    """Run ``call``: a result or an ``EnvscopeError`` is fine, anything else fails."""
    with contextlib.suppress(EnvscopeError):
        call()


def home_with(dotenv: bytes, manifest: bytes | None = None) -> Path:
    """A fresh home directory holding these bytes as its .env (and a platform manifest)."""
    home = Path(tempfile.mkdtemp(prefix="envscope-tree-"))
    (home / ".env").write_bytes(dotenv)
    if manifest is not None:
        plugin = home / "plugins" / "platforms" / "p"
        plugin.mkdir(parents=True)
        (plugin / "plugin.yaml").write_bytes(manifest)
    return home


@FEW
@given(
    launch=st.one_of(text, st.just("/tmp"), anything),
    environ=env,
    multiplex=st.booleans(),
    home_env_var=st.one_of(text, anything),
    global_names=st.one_of(st.none(), names),
    allow_injection=names,
    max_env_bytes=st.integers(min_value=-5, max_value=10**7),
)
def test_host_constructor(
    launch: object,
    environ: dict[str, str],
    multiplex: bool,
    home_env_var: object,
    global_names: object,
    allow_injection: object,
    max_env_bytes: int,
) -> None:
    """``Host(...)`` and a first build over any arguments: a host or an EnvscopeError."""

    def call() -> None:
        host = Host(
            launch,  # type: ignore[arg-type]
            environ=environ,
            catalog=Catalog.default(),
            multiplex=multiplex,
            home_env_var=home_env_var,  # type: ignore[arg-type]
            global_names=global_names,  # type: ignore[arg-type]
            allow_injection=allow_injection,  # type: ignore[arg-type]
            max_env_bytes=max_env_bytes,
        )
        host.build_subprocess_env()

    outcome(call)


@FEW
@given(
    launch_env=st.binary(max_size=200),
    profile_env=st.binary(max_size=200),
    manifest=st.one_of(st.none(), st.binary(max_size=200)),
    source=st.dictionaries(text, anything, max_size=3),
    environ=env,
)
def test_load_launch_env_and_routed(
    launch_env: bytes,
    profile_env: bytes,
    manifest: bytes | None,
    source: dict[str, object],
    environ: dict[str, str],
) -> None:
    """Any .env and manifest bytes, any source output: it loads, binds and builds, or raises."""
    a, b = home_with(launch_env, manifest), home_with(profile_env, manifest)
    host = Host(a, environ=environ, catalog=Catalog.default(), on_unreadable_platform="deny")
    host.add_secret_source(StaticSource("vault", {"*": source}))  # type: ignore[dict-item]

    def call() -> None:
        host.load_launch_env()
        with host.routed(b):
            host.build_subprocess_env(surface=Surface.CREDENTIALED)
            host.explain()

    outcome(call)
    outcome(lambda: host.policy(b))


@given(
    base=st.one_of(st.none(), env, anything),
    surface=surface,
    extra=extra,
    inherit=st.booleans(),
    passthrough=names,
    traced=st.booleans(),
    routed=st.booleans(),
    scope=st.one_of(st.none(), env),
)
def test_build_subprocess_env_and_explain(
    tmp_path_factory: pytest.TempPathFactory,
    base: object,
    surface: object,
    extra: object,
    inherit: bool,
    passthrough: object,
    traced: bool,
    routed: bool,
    scope: dict[str, str] | None,
) -> None:
    """Any build arguments, traced or not, routed or not: a child env or an EnvscopeError."""
    root = tmp_path_factory.mktemp("tree")
    a, b = root / "A", root / "B"
    a.mkdir()
    b.mkdir()
    host = Host(
        a, environ={"PATH": "/b", "OPENAI_API_KEY": "sk-0123456789"}, catalog=Catalog.default()
    )

    def build() -> None:
        child = host.build_subprocess_env(
            base,  # type: ignore[arg-type]
            surface=surface,  # type: ignore[arg-type]
            extra=extra,  # type: ignore[arg-type]
            inherit_credentials=inherit,
            passthrough=passthrough,  # type: ignore[arg-type]
            trace=Trace() if traced else None,
        )
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in child.items())

    if routed:
        with host.routed(b, scope=scope):
            outcome(build)
    else:
        outcome(build)


@given(home=st.one_of(text, anything), adapter=st.one_of(text, anything), requires=names)
def test_policy_and_adapters(
    tmp_path_factory: pytest.TempPathFactory, home: object, adapter: object, requires: object
) -> None:
    """``policy``, ``register_adapter`` and ``unregister_adapter`` with any arguments."""
    root = tmp_path_factory.mktemp("adapters")
    host = Host(root, environ={}, catalog=Catalog.default())
    outcome(lambda: host.policy(home))  # type: ignore[arg-type]
    outcome(lambda: host.register_adapter(adapter, requires))  # type: ignore[arg-type]
    outcome(lambda: host.unregister_adapter(adapter))  # type: ignore[arg-type]
    outcome(lambda: host.build_subprocess_env())


@given(data=st.binary(max_size=300), doc=anything, tier1=names, tier2=names)
def test_catalog_constructors(data: bytes, doc: object, tier1: object, tier2: object) -> None:
    """``Catalog.from_yaml``/``from_mapping``/``with_names`` over any input."""
    outcome(lambda: Catalog.from_yaml(data))
    outcome(lambda: Catalog.from_mapping(doc))
    outcome(lambda: Catalog.default().with_names(tier1=tier1, tier2=tier2))  # type: ignore[arg-type]


@given(data=st.binary(max_size=400))
def test_parse_manifest_and_read_dotenv(data: bytes) -> None:
    """``parse_manifest`` and ``read_dotenv`` over any bytes."""
    outcome(lambda: parse_manifest(data, "plugin.yaml"))
    fd, path = tempfile.mkstemp(prefix="envscope-tree-", suffix=".env")
    try:
        os.write(fd, data)
        os.close(fd)
        outcome(lambda: read_dotenv(path))
        outcome(lambda: read_dotenv(path, environ={"X": "y"}, override=True))
    finally:
        os.unlink(path)
