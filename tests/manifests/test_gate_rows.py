"""Every fallback row of docs/manifests.md's gate table has a test that proves the stamp answered.

The table ("Change notification") is read from the docs; each row's case must be
mapped here to the tests that cover it, each test must exist, and each must
assert that a gated build went to the stamp (file-system calls counted on the
gated host, or no gate at all), not only that the child was right. A row added
to the docs without a test fails here.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "manifests.md"
HEADER = "| case | what the gate does |"

GATE = "tests.manifests.test_gate"
FORK = "tests.manifests.test_gate_fork"
TABLE = f"{GATE}::test_failure_mode_table"

PROOFS: dict[str, tuple[str, ...]] = {
    "in-place edit, append, truncate + rewrite, chmod, rename-replace (any root)": (TABLE,),
    "plugin directory created or removed; created and edited before its watch exists": (
        TABLE,
        f"{GATE}::test_created_and_edited_home_is_dirty_until_a_watched_probe",
    ),
    "symlinked plugin directory retargeted, or its target's ancestor swapped outside the tree": (
        TABLE,
    ),
    "hard-linked manifest written through an outside link": (TABLE,),
    "home renamed away and a copy moved in; a root replaced, created or removed": (TABLE,),
    'a re-stat that fails other than "no such path" (`EACCES`, `ELOOP`, `EIO`, a refused '
    "`statx`)": (
        f"{GATE}::test_a_failed_restat_is_doubt",
        f"{GATE}::test_a_root_that_cannot_be_stat_ed_is_never_gated",
    ),
    "a root below a network, FUSE or autofs mount (the directories above it, as given and "
    "resolved)": (f"{GATE}::test_a_walk_through_a_network_mount_is_never_gated",),
    "a mount over a plugin directory or root": (
        TABLE,
        f"{FORK}::test_an_unreadable_mount_table_means_no_gate",
    ),
    "a new mount namespace (`unshare(CLONE_NEWNS)`, `setns`), then a mount in it": (
        "tests.manifests.test_gate_namespace::"
        "test_a_mount_in_a_new_mount_namespace_sends_every_home_to_the_stamp",
        "tests.manifests.test_gate_namespace::test_a_namespace_that_reads_differently_is_doubt",
        "tests.manifests.test_gate_namespace::"
        "test_an_unreadable_namespace_or_mount_table_means_no_gate",
    ),
    "queue overflow (`IN_Q_OVERFLOW`)": (TABLE,),
    "watch limit (`ENOSPC`), or any watch that cannot be placed": (
        f"{GATE}::test_ungateable_homes_are_stamped_every_build",
    ),
    "a plugin directory with no manifest yet (direct, or a symlink's target) on such a file "
    "system, under a local root": (
        "tests.manifests.test_gate_trust::"
        "test_a_manifestless_plugin_directory_on_an_untrusted_fs_is_stamped",
    ),
    "network, FUSE, 9p, overlay (lower layers), any file system not on the allowlist": (
        f"{GATE}::test_ungateable_homes_are_stamped_every_build",
    ),
    "a write through an existing `mmap` (no event exists)": (TABLE,),
    "a racy entry (changed within the clock's granularity), or a probe with any problem": (
        f"{GATE}::test_racy_probe_is_never_gated",
    ),
    "a host that closes inherited descriptors (`os.closerange` when daemonizing): the inotify "
    "or mount-table descriptor closed, or its number reused by a pipe or a file": (
        f"{FORK}::test_a_host_that_closes_inherited_descriptors_keeps_building_correctly",
        f"{FORK}::test_a_closed_mount_table_descriptor_alone_is_a_loss",
    ),
    "`fork()` (a forked child, `multiprocessing`'s fork start)": (
        f"{FORK}::test_a_forked_child_never_takes_the_parents_events",
        f"{FORK}::test_a_gate_with_no_notifier_of_its_own_stamps_every_build",
    ),
}

# What a test asserts when it proves the stamp answered: seam calls on the gated host,
# or no gate (``create_gate()`` gave none), or a gate that refuses to vouch.
STAMPED = re.compile(
    r"calls(\(\))?( \+ \w+)?\s*>\s*0|calls\.values\(\)\)\s*>\s*0"
    r"|create_gate\(\) is None|not gate\.unchanged\("
)


def _doc_cases() -> list[str]:
    """The first column of every row of the gate's table in docs/manifests.md."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2  # the header and its rule
    cases = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cases.append(line.split(" | ")[0].removeprefix("| "))
    return cases


def test_every_row_of_the_table_is_mapped_to_its_tests() -> None:
    """The docs' rows and this map name the same cases (a new row needs its test here)."""
    cases = _doc_cases()
    assert len(cases) == len(set(cases))
    assert sorted(cases) == sorted(PROOFS)


@pytest.mark.parametrize("case", sorted(PROOFS))
def test_each_rows_tests_exist_and_prove_the_stamp_answered(case: str) -> None:
    """Each mapped test exists and asserts that the gated build went to the stamp."""
    proofs = PROOFS[case]
    assert proofs
    for proof in proofs:
        module, _, name = proof.partition("::")
        test = getattr(importlib.import_module(module), name)
        assert STAMPED.search(inspect.getsource(test)), f"{proof} never checks the stamp answered"


def test_the_failure_mode_table_checks_every_row_went_to_the_stamp() -> None:
    """The rows the table covers all require seam calls after the change."""
    from tests.manifests.test_gate import ROWS

    assert all(row.stamps for row in ROWS.values())
    for needed in ("a root removed", "a root created", "mount table changed", "queue overflow"):
        assert needed in ROWS
