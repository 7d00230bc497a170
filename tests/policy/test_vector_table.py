"""The injection-vector table (issue 20): the peers' lists, every category × surface × channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import (
    Catalog,
    ConfigurationError,
    Reason,
    StaticSource,
    Surface,
    SurfacePolicy,
    Trace,
)
from envscope.policy._catalog_doc import VECTORS_DOC_PATH, render_vectors
from envscope.policy.catalog import VectorCategory
from tests.conftest import HostFactory

# goose's Envs::DISALLOWED_KEYS, written out from crates/goose/src/agents/extension.rs
# (block/goose).
GOOSE_DISALLOWED_KEYS = (
    "PATH", "PATHEXT", "SystemRoot", "windir", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT",
    "LD_DEBUG", "LD_BIND_NOW", "LD_ASSUME_KERNEL", "DYLD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES",
    "DYLD_FRAMEWORK_PATH", "PYTHONPATH", "PYTHONHOME", "NODE_OPTIONS", "RUBYOPT", "GEM_PATH",
    "GEM_HOME", "CLASSPATH", "GO111MODULE", "GOROOT", "APPINIT_DLLS", "SESSIONNAME", "ComSpec",
    "TEMP", "TMP", "LOCALAPPDATA", "USERPROFILE", "HOMEDRIVE", "HOMEPATH",
)  # fmt: skip

# OpenClaw's host-env security policy (src/infra/host-env-security-policy.json,
# openclaw/openclaw): blockedKeys, blockedOverrideKeys, and a member of each prefix family.
OPENCLAW_BLOCKED = (
    "NODE_OPTIONS", "NODE_PATH", "PYTHONHOME", "PYTHONPATH", "PERL5LIB", "PERL5OPT", "RUBYLIB",
    "RUBYOPT", "BASH_ENV", "ENV", "BROWSER", "GIT_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_DIR",
    "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_EXEC_PATH", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_SEQUENCE_EDITOR",
    "GIT_TEMPLATE_DIR", "GIT_SSL_NO_VERIFY", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "KUBECONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AZURE_AUTH_LOCATION", "CC", "CXX", "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER", "RUSTC_WRAPPER", "CARGO_HOME", "CMAKE_C_COMPILER",
    "CMAKE_CXX_COMPILER", "HELM_HOME", "DOCKER_HOST", "SHELL", "SHELLOPTS", "PS4", "GCONV_PATH",
    "IFS", "SSLKEYLOGFILE", "JAVA_OPTS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "PYTHONBREAKPOINT", "DOTNET_STARTUP_HOOKS", "DOTNET_ADDITIONAL_DEPS",
    "GLIBC_TUNABLES", "MAVEN_OPTS", "MAKEFLAGS", "MFLAGS", "SBT_OPTS", "GRADLE_OPTS", "ANT_OPTS",
    "HGRCPATH",
)  # fmt: skip
OPENCLAW_BLOCKED_OVERRIDE = (
    "HOME", "GRADLE_USER_HOME", "ZDOTDIR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PROXY_COMMAND",
    "GIT_ASKPASS", "SSH_ASKPASS", "LESSOPEN", "LESSCLOSE", "PAGER", "MANPAGER", "GIT_PAGER",
    "EDITOR", "VISUAL", "FCEDIT", "SUDO_EDITOR", "PROMPT_COMMAND", "HISTFILE", "PERL5DB",
    "PERL5DBCMD", "OPENSSL_CONF", "OPENSSL_ENGINES", "PYTHONSTARTUP", "WGETRC", "CURL_HOME",
    "CLASSPATH", "CGO_CFLAGS", "CGO_LDFLAGS", "GOFLAGS", "CORECLR_PROFILER_PATH", "PHPRC",
    "PHP_INI_SCAN_DIR", "DENO_DIR", "BUN_CONFIG_REGISTRY", "YARN_RC_FILENAME", "HTTP_PROXY",
    "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "DOCKER_TLS_VERIFY",
    "DOCKER_CERT_PATH", "PIP_INDEX_URL", "PIP_PYPI_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE",
    "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "UV_INDEX", "UV_INDEX_URL", "UV_PYTHON",
    "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "DOCKER_CONTEXT", "LIBRARY_PATH", "CPATH",
    "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "GOPROXY", "GONOSUMCHECK",
    "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOENV", "GOPATH", "PYTHONUSERBASE", "RUSTFLAGS",
    "VIRTUAL_ENV", "LUA_PATH", "LUA_CPATH", "BUNDLE_GEMFILE", "COMPOSER_HOME",
    "XDG_CONFIG_HOME", "AWS_CONFIG_FILE",
    "GIT_CONFIG_COUNT", "NPM_CONFIG_REGISTRY", "CARGO_REGISTRIES_CRATES_IO_INDEX",
    "DYLD_INSERT_LIBRARIES", "LD_PRELOAD", "BASH_FUNC_x%%",
)  # fmt: skip

# Every name the issue lists as let through (refused when introduced, by default).
ISSUE_NAMES = (
    "DOTNET_STARTUP_HOOKS", "DOTNET_ADDITIONAL_DEPS", "GIT_DIR", "GIT_WORK_TREE",
    "GIT_OBJECT_DIRECTORY", "GIT_EXEC_PATH", "HGRCPATH", "RUSTC_WRAPPER", "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER", "GOFLAGS", "RUSTFLAGS", "MAKEFLAGS", "MFLAGS", "VIMINIT",
    "EXINIT", "LUA_INIT", "LUA_INIT_5_4", "ERL_AFLAGS", "ERL_FLAGS", "ERL_ZFLAGS",
    "R_PROFILE_USER", "CONFIG_SITE", "CMAKE_TOOLCHAIN_FILE", "JAVA_OPTS", "MAVEN_OPTS",
    "GRADLE_OPTS", "GEM_PATH", "GEM_HOME", "GOROOT", "PHPRC", "KSH_ENV", "ComSpec",
    "APPINIT_DLLS", "NODE_OPTIONS", "LD_PRELOAD",
)  # fmt: skip

CATALOG = Catalog.default()


def _member(row: str) -> str:
    """A real name a row stands for (a family's prefix plus a member)."""
    return f"{row[:-1]}X" if row.endswith("*") else row


def _covered(name: str) -> bool:
    return CATALOG.is_injection_vector(name) or CATALOG.is_redirecting(name)


@pytest.mark.parametrize(
    "name", GOOSE_DISALLOWED_KEYS + OPENCLAW_BLOCKED + OPENCLAW_BLOCKED_OVERRIDE
)
def test_table_holds_the_peers_lists(name: str) -> None:
    """Every name of goose's and OpenClaw's lists is a row (a vector or a redirecting name)."""
    assert _covered(name), name


@pytest.mark.parametrize("name", ISSUE_NAMES)
def test_issue_names_are_vectors(name: str) -> None:
    """Every name the issue lists is refused by default (not only under the opt-in)."""
    for spelling in (name, name.lower(), f"  {name}", f"{name}\t"):
        assert CATALOG.is_injection_vector(spelling), spelling


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "KUBECONFIG", "DOCKER_HOST", "PIP_INDEX_URL", "HTTPS_PROXY", "EDITOR"]
)
def test_redirecting_family_is_opt_in(name: str) -> None:
    """The redirecting family is its own category: not a vector unless the host opts in."""
    assert CATALOG.is_redirecting(name)
    assert not CATALOG.is_injection_vector(name)


def test_every_row_has_a_platform_and_linked_sources() -> None:
    """Each row names a platform and at least one source; every source is an https link."""
    assert CATALOG.vector_categories
    for cat in CATALOG.vector_categories:
        for row in cat.rows:
            assert row.platform, row
            assert row.sources, row
            for key in row.sources:
                assert CATALOG.vector_sources[key].startswith("https://"), key


def test_docs_injection_vectors_md_is_current() -> None:
    """docs/injection-vectors.md is exactly what the generator renders (regenerate, never edit)."""
    assert VECTORS_DOC_PATH.read_text(encoding="utf-8") == render_vectors(CATALOG), (
        "docs/injection-vectors.md is stale: run python -m envscope.policy._catalog_doc"
    )


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ("version: 1\nsources: {a: 'http://x'}\ncategories: []\n", "sources"),
        (
            "version: 1\nsources: {}\ncategories: [{id: x, title: X, refused: always, about: a,"
            " rows: [{name: LD_X, platform: any, source: nope}]}]\n",
            "<root>",
        ),
        (
            "version: 1\nsources: {a: 'https://x'}\ncategories: [{id: x, title: X, refused: often,"
            " about: a, rows: [{name: LD_X, platform: any, source: a}]}]\n",
            "categories[0].refused",
        ),
        (
            "version: 1\nsources: {a: 'https://x'}\ncategories: [{id: x, title: X, refused: always,"
            " about: a, rows: [{name: 'A B', platform: any, source: a}]}]\n",
            "categories[0].rows[0].name",
        ),
    ],
    ids=["http-source", "unknown-source", "bad-refused", "bad-name"],
)
def test_invalid_table_names_the_field(doc: str, field: str) -> None:
    """A malformed table is a CatalogError naming the file and the field."""
    from envscope.errors import CatalogError
    from envscope.policy._catalog_schema import read_vectors

    with pytest.raises(CatalogError) as info:
        read_vectors(doc.encode(), "vectors.yaml")
    assert "vectors.yaml" in str(info.value)
    assert field in str(info.value)


# -- the matrix: every category × every surface × every channel -------------------------

REPRESENTATIVES = [(c, _member(c.rows[0].name)) for c in CATALOG.vector_categories]
SURFACES = list(Surface)
CHANNELS = ["inherited", "extra", "routed-scope", "routed-source", "surface-set"]
VALUE = "/tmp/planted"


def _build(
    make_host: HostFactory,
    homes: dict[str, Path],
    surface: Surface,
    channel: str,
    name: str,
    **host_kwargs: object,
) -> tuple[dict[str, str], Trace]:
    """The child env (and trace) when ``name`` reaches the build through ``channel``."""
    trace = Trace()
    base = {"PATH": "/usr/bin", "HOME": "/home/op"}
    if channel == "inherited":
        host = make_host({**base, name: VALUE}, **host_kwargs)
        with host.routed(homes["A"]):
            return host.build_subprocess_env(surface=surface, trace=trace), trace
    if channel == "extra":  # on the mcp surface: the server's env block
        host = make_host(base, **host_kwargs)
        with host.routed(homes["A"]):
            return host.build_subprocess_env(
                surface=surface, extra={name: VALUE}, trace=trace
            ), trace
    if channel == "surface-set":  # refused when the Host is built: see the matrix test
        policy = SurfacePolicy(set_env={name: VALUE})
        host = make_host(base, surface_policies={surface: policy}, **host_kwargs)
        return host.build_subprocess_env(surface=surface, trace=trace), trace
    host = make_host(base, **host_kwargs)
    if channel == "routed-scope":
        (homes["B"] / ".env").write_text(f"B_MARKER=b\n{name}={VALUE}\n")
    else:
        host.add_secret_source(StaticSource("vault", {str(homes["B"]): {name: VALUE}}))
    with host.routed(homes["B"]):
        return host.build_subprocess_env(surface=surface, trace=trace), trace


def _expect_kept(
    cat: VectorCategory, surface: Surface, channel: str, name: str, opt_in: bool
) -> bool:
    refused = channel != "inherited" and (not cat.opt_in or opt_in)
    if refused:
        return False
    if surface is Surface.MCP and channel not in ("extra", "routed-source", "surface-set"):
        from envscope.policy.surfaces import MCP_SAFE_NAMES_POSIX

        return name in MCP_SAFE_NAMES_POSIX or name in CATALOG.network_trust
    return True


@pytest.mark.parametrize("opt_in", [False, True], ids=["default", "refuse-redirecting"])
@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("surface", SURFACES, ids=[s.value for s in SURFACES])
@pytest.mark.parametrize(("cat", "name"), REPRESENTATIVES, ids=[c.id for c, _ in REPRESENTATIVES])
def test_category_surface_channel_matrix(
    make_host: HostFactory,
    homes: dict[str, Path],
    cat: VectorCategory,
    name: str,
    surface: Surface,
    channel: str,
    opt_in: bool,
) -> None:
    """Inherited: kept (as the surface allows); introduced: refused, traced INJECTION_VECTOR."""
    kept = _expect_kept(cat, surface, channel, name, opt_in)
    if channel == "surface-set" and not kept:
        with pytest.raises(ConfigurationError, match=f"surfaces.{surface.value}.set: {name} "):
            _build(make_host, homes, surface, channel, name, refuse_redirecting=opt_in)
        return
    env, trace = _build(make_host, homes, surface, channel, name, refuse_redirecting=opt_in)
    assert (env.get(name) == VALUE) is kept, (name, env.get(name))
    refusals = [d for d in trace.for_key(name) if d.reason is Reason.INJECTION_VECTOR]
    assert bool(refusals) is (channel != "inherited" and (not cat.opt_in or opt_in))


@pytest.mark.parametrize(
    "row", [r.name for c in CATALOG.vector_categories if not c.opt_in for r in c.rows]
)
def test_every_vector_is_refused_through_extra(make_host: HostFactory, row: str) -> None:
    """Each row of every always-refused category is refused when an extra introduces it."""
    name = _member(row)
    env = make_host({"PATH": "/bin"}).build_subprocess_env(extra={name: VALUE, f"  {name}": VALUE})
    assert set(env) == {"PATH"}
