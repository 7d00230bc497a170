"""Every path envscope is given is a non-empty text path without NUL, else an error naming it.

A NUL cannot be in a path the OS opens: ``os.open`` raises a bare
``ValueError`` that no caller expects (``make fuzz`` found one through
``managed_env_file`` in ``envscope.yaml``). The rule is ``_inputs.text_path``;
this table runs it through every entry point that takes a path.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import Catalog, CatalogError, ConfigFileError, ConfigurationError, DotenvError, Host

BAD: dict[str, object] = {
    "NUL": "/tmp/a\x00b",
    "empty": "",
    "bytes": b"/tmp/a",
    "int": 3,
}


def _host(root: Path, **kwargs: object) -> Host:
    (root / "launch").mkdir(exist_ok=True)
    return Host(root / "launch", catalog=Catalog.default(), environ={}, **kwargs)  # type: ignore[arg-type]


ENTRY_POINTS: dict[str, tuple[str, Callable[[Path, object], object]]] = {
    "Host(launch_home)": (
        "home",
        lambda root, bad: Host(bad, catalog=Catalog.default(), environ={}),  # type: ignore[arg-type]
    ),
    "Host(managed_env_file)": (
        "managed_env_file",
        lambda root, bad: _host(root, managed_env_file=bad),
    ),
    "Host(bundled_plugins)": (
        "bundled_plugins",
        lambda root, bad: _host(root, bundled_plugins=bad),
    ),
    "host.routed(home)": ("home", lambda root, bad: _host(root).routed(bad).__enter__()),  # type: ignore[arg-type]
    "host.policy(home)": ("home", lambda root, bad: _host(root).policy(bad)),  # type: ignore[arg-type]
    "host.manifest_declarations(home)": (
        "home",
        lambda root, bad: _host(root).manifest_declarations(bad),  # type: ignore[arg-type]
    ),
}


@pytest.mark.parametrize("kind", list(BAD))
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_bad_path_is_a_configuration_error(tmp_path: Path, entry: str, kind: str) -> None:
    """Each entry point refuses each kind of bad path, naming what the path was for."""
    named, call = ENTRY_POINTS[entry]
    with pytest.raises(ConfigurationError, match=named):
        call(tmp_path, BAD[kind])


CONFIG_FIELDS = {
    "launch_home": 'launch_home: "l\\0"\n',
    "homes.w": 'launch_home: ./launch\nhomes:\n  w: "w\\0"\n',
    "managed_env_file": 'launch_home: ./launch\nmanaged_env_file: "m\\0"\n',
    "bundled_plugins": 'launch_home: ./launch\nbundled_plugins: "b\\0"\n',
    "catalog": 'launch_home: ./launch\ncatalog: "c\\0"\n',
}


@pytest.mark.parametrize("field", list(CONFIG_FIELDS))
def test_a_nul_in_a_config_path_names_the_file_and_field(tmp_path: Path, field: str) -> None:
    """A NUL in a path field of ``envscope.yaml``: a ``ConfigFileError`` naming file, field."""
    from envscope.cli.config import load_config

    (tmp_path / "launch").mkdir()
    config = tmp_path / "envscope.yaml"
    config.write_text(CONFIG_FIELDS[field])
    with pytest.raises(ConfigFileError) as raised:
        load_config(str(config))
    assert str(config) in str(raised.value)
    assert f"{field}:" in str(raised.value)
    assert "NUL" in str(raised.value)


def test_the_cli_exits_2_on_a_nul_in_the_managed_path(tmp_path: Path) -> None:
    """The case ``make fuzz`` found: exit 2 with one line naming the field, no traceback."""
    (tmp_path / "launch").mkdir()
    config = tmp_path / "envscope.yaml"
    config.write_text(CONFIG_FIELDS["managed_env_file"])
    done = subprocess.run(
        [sys.executable, "-m", "envscope", "--config", str(config), "explain"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "managed_env_file" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_empty_config_path_is_the_configs_directory(tmp_path: Path) -> None:
    """``launch_home: ""`` still names the config's own directory (it always did)."""
    from envscope.cli.config import load_config

    config = tmp_path / "envscope.yaml"
    config.write_text('launch_home: ""\n')
    assert load_config(str(config)).launch_home == str(tmp_path)


def _catalog(path: str) -> object:
    return Catalog.from_file(path)


def _config(path: str) -> object:
    from envscope.cli.config import load_config

    return load_config(path)


def _dotenv(path: str) -> object:
    from envscope.files._dotenv import read_dotenv

    return read_dotenv(path)


def _discovered_config(path: str) -> object:
    from envscope.cli.config import load_config

    return load_config(path, trusted=False)  # the trust rule runs first


READERS: dict[str, tuple[type[Exception], Callable[[str], object]]] = {
    "Catalog.from_file": (CatalogError, _catalog),
    "load_config": (ConfigFileError, _config),
    "load_config(trusted=False)": (ConfigFileError, _discovered_config),
    "read_dotenv": (DotenvError, _dotenv),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_file_reader_refuses_a_nul_path_with_its_typed_error(tmp_path: Path, reader: str) -> None:
    """Each file reader turns ``os.open``'s ``ValueError`` into its own error, naming the path."""
    error, read = READERS[reader]
    with pytest.raises(error) as raised:
        read(str(tmp_path / "a\x00b"))
    shown = str(raised.value)
    assert "\x00" not in shown  # the message is shown escaped: one printable line
    assert "a\\x00b" in shown
    assert "NUL" in shown


@pytest.mark.parametrize("control", ["\x00", "\n", "\r", "\x1b[31m", "\t"])
def test_a_file_error_shows_a_control_character_escaped(control: str) -> None:
    """A path with a control character is shown escaped; the error keeps the path as given."""
    error = DotenvError(f"/tmp/a{control}b", "cannot read", line=3)
    assert str(error).isprintable()
    assert str(error).startswith("/tmp/a")
    assert str(error).endswith("b:3: cannot read")
    assert error.path == f"/tmp/a{control}b"


@pytest.mark.parametrize("control", ["\x00", "\n", "\x1b[31m"])
def test_a_path_a_message_quotes_is_shown_escaped_too(control: str) -> None:
    """A message naming another path (a configured home) is one printable line as well."""
    error = ConfigFileError("envscope.yaml", f"names a home that is not a directory (/h{control})")
    assert str(error).isprintable()
    assert error.message.endswith(f"(/h{control})")
