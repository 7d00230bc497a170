"""Injection vectors: names that change how a child starts may not be introduced (issue 6.7)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envscope import FORCE_PREFIX, Action, Catalog, PassthroughRefusedError, Reason, Surface, Trace
from tests.conftest import HostFactory

VECTORS = ["LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PYTHONSTARTUP",
           "PYTHONPATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
           "GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GCONV_PATH", "ld_library_path",
           # the tools children run: a command run at a checkpoint, a remote shell, a password
           # prompt, configure's shell, editors' start-up, Tcl's library path, go's helpers
           "TAR_OPTIONS", "RSYNC_RSH", "RSYNC_CONNECT_PROG", "SUDO_ASKPASS", "SSH_ASKPASS_REQUIRE",
           "CONFIG_SHELL", "GVIMINIT", "VIMRUNTIME", "EMACSLOADPATH", "TCLLIBPATH", "TCL_LIBRARY",
           "RUBYSHELL", "RUBYPATH", "PYTHONPLATLIBDIR", "GOCACHEPROG", "GOAUTH"]  # fmt: skip

# Variables that make a tool write where they say: refused only by a host that opts in.
WRITE_REDIRECTS = ["NODE_REPL_HISTORY", "NODE_V8_COVERAGE", "NODE_REDIRECT_WARNINGS",
                   "NODE_COMPILE_CACHE", "PYTHONPYCACHEPREFIX", "GIT_TRACE", "GIT_TRACE2_EVENT",
                   "BASH_XTRACEFD"]  # fmt: skip


# sudo's env_delete default, written out from plugins/sudoers/env.c
# (initial_badenv_table, every platform's #ifdef branch included; sudo-project/sudo).
SUDO_ENV_DELETE = (
    "IFS", "CDPATH", "LOCALDOMAIN", "RES_OPTIONS", "HOSTALIASES", "NLSPATH", "PATH_LOCALE",
    "LD_*", "_RLD*", "SHLIB_PATH", "LDR_*", "LIBPATH", "AUTHSTATE", "DYLD_*",
    "KRB5_CONFIG*", "KRB5_KTNAME", "VAR_ACE", "USR_ACE", "DLC_ACE",
    "TERMINFO", "TERMINFO_DIRS", "TERMPATH", "TERMCAP", "ENV", "BASH_ENV", "PS4",
    "GLOBIGNORE", "SHELLOPTS", "JAVA_TOOL_OPTIONS", "PERLIO_DEBUG", "PERLLIB", "PERL5LIB",
    "PERL5OPT", "PERL5DB", "FPATH", "NULLCMD", "READNULLCMD", "ZDOTDIR", "TMPPREFIX",
    "PYTHONHOME", "PYTHONPATH", "PYTHONINSPECT", "PYTHONUSERBASE", "RUBYLIB", "RUBYOPT",
    "BASH_FUNC_*", "__BASH_FUNC<*",
)  # fmt: skip

# glibc's UNSECURE_ENVVARS, written out from sysdeps/generic/unsecvars.h (bminor/glibc),
# with GLIBC_TUNABLES (listed there when tunables are off) and the older MALLOC_CHECK_.
GLIBC_UNSECURE_ENVVARS = (
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LD_AUDIT", "LD_DEBUG",
    "LD_DEBUG_OUTPUT", "LD_DYNAMIC_WEAK", "LD_HWCAP_MASK", "LD_LIBRARY_PATH", "LD_ORIGIN_PATH",
    "LD_PRELOAD", "LD_PROFILE", "LD_SHOW_AUXV", "LD_USE_LOAD_BIAS", "LD_BIND_NOT",
    "LOCALDOMAIN", "LOCPATH", "MALLOC_CHECK_", "MALLOC_TRACE", "NIS_PATH", "NLSPATH",
    "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR",
)  # fmt: skip

# Members of the families above, as a child really sees them.
FAMILY_MEMBERS = (
    "BASH_FUNC_ls%%", "BASH_FUNC_ls()", "BASH_FUNC_x%%", "__BASH_FUNC<ls>()",
    "LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "_RLD_LIST",
    "_RLDN32_LIST", "LDR_PRELOAD", "KRB5_CONFIG", "GIT_CONFIG_PARAMETERS",
)  # fmt: skip


def _spellings(entry: str) -> list[str]:
    """The names a table entry stands for, in three case spellings."""
    name = f"{entry[:-1]}ANY_MEMBER" if entry.endswith("*") else entry
    return [name, name.lower(), name.title()]


@pytest.mark.parametrize("entry", SUDO_ENV_DELETE + GLIBC_UNSECURE_ENVVARS + FAMILY_MEMBERS)
def test_catalog_is_a_superset_of_sudo_and_glibc(entry: str) -> None:
    """Every sudo env_delete and glibc UNSECURE_ENVVARS entry is a vector, in any case."""
    catalog = Catalog.default()
    for name in _spellings(entry):
        assert catalog.is_injection_vector(name), name


BASH = shutil.which("bash")
PLANTED = "() {  echo planted-function; }"


def _run_bash(env: dict[str, str], script: str) -> str:
    """What ``bash -c script`` prints on stdout under ``env`` (its exit code ignored)."""
    assert BASH is not None
    done = subprocess.run(
        [BASH, "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    return done.stdout


@pytest.mark.skipif(BASH is None, reason="needs a real bash to run the planted function")
def test_bash_runs_an_exported_function_from_the_env() -> None:
    """The class is real: bash imports BASH_FUNC_<name>%% from its env and runs it."""
    env = {"PATH": os.defpath, "BASH_FUNC_greet%%": PLANTED}
    assert _run_bash(env, "greet") == "planted-function\n"


@pytest.mark.skipif(BASH is None, reason="needs a real bash to run the planted function")
@pytest.mark.parametrize("key", ["BASH_FUNC_greet%%", "BASH_FUNC_greet()", "bash_func_greet%%"])
@pytest.mark.parametrize("via", ["routed-dotenv", "extra", "mcp-env-block", "force-prefix"])
def test_planted_bash_function_never_reaches_bash(
    make_host: HostFactory, homes: dict[str, Path], key: str, via: str
) -> None:
    """An exported bash function from a routed .env, an extra or a forced name is refused."""
    host = make_host({"PATH": os.defpath})
    trace = Trace()
    if via == "routed-dotenv":
        (homes["B"] / ".env").write_text(f"B_MARKER=b\n{key}={PLANTED}\n")
        with host.routed(homes["B"]):
            env = host.build_subprocess_env(trace=trace)
        assert env["B_MARKER"] == "b"
    else:
        surface = Surface.MCP if via == "mcp-env-block" else Surface.TERMINAL
        name = f"{FORCE_PREFIX}{key}" if via == "force-prefix" else key
        env = host.build_subprocess_env(surface=surface, extra={name: PLANTED}, trace=trace)
    assert not [k for k in env if k.upper().startswith("BASH_FUNC")]
    assert any(d.reason is Reason.INJECTION_VECTOR for d in trace)
    assert _run_bash(env, "greet 2>/dev/null; echo ran") == "ran\n"


@pytest.mark.parametrize("name", VECTORS)
def test_catalog_ships_the_table(name: str) -> None:
    """The default catalog knows each injection vector (any case), and not ordinary names."""
    assert Catalog.default().is_injection_vector(name)
    assert not Catalog.default().is_injection_vector("PATH")
    assert not Catalog.default().is_injection_vector("ENVIRONMENT")


@pytest.mark.parametrize("name", VECTORS)
def test_routed_scope_cannot_introduce(
    make_host: HostFactory, homes: dict[str, Path], name: str
) -> None:
    """A routed home's .env cannot put an injection vector into a child; the trace says why."""
    (homes["B"] / ".env").write_text(f"B_MARKER=b\n{name}=/tmp/evil\n")
    host = make_host({"PATH": "/bin"})
    trace = Trace()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(trace=trace)
    assert name not in env
    assert env["B_MARKER"] == "b"
    refused = trace.for_key(name)
    assert [(d.action, d.reason) for d in refused] == [(Action.REFUSED, Reason.INJECTION_VECTOR)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"surface": Surface.MCP, "extra": {"NODE_OPTIONS": "--require /tmp/x.js"}},
        {"extra": {"LD_PRELOAD": "/tmp/x.so"}},
        {"extra": {f"{FORCE_PREFIX}BASH_ENV": "/tmp/x.sh"}},
    ],
    ids=["mcp-env-block", "extra", "force-prefix"],
)
def test_extra_force_and_passthrough_cannot_introduce(
    make_host: HostFactory, kwargs: dict[str, object]
) -> None:
    """An MCP env: block, an extra, a forced name or a passthrough cannot introduce one."""
    trace = Trace()
    env = make_host().build_subprocess_env(
        {"PATH": "/bin", "PYTHONPATH": "/launch"},
        trace=trace,
        **kwargs,  # type: ignore[arg-type]
    )
    assert not [k for k in env if Catalog.default().is_injection_vector(k) and k != "PYTHONPATH"]
    assert any(d.reason is Reason.INJECTION_VECTOR for d in trace)
    if kwargs.get("surface") is Surface.MCP:
        assert "PYTHONPATH" not in env


def test_passthrough_of_an_injection_vector_is_refused_loudly(make_host: HostFactory) -> None:
    """A passthrough that names an injection vector can never pass: PassthroughRefusedError."""
    with pytest.raises(PassthroughRefusedError, match="PYTHONPATH"):
        make_host().build_subprocess_env(
            {"PATH": "/bin", "PYTHONPATH": "/launch"},
            surface=Surface.MCP,
            passthrough=["PYTHONPATH"],
        )


def test_launch_env_keeps_its_own_and_explain_warns(make_host: HostFactory) -> None:
    """The launch env's own vector is kept (not introduced) and explain warns about it."""
    host = make_host(
        {
            "PATH": "/bin",
            "LD_PRELOAD": "/opt/libfast.so",
            "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars",
        }
    )
    trace = host.explain()
    assert trace.final()["LD_PRELOAD"].action is Action.KEPT
    assert [(w.key, w.kind) for w in trace.context.warnings] == [("LD_PRELOAD", "injection-vector")]
    assert trace.context.warnings[0].message.startswith("LD_PRELOAD: the launch env carries")


def test_launch_global_name_on_the_list_is_not_warned(make_host: HostFactory) -> None:
    """TMPDIR (glibc's list, and a global name) from the launch env is kept without a warning."""
    host = make_host(
        {"PATH": "/bin", "TMPDIR": "/var/tmp", "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}
    )
    trace = host.explain()
    assert trace.final()["TMPDIR"].action is Action.KEPT
    assert not [w for w in trace.context.warnings if w.key == "TMPDIR"]


def test_host_can_allow_explicitly(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Host(allow_injection=...) lets a scope or an extra set the named vector."""
    (homes["B"] / ".env").write_text("PYTHONPATH=/srv/b/lib\n")
    host = make_host({"PATH": "/bin"}, allow_injection=["pythonpath"])
    with host.routed(homes["B"]):
        assert host.build_subprocess_env()["PYTHONPATH"] == "/srv/b/lib"
    assert host.build_subprocess_env({}, extra={"PYTHONPATH": "/x"}) == {"PYTHONPATH": "/x"}
    assert "LD_PRELOAD" not in host.build_subprocess_env({}, extra={"LD_PRELOAD": "/x"})


def test_managed_file_is_the_administrators_decision(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """The administrator's managed file may set a vector (it is not introduced by a build)."""
    managed = homes["root"] / "managed.env"
    managed.write_text("NODE_OPTIONS=--max-old-space-size=512\n")
    host = make_host({"PATH": "/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(surface=Surface.SCRIPT)
    assert env["NODE_OPTIONS"] == "--max-old-space-size=512"


@pytest.mark.parametrize("key", ["PYTHONSTARTUP", "ld_preload", "GIT_DIR", "  LD_PRELOAD"])
def test_surface_set_cannot_introduce(make_host: HostFactory, key: str) -> None:
    """A surface policy's set holding a vector is a configuration error naming the key."""
    from envscope import ConfigurationError, SurfacePolicy

    policy = SurfacePolicy(set_env={key: "/etc/agent/startup.py"})
    with pytest.raises(ConfigurationError, match=f"surfaces.script.set: {key} "):
        make_host({"PATH": "/bin"}, surface_policies={"script": policy})
    host = make_host({"PATH": "/bin"}, surface_policies={"script": policy}, allow_injection=[key])
    assert host.build_subprocess_env(surface=Surface.SCRIPT)[key] == "/etc/agent/startup.py"


TAR = shutil.which("tar")


def _tar_runs_a_checkpoint_action(env: dict[str, str], work: Path) -> bool:
    """Whether ``tar -cf`` under ``env`` ran the command TAR_OPTIONS's checkpoint action names."""
    marker = work / "checkpoint-ran"
    marker.unlink(missing_ok=True)
    (work / "payload").write_text("x" * 20_000)
    assert TAR is not None
    subprocess.run(
        [TAR, "-cf", str(work / "out.tar"), "-C", str(work), "payload"],
        env=env, capture_output=True, check=False, timeout=30,
    )  # fmt: skip
    return marker.exists()


@pytest.mark.skipif(TAR is None, reason="needs a real GNU tar to run the checkpoint action")
def test_a_routed_profiles_tar_options_run_nothing_in_a_real_tar(
    make_host: HostFactory, homes: dict[str, Path], tmp_path: Path
) -> None:
    """GNU tar prepends TAR_OPTIONS to its options: a checkpoint action runs any command. From
    a routed profile's .env it never reaches the child; the class is real (it runs without)."""
    touch = shutil.which("touch")
    assert touch is not None
    action = f"--checkpoint=1 --checkpoint-action=exec='{touch} {tmp_path / 'checkpoint-ran'}'"
    plain = {"PATH": os.defpath, "TAR_OPTIONS": action}
    if not _tar_runs_a_checkpoint_action(plain, tmp_path):
        pytest.skip("this tar runs no checkpoint action (not GNU tar)")
    (homes["B"] / ".env").write_text(f'B_MARKER=b\nTAR_OPTIONS="{action}"\n')
    host = make_host({"PATH": os.defpath})
    trace = Trace()
    with host.routed(homes["B"]):
        env = host.build_subprocess_env(trace=trace)
    assert env["B_MARKER"] == "b"
    assert "TAR_OPTIONS" not in env
    assert trace.final()["TAR_OPTIONS"].reason is Reason.INJECTION_VECTOR
    assert not _tar_runs_a_checkpoint_action(env, tmp_path)


@pytest.mark.parametrize("name", WRITE_REDIRECTS)
def test_a_write_redirect_is_refused_only_by_a_host_that_opts_in(
    make_host: HostFactory, homes: dict[str, Path], name: str
) -> None:
    """A routed profile's history, coverage or trace path: kept by default, refused when asked."""
    (homes["B"] / ".env").write_text(f"B_MARKER=b\n{name}=/tmp/elsewhere\n")
    catalog = Catalog.default()
    assert catalog.is_redirecting(name)
    assert not catalog.is_injection_vector(name)
    for refuse in (False, True):
        host = make_host({"PATH": "/bin"}, refuse_redirecting=refuse)
        with host.routed(homes["B"]):
            env = host.build_subprocess_env()
        assert env["B_MARKER"] == "b"
        assert (name in env) is not refuse
