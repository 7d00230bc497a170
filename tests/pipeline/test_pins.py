"""``Pins``: a name the managed file or the home variable pinned keeps its one value.

A table over every layer of ``PRECEDENCE`` × both pinning layers × spellings ×
name folding: a layer laid after the pinning one never replaces the name (its
entry is refused and traced), an earlier one is laid as usual, and the pinned
entries come back where nothing of the name was left.
"""

from __future__ import annotations

import pytest

from envscope.audit.trace import Action, Trace
from envscope.pipeline._pins import PINNING_LAYERS, Pins
from envscope.pipeline.stages import Entries, index
from envscope.policy._layers import PRECEDENCE, Layer
from envscope.policy._reasons import Reason

PINNED = {Layer.MANAGED: ("HTTP_PROXY", "http://admin:3128"), Layer.HOME_VAR: ("MY_HOME", "/b")}
REFUSAL = {Layer.MANAGED: Reason.MANAGED_KEY, Layer.HOME_VAR: Reason.HOME_VAR}


@pytest.mark.parametrize("fold", [False, True], ids=["posix", "windows"])
@pytest.mark.parametrize("spelling", [str.upper, str.lower], ids=["same", "twin"])
@pytest.mark.parametrize("layer", PRECEDENCE, ids=lambda layer: layer.value)
@pytest.mark.parametrize("pinning", PINNING_LAYERS, ids=lambda layer: layer.value)
def test_a_later_layer_never_replaces_a_pinned_name(
    pinning: Layer, layer: Layer, spelling: object, fold: bool
) -> None:
    """After the pinning layer: refused (traced), the pinned entry stays; before: laid down."""
    name, value = PINNED[pinning]
    key = spelling(name)  # type: ignore[operator]
    pins = Pins(fold)
    out: Entries = {index(name, fold): (name, value, pinning)}
    pins.pin({name: value}, pinning)
    trace = Trace()
    pins.put(out, {key: "other-value"}, layer, trace)
    later = PRECEDENCE.index(layer) > PRECEDENCE.index(pinning)
    held = sorted(entry for entry in out.values() if entry[0].upper() == name)
    if later:
        assert held == [(name, value, pinning)]
        (decision,) = list(trace)
        assert (decision.action, decision.reason) == (Action.REFUSED, REFUSAL[pinning])
        assert pins.why(key) is not None
    elif layer is not pinning:
        assert (key, "other-value", layer) in held
        assert all(d.action is not Action.REFUSED for d in trace)


@pytest.mark.parametrize("fold", [False, True], ids=["posix", "windows"])
def test_the_pinned_entries_come_back_where_the_name_was_left_empty(fold: bool) -> None:
    """A surface filter dropped the managed entry; a later layer brings the name: pinned value."""
    pins = Pins(fold)
    pins.pin({"HTTP_PROXY": "http://admin:3128"}, Layer.MANAGED)
    out: Entries = {}
    trace = Trace()
    pins.put(out, {"http_proxy": "http://twin:8080"}, Layer.EXTRA, trace)
    assert list(out.values()) == [("HTTP_PROXY", "http://admin:3128", Layer.MANAGED)]
    assert [d.action for d in trace] == [Action.REFUSED, Action.ADDED]
    assert "admin" not in repr(pins)
