"""The one rule for which manifests declare secrets: ``counting(root, manifest)``.

The host's scan, ``envscope scan`` (a home, or ``--plugin DIR``) and ``explain``
all ask this function, so what a report says a plugin declares is what the
host declares (docs/manifests.md, "Where manifests are found"):

- under a platform root (the bundled root, ``<home>/plugins/platforms/``) every
  manifest declares its secrets;
- a flat ``<home>/plugins/NAME/`` manifest declares them only as a platform
  plugin: ``kind: platform``;
- a flat manifest whose ``kind`` is a near miss of ``platform`` (another case,
  padding, a typo one or two edits away: ``Platform``, ``platfrom``,
  ``platforms``) is read as a platform plugin, failing closed (its secrets are
  declared), and the near miss is a problem naming the file, the line and
  ``kind``: a mistake that would otherwise hand its tokens to every child;
- any other flat manifest (no ``kind``, ``kind: memory``) declares nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from envscope.manifests._probe import RootKind
from envscope.manifests._schema import PLATFORM_KIND, Manifest

__all__ = ["Counting", "counting", "near_platform"]

_NEAR = 2  # edits: a transposition is two


@dataclass(frozen=True, slots=True)
class Counting:
    """Whether a manifest's secrets are declared, why in words, and any near miss of its kind."""

    declares: bool
    reason: str
    problem: str | None = None


def _edits(a: str, b: str) -> int:
    """The Levenshtein distance of two short strings."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def near_platform(kind: str) -> bool:
    """True when ``kind`` is not ``platform`` but a case, padding or typo away from it."""
    if kind == PLATFORM_KIND:
        return False
    folded = kind.strip().casefold()
    return abs(len(folded) - len(PLATFORM_KIND)) <= _NEAR and _edits(folded, PLATFORM_KIND) <= _NEAR


def counting(root: RootKind, manifest: Manifest) -> Counting:
    """Whether ``manifest``, found under a root of kind ``root``, declares its secrets."""
    if root.is_platform:
        where = "the bundled root" if root is RootKind.BUNDLED else "plugins/platforms/"
        return Counting(True, f"platform plugin ({where}): its secrets are declared")
    kind = manifest.kind
    if kind == PLATFORM_KIND:
        return Counting(True, "flat plugin with kind: platform: its secrets are declared")
    if kind is not None and near_platform(kind):
        return Counting(
            True,
            f"flat plugin with kind {kind!r}, read as kind: platform: its secrets are declared",
            f"kind {kind!r} is not {PLATFORM_KIND!r}: read as a platform plugin (its secrets "
            f"are declared); write kind: {PLATFORM_KIND}",
        )
    said = "no kind" if kind is None else f"kind {kind!r}"
    return Counting(
        False,
        f"not a platform plugin ({said}): a flat plugin declares nothing unless it says "
        f"kind: {PLATFORM_KIND}",
    )
