"""Differential property: the gated child equals the stamped child, after any history.

Random file-system mutations drawn from issue 22's failure-mode table (edits,
appends, truncations, chmod, rename-replace in every root, plugin directories
created and removed, a symlinked plugin directory retargeted or its target's
ancestor swapped, writes through an outside hard link, a home swapped for a
copy, a root replaced, injected mount changes and queue overflows, an ``mmap``
write with the periodic stamp due) are interleaved with builds; after every
step a host with the gate and a host with the stamp only build the same
child. CI runs 20 histories; ``make fuzz`` runs 6,666 (a third of the machines' count).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope.manifests._gate import create_gate
from tests.manifests import test_gate as table
from tests.property.conftest import MACHINE_EXAMPLES

pytestmark = [
    pytest.mark.property,
    pytest.mark.skipif(create_gate() is None, reason="no inotify here"),
]

MUTATIONS = sorted(table.ROWS)


def _safely(w: table.World, name: str) -> None:
    """Apply one table mutation; one that the current tree cannot take is skipped."""
    # e.g. removing a plugin already removed: the tree stays as it is
    with contextlib.suppress(OSError, AssertionError):
        table.ROWS[name].mutate(w)


@settings(max_examples=max(MACHINE_EXAMPLES // 3, 10))
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(MUTATIONS), st.integers(min_value=0, max_value=2)),
        min_size=1,
        max_size=8,
    )
)
def test_gated_child_equals_stamped_child(steps: list[tuple[str, int]]) -> None:
    """After every mutation and every build, the gated host's child is the stamped host's."""
    with tempfile.TemporaryDirectory() as tmp:
        w = table.make_world(Path(tmp))
        for name, builds in steps:
            _safely(w, name)
            for _ in range(builds + 1):
                assert w.build(w.gated) == w.build(w.stamped), name
