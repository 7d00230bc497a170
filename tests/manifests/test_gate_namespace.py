"""A changed mount namespace is doubt: every home goes to the stamp.

``unshare(CLONE_NEWNS)`` (or ``setns``) gives the calling thread another mount
table, and the notifier's mount-table descriptor keeps reporting the old one: a
mount made in the new namespace over a plugin directory makes no event the
gate could hear. The real case runs in a forked child (root, or a user allowed
to unshare): the gate is proven engaged, the child unshares, makes its mounts
private and mounts a tmpfs holding a manifest that declares one more secret
over a plugin directory; its next build must be the stamp's. The seam case
(every user) answers the namespace query with another value.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from envscope.manifests import _inotify
from envscope.manifests._gate import create_gate
from tests.manifests.test_gate import make_world, manifest
from tests.manifests.test_gate_fork import _fork, _wait

pytestmark = pytest.mark.skipif(create_gate() is None, reason="no inotify here")

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
CANNOT_UNSHARE = 4  # the child's exit status when this machine refuses the namespace


def _unshare_and_mount(plugin: Path) -> bool:
    """A new mount namespace, private mounts, a tmpfs over ``plugin`` with a new manifest.

    False when this process may not (``EPERM`` in a container, no ``CAP_SYS_ADMIN``):
    nothing was mounted. Propagation is made private before the mount, so the
    mount never reaches the namespace the test runner lives in.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    if libc.mount(b"tmpfs", os.fsencode(plugin), b"tmpfs", 0, None) != 0:
        return False
    (plugin / "plugin.yaml").write_text(manifest("PCHAT", extra=True))
    return True


def test_a_mount_in_a_new_mount_namespace_sends_every_home_to_the_stamp(tmp_path: Path) -> None:
    """unshare + a mount over a plugin directory: the gated child equals the stamped one."""
    w = make_world(tmp_path)  # the gate answers with no probe (asserted inside)
    plugin = w.platform_manifest.parent

    def child() -> bool:  # pragma: no cover - runs in the forked child
        for _ in range(3):  # the child's own gate, engaged again
            assert w.build(w.gated) == w.build(w.stamped)
        if w.gated_calls() != 0:
            return False
        if not _unshare_and_mount(plugin):
            os._exit(CANNOT_UNSHARE)
        w.gated_fs.reset_counts()
        gated = w.build(w.gated)
        stamped_it = sum(w.gated_fs.calls.values()) > 0  # not the gate's "unchanged"
        if not stamped_it:
            return False
        stamped = w.build(w.stamped)
        if gated != stamped or "PCHAT_EXTRA" in gated:
            return False
        for _ in range(3):  # re-armed in the new namespace, and it hears its mounts
            if w.build(w.gated) != w.build(w.stamped):
                return False
        if w.gated_calls() != 0:
            return False
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.umount2(os.fsencode(plugin), MNT_DETACH) != 0:
            return False
        return w.build(w.gated) == w.build(w.stamped) and "PCHAT_EXTRA" in w.build(w.gated)

    status = _wait(_fork(child))
    if status == CANNOT_UNSHARE:
        pytest.skip("this machine refuses unshare(CLONE_NEWNS) (no CAP_SYS_ADMIN)")
    assert status == 0


def test_a_namespace_that_reads_differently_is_doubt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The namespace read through a seam: another one, the gate forgets and re-arms."""
    answer: list[int | bytes | None] = [1]
    monkeypatch.setattr(_inotify._Inotify, "namespace", lambda self: answer[0])
    w = make_world(tmp_path)
    answer[0] = 2
    w.gated_fs.reset_counts()
    gated = w.build(w.gated)
    assert sum(w.gated_fs.calls.values()) > 0, "the gate answered across a namespace change"
    assert gated == w.build(w.stamped)
    for _ in range(3):  # a new notifier in the new namespace: gated again
        assert w.build(w.gated) == w.build(w.stamped)
    assert w.gated_calls() == 0, "the gate never re-armed"


def test_the_namespace_is_the_roots_mount_id_or_the_link() -> None:
    """This kernel's answer: the root's mount id (5.8+), else the namespace's link."""
    found = _inotify._Inotify.get().namespace()
    assert isinstance(found, int) or (isinstance(found, bytes) and found.startswith(b"mnt:["))


def test_without_a_mount_id_the_namespace_link_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel whose statx gives no mount id (before 5.8): the link, ``mnt:[inode]``."""
    monkeypatch.setattr(_inotify, "_ROOT", os.fsencode(tmp_path / "absent"))
    found = _inotify._Inotify.get().namespace()
    assert isinstance(found, bytes)
    assert found.startswith(b"mnt:[")


@pytest.mark.parametrize("unreadable", ["namespace", "mount table"])
def test_an_unreadable_namespace_or_mount_table_means_no_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unreadable: str
) -> None:
    """Neither can be read: no gate at all (every home stamped), never a gate blind to mounts."""
    if unreadable == "namespace":
        monkeypatch.setattr(_inotify._Inotify, "namespace", lambda self: None)
    else:
        monkeypatch.setattr(_inotify, "_MOUNT_TABLE", str(tmp_path / "absent"))
    assert create_gate() is None
