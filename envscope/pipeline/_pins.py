"""The names a pinning layer holds: no later layer of a build replaces them.

Two layers pin a name, each with one value: the administrator's managed file
(``Layer.MANAGED``, stage 3) and the child's own home variable
(``Layer.HOME_VAR``, stage 4's merge). ``PRECEDENCE`` orders the layers; a
layer laid after a pinning one (a surface policy's ``set``, the caller's
``extra`` and MCP block, a passthrough, a forced hand-over) sets every name
but the pinned ones, in every spelling: what it brought for a pinned name is
refused and traced (``managed-key``, ``home-var``). Where that leaves the name
with no entry (a surface's filter dropped the pinned entry), the pinned
entries take its place: the name reached the child, with the pinned value.
``Pins.put`` is the one place this is decided; stage 4 lays every later layer
through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envscope.audit.trace import Action, Stage
from envscope.pipeline.stages import index, put_layer, spellings
from envscope.policy._declarations import Origin, OriginKind
from envscope.policy._layers import PRECEDENCE, Layer
from envscope.policy._reasons import Reason

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from envscope.audit.trace import Trace
    from envscope.pipeline.stages import Entries, Entry

__all__ = ["PINNING_LAYERS", "Pins"]

PINNING_LAYERS = (Layer.MANAGED, Layer.HOME_VAR)
"""The layers whose names no later layer replaces (in ``PRECEDENCE`` order)."""

_REFUSALS: dict[Layer, tuple[Reason, Origin, str]] = {
    Layer.MANAGED: (
        Reason.MANAGED_KEY,
        Origin(OriginKind.MANAGED, "managed"),
        "the administrator's managed value is the only value of this name",
    ),
    Layer.HOME_VAR: (
        Reason.HOME_VAR,
        Origin(OriginKind.SURFACE, "home"),
        "the child's own home variable is pinned",
    ),
}
_RANK = {layer: i for i, layer in enumerate(PRECEDENCE)}


class Pins:
    """The pinned names of one build: upper-cased name → the pinning layer and its entries."""

    __slots__ = ("_fold", "_held")

    def __init__(self, fold: bool) -> None:
        self._fold = fold
        self._held: dict[str, tuple[Layer, list[Entry]]] = {}

    def pin(self, values: Mapping[str, str], layer: Layer) -> None:
        """Pin every name of ``values`` to ``layer`` (a pinning layer) and these entries."""
        assert layer in PINNING_LAYERS
        for key, value in values.items():
            held = self._held.setdefault(key.upper(), (layer, []))
            held[1].append((key, value, layer))

    def holds(self, name: str) -> bool:
        """True when a pinning layer holds ``name`` (any case)."""
        return name.upper() in self._held

    def why(self, name: str) -> str | None:
        """Why ``name`` (any case) has one value (for a refusal), or None when it is not pinned."""
        held = self._held.get(name.upper())
        return None if held is None else _REFUSALS[held[0]][2]

    def put(
        self,
        out: Entries,
        values: Mapping[str, str],
        layer: Layer,
        trace: Trace,
        record: Callable[[str, str, bool], None] | None = None,
        *,
        layers: Mapping[str, Layer] | None = None,
    ) -> None:
        """Lay ``values`` down as ``layer`` (``stages.put_layer``), never over a pinned name.

        A key of a name a pinning layer laid down before ``layer`` is refused
        and traced; the pinned entries are put back
        where nothing of the name is left. ``layers`` gives some keys an entry
        layer of their own (a grant, an MCP block's entry, a passthrough's source).
        """
        refused = {k: v for k, v in values.items() if self._overrides(k, layer)}
        if not refused:
            put_layer(out, values, self._fold, record, layer=layer, layers=layers)
            return
        laid = {k: v for k, v in values.items() if k not in refused}
        put_layer(out, laid, self._fold, record, layer=layer, layers=layers)
        for key, value in refused.items():
            pinning, entries = self._held[key.upper()]
            reason, origin, note = _REFUSALS[pinning]
            trace.record(key, Action.REFUSED, Stage.SANITIZE, reason, origin, note, value=value)
            if not spellings(out, key.upper(), self._fold):
                for entry in entries:
                    out[index(entry[0], self._fold)] = entry
                    trace.record(
                        entry[0], Action.ADDED, Stage.SANITIZE, _ADDED[pinning], origin,
                        value=entry[1],
                    )  # fmt: skip

    def _overrides(self, key: str, layer: Layer) -> bool:
        held = self._held.get(key.upper())
        return held is not None and held[0] is not layer and _RANK[layer] > _RANK[held[0]]

    def __repr__(self) -> str:
        return f"Pins(names={sorted(self._held)!r})"  # names, never values


_ADDED = {Layer.MANAGED: Reason.MANAGED_VALUE, Layer.HOME_VAR: Reason.HOME_VAR}
