"""How fast ``envscope.redact`` masks output (``make bench``).

Text like a tool's output (lowercase words, one secret per ~1,000 words),
20 MB (4 MB in ``--quick``), with 10 and with 1,000 secrets of 12–48
characters. Figures in MB/s: ``redact`` on ``str`` (ASCII: searched as bytes),
``redact_bytes``, a ``str`` stream in 64 KiB chunks, ``redact`` with credential
formats masked too (``shapes=True``, as ``for_host`` makes it; reported, no
target), and a naive loop of ``str.replace`` over the values (measured on a
tenth of the text). Target: ≥ 100 MB/s at 1,000 secrets for ``str``,
``bytes`` and the stream.

    python -m benchmarks.redact_cost        # prints the figures
"""

from __future__ import annotations

import random
import string
import sys
import time
from collections.abc import Callable

from benchmarks.measure import Figure

TARGET_MBPS = 100.0
CHUNK = 64 * 1024


def _workload(secrets: int, size: int, seed: int = 7) -> tuple[dict[str, str], str]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits

    def secret() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(12, 48)))

    values = {f"SECRET_{i}": secret() for i in range(secrets)}
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 10)))
             for _ in range(2000)]  # fmt: skip
    pool = list(values.values())
    parts: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(pool) if rng.random() < 0.001 else rng.choice(words)
        parts.append(word)
        total += len(word) + 1
    return values, " ".join(parts)


def _best_mbps(fn: Callable[[], object], size: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return size / 1e6 / best


def redact_figures(quick: bool) -> list[Figure]:
    """MB/s of each way to mask, at 10 and 1,000 secrets (best of a few rounds)."""
    from envscope.redact import Redactor

    size = 4_000_000 if quick else 20_000_000
    rounds = 2 if quick else 3
    figures = []
    for count in (10, 1000):
        values, text = _workload(count, size)
        data = text.encode()
        redactor = Redactor(values)

        def streamed(redactor: Redactor = redactor, text: str = text) -> str:
            stream = redactor.stream()
            out = [stream.feed(text[i : i + CHUNK]) for i in range(0, len(text), CHUNK)]
            return "".join([*out, stream.close()])

        tenth = text[: len(text) // 10]

        def naive(values: dict[str, str] = values, tenth: str = tenth) -> str:
            out = tenth
            for name, value in values.items():
                out = out.replace(value, f"[REDACTED:{name}]")
            return out

        def whole(redactor: Redactor = redactor, text: str = text) -> str:
            return redactor.redact(text)

        def whole_bytes(redactor: Redactor = redactor, data: bytes = data) -> bytes:
            return redactor.redact_bytes(data)

        shaped = Redactor(values, shapes=True)

        def whole_shaped(shaped: Redactor = shaped, text: str = text) -> str:
            return shaped.redact(text)

        runs: list[tuple[str, Callable[[], object], int, bool]] = [
            ("str", whole, len(data), True),
            ("bytes", whole_bytes, len(data), True),
            ("stream", streamed, len(data), True),
            ("shapes", whole_shaped, len(data), False),
            ("naive", naive, len(tenth), False),
        ]
        for kind, fn, measured, has_target in runs:
            mbps = _best_mbps(fn, measured, rounds)
            target = has_target and count == 1000
            label = (
                f"redact {kind}, {count:,} secrets"
                + (" (a str.replace loop)" if kind == "naive" else "")
                + (" (str, credential formats too: for_host's)" if kind == "shapes" else "")
            )
            figures.append(
                Figure(
                    f"redact_{kind}_{count}", label, mbps, "MB/s",
                    f">= {TARGET_MBPS:g} MB/s" if target else "",
                    (mbps >= TARGET_MBPS) if target else None,
                    {"megabytes": measured / 1e6, "rounds": rounds},
                )
            )  # fmt: skip
    return figures


if __name__ == "__main__":
    for figure in redact_figures(quick="--quick" in sys.argv):
        print(f"{figure.label}: {figure.value:.0f} MB/s {figure.target}")
