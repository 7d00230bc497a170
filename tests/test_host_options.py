"""A host's keywords are checked once into ``HostOptions``; a build reads that very record."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Catalog, Host, SurfacePolicy
from envscope.errors import ConfigurationError


def test_each_keyword_reaches_the_options(tmp_path: Path) -> None:
    """A host's options hold each of its keywords, checked and normalised."""
    host = Host(
        tmp_path,
        catalog=Catalog.default(),
        environ={},
        home_env_var="MY_HOME",
        windows=True,
        strip_value_aliases=False,
        max_env_bytes=4096,
        allow_injection=["ld_preload"],
        known_safe=["some_token"],
        mcp_network_trust=False,
        refuse_redirecting=True,
        managed_env_file=tmp_path / "managed.env",
    )
    options = host._options
    assert (options.home_env_var, options.fold, options.max_env_bytes) == ("MY_HOME", True, 4096)
    assert (options.strip_value_aliases, options.mcp_network_trust) == (False, False)
    assert options.refuse_redirecting is True
    assert options.allow_injection == {"LD_PRELOAD"}
    assert options.known_safe == {"SOME_TOKEN"}
    assert options.managed_path == str(tmp_path / "managed.env")


@pytest.mark.parametrize("given", [None, ["tmpdir", "My_Var"]], ids=["catalog's", "given"])
def test_global_names_are_given_or_the_catalogs(tmp_path: Path, given: list[str] | None) -> None:
    """Given global names are the set (upper-cased); else the catalog's plus the home variable."""
    catalog = Catalog.default()
    host = Host(tmp_path, catalog=catalog, environ={}, home_env_var="MY_HOME", global_names=given)
    expected = catalog.global_names | {"MY_HOME"} if given is None else {"TMPDIR", "MY_VAR"}
    assert host.global_names == expected
    assert host.global_names is host.global_names  # one object while the catalog is the same


def test_a_build_reads_the_hosts_options_and_catalog(tmp_path: Path) -> None:
    """The request a build reads holds the host's very options, catalog and global names."""
    from envscope.pipeline._request import BuildRequest

    made: list[BuildRequest] = []
    real = BuildRequest.__init__

    def keeping(self: BuildRequest, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    host = Host(tmp_path, catalog=Catalog.default(), environ={})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BuildRequest, "__init__", keeping)
        host.build_subprocess_env({"PATH": "/bin"})
    (request,) = made
    assert request.options is host._options
    assert request.catalog is host.catalog
    assert request.global_names is host.global_names


class NotAFileSystem:
    """A file-system seam with none of the methods (a stable repr for the test ids)."""

    def __repr__(self) -> str:
        return "NotAFileSystem()"


BAD: list[tuple[str, object]] = [
    ("catalog", "default"),
    ("fs", NotAFileSystem()),
    ("surface_policies", [("script", SurfacePolicy())]),
    ("surface_policies", {"nope": SurfacePolicy()}),
    ("surface_policies", {"script": "all"}),
    ("strip_value_aliases", "no"),
    ("mcp_network_trust", 0),
    ("refuse_redirecting", None),
    ("change_notification", "off"),
    ("max_env_bytes", 0),
    ("max_env_bytes", -1),
    ("max_env_bytes", "1024"),
    ("max_env_bytes", True),
    ("on_unreadable_platform", "ignore"),
    ("home_env_var", "BAD=NAME"),
    ("home_env_var", ""),
    ("home_env_var", "_ENVSCOPE_FORCE_HOME"),
    ("mcp_families", "proxy"),
    ("allow_injection", "LD_PRELOAD"),
]


@pytest.mark.parametrize(("keyword", "value"), BAD, ids=[f"{k}={v!r}" for k, v in BAD])
def test_a_bad_keyword_is_an_error_naming_it(tmp_path: Path, keyword: str, value: object) -> None:
    """A mistaken keyword fails loudly when the host is made, naming the keyword."""
    with pytest.raises(ConfigurationError, match=keyword):
        Host(tmp_path, environ={}, **{keyword: value})  # type: ignore[arg-type]


LAUNCH_MISTAKES = ["missing", "a file", "a dangling symlink"]


@pytest.mark.parametrize("mistake", LAUNCH_MISTAKES)
def test_a_launch_home_that_is_no_directory_is_an_error(tmp_path: Path, mistake: str) -> None:
    """A typo'd launch home fails loudly (its manifests would silently declare nothing)."""
    home = tmp_path / "agent"
    if mistake == "a file":
        home.write_text("")
    elif mistake == "a dangling symlink":
        home.symlink_to(tmp_path / "gone")
    with pytest.raises(ConfigurationError, match="the launch home is not a directory"):
        Host(home, environ={})
