"""The W1 routed build with the parent env changed every spawn, and its format search.

The parent env alternates between two snapshots that differ in the value of
one declared name (``GITHUB_TOKEN``, no credential format in either), so the
build memo never hits and every build is a full one with a rule of its own
(a plain value would make it from the last build: ``pipeline/_delta``).
Prints the build's median, what the format table searches per build
(counted), and ``SecretRule.find_in`` of one such build three ways: as the
build runs it, with one joined search of every value, and with no format
search (the declared-secret part alone). Focused: it times one build shape
on one host, not the bench's figures.

    python -m benchmarks.changing_build [CALLS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.workloads import make_w1
from envscope import Catalog
from envscope.pipeline._memo import CleanValues
from envscope.pipeline.secret_rule import SecretMatch, SecretRule
from envscope.policy.formats import CredentialFormat, FormatTable


def median_us(fn: Callable[[], object], calls: int, repeat: int = 15) -> float:
    """The median over ``repeat`` batches of the µs per call."""
    number = max(1, calls // repeat)
    return statistics.median(timeit.timeit(fn, number=number) / number * 1e6 for _ in range(repeat))


def main(calls: int) -> None:
    """Print the figures (counts and times; never a value)."""
    catalog = Catalog.default()
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        w1, tree = make_w1(Path(tmp), catalog)
        tree.settle()  # past the racy window: else every build rescans its manifests
        host = w1.host(catalog)
        bases = tuple(dict(w1.environ, GITHUB_TOKEN=f"bench-token-value-000{n}") for n in (1, 2))
        flip = [0]

        def changing() -> object:
            flip[0] ^= 1
            return host.build_subprocess_env(bases[flip[0]])

        real_find = FormatTable.find
        real_find_in = SecretRule.find_in
        searched = [0, 0]
        captured: list[
            tuple[SecretRule, list[tuple[str, str]], list[bool], CleanValues | None]
        ] = []

        def counting(self: FormatTable, value: str) -> CredentialFormat | None:
            searched[0] += 1
            searched[1] += len(value)
            return real_find(self, value)

        def capture(
            self: SecretRule,
            items: Sequence[tuple[str, str]],
            owns: Sequence[bool] = (),
            clean: CleanValues | None = None,
        ) -> list[tuple[SecretMatch, ...]]:
            captured.append((self, list(items), list(owns), clean))
            return real_find_in(self, items, owns, clean)

        with host.routed(w1.profiles[0]):
            for _ in range(200):
                changing()
            build_us = median_us(changing, calls)
            FormatTable.find = counting  # type: ignore[method-assign]
            try:
                for _ in range(100):
                    changing()
            finally:
                FormatTable.find = real_find  # type: ignore[method-assign]
            SecretRule.find_in = capture  # type: ignore[method-assign]
            try:
                changing()
            finally:
                SecretRule.find_in = real_find_in  # type: ignore[method-assign]
        rule, items, owns, clean = captured[0]
        as_built = median_us(lambda: rule.find_in(items, owns, clean), calls)
        joined = median_us(lambda: rule.find_in(items, owns), calls)  # every value searched
        rule._formats = None
        declared = median_us(lambda: rule.find_in(items, owns), calls)
    print(f"changing build: {build_us:.1f} µs (median, {calls} calls)")
    print(
        f"format table per build: {searched[0] / 100:.1f} searches, {searched[1] / 100:.0f} chars"
    )
    print(
        f"find_in ({len(items)} items): as built {as_built:.1f} µs, one joined search "
        f"{joined:.1f} µs, no format search {declared:.1f} µs"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
