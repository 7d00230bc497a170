"""``HomePolicies``: a home's policy is the same object until an input of it changes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from envscope import Catalog
from envscope.manifests._home_policies import HomePolicies


def _policies(tmp_path: Path) -> HomePolicies:
    return HomePolicies(
        bundled_root=None,
        fs=None,
        on_unreadable_platform="raise",
        change_notification=False,
        maxsize=4,
    )


def _plugin(home: Path, name: str) -> None:
    plugin = home / "plugins" / "platforms" / name
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text(f"requires_env: [{name.upper()}_TOKEN]\n")


def _new_catalog(policies: HomePolicies, home: Path, catalog: Catalog) -> Catalog:
    return catalog.with_names(tier1=["EXTRA_SECRET"], detail="test")


def _adapter(policies: HomePolicies, home: Path, catalog: Catalog) -> Catalog:
    policies.census.register(str(home), "a", ["A_KEY"])
    return catalog


def _manifest(policies: HomePolicies, home: Path, catalog: Catalog) -> Catalog:
    _plugin(home, "chat2")
    return catalog


CHANGES: dict[str, Callable[[HomePolicies, Path, Catalog], Catalog]] = {
    "a new catalog": _new_catalog,
    "an adapter registered": _adapter,
    "a manifest added": _manifest,
}


def test_nothing_changed_the_same_policy(tmp_path: Path) -> None:
    """Asked twice with nothing changed, the home's policy is the very same object."""
    policies, catalog = _policies(tmp_path), Catalog.default()
    _plugin(tmp_path, "chat")
    first = policies.policy(str(tmp_path), catalog)
    assert policies.policy(str(tmp_path), catalog) is first
    assert first.declaration("CHAT_TOKEN") is not None


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_input_change_builds_a_new_policy(tmp_path: Path, change: str) -> None:
    """A new catalog, an adapter or a manifest change gives a new policy that holds it."""
    policies, catalog = _policies(tmp_path), Catalog.default()
    _plugin(tmp_path, "chat")
    first = policies.policy(str(tmp_path), catalog)
    catalog = CHANGES[change](policies, tmp_path, catalog)
    second = policies.policy(str(tmp_path), catalog)
    assert second is not first
    expected = {"a new catalog": "EXTRA_SECRET", "an adapter registered": "A_KEY"}
    assert second.declaration(expected.get(change, "CHAT2_TOKEN")) is not None


def test_policies_are_bounded(tmp_path: Path) -> None:
    """Past ``maxsize`` homes the oldest policy is dropped (LRU)."""
    policies, catalog = _policies(tmp_path), Catalog.default()
    for i in range(6):
        home = tmp_path / f"h{i}"
        home.mkdir()
        policies.policy(str(home), catalog)
    assert len(policies) == 4
