"""A host's keywords are checked once into ``HostOptions``; its settings follow from it."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from envscope import Catalog, Host
from envscope._host_options import CATALOG_FIELDS, HostOptions
from envscope.errors import ConfigurationError
from envscope.pipeline.build import BuildSettings


def test_build_settings_are_the_options_plus_the_catalog() -> None:
    """Every BuildSettings field but the catalog's is a HostOptions field of the same name."""
    options = {f.name for f in fields(HostOptions)}
    settings = {f.name for f in fields(BuildSettings)}
    assert settings - CATALOG_FIELDS <= options
    assert settings >= CATALOG_FIELDS


def test_each_option_reaches_the_settings(tmp_path: Path) -> None:
    """A host's settings hold each of its options, field by field."""
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
    options, settings = host._options, host._settings()
    for f in fields(BuildSettings):
        if f.name not in CATALOG_FIELDS:
            assert getattr(settings, f.name) == getattr(options, f.name), f.name
    assert settings.allow_injection == {"LD_PRELOAD"}
    assert "MY_HOME" in settings.global_names


BAD: list[tuple[str, object]] = [
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
