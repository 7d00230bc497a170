"""The managed file's ``${VAR}`` expands as python-dotenv's override load does, once.

``PATH=/opt/corp/bin:${PATH}`` in the administrator's file puts the corporate
directory before the system ``PATH``, in the host's own environ and in every
child; reading or loading the file again never compounds it, and a value the
host changed since is what the file is applied over next.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscope import Surface
from tests.conftest import HostFactory

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# (the managed file, the host's env before, the expected managed values)
EXPANSIONS: dict[str, tuple[str, dict[str, str], dict[str, str]]] = {
    "prepend to PATH": (
        "PATH=/opt/corp/bin:${PATH}\n",
        {},
        {"PATH": f"/opt/corp/bin:{SYSTEM_PATH}"},
    ),
    "append to PATH": (
        "PATH=${PATH}:/opt/corp/bin\n",
        {},
        {"PATH": f"{SYSTEM_PATH}:/opt/corp/bin"},
    ),
    "the file's own earlier value wins": (
        "CORP=/opt/corp\nPATH=${CORP}/bin:${PATH}\n",
        {"CORP": "/elsewhere"},
        {"CORP": "/opt/corp", "PATH": f"/opt/corp/bin:{SYSTEM_PATH}"},
    ),
    "a default for an unset name": (
        "PROXY=${CORP_PROXY:-http://proxy.corp:3128}\n",
        {},
        {"PROXY": "http://proxy.corp:3128"},
    ),
    "a set name beats its default": (
        "PROXY=${CORP_PROXY:-http://proxy.corp:3128}\n",
        {"CORP_PROXY": "http://other:8080"},
        {"PROXY": "http://other:8080"},
    ),
    "an unset name is empty, as python-dotenv": (
        "LD_EXTRA=${NOT_SET_ANYWHERE}\n",
        {},
        {"LD_EXTRA": ""},
    ),
}


@pytest.mark.parametrize("case", sorted(EXPANSIONS))
@pytest.mark.parametrize("loads", [1, 3])
def test_the_managed_file_expands_against_the_env_it_is_applied_over(
    make_host: HostFactory, homes: dict[str, Path], case: str, loads: int
) -> None:
    """The host's environ and a child hold the expanded values, however often it is loaded."""
    text, before, expected = EXPANSIONS[case]
    managed = homes["root"] / "managed.env"
    managed.write_text(text, encoding="utf-8")
    environ = {"PATH": SYSTEM_PATH, "HOME": "/home/op", "LANG": "C.UTF-8", **before}
    host = make_host(environ, managed_env_file=managed)
    for _ in range(loads):
        host.load_launch_env()
    for key, value in expected.items():
        assert environ[key] == value, key
        assert host.build_subprocess_env(surface=Surface.TERMINAL)[key] == value, key
        with host.routed(homes["B"]):
            assert host.build_subprocess_env()[key] == value, key
    assert host._launch.read_managed() == expected  # a re-read agrees


def test_a_path_the_host_changed_since_is_what_the_file_is_applied_over(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """The host sets a new PATH after the load: the next load prepends to that one."""
    managed = homes["root"] / "managed.env"
    managed.write_text("PATH=/opt/corp/bin:${PATH}\n", encoding="utf-8")
    environ = {"PATH": SYSTEM_PATH}
    host = make_host(environ, managed_env_file=managed)
    host.load_launch_env()
    environ["PATH"] = "/srv/tools/bin"
    host.load_launch_env()
    assert environ["PATH"] == "/opt/corp/bin:/srv/tools/bin"
    host.load_launch_env()
    assert environ["PATH"] == "/opt/corp/bin:/srv/tools/bin"


def test_a_managed_key_the_process_lacked_expands_once(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A key absent before the first load reads as absent on every later load."""
    managed = homes["root"] / "managed.env"
    managed.write_text("CORP_FLAGS=--strict ${CORP_FLAGS}\n", encoding="utf-8")
    environ = {"PATH": SYSTEM_PATH}
    host = make_host(environ, managed_env_file=managed)
    for _ in range(3):
        host.load_launch_env()
        assert environ["CORP_FLAGS"] == "--strict "
