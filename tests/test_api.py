"""The public surface: ``__all__``, the module-level factory, cheap import."""

from __future__ import annotations

import ast
import copy
import enum
import importlib
import pickle
import pickletools
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import envscope
from envscope import ConfigurationError, Host, NotConfiguredError, spawn
from tests.conftest import HostFactory

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = envscope._PUBLIC
DEFINED = {name: value for name in PUBLIC if isinstance(value := getattr(envscope, name), type)}
DEFINED |= {n: getattr(envscope, n) for n in ("guard", "harden_process", "home_identity")}


def _type_checking_imports() -> dict[str, str]:
    """The names the ``if TYPE_CHECKING:`` block of envscope/__init__.py re-exports, by module."""
    tree = ast.parse((ROOT / "envscope" / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    found: dict[str, str] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom) and node.module != "collections.abc":
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: not re-exported as itself"
                found[alias.name] = str(node.module)
    return found


def test_all_is_the_table() -> None:
    """``__all__`` is the table's names and this module's own, sorted, each one resolving."""
    assert envscope.__all__ == sorted([*PUBLIC, *envscope._HERE])
    for name in envscope.__all__:
        assert hasattr(envscope, name), name


@pytest.mark.parametrize(("name", "module"), sorted(PUBLIC.items()))
def test_the_table_names_the_defining_module(name: str, module: str) -> None:
    """Each table row's module holds the very object ``envscope`` exports under that name."""
    assert getattr(importlib.import_module(module), name) is getattr(envscope, name)


def test_type_checking_block_mirrors_the_table() -> None:
    """What type checkers see is the table: the same names from the same modules."""
    assert _type_checking_imports() == PUBLIC


def test_every_public_name_is_documented() -> None:
    """docs/api.md names every exported name, so a new export is a documented decision."""
    doc = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert [n for n in envscope.__all__ if not re.search(rf"\b{re.escape(n)}\b", doc)] == []


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_public_types_say_envscope(name: str) -> None:
    """A public class or function names ``envscope``, not the private module it lives in."""
    value = DEFINED[name]
    assert (value.__module__, value.__qualname__) == ("envscope", name)
    if isinstance(value, type) and not issubclass(value, enum.Enum):  # enums print <enum 'X'>
        assert repr(value) == f"<class 'envscope.{name}'>"


def test_a_traceback_names_envscope() -> None:
    """An uncaught envscope error prints as ``envscope.RoutingError``, in a fresh process."""
    code = "import envscope; envscope.Host; raise envscope.RoutingError('no home')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1] == "envscope.RoutingError: no home"


RECORDS: list[tuple[str, Callable[[], object]]] = [
    ("Origin", lambda: envscope.Origin(envscope.OriginKind.CALLER, "extra", "/f", 3)),
    ("Problem", lambda: envscope.Problem("/p/plugin.yaml", "bad", 2, "requires_env", "chatx")),
    ("Decision", lambda: envscope.Decision(
        "K", envscope.Action.STRIPPED, envscope.Stage.SANITIZE, envscope.Reason.TIER1,
        envscope.Origin(envscope.OriginKind.CATALOG, "tier1"), "note", "fp",
    )),
    ("Surface", lambda: envscope.Surface.MCP),
    ("Tier", lambda: envscope.Tier.TIER2),
    ("Inherit", lambda: envscope.Inherit.CORE),
    ("ConfigurationError", lambda: envscope.ConfigurationError("extra: not a mapping")),
    ("RoutingError", lambda: envscope.RoutingError("/srv/typo: not a directory")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make"), RECORDS, ids=[r[0] for r in RECORDS])
def test_public_records_pickle_and_copy(name: str, make: Callable[[], object]) -> None:
    """A public record survives pickle, copy and deepcopy under its ``envscope`` name."""
    record = make()
    assert type(record).__module__ == "envscope"
    strings = [a for op, a, _ in pickletools.genops(pickle.dumps(record)) if "UNICODE" in op.name]
    assert [s for s in strings if str(s).startswith("envscope")] == ["envscope"]
    for clone in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
        assert type(clone) is type(record)
        if isinstance(record, Exception) and isinstance(clone, Exception):
            assert clone.args == record.args
        else:
            assert clone == record


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


@pytest.mark.parametrize("given", ["/srv/agent", object(), 0], ids=["a path", "an object", "0"])
def test_configure_takes_a_host_or_none(given: object) -> None:
    """``configure`` with anything but a Host or None fails at once, naming what it got."""
    with pytest.raises(ConfigurationError, match="configure: expected a Host or None"):
        envscope.configure(given)  # type: ignore[arg-type]
    with pytest.raises(NotConfiguredError):
        envscope.default_host()  # nothing was configured


class NotASource:
    """Has a name but no ``fetch``."""

    name = "vault"


WRONG_ARGUMENTS: dict[str, tuple[str, object]] = {
    "add_secret_source('vault')": ("add_secret_source", lambda h: h.add_secret_source("vault")),
    "add_secret_source(no fetch)": (
        "add_secret_source",
        lambda h: h.add_secret_source(NotASource()),
    ),
    "build(trace=3)": ("trace", lambda h: h.build_subprocess_env({}, trace=3)),
    "spawn.run(trace='t')": (
        "trace",
        lambda h: spawn.run(h, ["/bin/true"], surface="script", trace="t"),  # type: ignore[arg-type]
    ),
}


@pytest.mark.parametrize("case", list(WRONG_ARGUMENTS))
def test_a_wrong_argument_type_fails_at_once(make_host: HostFactory, case: str) -> None:
    """A source that is no SecretSource, a trace that is no Trace: an error naming the argument."""
    named, call = WRONG_ARGUMENTS[case]
    host = make_host()
    with pytest.raises(ConfigurationError, match=named):
        call(host)  # type: ignore[operator]
    assert host._launch.sources == []  # nothing was registered


def test_import_is_cheap() -> None:
    """``import envscope`` imports neither pydantic, yaml nor dotenv."""
    code = (
        "import sys, envscope; "
        "print(sorted(m for m in ('pydantic', 'yaml', 'dotenv') if m in sys.modules))"
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
    """``from envscope import Host`` stays off pydantic, PyYAML and python-dotenv,
    and off every secret source over a real backend (and what they import: subprocess, json)."""
    heavy = (
        "{'pydantic', 'yaml', 'dotenv', 'subprocess', 'json', "
        "'envscope.policy._cli_source', 'envscope.policy._age_source', "
        "'envscope.policy._vault_source', 'envscope.policy._aws_source'}"
    )
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
