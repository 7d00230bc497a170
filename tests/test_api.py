"""The public surface: ``__all__``, the module-level factory, cheap import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import envscope
from envscope import Host, NotConfiguredError
from tests.conftest import HostFactory

PUBLIC = [
    "FORCE_PREFIX", "Action", "Binding", "Catalog", "CatalogError", "ConfigFileError",
    "ConfigurationError", "Inherit", "SurfacePolicy",
    "Decision", "DotenvError", "EnvValueError", "EnvscopeError", "FileError", "Host",
    "ManifestError", "NotConfiguredError", "Origin", "OriginKind", "PassthroughRefusedError",
    "Problem", "Reason", "RoutingError", "SecretPolicy", "SecretSource", "Stage",
    "SnapshotError",
    "SpawnBlockedError",
    "StaticSource", "Surface", "Tier", "Trace", "__version__", "build_subprocess_env",
    "configure", "default_host", "guard", "harden_process", "home_identity",
]  # fmt: skip


def test_all_is_pinned() -> None:
    """``__all__`` is exactly the curated public surface, and every name resolves."""
    assert sorted(envscope.__all__) == sorted(PUBLIC)
    for name in envscope.__all__:
        assert hasattr(envscope, name), name


def test_unconfigured_module_build_is_an_error() -> None:
    """The module-level factory refuses to run before configure(host)."""
    with pytest.raises(NotConfiguredError, match="configure"):
        envscope.build_subprocess_env({"TELEGRAM_BOT_TOKEN": "t"})


def test_module_build_delegates_to_configured_host(make_host: HostFactory) -> None:
    """After configure(host) the module factory scrubs with that host; configure(None) resets."""
    host = make_host()
    envscope.configure(host)
    assert envscope.default_host() is host
    env = envscope.build_subprocess_env({"TELEGRAM_BOT_TOKEN": "t", "K": "v"}, extra={"E": "1"})
    assert env == {"K": "v", "E": "1"}
    envscope.configure(None)
    with pytest.raises(NotConfiguredError):
        envscope.default_host()


def test_import_is_cheap() -> None:
    """``import envscope`` imports neither pydantic, yaml, dotenv nor cachetools."""
    code = (
        "import sys, envscope; "
        "print(sorted(m for m in ('pydantic', 'yaml', 'dotenv', 'cachetools') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_runs_no_package_module() -> None:
    """``import envscope`` loads no submodule; each public name loads its module on first use."""
    code = (
        "import sys, envscope; "
        "print(sorted(m for m in sys.modules if m.startswith('envscope.'))); "
        "envscope.Trace; "
        "print('envscope.audit.trace' in sys.modules, 'envscope.host' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True False"]


def test_host_import_loads_no_heavy_dependency() -> None:
    """``from envscope import Host`` stays off pydantic, PyYAML, python-dotenv and cachetools."""
    heavy = "{'pydantic', 'yaml', 'dotenv', 'cachetools'}"
    code = (
        "import sys; before = set(sys.modules); from envscope import Host; "
        f"print(sorted({heavy} & (set(sys.modules) - before)))"
    )
    repo = Path(__file__).resolve().parents[1]  # -S: no site-packages, import from the checkout
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, cwd=repo
    )
    assert out.stdout.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error() -> None:
    """A name the package does not export is an AttributeError; dir() lists the public names."""
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        envscope.Nope  # noqa: B018
    assert set(envscope.__all__) <= set(dir(envscope))


def test_errors_share_one_root() -> None:
    """Every exported error class derives from EnvscopeError."""
    import envscope.errors

    errors = [getattr(envscope, n) for n in envscope.__all__ if n.endswith("Error")]
    assert set(errors) == {getattr(envscope.errors, n) for n in envscope.errors.__all__}
    assert all(issubclass(e, envscope.EnvscopeError) for e in errors)


def test_host_uses_os_environ_by_default(homes: dict[str, object]) -> None:
    """Without environ=, a host snapshots os.environ (and never mutates it on build)."""
    import os

    host = Host(str(homes["A"]), catalog=envscope.Catalog.default())
    before = dict(os.environ)
    env = host.build_subprocess_env()
    assert dict(os.environ) == before
    assert env.get("PATH") == os.environ.get("PATH")
