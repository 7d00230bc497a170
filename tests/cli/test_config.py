"""The host config file ``envscope.yaml``: discovery, validation errors, building a Host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope import ConfigFileError, Surface
from envscope.cli.config import CONFIG_ENV, ConfigChoice, find_config, load_config
from envscope.policy.surfaces import Inherit


def write(tmp_path: Path, text: str) -> str:
    """Write an envscope.yaml and return its path."""
    path = tmp_path / "envscope.yaml"
    path.write_text(text)
    return str(path)


def test_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    """Every path in the file resolves against the file's directory."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cfg = load_config(
        write(
            tmp_path,
            "launch_home: ./a\nhomes: {b: ./b}\nmanaged_env_file: m.env\nbundled_plugins: bp\n"
            "catalog: default\nmultiplex: true\n"
            "surfaces: {script: {inherit: core, include: ['CI_*'], set: {PAGER: cat}}}\n",
        )
    )
    assert cfg.launch_home == str(tmp_path / "a")
    assert cfg.homes == {"b": str(tmp_path / "b")}
    assert cfg.managed_env_file == str(tmp_path / "m.env")
    assert cfg.catalog is None
    assert cfg.multiplex is True
    policy = cfg.surfaces[Surface.SCRIPT]
    assert policy.inherit is Inherit.CORE
    assert dict(policy.set_env) == {"PAGER": "cat"}
    assert cfg.resolve_home("b") == str(tmp_path / "b")
    assert cfg.resolve_home(None) == cfg.launch_home
    assert cfg.home_name(str(tmp_path / "b")) == "b"
    assert cfg.home_name(str(tmp_path / "a")) == "launch"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("homes: {}\n", "launch_home"),
        ("launch_home: 3\n", "launch_home"),
        ("launch_home: a\nmultiplex: 'yes'\n", "multiplex"),
        ("launch_home: a\nsurfaces: {shell: {}}\n", "surfaces.shell.[key]"),
        ("launch_home: a\nsurfaces: {script: {inherit: some}}\n", "surfaces.script.inherit"),
        ("launch_home: a\nsurfaces: {script: {set: {A: 1}}}\n", "surfaces.script.set.A"),
        ("launch_home: a\nhome_env_var: 'BAD NAME'\n", "home_env_var"),
        ("launch_home: a\nunknown: 1\n", "unknown"),
    ],
)
def test_invalid_config_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    """An invalid config is a ConfigFileError naming the file and the field."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.path == path
    assert info.value.field == field


def test_yaml_error_and_missing_file(tmp_path: Path) -> None:
    """Unparsable YAML names the line; a missing file is a ConfigFileError."""
    with pytest.raises(ConfigFileError) as info:
        load_config(write(tmp_path, "launch_home: a\n  bad: [\n"))
    assert info.value.line is not None
    with pytest.raises(ConfigFileError, match="cannot read"):
        load_config(str(tmp_path / "none.yaml"))


def test_find_config_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config wins, then $ENVSCOPE_CONFIG (both explicit), then ./envscope.yaml, else None."""
    monkeypatch.chdir(tmp_path)
    assert find_config(None, {}) is None
    write(tmp_path, "launch_home: .\n")
    assert find_config(None, {}) == ConfigChoice(str(tmp_path / "envscope.yaml"), explicit=False)
    assert find_config(None, {CONFIG_ENV: "/x.yaml"}) == ConfigChoice("/x.yaml", explicit=True)
    assert find_config("/y.yaml", {CONFIG_ENV: "/x.yaml"}) == ConfigChoice("/y.yaml", explicit=True)


def test_build_host_uses_config(tmp_path: Path) -> None:
    """build_host passes every setting to Host, including a custom catalog and surfaces."""
    (tmp_path / "cat.yaml").write_text("tier1: [MY_HOST_SECRET]\n")
    (tmp_path / "a").mkdir()
    cfg = load_config(
        write(
            tmp_path,
            "launch_home: a\ncatalog: cat.yaml\nhome_env_var: AGENT_HOME\n"
            "surfaces: {terminal: {exclude: ['NOISY_*']}}\n",
        )
    )
    host = cfg.build_host({"MY_HOST_SECRET": "s", "NOISY_X": "1", "OPENAI_API_KEY": "k"})
    assert host.home_env_var == "AGENT_HOME"
    assert host.build_subprocess_env() == {"OPENAI_API_KEY": "k"}


@pytest.mark.parametrize(
    ("document", "home", "field"),
    [
        ("launch_home: ./gone\n", None, "launch_home"),
        ("launch_home: ./gone\n", "launch", "launch_home"),
        ("launch_home: .\nhomes: {work: ./typo}\n", "work", "homes.work"),
    ],
    ids=["launch-default", "launch-by-name", "routed-home"],
)
def test_a_configured_home_that_is_missing_is_an_error(
    tmp_path: Path, document: str, home: str | None, field: str
) -> None:
    """A configured home that is not a directory is a ConfigFileError naming the file and field."""
    cfg = load_config(write(tmp_path, document))
    with pytest.raises(ConfigFileError, match=rf"envscope.yaml: {field}: names a home that is not"):
        cfg.resolve_home(home)


# -- ~ in the paths the config names ------------------------------------------------

PATH_FIELDS = {
    "launch_home": "launch_home: '{p}'\n",
    "homes.work": "launch_home: .\nhomes:\n  work: '{p}'\n",
    "managed_env_file": "launch_home: .\nmanaged_env_file: '{p}'\n",
    "bundled_plugins": "launch_home: .\nbundled_plugins: '{p}'\n",
    "catalog": "launch_home: .\ncatalog: '{p}'\n",
}


def _named(config: object, field: str) -> str:
    if field == "homes.work":
        return config.homes["work"]  # type: ignore[attr-defined,no-any-return]
    return getattr(config, field)  # type: ignore[no-any-return]


@pytest.mark.parametrize("field", sorted(PATH_FIELDS))
@pytest.mark.parametrize("spelling", ["~", "~/profiles/x", "~root/profiles/x"])
def test_a_tilde_path_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, spelling: str
) -> None:
    """``~`` and ``~user`` expand as a shell does, in every path field (never ``./~``)."""
    monkeypatch.setenv("HOME", str(tmp_path / "operator"))
    config = tmp_path / "envscope.yaml"
    config.write_text(PATH_FIELDS[field].format(p=spelling), encoding="utf-8")
    named = _named(load_config(str(config)), field)
    assert named == os.path.normpath(os.path.expanduser(spelling))
    assert "~" not in named


@pytest.mark.parametrize("field", sorted(PATH_FIELDS))
def test_a_tilde_that_cannot_expand_names_the_file_line_and_field(
    tmp_path: Path, field: str
) -> None:
    """``~nosuchuser/x`` is an error naming the file, line and field, not a relative path."""
    config = tmp_path / "envscope.yaml"
    config.write_text(PATH_FIELDS[field].format(p="~envscope-no-such-user/x"), encoding="utf-8")
    with pytest.raises(ConfigFileError) as info:
        load_config(str(config))
    err = info.value
    assert (err.path, err.field) == (str(config), field)
    assert err.line == PATH_FIELDS[field].count("\n")
    assert "~envscope-no-such-user" in err.message
