"""``BuildMemo``: the last child env built per shape of build, and ``same_objects``.

A warm spawn repeats the same build: the same parent env, the same bound
home, the same policy (proven unchanged by the manifest stamp that every
build still checks), the same options. ``BuildMemo`` remembers the last
child env built for each *shape* of build and hands back a copy when every
input is the same again. Where a build sits in the memo comes from its
request's fields (``_request.memo_key``, each field's ``Role``):

- the *shape* (surface, flags, passthrough, the ``extra`` block, grants, and
  whether the build is traced) picks the slot;
- by identity (``same_objects``), the objects immutable once made: the host's
  settings, the bound home's policy (a new object whenever a manifest or the
  adapter census changes), the launch loads, the managed values, the keep-set;
- by equality, what changes per build: the env snapshot, the names secret
  sources supplied or applied.

The memo's *owner* holds it: a routed home's share (every binding made from
the same scope and residue objects uses it), or the host for unbound builds;
an unbound multiplexed build never uses one (its residue is re-read per
build). A traced build keeps its decisions too (a ``trace.Recording``) and
replays them into the caller's trace, fingerprinted with that trace's function.
The owner also keeps, in ``formats``, the values its last build found to hold no
credential format (``_format_memo.FormatMemo``): a build that misses searches
only the values that are new to it.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from envscope.pipeline._format_memo import FormatMemo

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from envscope.audit.trace import Recording

__all__ = ["BuildMemo", "MemoKey", "same_objects"]

MemoKey = tuple[tuple[object, ...], tuple[object, ...], tuple[object, ...]]
"""Where a build sits in the memo: its shape, the objects it read (compared by
identity), the maps it read (compared by value). A plain tuple: built on every
spawn, before the memo is asked."""


def same_objects(old: Sequence[object], new: Sequence[object]) -> bool:
    """True when two sequences hold the very same objects, in order (``is``, not ``==``)."""
    return len(old) == len(new) and all(map(operator.is_, old, new))  # C-level: per build


_Built = tuple[tuple[object, ...], tuple[object, ...], dict[str, str], "Recording | None"]
"""One remembered build: the objects and maps it read, the child env, a traced build's
decisions (a plain tuple, as the key is)."""


class BuildMemo:
    """The last child env per build shape; thread-safe (each read and write is one dict op)."""

    MAX_SHAPES = 16  # surfaces x flags a host really uses; more and the memo starts over

    __slots__ = ("_built", "formats")

    def __init__(self) -> None:
        self._built: dict[Hashable, _Built] = {}
        self.formats = FormatMemo()  # the clean values of the last build that searched

    def get(
        self, shape: Hashable, same: tuple[object, ...], equal: tuple[object, ...]
    ) -> tuple[dict[str, str], Recording | None] | None:
        """A copy of the child built for ``shape`` from these very inputs (and its decisions)."""
        built = self._built.get(shape)
        if built is None:
            return None
        built_same, built_equal, child, recording = built
        if not same_objects(built_same, same) or built_equal != equal:
            return None
        return dict(child), recording

    def put(
        self,
        shape: Hashable,
        same: tuple[object, ...],
        equal: tuple[object, ...],
        child: dict[str, str],
        recording: Recording | None = None,
    ) -> None:
        """Remember a private copy of the child built for ``shape`` from these inputs."""
        if len(self._built) >= self.MAX_SHAPES and shape not in self._built:
            self._built.clear()
        self._built[shape] = (same, equal, dict(child), recording)

    def __len__(self) -> int:
        return len(self._built)
