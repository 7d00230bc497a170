"""The pytest plugin for hosts' test suites: ``host_factory`` and ``assert_no_secrets``."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import envscope.testing
from envscope import DotenvError, Surface
from envscope.files._dotenv import parse_dotenv
from envscope.testing import (
    LAUNCH,
    HostFactory,
    HostTree,
    assert_no_secrets,
    build_host_tree,
    dotenv_text,
)

pytest_plugins = ["pytester"]

# The fixture, offered to this module in-process whether or not the plugin is installed.
_host_factory_fixture = envscope.testing.host_factory

CHATX = (
    "name: chatx\nkind: platform\nrequires_env:\n  - name: CHATX_SIGNING_SECRET\n    secret: true\n"
)
SECRET_VALUE = "v4lue-that-must-never-be-printed"


def envscope_entry_points() -> list[str]:
    """Names of installed ``pytest11`` entry points that load envscope.testing."""
    eps = importlib.metadata.entry_points(group="pytest11")
    return [ep.name for ep in eps if ep.value == "envscope.testing"]


def plugin_args() -> list[str]:
    """Arguments that load envscope.testing once: autoloaded if installed, else ``-p``."""
    if envscope_entry_points() and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return ["-p", "no:cacheprovider"]
    return ["-p", "envscope.testing", "-p", "no:cacheprovider"]


INLINE = """
import os

from envscope import Surface
from envscope.testing import LAUNCH, assert_no_secrets

CHATX = {chatx!r}


def test_tree_layout(host_factory):
    tree = host_factory(
        launch_env={{"A_MARKER": "a", "OPENAI_API_KEY": "launch-key"}},
        homes={{"work": {{"B_MARKER": "b"}}, "empty": {{}}}},
        plugins={{"work": {{"chatx": CHATX}}}},
        managed={{"MANAGED_X": "pinned"}},
    )
    assert type(tree.environ) is dict
    assert tree.host.launch_home == str(tree.launch_home)
    assert tree.home(LAUNCH) == tree.launch_home
    assert (tree.home("work") / ".env").is_file()
    assert not (tree.home("empty") / ".env").exists()
    manifest = tree.home("work") / "plugins" / "platforms" / "chatx" / "plugin.yaml"
    assert manifest.read_text() == CHATX
    assert tree.environ["A_MARKER"] == "a"
    assert tree.environ["MANAGED_X"] == "pinned"
    assert "A_MARKER" not in os.environ


def test_routed_child(host_factory):
    tree = host_factory(
        launch_env={{"A_MARKER": "a", "OPENAI_API_KEY": "launch-key"}},
        homes={{"work": {{"B_MARKER": "b", "CHATX_SIGNING_SECRET": "s"}}}},
        plugins={{"work": {{"chatx": CHATX}}}},
    )
    with tree.host.routed(tree.home("work")):
        env = tree.host.build_subprocess_env(surface=Surface.CREDENTIALED)
    assert env["B_MARKER"] == "b"
    assert "A_MARKER" not in env
    assert "CHATX_SIGNING_SECRET" not in env
    assert_no_secrets(env, host=tree.host, home=tree.home("work"), inherit_credentials=True)


def test_each_call_is_a_new_tree(host_factory):
    first, second = host_factory(), host_factory()
    assert first.root != second.root
    assert first.host is not second.host


def test_leak_fails(host_factory):
    tree = host_factory(plugins={{LAUNCH: {{"chatx": CHATX}}}})
    leaked = {{"CHATX_SIGNING_SECRET": os.environ["INLINE_SECRET"], "EDITOR": "vim"}}
    assert_no_secrets(leaked, host=tree.host)
"""


def test_fixture_in_a_host_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the plugin, a host suite gets ``host_factory``; a leak fails naming the key, no value.

    Run in a subprocess: an in-process run drops and re-imports modules that
    hold C extensions (PyYAML's loader, pydantic-core), which is not safe.
    """
    monkeypatch.setenv("INLINE_SECRET", SECRET_VALUE)
    pytester.makepyfile(test_host=INLINE.format(chatx=CHATX))
    result = pytester.runpytest_subprocess(*plugin_args(), "-q")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: child env leaks 1 key: CHATX_SIGNING_SECRET (Tier 1)",
            "*FAILED test_host.py::test_leak_fails*",
        ]
    )
    assert SECRET_VALUE not in result.stdout.str() + result.stderr.str()


def test_fixture_missing_without_the_plugin(pytester: pytest.Pytester) -> None:
    """Without the plugin the fixture does not exist (so the positive test is not vacuous)."""
    pytester.makepyfile(test_host="def test_x(host_factory):\n    pass\n")
    blocked = [arg for name in envscope_entry_points() for arg in ("-p", f"no:{name}")]
    result = pytester.runpytest(*blocked, "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'host_factory' not found*"])


def test_host_factory_in_process(host_factory: HostFactory, tmp_path: Path) -> None:
    """Each factory call writes a fresh tree under tmp_path and returns a loaded host over it."""
    first = host_factory(launch_env={"A_MARKER": "a"}, homes={"work": {"B_MARKER": "b"}})
    second = host_factory()
    assert first.root.parent == second.root.parent == Path(os.path.realpath(tmp_path))
    assert first.root != second.root
    assert first.environ["A_MARKER"] == "a"
    assert "A_MARKER" not in second.environ
    assert (first.home("work") / ".env").read_text(encoding="utf-8") == "B_MARKER='b'\n"


def test_host_factory_passes_host_kwargs(host_factory: HostFactory) -> None:
    """Extra keyword arguments reach ``Host`` (here ``multiplex`` and ``home_env_var``)."""
    made = host_factory(homes={"work": {}}, multiplex=True, home_env_var="AGENT_HOME")
    assert made.host.multiplex
    with made.host.routed(made.home("work")):
        env = made.host.build_subprocess_env(surface=Surface.WORKER)
    assert env["AGENT_HOME"] == str(made.home("work"))


@pytest.fixture
def tree(tmp_path: Path) -> HostTree:
    """A launch home, a ``work`` home with a platform plugin declaring a Tier 1 secret."""
    return build_host_tree(
        tmp_path,
        launch_env={"A_MARKER": "a"},
        homes={"work": {"B_MARKER": "b"}},
        plugins={"work": {"chatx": CHATX}},
    )


T2 = "Tier 2, child does not inherit credentials"
FORCED = "force prefix not unwrapped"
NC = "a credential by its name and value: SECRET"
SECRET = SECRET_VALUE
CHATX_KEY = "CHATX_SIGNING_SECRET"

# (id, child env, home name or None, inherit_credentials, expected leaks)
NO_SECRET_CASES: list[tuple[str, dict[str, str], str | None, bool, list[str]]] = [
    ("empty", {}, None, False, []),
    ("ordinary", {"PATH": "/bin", "EDITOR": "vim", "MY_APP_KEY": "x"}, None, False, []),
    ("tier1", {"GH_TOKEN": SECRET}, None, False, ["GH_TOKEN (Tier 1)"]),
    ("tier1-lowercase", {"gh_token": SECRET}, None, False, ["gh_token (Tier 1)"]),
    ("tier1-credentialed", {"GH_TOKEN": SECRET}, None, True, ["GH_TOKEN (Tier 1)"]),
    ("tier2", {"OPENAI_API_KEY": SECRET}, None, False, [f"OPENAI_API_KEY ({T2})"]),
    ("tier2-credentialed", {"OPENAI_API_KEY": SECRET}, None, True, []),
    ("force-prefix", {"_ENVSCOPE_FORCE_X": "1"}, None, False, [f"_ENVSCOPE_FORCE_X ({FORCED})"]),
    ("force-lower", {"_envscope_force_x": "1"}, None, True, [f"_envscope_force_x ({FORCED})"]),
    ("plugin-home", {"CHATX_SIGNING_SECRET": SECRET}, "work", True, [f"{CHATX_KEY} (Tier 1)"]),
    # declared in another home only: here a credential by its name (Tier 2), not Tier 1
    ("plugin-elsewhere", {"CHATX_SIGNING_SECRET": SECRET}, LAUNCH, False, [f"{CHATX_KEY} ({NC})"]),
    ("plugin-elsewhere-credentialed", {"CHATX_SIGNING_SECRET": SECRET}, LAUNCH, True, []),
    (
        "several-sorted",
        {"OPENAI_API_KEY": "1", "EDITOR": "vim", "GH_TOKEN": "2"},
        None,
        False,
        ["GH_TOKEN (Tier 1)", f"OPENAI_API_KEY ({T2})"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("env", "home", "inherit", "leaks"),
    [pytest.param(e, h, i, lk, id=name) for name, e, h, i, lk in NO_SECRET_CASES],
)
def test_assert_no_secrets(
    tree: HostTree, env: dict[str, str], home: str | None, inherit: bool, leaks: list[str]
) -> None:
    """Tier 1 always, Tier 2 unless credentialed, and force-prefixed keys fail, per home policy."""
    where = None if home is None else tree.home(home)
    if not leaks:
        assert_no_secrets(env, host=tree.host, home=where, inherit_credentials=inherit)
        return
    with pytest.raises(AssertionError) as info:
        assert_no_secrets(env, host=tree.host, home=where, inherit_credentials=inherit)
    noun = "key" if len(leaks) == 1 else "keys"
    assert str(info.value) == f"child env leaks {len(leaks)} {noun}: {', '.join(leaks)}"
    assert SECRET_VALUE not in str(info.value)


def test_assert_no_secrets_uses_the_bound_home(tree: HostTree) -> None:
    """Without ``home``, the bound home's policy applies (as ``Host.policy``)."""
    env = {"CHATX_SIGNING_SECRET": "x"}
    assert_no_secrets(env, host=tree.host)
    with tree.host.routed(tree.home("work")), pytest.raises(AssertionError):
        assert_no_secrets(env, host=tree.host)


def test_factory_children_pass(tree: HostTree) -> None:
    """A child the factory built passes for every surface of a routed home."""
    host = tree.host
    for surface in Surface:
        with host.routed(tree.home("work")):
            env = host.build_subprocess_env(surface=surface)
        assert_no_secrets(
            env,
            host=host,
            home=tree.home("work"),
            inherit_credentials=surface.inherits_credentials,
        )


TRICKY = {
    "SPACES": "  a value with spaces  ",
    "HASH": "before # after",
    "QUOTES": 'it\'s "quoted"',
    "BACKSLASH": "C:\\path\\to\\n",
    "NEWLINE": "line1\nline2",
    "EQUALS": "a=b=c",
    "UNICODE": "héllo ✓",
    "EMPTY": "",
}


def test_dotenv_text_round_trips() -> None:
    """Written values read back unchanged (spaces, #, quotes, backslashes, newlines)."""
    assert parse_dotenv(dotenv_text(TRICKY), path="x.env") == TRICKY


def test_dotenv_text_raw_string_is_kept() -> None:
    """A str is written verbatim (for deliberately malformed files)."""
    assert dotenv_text("A=1\nnot a line\n") == "A=1\nnot a line\n"


@pytest.mark.parametrize("key", ["", "A=B", "A B", "#A", "A'", 'A"', "A\\B", "A\nB"])
def test_dotenv_text_refuses_bad_keys(key: str) -> None:
    """Keys the dotenv format cannot hold plainly are a ValueError, not a silently odd file."""
    with pytest.raises(ValueError, match="not a dotenv key"):
        dotenv_text({key: "x"})


def test_tree_values_reach_the_environ(tmp_path: Path) -> None:
    """The launch .env (no override) and managed values (override) land in the dict environ."""
    environ = {"PATH": "/bin", "A_MARKER": "from-environ", "MANAGED_X": "old"}
    built = build_host_tree(
        tmp_path,
        launch_env={**TRICKY, "A_MARKER": "from-file"},
        managed={"MANAGED_X": "pinned"},
        environ=environ,
    )
    assert built.environ is environ
    assert environ["A_MARKER"] == "from-environ"
    assert environ["MANAGED_X"] == "pinned"
    assert {k: environ[k] for k in TRICKY} == TRICKY
    assert built.managed_file == built.root / "managed.env"
    assert "A_MARKER" not in os.environ


def test_raw_malformed_dotenv_raises(tmp_path: Path) -> None:
    """A raw malformed launch .env surfaces as envscope's DotenvError."""
    with pytest.raises(DotenvError):
        build_host_tree(tmp_path, launch_env="A='unterminated\n")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"environ": os.environ}, ValueError, "never uses os.environ"),
        ({"homes": {LAUNCH: {}}}, ValueError, "launch_env"),
        ({"homes": {"../escape": {}}}, ValueError, "not a home name"),
        ({"homes": {"..": {}}}, ValueError, "not a home name"),
        ({"plugins": {"ghost": {"p": "x"}}}, ValueError, "ghost"),
        ({"homes": {"w": {}}, "plugins": {"w": {"a/b": "x"}}}, ValueError, "plugin directory"),
        ({"environ": {"A": "1"}.items()}, TypeError, "must be a dict"),
    ],
    ids=[
        "os-environ",
        "launch-in-homes",
        "traversal",
        "dotdot",
        "plugin-home",
        "plugin-name",
        "not-dict",
    ],
)
def test_build_host_tree_refuses(
    tmp_path: Path, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    """Bad trees are refused up front; ``os.environ`` is never the host's environ."""
    with pytest.raises(error, match=match):
        build_host_tree(tmp_path, **kwargs)  # type: ignore[arg-type]


def test_home_unknown_name(tree: HostTree) -> None:
    """Asking for a home the tree does not have is a KeyError listing the known homes."""
    with pytest.raises(KeyError, match="launch, work"):
        tree.home("wrok")


def test_import_envscope_does_not_load_the_plugin() -> None:
    """``import envscope`` imports neither envscope.testing nor pytest."""
    code = (
        "import sys, envscope\n"
        "print(sorted(m for m in ('envscope.testing', 'pytest', '_pytest') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_inline_source_is_valid() -> None:
    """The inline host test file compiles (so a typo there shows up as such)."""
    compile(textwrap.dedent(INLINE.format(chatx=CHATX)), "test_host.py", "exec")
