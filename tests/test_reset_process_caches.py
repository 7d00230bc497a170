"""``envscope.testing.reset_process_caches``: every process-wide cache of data, emptied.

Structural: each module-level object of the package that holds data between
hosts (an instance with ``clear``, or an ``lru_cache`` of answers) is listed
here and emptied by the reset; a new one fails this test until it is listed,
or named below as code made once (no data a test could see change).
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from pathlib import Path

import pytest

import envscope
from envscope import Host
from envscope._c_environ import C_ENVIRON
from envscope._inputs import ENVIRON_COPIES
from envscope.files._dotenv import DOTENV_PARSES
from envscope.manifests._parse_memo import PARSES
from envscope.manifests._shared_scans import SCANS
from envscope.policy import _name_context, formats
from envscope.testing import reset_process_caches

RESET = (PARSES, SCANS, DOTENV_PARSES, ENVIRON_COPIES, _name_context._cached_tokens)
# module-level objects with ``clear`` or ``reset`` that hold no cache of data, and why
NOT_CACHES = {
    C_ENVIRON: "what os.putenv and os.unsetenv did: the C environment itself",
}


def _module_level_stores() -> dict[int, str]:
    """Each module-level instance of a package class with ``clear`` or ``reset``, and each
    bounded ``lru_cache`` (``functools.cache`` is code made once: a pattern, a model), by id."""
    found: dict[int, str] = {}
    for info in pkgutil.walk_packages(envscope.__path__, "envscope."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if hasattr(value, "cache_info"):
                if value.cache_parameters()["maxsize"] is not None:
                    found.setdefault(id(value), f"{module.__name__}.{attr}")
                continue
            if isinstance(value, type) or not type(value).__module__.startswith("envscope"):
                continue
            if hasattr(value, "clear") or hasattr(value, "reset"):
                found.setdefault(id(value), f"{module.__name__}.{attr}")
    return found


def test_every_process_wide_store_is_reset_or_named() -> None:
    """A new module-level cache fails here until the reset empties it (or it is named)."""
    found = _module_level_stores()
    known = {id(store) for store in (*RESET, *NOT_CACHES)}
    assert sorted(found[i] for i in set(found) - known) == []
    assert set(found) >= known


def test_a_reset_empties_each_after_a_host_filled_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the format table's cache for this test alone: its reset leaves the shared one be
    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))
    home = tmp_path / "home"
    plugin = home / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: chatx\\nrequires_env:\\n  - CHATX_BOT_TOKEN\\n")
    (home / ".env").write_text("A_THING=a\\n")
    os.environ["ENVSCOPE_RESET_PROBE"] = "1"
    try:
        host = Host(home, environ=None)
        host.load_launch_env()
        host.build_subprocess_env(extra={"MY_API_TOKEN": "x"})
        table = formats.format_table()
        assert len(PARSES)
        assert len(DOTENV_PARSES)
        assert ENVIRON_COPIES._last is not None
        assert any(SCANS.sizes().values())
        assert _name_context._cached_tokens.cache_info().currsize
        reset_process_caches()
        assert not len(PARSES)
        assert not len(DOTENV_PARSES)
        assert ENVIRON_COPIES._last is None
        assert not any(SCANS.sizes().values())
        assert _name_context._cached_tokens.cache_info().currsize == 0
        assert formats.format_table() is not table  # read again
    finally:
        del os.environ["ENVSCOPE_RESET_PROBE"]
