"""Surface policies from the config: inherit all|core|none, include/exclude globs, set."""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

import pytest

from envscope import Host, Inherit, Reason, Surface, SurfacePolicy, Trace
from envscope.cli.config import load_config
from envscope.policy.surfaces import (
    CORE_NAMES_POSIX,
    CORE_NAMES_WINDOWS,
    MCP_SAFE_NAMES_WINDOWS,
    WINDOWS_DEFAULT_PATHEXT,
    WINDOWS_DEFAULT_SYSTEMROOT,
    glob_regex,
)
from tests.conftest import HostFactory

BASE = {
    "PATH": "/bin",
    "HOME": "/h",
    "EDITOR": "vi",
    "CI_JOB": "7",
    "ci_token_name": "x",
    "NOISY_DEBUG": "1",
    "TELEGRAM_BOT_TOKEN": "t",
    "OPENAI_API_KEY": "k",
}


def test_core_lists_are_pinned() -> None:
    """The core lists are literals: widening them is a visible decision."""
    assert frozenset(
        {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP",
         "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"}
    ) == CORE_NAMES_POSIX  # fmt: skip
    assert CORE_NAMES_WINDOWS == MCP_SAFE_NAMES_WINDOWS


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (SurfacePolicy(), {"PATH", "HOME", "EDITOR", "CI_JOB", "ci_token_name", "NOISY_DEBUG"}),
        (SurfacePolicy(inherit=Inherit.CORE), {"PATH", "HOME"}),
        (SurfacePolicy(inherit=Inherit.NONE), set()),
        (
            SurfacePolicy(inherit=Inherit.CORE, include=("ci_*",)),
            {"PATH", "HOME", "CI_JOB", "ci_token_name"},
        ),
        (SurfacePolicy(exclude=("*_DEBUG", "editor")), {"PATH", "HOME", "CI_JOB", "ci_token_name"}),
        (
            SurfacePolicy(include=("CI_*",), exclude=("CI_JOB",)),
            {"PATH", "HOME", "EDITOR", "ci_token_name", "NOISY_DEBUG"},
        ),
        (SurfacePolicy(inherit=Inherit.NONE, include=("TELEGRAM_*", "OPENAI_*")), set()),
    ],
)
def test_inherit_include_exclude(
    make_host: HostFactory, policy: SurfacePolicy, expected: set[str]
) -> None:
    """Each policy keeps exactly the expected keys; declared secrets never come back."""
    host = make_host(surface_policies={Surface.SCRIPT: policy})
    assert set(host.build_subprocess_env(BASE, surface=Surface.SCRIPT)) == expected
    assert "EDITOR" in host.build_subprocess_env(BASE)  # other surfaces are untouched


def test_set_values_survive_allowlist_but_not_tier1(make_host: HostFactory) -> None:
    """set values survive inherit none; a Tier 1 set is still stripped; caller extras win."""
    policy = SurfacePolicy(
        inherit=Inherit.NONE,
        set_env=MappingProxyType({"PAGER": "cat", "TELEGRAM_BOT_TOKEN": "x", "MODE": "a"}),
    )
    host: Host = make_host(surface_policies={"mcp": policy})
    trace = Trace()
    env = host.build_subprocess_env(BASE, surface=Surface.MCP, extra={"MODE": "b"}, trace=trace)
    assert env == {"PAGER": "cat", "MODE": "b"}
    reasons = {d.key: d.reason for d in trace.final().values()}
    assert reasons["PAGER"] is Reason.SURFACE_SET
    assert reasons["TELEGRAM_BOT_TOKEN"] is Reason.TIER1
    assert reasons["EDITOR"] is Reason.NOT_ALLOWLISTED
    assert reasons["PATH"] is Reason.NOT_INHERITED


def test_mcp_policy_include_extends_safe_base(make_host: HostFactory) -> None:
    """On the MCP surface, include adds names beyond the safe base; the trace says so."""
    host = make_host(surface_policies={Surface.MCP: SurfacePolicy(include=("EDITOR",))})
    trace = Trace()
    env = host.build_subprocess_env(BASE, surface=Surface.MCP, trace=trace)
    assert env == {"PATH": "/bin", "HOME": "/h", "EDITOR": "vi"}
    assert trace.final()["EDITOR"].reason is Reason.INCLUDED
    assert trace.final()["CI_JOB"].reason is Reason.NOT_ALLOWLISTED


# -- Codex fidelity (issue 14 item 7) ----------------------------------------------


def test_core_keeps_lc_ctype(make_host: HostFactory) -> None:
    """inherit: core keeps LC_CTYPE (macOS terminals often set only that), in any case."""
    host = make_host(surface_policies={Surface.SCRIPT: SurfacePolicy(inherit=Inherit.CORE)})
    base = {"PATH": "/bin", "LC_CTYPE": "UTF-8", "EDITOR": "vi"}
    assert host.build_subprocess_env(base, surface=Surface.SCRIPT) == {
        "PATH": "/bin",
        "LC_CTYPE": "UTF-8",
    }


PATHEXT_CASES = [
    # (windows, inherit, parent PATHEXT or None, exclude, expected PATHEXT or None)
    (True, Inherit.NONE, None, (), WINDOWS_DEFAULT_PATHEXT),
    (True, Inherit.CORE, None, (), WINDOWS_DEFAULT_PATHEXT),
    (True, Inherit.NONE, ".EXE", (), WINDOWS_DEFAULT_PATHEXT),  # none inherits nothing
    (True, Inherit.CORE, ".EXE", (), ".EXE"),  # core keeps the parent's
    (True, Inherit.ALL, None, (), None),  # all: the parent decides
    (True, Inherit.ALL, ".EXE", (), ".EXE"),
    (True, Inherit.NONE, None, ("PATH*",), None),  # an exclude glob naming it wins
    (False, Inherit.NONE, None, (), None),  # POSIX has no PATHEXT
    (False, Inherit.CORE, None, (), None),
]


@pytest.mark.parametrize(("windows", "inherit", "parent", "exclude", "expected"), PATHEXT_CASES)
def test_windows_default_pathext(
    make_host: HostFactory,
    windows: bool,
    inherit: Inherit,
    parent: str | None,
    exclude: tuple[str, ...],
    expected: str | None,
) -> None:
    """With windows, inherit none|core yields a default PATHEXT when the child would lack one."""
    policy = SurfacePolicy(inherit=inherit, exclude=exclude)
    host = make_host(surface_policies={Surface.SCRIPT: policy}, windows=windows)
    base = {"Path": "C:/bin"} | ({} if parent is None else {"PathExt": parent})
    trace = Trace()
    env = host.build_subprocess_env(base, surface=Surface.SCRIPT, trace=trace)
    got = {k.upper(): v for k, v in env.items()}.get("PATHEXT")
    assert got == expected
    if expected == WINDOWS_DEFAULT_PATHEXT:
        decision = trace.final()["PATHEXT"]
        assert decision.reason is Reason.SURFACE_SET
        assert decision.note is not None
        assert "Windows default" in decision.note


def test_set_pathext_beats_the_default(make_host: HostFactory) -> None:
    """A policy's own set value for PATHEXT wins over the Windows default."""
    policy = SurfacePolicy(inherit=Inherit.NONE, set_env=MappingProxyType({"PATHEXT": ".EXE"}))
    host = make_host(surface_policies={Surface.SCRIPT: policy}, windows=True)
    env = host.build_subprocess_env({}, surface=Surface.SCRIPT)
    assert env == {"PATHEXT": ".EXE", "SYSTEMROOT": WINDOWS_DEFAULT_SYSTEMROOT}


SYSTEMROOT_CASES = [
    # (windows, inherit, parent SystemRoot or None, exclude, expected SYSTEMROOT or None)
    (True, Inherit.NONE, None, (), WINDOWS_DEFAULT_SYSTEMROOT),
    (True, Inherit.CORE, None, (), WINDOWS_DEFAULT_SYSTEMROOT),
    (True, Inherit.NONE, "D:\\Win", (), "D:\\Win"),  # kept: a child cannot start without it
    (True, Inherit.CORE, "D:\\Win", (), "D:\\Win"),
    (True, Inherit.ALL, None, (), None),  # all: the parent decides
    (True, Inherit.NONE, "D:\\Win", ("SYSTEM*",), None),  # an exclude glob naming it wins
    (False, Inherit.NONE, "/x", (), None),  # POSIX: an ordinary name
]


@pytest.mark.parametrize(("windows", "inherit", "parent", "exclude", "expected"), SYSTEMROOT_CASES)
def test_windows_systemroot_kept_or_defaulted(
    make_host: HostFactory,
    windows: bool,
    inherit: Inherit,
    parent: str | None,
    exclude: tuple[str, ...],
    expected: str | None,
) -> None:
    """With windows, inherit none|core keeps the parent's SYSTEMROOT, or defaults it."""
    policy = SurfacePolicy(inherit=inherit, exclude=exclude)
    host = make_host(surface_policies={Surface.SCRIPT: policy}, windows=windows)
    base = {"Path": "C:/bin"} | ({} if parent is None else {"SystemRoot": parent})
    env = host.build_subprocess_env(base, surface=Surface.SCRIPT)
    assert {k.upper(): v for k, v in env.items()}.get("SYSTEMROOT") == expected


MCP_BASE = {"PATH": "/bin", "TZ": "Europe/Paris", "DISPLAY": ":0", "WAYLAND_DISPLAY": "wl-0",
            "XAUTHORITY": "/run/user/1000/xauth", "SSH_AUTH_SOCK": "/run/ssh.sock",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"}  # fmt: skip
FAMILY_CASES = [
    ((), {"PATH", "TZ"}),
    (("desktop",), {"PATH", "TZ", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"}),
    (("ssh-agent",), {"PATH", "TZ", "SSH_AUTH_SOCK"}),
    (("desktop", "ssh-agent"), set(MCP_BASE) - {"DBUS_SESSION_BUS_ADDRESS"}),
]


@pytest.mark.parametrize(("families", "expected"), FAMILY_CASES)
def test_mcp_families_are_capabilities_a_host_turns_on(
    make_host: HostFactory, families: tuple[str, ...], expected: set[str]
) -> None:
    """TZ is in the MCP safe base; the desktop and SSH agent reach MCP only as named families."""
    host = make_host(dict(MCP_BASE), mcp_families=families)
    assert set(host.build_subprocess_env(surface=Surface.MCP)) == expected
    assert set(host.build_subprocess_env(surface=Surface.TERMINAL)) == set(MCP_BASE)


def test_mcp_families_join_the_hosts_mcp_policy(make_host: HostFactory) -> None:
    """A family widens the host's own mcp policy; its exclude still wins."""
    policy = SurfacePolicy(include=("LANG",), exclude=("DISPLAY",))
    host = make_host(
        dict(MCP_BASE, LANG="C"), mcp_families=["desktop"], surface_policies={"mcp": policy}
    )
    assert set(host.build_subprocess_env(surface=Surface.MCP)) == {
        "PATH", "TZ", "LANG", "WAYLAND_DISPLAY", "XAUTHORITY"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mcp_families": ["x11"]}, "mcp_families: 'x11' is not one of desktop, ssh-agent"),
        ({"mcp_families": "desktop"}, "mcp_families: a list"),
        ({"surface_policies": {"mcp": SurfacePolicy(inherit=Inherit.ALL)}}, "surfaces.mcp.inherit"),
        ({"surface_policies": {"mcp": SurfacePolicy(inherit="all")}}, "does nothing on the mcp"),
        ({"refuse_redirecting": "yes"}, "refuse_redirecting: must be True or False"),
    ],
    ids=["unknown-family", "family-string", "mcp-inherit-all", "mcp-inherit-all-str", "opt-in"],
)
def test_mcp_mistakes_fail_loudly(
    make_host: HostFactory, kwargs: dict[str, object], message: str
) -> None:
    """An unknown family, and inherit: all on the allowlist surface, are configuration errors."""
    from envscope import ConfigurationError

    with pytest.raises(ConfigurationError, match=re.escape(message)):
        make_host(**kwargs)


@pytest.mark.parametrize("inherit", [Inherit.CORE, Inherit.NONE, None])
def test_mcp_inherit_core_none_or_unsaid_is_accepted(
    make_host: HostFactory, inherit: Inherit | None
) -> None:
    """core and none narrow the MCP base; a policy that does not say inherit is the allowlist."""
    host = make_host(dict(MCP_BASE), surface_policies={"mcp": SurfacePolicy(inherit=inherit)})
    env = host.build_subprocess_env(surface=Surface.MCP)
    assert set(env) == ({"PATH", "TZ"} if inherit is not Inherit.NONE else set())


@pytest.mark.parametrize("field", ["include", "exclude"])
@pytest.mark.parametrize("glob", [" CI_*", "CI_* ", "CI _*", "CI\t*", "CI_*\n"])
def test_a_glob_with_whitespace_is_an_error(field: str, glob: str) -> None:
    """A surface include or exclude glob holding whitespace is an error (it would never match)."""
    from envscope import ConfigurationError

    with pytest.raises(ConfigurationError) as info:
        SurfacePolicy(**{field: ("OK_*", glob)})  # type: ignore[arg-type]
    # the offending item is named, as tox names it ("invalid values found 'A B'")
    assert f"{field}: item 1 ({glob!r}) holds whitespace" in str(info.value)


GLOBS = [
    # (glob, name, matches) -- Codex's wildmatch: * and ? only, [ and ] literal
    ("*", "ANYTHING", True),
    ("CI_*", "ci_job", True),
    ("CI_*", "XCI_JOB", False),
    ("CI_?", "CI_A", True),
    ("CI_?", "CI_AB", False),
    ("*_DEBUG", "NOISY_DEBUG", True),
    ("*_DEBUG", "NOISY_DEBUG_X", False),
    ("[AB]_X", "A_X", False),
    ("[AB]_X", "[AB]_X", True),
    ("[!A]*", "B", False),
    ("PROGRAMFILES(X86)", "ProgramFiles(x86)", True),
    ("A.B", "AxB", False),
    ("A+", "AA", False),
    ("*KEY*", "monkey_business", True),
    ("", "", True),
    ("", "A", False),
]


@pytest.mark.parametrize(("glob", "name", "matches"), GLOBS)
def test_glob_semantics(glob: str, name: str, matches: bool) -> None:
    """Globs: * and ? only, whole-name, any case; [, ], ., + and ( are literal."""
    regex = glob_regex([glob])
    assert regex is not None
    assert (regex.match(name.upper()) is not None) is matches


@pytest.mark.parametrize(("glob", "name", "matches"), [g for g in GLOBS if g[0]])
def test_glob_semantics_through_a_policy(
    make_host: HostFactory, glob: str, name: str, matches: bool
) -> None:
    """The same table through a real exclude: a matching name is removed, others kept."""
    host = make_host(surface_policies={Surface.SCRIPT: SurfacePolicy(exclude=(glob,))})
    env = host.build_subprocess_env({name: "v", "KEEPME_ALWAYS_1": "1"}, surface=Surface.SCRIPT)
    assert (name not in env) is matches


DEFAULT_EXCLUDE_BASE = {
    "PATH": "/bin",
    "MY_API_KEY": "a",
    "monkey": "b",
    "db_secret_path": "c",
    "Tokenizer": "d",
    "EDITOR": "vi",
    "CI_TOKEN": "e",
}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (SurfacePolicy(), set(DEFAULT_EXCLUDE_BASE)),
        (SurfacePolicy(default_excludes=True), {"PATH", "EDITOR"}),
        (SurfacePolicy(default_excludes=True, include=("CI_*",)), {"PATH", "EDITOR"}),
        (
            SurfacePolicy(default_excludes=True, set_env=MappingProxyType({"SET_TOKEN": "kept"})),
            {"PATH", "EDITOR", "SET_TOKEN"},
        ),
    ],
)
def test_default_excludes(
    make_host: HostFactory, policy: SurfacePolicy, expected: set[str]
) -> None:
    """default_excludes: Codex's *KEY* *SECRET* *TOKEN*, any case; set values still pass."""
    host = make_host(surface_policies={Surface.SCRIPT: policy})
    trace = Trace()
    env = host.build_subprocess_env(DEFAULT_EXCLUDE_BASE, surface=Surface.SCRIPT, trace=trace)
    assert set(env) == expected
    for key in set(DEFAULT_EXCLUDE_BASE) - expected:
        assert trace.final()[key].reason is Reason.EXCLUDED


@pytest.mark.parametrize(("text", "expected"), [("", False), ("default_excludes: true", True)])
def test_default_excludes_in_config(tmp_path: Path, text: str, expected: bool) -> None:
    """envscope.yaml's surfaces.<name>.default_excludes (default false) reaches the policy."""
    (tmp_path / "a").mkdir()
    path = tmp_path / "envscope.yaml"
    path.write_text(f"launch_home: ./a\nsurfaces:\n  terminal: {{{text}}}\n")
    config = load_config(str(path))
    assert config.surfaces[Surface.TERMINAL].default_excludes is expected
    env = config.build_host({"PATH": "/b", "MY_KEY": "k"}).build_subprocess_env()
    assert ("MY_KEY" in env) is not expected


def test_default_excludes_must_be_a_bool() -> None:
    """A non-bool default_excludes is a ConfigurationError, never truthiness."""
    from envscope import ConfigurationError

    with pytest.raises(ConfigurationError, match="default_excludes"):
        SurfacePolicy(default_excludes="yes")  # type: ignore[arg-type]


CONFIG_CASES = [
    # (config lines, the MCP child's names, refuses PATH from an extra)
    ("", {"PATH", "TZ"}, False),
    (
        "mcp_families: [desktop]\n",
        {"PATH", "TZ", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"},
        False,
    ),
    (
        "mcp_families: [ssh-agent]\nrefuse_redirecting: true\n",
        {"PATH", "TZ", "SSH_AUTH_SOCK"},
        True,
    ),
    ("surfaces:\n  mcp: {inherit: core}\n", {"PATH", "TZ"}, False),
]


@pytest.mark.parametrize(("text", "mcp_names", "refuses_path"), CONFIG_CASES)
def test_families_and_redirecting_in_envscope_yaml(
    tmp_path: Path, text: str, mcp_names: set[str], refuses_path: bool
) -> None:
    """envscope.yaml's mcp_families and refuse_redirecting reach the Host it builds."""
    path = tmp_path / "envscope.yaml"
    path.write_text(f"launch_home: .\n{text}")
    host = load_config(str(path)).build_host(dict(MCP_BASE))
    assert set(host.build_subprocess_env(surface=Surface.MCP)) == mcp_names
    env = host.build_subprocess_env(surface=Surface.TERMINAL, extra={"PATH": "/tmp/evil"})
    assert (env["PATH"] == "/bin") is refuses_path


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("mcp_families: [x11]\n", "mcp_families[0]"),
        ("refuse_redirecting: yes-please\n", "refuse_redirecting"),
    ],
)
def test_bad_family_keys_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    """An unknown family or a non-bool opt-in is a ConfigFileError naming the field."""
    from envscope.errors import ConfigFileError

    path = tmp_path / "envscope.yaml"
    path.write_text(f"launch_home: .\n{text}")
    with pytest.raises(ConfigFileError, match=re.escape(field)):
        load_config(str(path))


def test_mcp_inherit_all_in_envscope_yaml_is_an_error(tmp_path: Path) -> None:
    """surfaces.mcp.inherit: all is refused when the host is built (it would do nothing)."""
    from envscope import ConfigurationError

    path = tmp_path / "envscope.yaml"
    path.write_text("launch_home: .\nsurfaces:\n  mcp: {inherit: all}\n")
    with pytest.raises(ConfigurationError, match=re.escape("surfaces.mcp.inherit")):
        load_config(str(path)).build_host({})
