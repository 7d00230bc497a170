"""Every path a gated answer depends on is on a trusted file system.

A plugin directory with no manifest yet (direct, or a symlink to one) on FUSE
or an overlay, under a local root: its own file system is checked, so the home
is stamped on every build, never answered "unchanged" by a gate that cannot
hear a remote change. The other file systems come from the ``Notifier`` seam
and a stand-in device for the directory (no FUSE mount can be made here).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscope.manifests import _gate
from envscope.manifests._gate import create_gate
from envscope.manifests._inotify import Identity
from tests.manifests.test_gate import make_world

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")

UNTRUSTED = {"FUSE": 0x65735546, "overlay": 0x794C7630, "NFS": 0x6969}
STAND_IN_DEV = 0x7FFF0001  # the directory's own device, as a FUSE mount would give it


@pytest.mark.parametrize("how", ["direct", "through a symlink"])
@pytest.mark.parametrize("fs", sorted(UNTRUSTED))
def test_a_manifestless_plugin_directory_on_an_untrusted_fs_is_stamped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fs: str, how: str
) -> None:
    """The home is stamped on every build while the empty plugin directory is untrusted."""
    w = make_world(tmp_path)
    target = w.root / "remote" / "newp"
    target.mkdir(parents=True)
    plugin = w.home / "plugins" / "platforms" / "newp"
    if how == "direct":
        plugin.mkdir()
    else:
        plugin.symlink_to(target)
    remote = str(plugin)
    real_identity = _gate._identity

    def identity(path: str) -> Identity:
        found = real_identity(path)
        if found is not None and os.path.realpath(path) == os.path.realpath(remote):
            return (STAND_IN_DEV, found[1])
        return found

    monkeypatch.setattr(_gate, "_identity", identity)
    w.notifier.path_magic[remote] = UNTRUSTED[fs]
    for _ in range(3):
        assert w.build(w.gated) == w.build(w.stamped)
        assert w.gated_calls() > 0, "a gate answered for a home it cannot hear"
